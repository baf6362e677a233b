/* env.c - clocks, and numbers read from the command line or the
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
#include <time.h>

double dt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
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
    char expected[160];
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

dt_result dt_parse_bytes(const char *what, const char *text, size_t min, size_t max,
                         size_t *out)
{
    char *end;
    double v = text ? strtod(text, &end) : NAN;
    double unit = 1;
    if (text && end != text && end[0] && !end[1]) {
        switch (end[0]) {
        case 'K': case 'k': unit = 1024.0; end++; break;
        case 'M': case 'm': unit = 1024.0 * 1024; end++; break;
        case 'G': case 'g': unit = 1024.0 * 1024 * 1024; end++; break;
        default: break;
        }
    }
    v *= unit;
    if (!text || end == text || *end != '\0' || isnan(v) || v != floor(v) || v < (double)min ||
        v > (double)max)
        return bad_value(what, ' ', text ? text : "", "a size in bytes from %zu to %zu, with an "
                         "optional K, M or G (powers of 1024)", min, max);
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
