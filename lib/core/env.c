/* env.c - clocks and knobs read from the environment. */
#include "dt/core.h"

#include <errno.h>
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

const char *dt_env_str(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return (v && *v) ? v : dflt;
}

double dt_env_double(const char *name, double dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    double d = strtod(v, &end);
    return (*end == '\0') ? d : dflt;
}

long dt_env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long l = strtol(v, &end, 10);
    return (*end == '\0') ? l : dflt;
}
