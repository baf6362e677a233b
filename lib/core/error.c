/* error.c - result names and the per-rank last-error message.
 *
 * The message is thread-local: with the thread backend each rank is a
 * thread, so each rank sees its own last error and no lock is needed. */
#include "dt/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024]; /* a timeout lists every rank */

static const char *const result_names[DT_NUM_RESULTS] = {
    [DT_OK] = "DT_OK",
    [DT_ERR_INVALID_ARG] = "DT_ERR_INVALID_ARG",
    [DT_ERR_NOMEM] = "DT_ERR_NOMEM",
    [DT_ERR_NOT_IMPLEMENTED] = "DT_ERR_NOT_IMPLEMENTED",
    [DT_ERR_TIMEOUT] = "DT_ERR_TIMEOUT",
    [DT_ERR_MISMATCH] = "DT_ERR_MISMATCH",
    [DT_ERR_PEER_DIED] = "DT_ERR_PEER_DIED",
    [DT_ERR_IO] = "DT_ERR_IO",
    [DT_ERR_STATE] = "DT_ERR_STATE",
    [DT_ERR_UNSUPPORTED] = "DT_ERR_UNSUPPORTED",
    [DT_ERR_INTERNAL] = "DT_ERR_INTERNAL",
    [DT_ERR_FAULT] = "DT_ERR_FAULT",
    [DT_ERR_INTERRUPTED] = "DT_ERR_INTERRUPTED",
};

const char *dt_strerror(dt_result r)
{
    if ((int)r < 0 || r >= DT_NUM_RESULTS)
        return "DT_ERR_UNKNOWN";
    return result_names[r];
}

const char *dt_last_error(void) { return last_error; }

void dt_clear_error(void) { last_error[0] = '\0'; }

dt_result dt_fail(dt_result r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return r;
}

void dt_check_trace(const char *file, int line, const char *expr, dt_result r)
{
    /* Keep the innermost message (it says what was wrong) and prepend
     * where it surfaced, once: the first DT_CHECK that sees it. */
    if (last_error[0] == '\0') {
        snprintf(last_error, sizeof last_error, "%s:%d: %s returned %s",
                 file, line, expr, dt_strerror(r));
        return;
    }
    if (strncmp(last_error, file, strlen(file)) == 0)
        return; /* already located in this file */
    char tmp[sizeof last_error];
    int n = snprintf(tmp, sizeof tmp, "%s:%d: ", file, line);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return;
    size_t room = sizeof tmp - (size_t)n - 1, len = strlen(last_error);
    if (len > room)
        len = room;
    memcpy(tmp + n, last_error, len);
    tmp[(size_t)n + len] = '\0';
    memcpy(last_error, tmp, sizeof last_error);
}
