/* launch.c - lab 04's given launchers: lab_ps_launch and lab_hogwild_launch
 * start the ranks on the backend opts->backend names (thread, proc or mpi)
 * and gather what the tests and run.c read into the caller's result.
 * Nothing to write here.
 *
 * Each rank runs on a result of its own, with the arrays of the caller's:
 * the lab's code and the given records write there, the same way on every
 * backend. When its function has returned, the rank packs its part of that
 * result (a server: its count, its row of staleness, its shard, server 0's
 * trace; a worker: its count; every rank: its clock) into its block of the
 * launch's out (dt_rank_out), and the launcher unpacks every block into the
 * caller's result when the launch ends. A thread rank could write the
 * caller's memory itself; a proc or mpi rank cannot (its memory is its own
 * process's), so no rank does. One function per launcher describes a
 * block, for both directions: packing and unpacking cannot disagree. */
#include "async.h"

#include <stdlib.h>
#include <string.h>

/* Copies n bytes between a rank's block and a result: into the block when
 * packing, out of it when unpacking. */
static void move(int pack, void *block, void *res, size_t n)
{
    if (n == 0)
        return;
    if (pack)
        memcpy(block, res, n);
    else
        memcpy(res, block, n);
}

static size_t round8(size_t n) { return (n + 7) & ~(size_t)7; }

/* ---------------------------------------------------------------- parameter server */

void lab_ps_result_free(lab_ps_result *res)
{
    if (!res)
        return;
    free(res->params);
    free(res->staleness);
    free(res->trace_version);
    free(res->trace_clock);
    free(res->trace_params);
    res->params = NULL, res->staleness = NULL, res->trace_version = NULL;
    res->trace_clock = NULL, res->trace_params = NULL;
}

/* What every block starts with; the arrays follow at ps_job's offsets. */
typedef struct {
    double clock;        /* the rank's modeled clock at its end */
    int applied, pushed; /* a server's gradients applied; a worker's pushed */
    int trace_len;       /* server 0 of a traced run */
    int has_shard;       /* the server returned DT_OK: its shard is in the block */
    size_t shard_offset, shard_count;
} ps_head;

typedef struct {
    const lab_ps_config *cfg;
    int workers;
    int trace_every, trace_cap; /* 0, 0: no trace */
    /* a block: the head, then these arrays (offsets in bytes) */
    size_t trace_clock, staleness, trace_version, params, trace_params, bytes;
} ps_job;

static void ps_layout(ps_job *job)
{
    const size_t cap = (size_t)job->trace_cap, n = lab_num_params();
    size_t at = round8(sizeof(ps_head)); /* the doubles first: aligned */
    job->trace_clock = at, at += cap * sizeof(double);
    job->staleness = at, at += (size_t)job->cfg->updates * sizeof(int);
    job->trace_version = at, at += cap * sizeof(int);
    job->params = at, at += n * sizeof(float);
    job->trace_params = at, at += cap * n * sizeof(float);
    job->bytes = round8(at); /* the next block's head stays aligned */
}

/* Zeroes res and gives it the arrays of the run (the trace's when
 * with_trace and the run is traced). */
static dt_result ps_result_init(lab_ps_result *res, const ps_job *job, int with_trace)
{
    const size_t S = (size_t)job->cfg->servers, cap = (size_t)job->trace_cap;
    memset(res, 0, sizeof *res);
    res->servers = (int)S, res->workers = job->workers, res->num_params = lab_num_params();
    res->trace_every = with_trace ? job->trace_every : 0;
    res->params = calloc(res->num_params, sizeof *res->params);
    res->staleness = calloc(S * (size_t)job->cfg->updates, sizeof *res->staleness);
    if (res->trace_every) {
        res->trace_version = calloc(cap, sizeof *res->trace_version);
        res->trace_clock = calloc(cap, sizeof *res->trace_clock);
        res->trace_params = calloc(cap * res->num_params, sizeof *res->trace_params);
    }
    if (!res->params || !res->staleness ||
        (res->trace_every && (!res->trace_version || !res->trace_clock || !res->trace_params))) {
        lab_ps_result_free(res);
        return dt_fail(DT_ERR_NOMEM, "lab_ps_launch: result arrays");
    }
    return DT_OK;
}

/* Rank `rank`'s part of res, into its block (pack) or out of it. */
static void ps_block(const ps_job *job, lab_ps_result *res, int rank, char *block, int pack)
{
    ps_head *h = (ps_head *)block;
    const int S = job->cfg->servers;
    const size_t U = (size_t)job->cfg->updates, n = res->num_params;
    move(pack, &h->clock, &res->clock[rank], sizeof h->clock);
    if (rank >= S) {
        move(pack, &h->pushed, &res->pushed[rank - S], sizeof h->pushed);
        return;
    }
    move(pack, &h->applied, &res->applied[rank], sizeof h->applied);
    move(pack, block + job->staleness, res->staleness + (size_t)rank * U, U * sizeof(int));
    if (h->has_shard && h->shard_offset <= n && h->shard_count <= n - h->shard_offset)
        move(pack, block + job->params, res->params + h->shard_offset,
             h->shard_count * sizeof(float));
    if (rank == 0 && job->trace_every) {
        move(pack, &h->trace_len, &res->trace_len, sizeof h->trace_len);
        size_t k = h->trace_len < 0 ? 0 : (size_t)h->trace_len;
        k = k < (size_t)job->trace_cap ? k : (size_t)job->trace_cap;
        move(pack, block + job->trace_version, res->trace_version, k * sizeof(int));
        move(pack, block + job->trace_clock, res->trace_clock, k * sizeof(double));
        move(pack, block + job->trace_params, res->trace_params, k * n * sizeof(float));
    }
}

static dt_result ps_rank(dt_comm *world, void *arg)
{
    const ps_job *job = arg;
    const int rank = dt_comm_rank(world), S = job->cfg->servers;
    lab_ps_result mine;
    DT_CHECK(ps_result_init(&mine, job, rank == 0));
    dt_result r = rank < S ? lab_ps_server(world, job->cfg, &mine)
                           : lab_ps_worker(world, job->cfg, &mine);
    mine.clock[rank] = dt_clock(world);
    char *block = dt_rank_out(world);
    ps_head *h = (ps_head *)block;
    /* the shard a server wrote back: the range lab_server_setup took */
    if (r == DT_OK && rank < S)
        h->has_shard = lab_shard_range(mine.num_params, S, rank, &h->shard_offset,
                                       &h->shard_count) == DT_OK;
    ps_block(job, &mine, rank, block, 1);
    lab_ps_result_free(&mine);
    return r;
}

dt_result lab_ps_launch(const dt_launch_opts *opts, const lab_ps_config *cfg,
                        lab_ps_result *res)
{
    if (!opts || !cfg || !res || !cfg->train)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_launch: NULL argument");
    int S = cfg->servers, K = opts->nranks - cfg->servers;
    if (S < 1 || S > LAB_MAX_SERVERS || K < 1 || K > LAB_MAX_WORKERS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_launch: %d ranks, %d servers (1..%d "
                       "servers and 1..%d workers)", opts->nranks, S, LAB_MAX_SERVERS,
                       LAB_MAX_WORKERS);
    if (cfg->updates < 1 || (cfg->sync && cfg->updates < K) || cfg->batch < 1 ||
        cfg->bound < -1 || (cfg->sync && cfg->bound >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_launch: updates %d, batch %d, bound %d, "
                       "sync %d", cfg->updates, cfg->batch, cfg->bound, cfg->sync);
    ps_job job = {.cfg = cfg, .workers = K};
    if (res->trace_every > 0 && S == 1) {
        job.trace_every = res->trace_every;
        job.trace_cap = cfg->updates / job.trace_every + 2; /* as trace_point's */
    }
    ps_layout(&job);
    DT_CHECK(ps_result_init(res, &job, 1));
    dt_launch_opts o = *opts;
    o.out = calloc((size_t)opts->nranks, job.bytes);
    o.out_bytes = job.bytes;
    if (!o.out) {
        lab_ps_result_free(res);
        return dt_fail(DT_ERR_NOMEM, "lab_ps_launch: %d blocks of %zu bytes", opts->nranks,
                       job.bytes);
    }
    dt_result r = dt_launch(&o, ps_rank, &job);
    for (int rank = 0; rank < opts->nranks; rank++) /* after a failure too */
        ps_block(&job, res, rank, (char *)o.out + (size_t)rank * job.bytes, 0);
    free(o.out);
    return r;
}

/* ---------------------------------------------------------------- Hogwild! */

void lab_hogwild_result_free(lab_hogwild_result *res)
{
    if (!res)
        return;
    free(res->params);
    res->params = NULL;
}

/* A block: this head, then rank 0's copy of the parameters. */
typedef struct {
    double clock;
    uint64_t messages;
    int steps;
} hogwild_head;

typedef struct {
    const lab_hogwild_config *cfg;
    size_t params, bytes; /* the parameters' offset in a block; its size */
} hogwild_job;

static dt_result hogwild_result_init(lab_hogwild_result *res, int workers)
{
    memset(res, 0, sizeof *res);
    res->workers = workers;
    res->num_params = lab_num_params();
    res->params = calloc(res->num_params, sizeof *res->params);
    if (!res->params)
        return dt_fail(DT_ERR_NOMEM, "lab_hogwild_launch: result arrays");
    return DT_OK;
}

static void hogwild_block(const hogwild_job *job, lab_hogwild_result *res, int rank,
                          char *block, int pack)
{
    hogwild_head *h = (hogwild_head *)block;
    move(pack, &h->clock, &res->clock[rank], sizeof h->clock);
    move(pack, &h->messages, &res->messages[rank], sizeof h->messages);
    move(pack, &h->steps, &res->steps[rank], sizeof h->steps);
    if (rank == 0)
        move(pack, block + job->params, res->params, res->num_params * sizeof(float));
}

static dt_result hogwild_rank(dt_comm *world, void *arg)
{
    const hogwild_job *job = arg;
    const int rank = dt_comm_rank(world);
    lab_hogwild_result mine;
    DT_CHECK(hogwild_result_init(&mine, dt_comm_size(world)));
    dt_result r = lab_hogwild_worker(world, job->cfg, &mine);
    dt_stats st;
    if (dt_comm_stats(world, &st) == DT_OK) {
        uint64_t calls = 0;
        for (int k = 0; k < DT_NUM_COLLS; k++)
            if (k != DT_COLL_BARRIER)
                calls += st.calls[k];
        mine.messages[rank] = calls;
    }
    mine.clock[rank] = dt_clock(world);
    hogwild_block(job, &mine, rank, dt_rank_out(world), 1);
    lab_hogwild_result_free(&mine);
    return r;
}

dt_result lab_hogwild_launch(const dt_launch_opts *opts, const lab_hogwild_config *cfg,
                             lab_hogwild_result *res)
{
    if (!opts || !cfg || !res || !cfg->train)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_hogwild_launch: NULL argument");
    if (opts->nranks < 1 || opts->nranks > LAB_MAX_RANKS || cfg->updates < 0 || cfg->batch < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_hogwild_launch: %d ranks (1..%d), updates %d, "
                       "batch %d", opts->nranks, LAB_MAX_RANKS, cfg->updates, cfg->batch);
    hogwild_job job = {cfg, round8(sizeof(hogwild_head)), 0};
    job.bytes = round8(job.params + lab_num_params() * sizeof(float));
    DT_CHECK(hogwild_result_init(res, opts->nranks));
    dt_launch_opts o = *opts;
    o.out = calloc((size_t)opts->nranks, job.bytes);
    o.out_bytes = job.bytes;
    if (!o.out) {
        lab_hogwild_result_free(res);
        return dt_fail(DT_ERR_NOMEM, "lab_hogwild_launch: %d blocks of %zu bytes",
                       opts->nranks, job.bytes);
    }
    dt_result r = dt_launch(&o, hogwild_rank, &job);
    for (int rank = 0; rank < opts->nranks; rank++) /* after a failure too */
        hogwild_block(&job, res, rank, (char *)o.out + (size_t)rank * job.bytes, 0);
    free(o.out);
    return r;
}
