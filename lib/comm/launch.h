/* launch.h - dt_launch's options and what every backend's launcher shares
 * (launch.c): the job, a rank's context and its run. Not public. */
#ifndef DT_COMM_LAUNCH_H
#define DT_COMM_LAUNCH_H

#include "handle.h"
#include "rank.h"

/* The longest DT_JOB_ID: it becomes part of the segment's name. */
#define DT_JOB_ID_MAX 40

/* dt_launch_opts with every default filled in and the strings parsed, and
 * the knobs that only the launch reads (DT_SPIN_US, DT_BIND, DT_ARENA_MB,
 * DT_JOB_ID), checked. */
typedef struct {
    dt_launch_opts o;
    dt_net_topo net;
    dt_fault faults[DT_MAX_FAULTS];
    int nfaults;
    double spin_us;   /* < 0: the default (SPIN_DEFAULT_US when ranks <= cores) */
    int bind;
    size_t arena_mb;  /* 0: the default (see emul/segment.c) */
    char job_id[DT_JOB_ID_MAX + 1]; /* "" when unset */
} dt_resolved;

/* Checks in and fills in every default; DT_ERR_INVALID_ARG with a message
 * naming the option or variable and its value when one is bad. */
dt_result dt_opts_resolve(const dt_launch_opts *in, dt_resolved *out);

/* Fills a zeroed job (its board and world group in shared memory). */
dt_result dt_job_init(dt_job *job, const dt_resolved *res, void *arena, size_t arena_bytes);

/* The out blocks of a job whose ranks wrote them into its arena (proc),
 * to the caller's out. */
void dt_job_out_return(dt_job *job, const dt_resolved *res);

/* Pins the calling thread to the rank's core when the job binds ranks. */
void dt_rank_bind(const dt_job *job, int world_rank);

void dt_rank_ctx_init(dt_rank_ctx *rc, dt_job *job, int rank, const dt_resolved *res);
void dt_rank_ctx_destroy(dt_rank_ctx *rc);
/* Runs fn on the calling thread as the rank of rc, then ends the rank. */
dt_result dt_rank_run(dt_rank_ctx *rc, dt_rank_fn fn, void *arg);

#endif /* DT_COMM_LAUNCH_H */
