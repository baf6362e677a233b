/* test_main.c - the main() of every test binary.
 *
 *   grade --list            one line per test: name<TAB>points<TAB>timeout<TAB>visibility
 *   grade --run NAME        runs one test in this process (exit 0: passed)
 *   grade                   runs every test in this process, in order (for
 *                           debugging; a crash stops the run: use dtgrade)
 *
 * Registration happens in constructors, before main; tests are kept in the
 * order their files list them. */
#include "grader.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dt_test *first, **last = &first;
/* Set by the running test (dt_test_see) before it starts any rank; read
 * only when it fails. One test runs per process (or one after another). */
static const char *see_where;

void dt_test_register(dt_test *t)
{
    t->next = NULL;
    *last = t;
    last = &t->next;
}

void dt_test_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[2048];
    int n;
    if (dt_log_rank() >= 0)
        n = snprintf(msg, sizeof msg, "FAIL: %s:%d: rank %d: ", file, line, dt_log_rank());
    else
        n = snprintf(msg, sizeof msg, "FAIL: %s:%d: ", file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (see_where) {
        size_t used = strlen(msg);
        snprintf(msg + used, sizeof msg - used - 1, " (see %s)", see_where);
    }
    strcat(msg, "\n");
    fflush(stdout);
    ssize_t w = write(STDERR_FILENO, msg, strlen(msg));
    (void)w;
    _exit(1);
}

void dt_test_see(const char *where) { see_where = where; }

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (dt_test *t = first; t; t = t->next)
            printf("%s\t%d\t%g\t%s\n", t->name, t->points, t->timeout_s,
                   t->hidden ? "hidden" : "visible");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--run") == 0) {
        for (dt_test *t = first; t; t = t->next) {
            if (strcmp(t->name, argv[2]) == 0) {
                t->fn();
                fflush(stdout);
                return 0;
            }
        }
        fprintf(stderr, "no test named '%s'\n", argv[2]);
        return 2;
    }
    if (argc == 1) {
        int n = 0;
        for (dt_test *t = first; t; t = t->next, n++) {
            fprintf(stderr, "-- %s\n", t->name);
            see_where = NULL;
            t->fn();
        }
        fprintf(stderr, "%d passed, 0 failed\n", n);
        return 0;
    }
    fprintf(stderr, "usage: %s [--list | --run NAME]\n", argv[0]);
    return 2;
}
