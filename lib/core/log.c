/* log.c - log lines prefixed with the rank of the calling thread. */
#include "dt/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static _Thread_local int log_rank = -1;

void dt_log_set_rank(int rank) { log_rank = rank; }
int dt_log_rank(void) { return log_rank; }

void dt_log(const char *fmt, ...)
{
    char line[1024];
    int n = 0;
    if (log_rank >= 0)
        n = snprintf(line, sizeof line, "[rank %d] ", log_rank);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write() per line: lines of concurrent ranks never interleave. */
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
