/* launch.h - what the launchers (launch.c, proc.c) share. Not public. */
#ifndef DT_COMM_LAUNCH_H
#define DT_COMM_LAUNCH_H

#include "handle.h"
#include "rank.h"

/* dt_launch_opts with every default filled in and the strings parsed. */
typedef struct {
    dt_launch_opts o;
    dt_net net;
    dt_fault faults[DT_MAX_FAULTS];
    int nfaults;
} dt_resolved;

dt_result dt_opts_resolve(const dt_launch_opts *in, dt_resolved *out);

/* Fills a zeroed job (its board and world group in shared memory). */
dt_result dt_job_init(dt_job *job, const dt_resolved *res, void *arena, size_t arena_bytes);

/* Pins the calling thread to the rank's core when the job binds ranks. */
void dt_rank_bind(const dt_job *job, int world_rank);

void dt_rank_ctx_init(dt_rank_ctx *rc, dt_job *job, int rank, const dt_resolved *res);
void dt_rank_ctx_destroy(dt_rank_ctx *rc);
/* Runs fn on the calling thread as the rank of rc, then ends the rank. */
dt_result dt_rank_run(dt_rank_ctx *rc, dt_rank_fn fn, void *arg);

/* The proc backend (proc.c). */
dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg);

#endif /* DT_COMM_LAUNCH_H */
