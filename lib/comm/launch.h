/* launch.h - what the launchers (launch.c, proc.c) share. Not public. */
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
    size_t arena_mb;  /* 0: the default (see proc.c) */
    char job_id[DT_JOB_ID_MAX + 1]; /* "" when unset */
} dt_resolved;

/* Checks in and fills in every default; DT_ERR_INVALID_ARG with a message
 * naming the option or variable and its value when one is bad. */
dt_result dt_opts_resolve(const dt_launch_opts *in, dt_resolved *out);

/* Fills a zeroed job (its board and world group in shared memory). */
dt_result dt_job_init(dt_job *job, const dt_resolved *res, void *arena, size_t arena_bytes);

/* The proc backend's out blocks, from the arena to the caller's out. */
void dt_job_out_return(dt_job *job, const dt_resolved *res);

/* Pins the calling thread to the rank's core when the job binds ranks. */
void dt_rank_bind(const dt_job *job, int world_rank);

void dt_rank_ctx_init(dt_rank_ctx *rc, dt_job *job, int rank, const dt_resolved *res);
void dt_rank_ctx_destroy(dt_rank_ctx *rc);
/* Runs fn on the calling thread as the rank of rc, then ends the rank. */
dt_result dt_rank_run(dt_rank_ctx *rc, dt_rank_fn fn, void *arg);

/* ---------------------------------------------------------------- proc backend */

/* The proc backend (proc.c). */
dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg);

/* The mpi backend (mpi_launch.c, built with DT_HAVE_MPI): runs fn as this
 * process's rank of the MPI job. */
dt_result dt_launch_mpi(const dt_resolved *res, dt_rank_fn fn, void *arg);

#define DT_SEGMENT_NAME_MAX 96
#define DT_PROC_MAGIC 0x64746c6162617261ULL /* "dtlabara" */
#define DT_PROC_VERSION 2

typedef struct {
    dt_trace_ev *ev;
    size_t n;
} dt_proc_trace;

/* The start of a proc job's segment. */
typedef struct {
    uint64_t magic;
    uint32_t version;
    int nranks;
    size_t size;         /* of the whole segment */
    void *base;          /* the address every process maps it at */
    dt_job *job;
    _Atomic int attached;
    int tracing;
    char name[DT_SEGMENT_NAME_MAX];
    dt_proc_trace *traces; /* [nranks], in the arena */
} dt_proc_header;

/* A rank copies its trace events into the arena before it ends. */
void dt_proc_export_trace(dt_proc_header *h, dt_rank_ctx *rc);

/* The segment as a file (segment.c, where the naming rule is). */
/* Creates a new job's segment: a fresh name (written to name, which holds
 * DT_SEGMENT_NAME_MAX chars), O_EXCL, mode 0600, sized by DT_ARENA_MB, mapped
 * at hint (NULL: anywhere). Removes this user's stale segments first. */
dt_result dt_segment_create(const dt_resolved *res, void *hint, char *name, void **base,
                            size_t *size);
/* Opens a job's segment for dt_init: refuses a name that is not a
 * segment's, a segment of another user, one whose mode is not 0600 or one
 * shorter than min_bytes, with a message naming it. An open fd and the
 * segment's size on success. */
dt_result dt_segment_open(const char *name, size_t min_bytes, int *fd, size_t *size);
/* 1 when name has the shape of this user's segments. */
int dt_segment_name_ok(const char *name);
/* Unlinks this user's segments whose launcher is gone; how many. */
int dt_segment_clean_stale(void);

#endif /* DT_COMM_LAUNCH_H */
