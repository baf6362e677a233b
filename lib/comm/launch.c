/* launch.c - dt_launch: options, the job's shared state, a rank's context
 * and its run; the backend's launch starts the ranks (backend.h). */
#include "launch.h"

#include "backend.h"
#include "shm.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How long a wait spins before it sleeps, when every rank has a core of its
 * own: about what a wake-up through the futex costs. */
#define SPIN_DEFAULT_US 20

/* ---------------------------------------------------------------- options */

/* What a launch accepts from the environment (comm.h lists the variables).
 * A deadline below a millisecond lets no call finish; one above eleven days
 * is a typo, and would overflow the futex waits' timespec long before. */
#define TIMEOUT_DEFAULT_S 30.0
#define TIMEOUT_MIN_S 1e-3
#define TIMEOUT_MAX_S 1e6
#define SPIN_MAX_US 1e6
/* All the out blocks of a launch together: the mpi backend sends a block as
 * one message, whose count MPI takes as an int. */
#define OUT_MAX_BYTES ((size_t)1 << 30)
#define ARENA_MB_MAX ((long)(SIZE_MAX >> 20)) /* so that MB << 20 is still a size_t */

/* Prefixes the message of a failed parse with where the text came from. */
static dt_result named(const char *what, dt_result r)
{
    char why[400];
    snprintf(why, sizeof why, "%s", dt_last_error());
    return dt_fail(r, "%s: %s", what, why);
}

/* DT_JOB_ID becomes part of a file name in /dev/shm (see segment.c). */
static dt_result read_job_id(char *out, size_t cap)
{
    const char *v = dt_env_str("DT_JOB_ID", "");
    size_t len = strlen(v);
    if (len >= cap || strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                "0123456789._-") != len)
        return dt_fail(DT_ERR_INVALID_ARG, "DT_JOB_ID='%.100s': expected at most %zu letters, "
                       "digits, '.', '_' or '-'", v, cap - 1);
    memcpy(out, v, len + 1);
    return DT_OK;
}

/* The knobs only the launch itself reads (not fields of dt_launch_opts). */
static dt_result read_knobs(dt_resolved *k)
{
    long bind, arena_mb;
    DT_TRY(dt_env_double("DT_SPIN_US", -1, 0, SPIN_MAX_US, &k->spin_us));
    DT_TRY(dt_env_long("DT_BIND", 0, 0, 1, &bind));
    DT_TRY(dt_env_long("DT_ARENA_MB", 0, 1, ARENA_MB_MAX, &arena_mb));
    k->bind = (int)bind;
    k->arena_mb = (size_t)arena_mb;
    return read_job_id(k->job_id, sizeof k->job_id);
}

/* Fills the fields of o that are unset (net, trace_path and fault NULL,
 * timeout_s 0, debug and fast -1, algo AUTO) from the environment, checking each
 * variable it reads; then reads the launch's own knobs into k. */
static dt_result read_env(dt_launch_opts *o, dt_resolved *k)
{
    const char *net = dt_env_str("DT_NET", NULL), *algo = dt_env_str("DT_ALGO", NULL);
    const char *fault = dt_env_str("DT_FAULT", NULL);
    if (!o->net && net) {
        dt_net_topo topo;
        if (dt_net_topo_parse(net, &topo) != DT_OK)
            return named("DT_NET", DT_ERR_INVALID_ARG);
        o->net = net;
    }
    if (o->timeout_s == 0)
        DT_TRY(dt_env_double("DT_TIMEOUT", TIMEOUT_DEFAULT_S, TIMEOUT_MIN_S, TIMEOUT_MAX_S,
                             &o->timeout_s));
    if (o->debug == -1) {
        long debug;
        DT_TRY(dt_env_long("DT_DEBUG", 0, 0, 1, &debug));
        o->debug = (int)debug;
    }
    if (o->algo == DT_ALGO_AUTO && algo && dt_algo_parse(algo, &o->algo) != DT_OK)
        return named("DT_ALGO", DT_ERR_INVALID_ARG);
    if (o->fast == -1) {
        long fast;
        DT_TRY(dt_env_long("DT_FAST", 1, 0, 1, &fast));
        o->fast = (int)fast;
    }
    if (!o->trace_path)
        o->trace_path = dt_env_str("DT_TRACE", NULL);
    if (!o->fault && fault) {
        if (dt_fault_parse(fault, k->faults, DT_MAX_FAULTS, &k->nfaults) != DT_OK)
            return named("DT_FAULT", DT_ERR_INVALID_ARG);
        o->fault = fault;
    }
    return read_knobs(k);
}

dt_result dt_launch_opts_init(dt_launch_opts *o)
{
    if (!o)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch_opts_init: o is NULL");
    memset(o, 0, sizeof *o); /* backend 0: threads, dt/comm.h's default */
    o->debug = -1;
    o->algo = DT_ALGO_AUTO;
    o->fast = -1;
    long nranks = 1;
    const char *b = dt_env_str("DT_BACKEND", NULL);
    dt_resolved scratch;
    memset(&scratch, 0, sizeof scratch);
    dt_result r = dt_env_long("DT_NRANKS", 1, 1, DT_MAX_RANKS, &nranks);
    if (r == DT_OK && b && dt_backend_parse(b, &o->backend) != DT_OK)
        r = named("DT_BACKEND", DT_ERR_INVALID_ARG);
    o->nranks = (int)nranks;
    if (r == DT_OK)
        r = read_env(o, &scratch);
    if (r != DT_OK) /* kept for dt_launch, for a caller that does not look here */
        snprintf(o->env_error, sizeof o->env_error, "%s", dt_last_error());
    else
        dt_clear_error();
    return r;
}

dt_result dt_fault_spec_check(const char *spec)
{
    dt_fault faults[DT_MAX_FAULTS];
    int n;
    if (!spec)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_fault_spec_check: spec is NULL");
    return dt_fault_parse(spec, faults, DT_MAX_FAULTS, &n);
}

dt_result dt_opts_resolve(const dt_launch_opts *in, dt_resolved *out)
{
    dt_launch_opts d;
    if (!in) {
        DT_TRY(dt_launch_opts_init(&d));
        in = &d;
    }
    if (in->env_error[0])
        return dt_fail(DT_ERR_INVALID_ARG, "%s", in->env_error);
    memset(out, 0, sizeof *out);
    out->o = *in;
    dt_launch_opts *o = &out->o;
    if (o->nranks < 1 || o->nranks > DT_MAX_RANKS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: nranks = %d, expected 1 .. %d",
                       o->nranks, DT_MAX_RANKS);
    if (!dt_backend_of(o->backend))
        return dt_backend_unavailable(o->backend);
    if (!(o->timeout_s == 0 || (o->timeout_s >= TIMEOUT_MIN_S && o->timeout_s <= TIMEOUT_MAX_S)))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: timeout_s = %g, expected %g to %g s "
                       "(0: DT_TIMEOUT, else %g s)", o->timeout_s, TIMEOUT_MIN_S,
                       TIMEOUT_MAX_S, TIMEOUT_DEFAULT_S);
    if (o->debug < -1 || o->debug > 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: debug = %d, expected 0, 1 or -1 "
                       "(DT_DEBUG)", o->debug);
    if (o->fast < -1 || o->fast > 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: fast = %d, expected 0, 1 or -1 "
                       "(DT_FAST)", o->fast);
    if ((int)o->algo < 0 || o->algo >= DT_NUM_ALGOS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: unknown algorithm %d", (int)o->algo);
    if ((o->out == NULL) != (o->out_bytes == 0) || o->out_bytes > OUT_MAX_BYTES / (size_t)o->nranks)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: out %s with out_bytes = %zu: expected "
                       "both or neither, and %d blocks of at most %zu bytes in all",
                       o->out ? "set" : "NULL", o->out_bytes, o->nranks, (size_t)OUT_MAX_BYTES);
    DT_TRY(read_env(o, out)); /* what came from there is checked there, by name */
    if (dt_net_topo_parse(o->net, &out->net) != DT_OK)
        return named("dt_launch: net", DT_ERR_INVALID_ARG);
    if (dt_net_topo_check(&out->net, o->nranks) != DT_OK) { /* the ranks must fit its nodes */
        char what[200];
        snprintf(what, sizeof what, "dt_launch: net '%.160s'", o->net);
        return named(what, DT_ERR_INVALID_ARG);
    }
    if (dt_fault_parse(o->fault, out->faults, DT_MAX_FAULTS, &out->nfaults) != DT_OK)
        return named("dt_launch: fault", DT_ERR_INVALID_ARG);
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
    double spin_us = job->nranks <= cores ? SPIN_DEFAULT_US : 0;
    job->spin_s = (res->spin_us >= 0 ? res->spin_us : spin_us) * 1e-6;
    job->bind = res->bind;
    job->debug = res->o.debug > 0;
    job->fast = res->o.fast > 0;
    job->algo = res->o.algo;
    job->arena = arena;
    job->arena_bytes = arena_bytes;
    job->board = dt_shm_alloc(job, sizeof(dt_board) * (size_t)job->nranks);
    if (!job->board)
        return DT_ERR_NOMEM;
    if (res->o.out) { /* proc: in the arena, copied back by dt_job_out_return */
        size_t all = res->o.out_bytes * (size_t)job->nranks;
        job->out = arena ? dt_shm_alloc(job, all) : res->o.out;
        if (!job->out)
            return dt_fail(DT_ERR_NOMEM, "dt_launch: %zu bytes of out blocks do not fit in the "
                           "job's shared memory (DT_ARENA_MB)", all);
        job->out_bytes = res->o.out_bytes;
        memset(job->out, 0, all);
    }
    int *world = malloc(sizeof(int) * (size_t)job->nranks);
    if (!world)
        return dt_fail(DT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < job->nranks; i++)
        world[i] = i;
    job->world = dt_comm_shared_new(job, job->nranks, world);
    free(world);
    return job->world ? DT_OK : DT_ERR_NOMEM;
}

void dt_job_out_return(dt_job *job, const dt_resolved *res)
{
    if (job->out && job->out != (char *)res->o.out)
        memcpy(res->o.out, job->out, job->out_bytes * (size_t)job->nranks);
}

void *dt_rank_out(const dt_comm *comm)
{
    if (!comm || atomic_load(&comm->magic) != DT_COMM_LIVE || !comm->rc->job->out)
        return NULL;
    return comm->rc->job->out + (size_t)comm->rc->world_rank * comm->rc->job->out_bytes;
}

void dt_rank_ctx_init(dt_rank_ctx *rc, dt_job *job, int rank, const dt_resolved *res)
{
    memset(rc, 0, sizeof *rc);
    rc->ops = dt_backend_of(job->backend);
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

/* ---------------------------------------------------------------- a rank */

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
    if (r == DT_OK && rc->ops->rank_start)
        r = rc->ops->rank_start(world);
    if (r == DT_OK)
        r = fn(world, arg);
    char msg[DT_MSG_MAX];
    snprintf(msg, sizeof msg, "%s", dt_last_error());
    if (rc->ops->rank_end)
        rc->ops->rank_end(rc);
    dt_rank_free_comms(rc);
    dt_rank_end(job, rc->world_rank, r, msg);
    dt_mem_bind(prev);
    dt_log_set_rank(-1);
    return r;
}

dt_result dt_launch(const dt_launch_opts *opts, dt_rank_fn fn, void *arg)
{
    if (!fn)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: fn is NULL");
    dt_resolved res;
    DT_TRY(dt_opts_resolve(opts, &res));
    return dt_backend_of(res.o.backend)->launch(&res, fn, arg);
}
