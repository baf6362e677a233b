/* launch.c - dt_launch: options, the job's shared state, the thread
 * backend's rank threads, and the end of a rank. */
#include "launch.h"

#include "coll.h"
#include "shm.h"
#include "wait.h"

#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- options */

void dt_launch_opts_init(dt_launch_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->nranks = (int)dt_env_long("DT_NRANKS", 1);
    const char *b = dt_env_str("DT_BACKEND", NULL);
    o->backend = DT_BACKEND_THREAD;
    if (b && dt_backend_parse(b, &o->backend) != DT_OK)
        o->backend = DT_NUM_BACKENDS; /* dt_launch reports it */
    o->net = dt_env_str("DT_NET", NULL);
    o->timeout_s = dt_env_double("DT_TIMEOUT", 30.0);
    o->debug = (int)dt_env_long("DT_DEBUG", 0);
    o->algo = DT_ALGO_AUTO;
    const char *a = dt_env_str("DT_ALGO", NULL);
    if (a && dt_algo_parse(a, &o->algo) != DT_OK)
        o->algo = DT_NUM_ALGOS;
    o->trace_path = dt_env_str("DT_TRACE", NULL);
    o->fault = dt_env_str("DT_FAULT", NULL);
    o->fast = (int)dt_env_long("DT_FAST", 1);
    dt_clear_error();
}

dt_result dt_opts_resolve(const dt_launch_opts *in, dt_resolved *out)
{
    dt_launch_opts d;
    dt_launch_opts_init(&d);
    if (!in)
        in = &d;
    memset(out, 0, sizeof *out);
    out->o = *in;
    dt_launch_opts *o = &out->o;
    if (o->nranks < 1 || o->nranks > DT_MAX_RANKS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: nranks = %d, expected 1 .. %d",
                       o->nranks, DT_MAX_RANKS);
    if (o->backend != DT_BACKEND_THREAD && o->backend != DT_BACKEND_PROC)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: backend %d (%s) is not available; "
                       "use thread or proc", (int)o->backend, dt_backend_name(o->backend));
    if (!o->net)
        o->net = dt_env_str("DT_NET", NULL);
    DT_TRY(dt_net_link(o->net, &out->net));
    if (!(o->timeout_s > 0))
        o->timeout_s = dt_env_double("DT_TIMEOUT", 30.0);
    if (!(o->timeout_s > 0) || isinf(o->timeout_s))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: timeout %g s, expected > 0",
                       o->timeout_s);
    if (o->debug < 0)
        o->debug = (int)dt_env_long("DT_DEBUG", 0);
    if (o->fast < 0)
        o->fast = (int)dt_env_long("DT_FAST", 1);
    if ((int)o->algo < 0 || o->algo >= DT_NUM_ALGOS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: unknown algorithm %d (check DT_ALGO)",
                       (int)o->algo);
    if (o->algo == DT_ALGO_AUTO && dt_env_str("DT_ALGO", NULL))
        DT_TRY(dt_algo_parse(dt_env_str("DT_ALGO", NULL), &o->algo));
    if (!o->trace_path)
        o->trace_path = dt_env_str("DT_TRACE", NULL);
    if (!o->fault)
        o->fault = dt_env_str("DT_FAULT", NULL);
    DT_TRY(dt_fault_parse(o->fault, out->faults, DT_MAX_FAULTS, &out->nfaults));
    return DT_OK;
}

/* ---------------------------------------------------------------- the job */

dt_result dt_job_init(dt_job *job, const dt_resolved *res, void *arena, size_t arena_bytes)
{
    job->magic = DT_JOB_MAGIC;
    job->version = DT_JOB_VERSION;
    job->nranks = res->o.nranks;
    job->backend = res->o.backend;
    job->net = res->net;
    job->timeout_s = res->o.timeout_s;
    /* spin while every rank can have a core of its own, else barely */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double spin_us = job->nranks <= cores ? 20 : 0;
    job->spin_s = dt_env_double("DT_SPIN_US", spin_us) * 1e-6;
    job->bind = dt_env_long("DT_BIND", 0) == 1;
    job->debug = res->o.debug > 0;
    job->fast = res->o.fast > 0;
    job->algo = res->o.algo;
    job->arena = arena;
    job->arena_bytes = arena_bytes;
    job->board = dt_shm_alloc(job, sizeof(dt_board) * (size_t)job->nranks);
    if (!job->board)
        return DT_ERR_NOMEM;
    int *world = malloc(sizeof(int) * (size_t)job->nranks);
    if (!world)
        return dt_fail(DT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < job->nranks; i++)
        world[i] = i;
    job->world = dt_comm_shared_new(job, job->nranks, world);
    free(world);
    return job->world ? DT_OK : DT_ERR_NOMEM;
}

void dt_rank_ctx_init(dt_rank_ctx *rc, dt_job *job, int rank, const dt_resolved *res)
{
    memset(rc, 0, sizeof *rc);
    rc->ops = &dt_emulation_ops; /* thread and proc: the same algorithms */
    rc->job = job;
    rc->world_rank = rank;
    rc->pid = (int)getpid();
    rc->compute_t0 = -1;
    rc->tracing = res->o.trace_path && res->o.trace_path[0];
    pthread_mutex_init(&rc->trace_lock, NULL);
    for (int i = 0; i < res->nfaults; i++)
        if (res->faults[i].rank == rank)
            rc->faults[rc->nfaults++] = res->faults[i];
}

void dt_rank_ctx_destroy(dt_rank_ctx *rc)
{
    dt_rank_free_comms(rc);
    free(rc->trace);
    rc->trace = NULL;
    pthread_mutex_destroy(&rc->trace_lock);
}

/* ---------------------------------------------------------------- thread backend */

typedef struct {
    dt_rank_ctx rc;
    dt_rank_fn fn;
    void *arg;
    pthread_t thread;
    int started;
} rank_thread;

/* Binding is off by default: concurrent jobs (a test suite run in
 * parallel) would all pile onto the first cores. mpirun binds by default,
 * so benchmarks that compare with it set DT_BIND=1. */
void dt_rank_bind(const dt_job *job, int world_rank)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!job->bind || cores < 1)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)(world_rank % cores), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

dt_result dt_rank_run(dt_rank_ctx *rc, dt_rank_fn fn, void *arg)
{
    dt_job *job = rc->job;
    dt_rank_bind(job, rc->world_rank);
    dt_log_set_rank(rc->world_rank);
    dt_mem_ctx *prev = dt_mem_bind(rc->mem);
    dt_comm *world = NULL;
    dt_clear_error();
    dt_result r = dt_comm_make(rc, job->world, rc->world_rank, &world);
    if (r == DT_OK)
        r = fn(world, arg);
    char msg[400];
    snprintf(msg, sizeof msg, "%s", dt_last_error());
    dt_rank_free_comms(rc);
    dt_rank_end(job, rc->world_rank, r, msg);
    dt_mem_bind(prev);
    dt_log_set_rank(-1);
    return r;
}

static void *rank_thread_main(void *p)
{
    rank_thread *t = p;
    dt_rank_run(&t->rc, t->fn, t->arg);
    return NULL;
}

static dt_result launch_threads(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    int n = res->o.nranks;
    dt_job *job = calloc(1, sizeof *job);
    rank_thread *t = calloc((size_t)n, sizeof *t);
    if (!job || !t) {
        free(job);
        free(t);
        return dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for %d ranks", n);
    }
    dt_result r = dt_job_init(job, res, NULL, 0);
    double wall0 = dt_now();
    for (int i = 0; r == DT_OK && i < n; i++) {
        dt_rank_ctx_init(&t[i].rc, job, i, res);
        t[i].rc.mem = dt_mem_ctx_create();
        t[i].fn = fn;
        t[i].arg = arg;
    }
    for (int i = 0; r == DT_OK && i < n; i++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, n > 64 ? 1 << 20 : 8 << 20);
        t[i].started = pthread_create(&t[i].thread, &at, rank_thread_main, &t[i]) == 0;
        pthread_attr_destroy(&at);
        if (!t[i].started) {
            char msg[80];
            snprintf(msg, sizeof msg, "could not start the thread of rank %d", i);
            dt_rank_end(job, i, DT_ERR_NOMEM, msg);
        }
    }
    for (int i = 0; r == DT_OK && i < n; i++)
        if (t[i].started)
            pthread_join(t[i].thread, NULL);
    if (r == DT_OK) {
        r = dt_job_result(job);
        char keep[512];
        snprintf(keep, sizeof keep, "%s", dt_last_error());
        if (res->o.trace_path && res->o.trace_path[0]) {
            dt_rank_ctx **rcs = malloc(sizeof *rcs * (size_t)n);
            for (int i = 0; rcs && i < n; i++)
                rcs[i] = &t[i].rc;
            dt_result tr = rcs ? dt_trace_write(res->o.trace_path, rcs, n, wall0) : DT_ERR_NOMEM;
            free(rcs);
            if (r == DT_OK)
                r = tr;
            else
                dt_fail(r, "%s", keep);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!t[i].rc.job)
            continue;
        dt_rank_ctx_destroy(&t[i].rc);
        dt_mem_ctx_release(t[i].rc.mem);
    }
    /* ranks that never started still hold their references to the world */
    for (int i = 0; job->world && i < n; i++)
        if (!t[i].started)
            dt_comm_shared_unref(job, job->world);
    dt_shm_free(job, job->board);
    free(job);
    free(t);
    return r;
}

dt_result dt_launch(const dt_launch_opts *opts, dt_rank_fn fn, void *arg)
{
    if (!fn)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: fn is NULL");
    dt_resolved res;
    DT_TRY(dt_opts_resolve(opts, &res));
    if (res.o.backend == DT_BACKEND_PROC)
        return dt_launch_proc(&res, fn, arg);
    return launch_threads(&res, fn, arg);
}
