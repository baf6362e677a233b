/* trace.h - DT_TRACE: each rank's compute and communication regions, and
 * the program's own marks (dt_trace_begin, dt_trace_instant), written in
 * the Chrome trace-event format at the end of the job (trace.c). */
#ifndef DT_COMM_TRACE_H
#define DT_COMM_TRACE_H

#include "dt/core.h"
#include "dt/net.h" /* DT_NUM_COLLS */

/* Kinds beyond the collectives' (dt_coll_kind): a compute region, a
 * program's named region, a program's instant. */
enum { DT_TRACE_COMPUTE = DT_NUM_COLLS, DT_TRACE_REGION, DT_TRACE_INSTANT };
enum { DT_TRACE_NAME = 32, DT_TRACE_DEPTH = 8 };

typedef struct dt_trace_ev {
    int kind; /* dt_coll_kind or DT_TRACE_* */
    int lane;
    double w0, w1, m0, m1;      /* wall and modeled start and end */
    char name[DT_TRACE_NAME];   /* REGION, INSTANT: the program's name */
} dt_trace_ev;

/* A region dt_trace_begin opened on the rank, not yet ended. */
typedef struct {
    char name[DT_TRACE_NAME];
    double w0, m0;
} dt_trace_open;

struct dt_rank_ctx;

/* Records an event on the rank when tracing. */
void dt_trace_add(struct dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                  double m1);

/* Records an instant named name (cut to DT_TRACE_NAME - 1 characters) on
 * the rank's track, now, when tracing: the library's own marks (a kill). */
void dt_trace_mark(struct dt_rank_ctx *rc, const char *name);

/* Writes the events of ranks rcs[0..n); wall times relative to wall0.
 * append: after the events already in path (dt_launch_opts.trace_append). */
dt_result dt_trace_write(const char *path, int append, struct dt_rank_ctx *const *rcs, int n,
                         double wall0);

#endif /* DT_COMM_TRACE_H */
