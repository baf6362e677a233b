/* trace.h - DT_TRACE: each rank's compute and communication regions, written
 * in the Chrome trace-event format at the end of the job (trace.c). */
#ifndef DT_COMM_TRACE_H
#define DT_COMM_TRACE_H

#include "dt/core.h"

typedef struct dt_trace_ev {
    int kind; /* dt_coll_kind, or DT_NUM_COLLS for compute */
    int lane;
    double w0, w1, m0, m1; /* wall and modeled start and end */
} dt_trace_ev;

struct dt_rank_ctx;

/* Records an event on the rank when tracing. */
void dt_trace_add(struct dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                  double m1);

/* Writes the events of ranks rcs[0..n); wall times relative to wall0. */
dt_result dt_trace_write(const char *path, struct dt_rank_ctx *const *rcs, int n, double wall0);

#endif /* DT_COMM_TRACE_H */
