/* trace_read.c - reads back the regions of a trace the communicator wrote
 * (lib/comm/trace.c): one JSON object per line,
 *   {"name":"allgather","cat":"comm","ph":"X","pid":1,"tid":3,"ts":12.5,"dur":4.2}
 * with pid 0 for the wall clock and 1 for the modeled clock, tid = 2 rank
 * + lane, and times in microseconds. Lines of another shape (the metadata
 * that names processes and tracks) are skipped. For the labs' figures and
 * tests: which region overlapped which. */
#include "dt/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ranks' threads append their regions in whatever order they run; a
 * figure drawn from the file must not depend on it. Within one rank's
 * track the order of start times is its program order. */
static int region_cmp(const void *pa, const void *pb)
{
    const dt_trace_region *a = pa, *b = pb;
    if (a->modeled != b->modeled)
        return a->modeled < b->modeled ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->lane != b->lane)
        return a->lane < b->lane ? -1 : 1;
    if (a->start_s != b->start_s)
        return a->start_s < b->start_s ? -1 : 1;
    if (a->end_s != b->end_s)
        return a->end_s < b->end_s ? -1 : 1;
    return strcmp(a->name, b->name);
}

dt_result dt_trace_read(const char *path, dt_trace_region **out, size_t *n)
{
    if (!path || !out || !n)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_trace_read: NULL argument");
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(DT_ERR_IO, "dt_trace_read: cannot read '%s'", path);
    dt_trace_region *r = NULL;
    size_t cap = 0, count = 0;
    char line[512], cat[16];
    dt_result res = DT_OK;
    while (res == DT_OK && fgets(line, sizeof line, f)) {
        dt_trace_region e;
        int pid, tid;
        double ts, dur;
        if (sscanf(line, "{\"name\":\"%31[^\"]\",\"cat\":\"%15[^\"]\",\"ph\":\"X\",\"pid\":%d,"
                   "\"tid\":%d,\"ts\":%lf,\"dur\":%lf", e.name, cat, &pid, &tid, &ts,
                   &dur) != 6)
            continue;
        e.modeled = pid == 1, e.rank = tid / 2, e.lane = tid % 2;
        e.start_s = ts * 1e-6, e.end_s = (ts + dur) * 1e-6;
        if (count == cap) {
            dt_trace_region *g = realloc(r, (cap ? 2 * cap : 256) * sizeof *g);
            if (!g) {
                res = dt_fail(DT_ERR_NOMEM, "dt_trace_read: %zu regions", count);
                break;
            }
            r = g, cap = cap ? 2 * cap : 256;
        }
        r[count++] = e;
    }
    fclose(f);
    if (res == DT_OK && count == 0)
        res = dt_fail(DT_ERR_INVALID_ARG, "dt_trace_read: '%s' holds no region", path);
    if (res != DT_OK) {
        free(r);
        return res;
    }
    qsort(r, count, sizeof *r, region_cmp);
    *out = r, *n = count;
    return DT_OK;
}
