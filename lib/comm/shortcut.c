/* shortcut.c - collectives that use the shared address space directly,
 * and the modeled price they charge (what their network algorithm would
 * cost, so that the modeled clock does not depend on the shortcut).
 *
 * One-pass allreduce (thread backend): every rank publishes its input and
 * output addresses; rank r owns chunk r and, block by block, reduces that
 * chunk over all inputs (in rank order) and writes the result into every
 * output. Each byte of input is read once and each byte of output written
 * once: about 2*n*N bytes of memory traffic in all, the floor. A second
 * barrier keeps every output alive until all writers are done.
 *
 * Barrier: the counter barrier of dt_sync_exchange, priced as a
 * dissemination barrier (ceil(log2 N) rounds of alpha). */
#include "algo.h"

#include <math.h>
#include <string.h>

/* Elements per block: the partial result stays in L1. */
#define BLOCK_BYTES 8192

static double wire(const dt_job *job, double bytes)
{
    return isinf(job->beta) ? 0.0 : bytes / job->beta;
}

double dt_model_allreduce(const dt_job *job, dt_algo algo, size_t count, size_t es, int n,
                          int rank, uint64_t *bytes, uint64_t *msgs)
{
    *bytes = 0;
    *msgs = 0;
    if (n <= 1)
        return 0.0;
    double total = (double)count * (double)es;
    if (algo == DT_ALGO_TREE) {
        int p = 1, steps = 0;
        while (p * 2 <= n) {
            p *= 2;
            steps++;
        }
        int extra = p < n ? 2 : 0;
        *bytes = (uint64_t)(steps + (extra ? 1 : 0)) * count * es;
        *msgs = (uint64_t)(steps + (extra ? 1 : 0));
        return (steps + extra) * (job->alpha + wire(job, total));
    }
    /* ring (and direct, priced alike): 2(N-1) steps of one chunk each;
     * this rank's chunks as the ring would cut them */
    for (int s = 0; s < n - 1; s++) {
        *bytes += dt_chunk_len(count, n, (rank - s - 1 + 2 * n) % n) * es;
        *bytes += dt_chunk_len(count, n, (rank - s + n) % n) * es;
    }
    *msgs = 2 * (uint64_t)(n - 1);
    /* T = 2(N-1) (alpha + n/(N beta)) */
    return 2.0 * (n - 1) * (job->alpha + wire(job, total / n));
}

/* The latest entry clock of all ranks (a collective cannot finish on any
 * rank before every rank has joined it). */
static double max_clock(const dt_rec *all, int n)
{
    double t = all[0].clock;
    for (int i = 1; i < n; i++)
        if (all[i].clock > t)
            t = all[i].clock;
    return t;
}

dt_result dt_shortcut_allreduce(dt_op *op, const dt_coll_args *a)
{
    dt_comm *c = op->comm;
    int n = c->size, r = c->rank;
    size_t es = dt_dtype_size(a->dtype), count = a->count;
    size_t blk = BLOCK_BYTES / es;
    char *acc = dt_scratch(c, op->lane, BLOCK_BYTES);
    if (!acc)
        return dt_fail(DT_ERR_NOMEM, "no memory for the allreduce block");
    dt_rec mine = {{(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)a->recvbuf}, op->t};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(op, &mine, &all));
    double t0 = max_clock(all, n);
    size_t lo = dt_chunk_off(count, n, r), hi = lo + dt_chunk_len(count, n, r);
    for (size_t b = lo; b < hi; b += blk) {
        size_t len = hi - b < blk ? hi - b : blk;
        const char *in0 = (const char *)(uintptr_t)all[0].w[0];
        const char *in1 = (const char *)(uintptr_t)all[1].w[0];
        dt_reduce3(acc, in0 + b * es, in1 + b * es, len, a->dtype, a->op);
        for (int j = 2; j < n; j++)
            dt_reduce_into(acc, (const char *)(uintptr_t)all[j].w[0] + b * es, len, a->dtype,
                           a->op);
        if (a->op == DT_AVG)
            dt_reduce_avg(acc, len, a->dtype, n);
        for (int j = 0; j < n; j++)
            memcpy((char *)(uintptr_t)all[j].w[1] + b * es, acc, len * es);
    }
    uint64_t bytes, msgs;
    double cost = dt_model_allreduce(c->rc->job, DT_ALGO_RING, count, es, n, r, &bytes, &msgs);
    /* the end barrier: no output may be released while others write it */
    dt_rec done = {{0, 0}, op->t};
    DT_TRY(dt_sync_exchange(op, &done, &all));
    op->t = t0 + cost;
    if (op->counted) {
        dt_stats_msg(c, 1, bytes, msgs);
        dt_stats_msg(c, 0, bytes, msgs);
    }
    return DT_OK;
}

dt_result dt_alg_barrier(dt_op *op)
{
    dt_comm *c = op->comm;
    int n = c->size;
    if (n == 1)
        return DT_OK;
    dt_rec mine = {{0, 0}, op->t};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(op, &mine, &all));
    int rounds = 0;
    while ((1 << rounds) < n)
        rounds++;
    op->t = max_clock(all, n) + rounds * c->rc->job->alpha;
    if (op->counted) {
        dt_stats_msg(c, 1, 0, (uint64_t)rounds);
        dt_stats_msg(c, 0, 0, (uint64_t)rounds);
    }
    return DT_OK;
}
