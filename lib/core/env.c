/* env.c - clocks (wall and CPU), and numbers read from the command line or the
 * environment, checked.
 *
 * A knob that does not parse is an error, never a silent default: a
 * student who types DT_TIMEOUT=5s or -b 1T must learn that it was not
 * understood, rather than measure something else. Every message names the
 * option or variable, the text given and what was expected. */
#include "dt/core.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double dt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU time, not wall time: what a computation cost the thread itself, on
 * a machine whose other processes take turns on its cores (the timings of
 * the trainer and of the labs' programs; with one BLAS thread a step's
 * whole work runs on the calling thread). */
double dt_thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void dt_sleep(double seconds)
{
    if (seconds <= 0)
        return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- parsing */

/* "what 'text': expected ..." for an option, "WHAT='text': expected ..."
 * for a variable (sep is ' ' or '='). */
static dt_result bad_value(const char *what, char sep, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static dt_result bad_value(const char *what, char sep, const char *text, const char *fmt, ...)
{
    char expected[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expected, sizeof expected, fmt, ap);
    va_end(ap);
    return dt_fail(DT_ERR_INVALID_ARG, "%s%c'%.100s': expected %s", what, sep, text, expected);
}

static dt_result parse_long(const char *what, char sep, const char *text, long min, long max,
                            long *out)
{
    char *end;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : 0;
    if (!text || end == text || *end != '\0' || errno == ERANGE || v < min || v > max)
        return bad_value(what, sep, text ? text : "", "a whole number from %ld to %ld", min,
                         max);
    *out = v;
    return DT_OK;
}

static dt_result parse_double(const char *what, char sep, const char *text, double min,
                              double max, double *out)
{
    char *end;
    double v = text ? strtod(text, &end) : 0;
    if (!text || end == text || *end != '\0' || isnan(v) || v < min || v > max)
        return bad_value(what, sep, text ? text : "", "a number from %g to %g", min, max);
    *out = v;
    return DT_OK;
}

dt_result dt_parse_long(const char *what, const char *text, long min, long max, long *out)
{
    return parse_long(what, ' ', text, min, max, out);
}

dt_result dt_parse_double(const char *what, const char *text, double min, double max,
                          double *out)
{
    return parse_double(what, ' ', text, min, max, out);
}

/* The one size convention of every tool and lab program (nccl-tests'
 * -b 8M is 8 MiB): K, M, G, T are 2^10, 2^20, 2^30, 2^40, and Ki, Mi, Gi,
 * Ti the same; a decimal size is a plain number, 1e6. 256M and 256Mi are
 * both 268435456 bytes. Rates and times (DT_NET's bw=10GB/s, alpha=2us)
 * are the network model's and stay decimal (dt/net.h). */
static double size_unit(char c)
{
    switch (c) {
    case 'K': case 'k': return 1024.0;
    case 'M': case 'm': return 1024.0 * 1024;
    case 'G': case 'g': return 1024.0 * 1024 * 1024;
    case 'T': case 't': return 1024.0 * 1024 * 1024 * 1024;
    default: return 0;
    }
}

dt_result dt_parse_bytes(const char *what, const char *text, size_t min, size_t max,
                         size_t *out)
{
    char *end = NULL;
    double v = text ? strtod(text, &end) : NAN;
    /* decimal digits, a point, an exponent: no sign, hex, inf or nan */
    int plain = text && end != text && text[0] != '-' && text[0] != '+' &&
                strspn(text, "0123456789.eE+-") >= (size_t)(end - text);
    if (plain && size_unit(*end) > 0 && (end[1] == '\0' || (end[1] == 'i' && end[2] == '\0'))) {
        v *= size_unit(*end);
        end += end[1] ? 2 : 1;
    }
    if (!plain || *end != '\0' || !isfinite(v) || v != floor(v) || v < (double)min ||
        v > (double)max)
        return bad_value(what, ' ', text ? text : "", "a size in bytes from %zu to %zu: a "
                         "whole number (1e6 = 10^6), with an optional K, M, G or T for 2^10, "
                         "2^20, 2^30, 2^40 (Ki, Mi, Gi, Ti: the same)", min, max);
    *out = (size_t)v;
    return DT_OK;
}

/* ---------------------------------------------------------------- env */

const char *dt_env_str(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

dt_result dt_env_long(const char *name, long dflt, long min, long max, long *out)
{
    const char *v = dt_env_str(name, NULL);
    if (!v) {
        *out = dflt;
        return DT_OK;
    }
    return parse_long(name, '=', v, min, max, out);
}

dt_result dt_env_double(const char *name, double dflt, double min, double max, double *out)
{
    const char *v = dt_env_str(name, NULL);
    if (!v) {
        *out = dflt;
        return DT_OK;
    }
    return parse_double(name, '=', v, min, max, out);
}
