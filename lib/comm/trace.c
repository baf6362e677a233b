/* trace.c - DT_TRACE: every rank's compute and communication regions in
 * the Chrome trace-event format (open the file in Perfetto or
 * chrome://tracing). Two processes: "wall" and "modeled", one track
 * (thread) per rank in each; async collectives on a second track. */
#include "trace.h"

#include "handle.h"

#include <stdio.h>
#include <stdlib.h>

void dt_trace_add(dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                  double m1)
{
    if (!rc->tracing)
        return;
    pthread_mutex_lock(&rc->trace_lock);
    if (rc->ntrace == rc->captrace) {
        size_t cap = rc->captrace ? 2 * rc->captrace : 256;
        dt_trace_ev *t = realloc(rc->trace, cap * sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&rc->trace_lock);
            return; /* a trace with a gap beats a failed run */
        }
        rc->trace = t;
        rc->captrace = cap;
    }
    rc->trace[rc->ntrace++] = (dt_trace_ev){kind, lane, w0, w1, m0, m1};
    pthread_mutex_unlock(&rc->trace_lock);
}

static const char *ev_name(int kind)
{
    return kind >= 0 && kind < DT_NUM_COLLS ? dt_coll_name(kind) : "compute";
}

/* Writes the events of ranks rcs[0..n); wall times relative to wall0. */
dt_result dt_trace_write(const char *path, dt_rank_ctx *const *rcs, int n, double wall0)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return dt_fail(DT_ERR_IO, "cannot write the trace '%s'", path);
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"wall\"}},\n");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"modeled\"}}");
    for (int i = 0; i < n; i++) {
        const dt_rank_ctx *rc = rcs[i];
        for (int pid = 0; pid < 2; pid++)
            for (int lane = 0; lane < DT_LANES; lane++)
                fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,"
                        "\"args\":{\"name\":\"rank %d%s\"}}", pid, rc->world_rank * 2 + lane,
                        rc->world_rank, lane ? " async" : "");
        for (size_t e = 0; e < rc->ntrace; e++) {
            const dt_trace_ev *ev = &rc->trace[e];
            int tid = rc->world_rank * 2 + ev->lane;
            fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":0,\"tid\":%d,"
                    "\"ts\":%.3f,\"dur\":%.3f}", ev_name(ev->kind),
                    ev->kind < DT_NUM_COLLS ? "comm" : "compute", tid, (ev->w0 - wall0) * 1e6,
                    (ev->w1 - ev->w0) * 1e6);
            fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%d,"
                    "\"ts\":%.3f,\"dur\":%.3f}", ev_name(ev->kind),
                    ev->kind < DT_NUM_COLLS ? "comm" : "compute", tid, ev->m0 * 1e6,
                    (ev->m1 - ev->m0) * 1e6);
        }
    }
    fprintf(f, "\n]}\n");
    if (fclose(f) != 0)
        return dt_fail(DT_ERR_IO, "cannot write the trace '%s'", path);
    return DT_OK;
}
