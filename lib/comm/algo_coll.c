/* algo_coll.c - each collective as ring, tree and direct algorithms, put
 * together from the blocks of algo_blocks.c. Special cases first: one
 * rank (a copy), then the algorithm the call resolved to. */
#include "algo.h"

#include "stats.h"
#include "sync.h"

#include <string.h>

/* Segments of the pipelined ring broadcast. */
#define RING_BCAST_SEG 131072

static dt_result get_scratch(dt_call *call, size_t bytes, char **out)
{
    *out = dt_scratch(call->comm, call->lane, bytes);
    return *out ? DT_OK : dt_fail(DT_ERR_NOMEM, "no memory for %zu bytes of scratch", bytes);
}

static void copy_if(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes)
        memmove(dst, src, bytes);
}

/* ---------------------------------------------------------------- allreduce */

/* Recursive doubling for any N. With p the largest power of two <= N and
 * rem = N - p, the first 2*rem ranks pair up (even sends to odd, which
 * reduces) so that p ranks remain; those exchange whole vectors with the
 * partner at distance 1, 2, 4, ... (log2 p steps); the odd ranks finally
 * hand the result back to their even partners. */
enum {
    RD_STEP_FOLD = 0,     /* the extra ranks hand their vector in */
    RD_STEP_EXCHANGE = 1, /* the exchanges: steps 1 .. log2(p) (at most 30) */
    RD_STEP_UNFOLD = 40,  /* the result goes back to the extra ranks */
};

static dt_result allreduce_rd(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), bytes = a->count * es;
    char *tmp, *buf = a->recvbuf;
    DT_TRY(get_scratch(call, bytes, &tmp));
    copy_if(buf, a->sendbuf, bytes);
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    int rem = n - p, v;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            DT_TRY(dt_msg_send(call, r + 1, buf, bytes, call->tag + RD_STEP_FOLD));
            v = -1;
        } else {
            DT_TRY(dt_msg_recv(call, r - 1, tmp, bytes, call->tag + RD_STEP_FOLD));
            dt_alg_combine(call, buf, tmp, buf, a->count, a->dtype, a->op);
            v = r / 2;
        }
    } else {
        v = r - rem;
    }
    int step = RD_STEP_EXCHANGE;
    for (int mask = 1; v >= 0 && mask < p; mask <<= 1, step++) {
        int pv = v ^ mask, peer = pv < rem ? 2 * pv + 1 : pv + rem;
        DT_TRY(dt_msg_sendrecv(call, peer, buf, bytes, peer, tmp, bytes, call->tag + (uint64_t)step));
        /* lower rank's operand first: every rank computes the same bits */
        if (peer < r)
            dt_alg_combine(call, buf, tmp, buf, a->count, a->dtype, a->op);
        else
            dt_alg_combine(call, buf, buf, tmp, a->count, a->dtype, a->op);
    }
    if (r < 2 * rem) {
        if (r % 2)
            DT_TRY(dt_msg_send(call, r - 1, buf, bytes, call->tag + RD_STEP_UNFOLD));
        else
            DT_TRY(dt_msg_recv(call, r + 1, buf, bytes, call->tag + RD_STEP_UNFOLD));
    }
    if (a->op == DT_AVG)
        dt_alg_avg(call, buf, a->count, a->dtype, n);
    return DT_OK;
}

/* Binomial trees (dt_reduce_tree, dt_bcast_tree): the sum climbs to rank 0
 * in ceil(log2 N) rounds and comes down in as many, each moving the whole
 * vector: 2 ceil(log2 N) (alpha + n/beta). */
static dt_result allreduce_binomial(dt_call *call, const dt_coll_args *a)
{
    size_t es = dt_dtype_size(a->dtype), bytes = a->count * es;
    char *tmp;
    DT_TRY(get_scratch(call, bytes, &tmp));
    copy_if(a->recvbuf, a->sendbuf, bytes);
    DT_TRY(dt_reduce_tree(call, a->recvbuf, tmp, a->count, a->dtype, a->op, 0, 0));
    if (call->comm->rank == 0 && a->op == DT_AVG)
        dt_alg_avg(call, a->recvbuf, a->count, a->dtype, call->comm->size);
    return dt_bcast_tree(call, a->recvbuf, bytes, 0, 1);
}

/* Binomial trees stand for the tree algorithms, but for allreduce. */
static int trees(dt_algo algo)
{
    return algo == DT_ALGO_TREE || algo == DT_ALGO_BINOMIAL;
}

/* The allreduce up to its allgather: afterwards rank r's block of
 * recvbuf (dt_chunk_off, dt_chunk_len) holds the reduced vector's; the
 * trees, which reduce the whole vector at once, leave all of it there.
 * Ring and direct: a reduce-scatter, then AVG's division of the block. */
static dt_result allreduce_first_half(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), count = a->count;
    if (a->algo == DT_ALGO_TREE)
        return allreduce_rd(call, a);
    if (a->algo == DT_ALGO_BINOMIAL)
        return allreduce_binomial(call, a);
    size_t maxc = dt_chunk_len(count, n, 0);
    char *mine = (char *)a->recvbuf + dt_chunk_off(count, n, r) * es, *tmp;
    size_t mylen = dt_chunk_len(count, n, r);
    if (a->algo == DT_ALGO_DIRECT) {
        DT_TRY(get_scratch(call, (size_t)n * maxc * es, &tmp));
        DT_TRY(dt_direct_rs(call, a->sendbuf, mine, count, a->dtype, a->op, tmp, 0));
    } else {
        DT_TRY(get_scratch(call, 2 * maxc * es, &tmp));
        DT_TRY(dt_ring_rs(call, a->sendbuf, mine, count, a->dtype, a->op, tmp, 0));
    }
    if (a->op == DT_AVG)
        dt_alg_avg(call, mine, mylen, a->dtype, n);
    return DT_OK;
}

/* The rest: the allgather of the blocks (nothing after a tree). step0:
 * the first tag step free after the first half. */
static dt_result allreduce_second_half(dt_call *call, const dt_coll_args *a, int step0)
{
    if (a->algo == DT_ALGO_TREE || a->algo == DT_ALGO_BINOMIAL)
        return DT_OK;
    if (a->algo == DT_ALGO_DIRECT)
        return dt_direct_ag(call, a->recvbuf, a->count, a->dtype, step0);
    return dt_ring_ag(call, a->recvbuf, a->count, a->dtype, step0);
}

dt_result dt_alg_allreduce(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, a->count * dt_dtype_size(a->dtype));
        return DT_OK;
    }
    DT_TRY(allreduce_first_half(call, a));
    return allreduce_second_half(call, a, a->algo == DT_ALGO_DIRECT ? 1 : n);
}

/* dt_allreduce_scatter: the allreduce's first half itself (in place), so
 * that each element is reduced as dt_allreduce reduces it. */
dt_result dt_alg_allreduce_scatter(dt_call *call, const dt_coll_args *a)
{
    return call->comm->size == 1 ? DT_OK : allreduce_first_half(call, a);
}

/* dt_allreduce_gather: the blocks of the cut to every rank. The trees
 * gather to rank 0 and broadcast, as dt_allgather does. */
dt_result dt_alg_allreduce_gather(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size;
    if (n == 1)
        return DT_OK;
    if (a->algo == DT_ALGO_DIRECT)
        return dt_direct_ag(call, a->recvbuf, a->count, a->dtype, 0);
    if (trees(a->algo)) {
        DT_TRY(dt_gather_tree(call, a->recvbuf, a->count, a->dtype, 0));
        return dt_bcast_tree(call, a->recvbuf, a->count * dt_dtype_size(a->dtype), 0, 1);
    }
    return dt_ring_ag(call, a->recvbuf, a->count, a->dtype, 0);
}

/* ---------------------------------------------------------------- broadcast */

/* A pipelined chain root -> root+1 -> ... : segment i moves one hop per
 * step, so N-1 hops and S segments take S + N - 2 steps. */
static dt_result bcast_ring(dt_call *call, char *buf, size_t bytes, int root, size_t es)
{
    int n = call->comm->size, r = call->comm->rank;
    int v = (r - root + n) % n, prev = (r - 1 + n) % n, next = (r + 1) % n;
    size_t seg = RING_BCAST_SEG / es * es;
    size_t nseg = bytes ? (bytes + seg - 1) / seg : 1;
    dt_xfer pending = {NULL, call->t};
    for (size_t i = 0; i < nseg; i++) {
        size_t off = i * seg, len = bytes - off < seg ? bytes - off : seg;
        if (bytes == 0)
            len = 0;
        uint64_t tag = call->tag + (uint64_t)i;
        if (v > 0)
            DT_TRY(dt_msg_recv(call, prev, buf + off, len, tag));
        if (v < n - 1) {
            DT_TRY(dt_msg_wait(call, &pending, NULL));
            DT_TRY(dt_msg_isend(call, next, buf + off, len, tag, &pending));
        }
    }
    return dt_msg_wait(call, &pending, NULL);
}

dt_result dt_alg_broadcast(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), bytes = a->count * es;
    if (r == a->root)
        copy_if(a->recvbuf, a->sendbuf, bytes);
    if (n == 1)
        return DT_OK;
    if (trees(a->algo))
        return dt_bcast_tree(call, a->recvbuf, bytes, a->root, 0);
    if (a->algo == DT_ALGO_RING)
        return bcast_ring(call, a->recvbuf, bytes, a->root, es);
    if (r != a->root)
        return dt_msg_recv(call, a->root, a->recvbuf, bytes, call->tag);
    dt_xfer m[DT_MAX_RANKS];
    int k = 0;
    dt_result res = DT_OK;
    for (int d = 1; d < n && res == DT_OK; d++)
        res = dt_msg_isend(call, (r + d) % n, a->recvbuf, bytes, call->tag, &m[k++]);
    dt_result w = dt_msg_waitall(call, m, k);
    return res != DT_OK ? res : w;
}

/* ---------------------------------------------------------------- reduce */

/* Direct: the root takes each rank's vector in rank order. */
static dt_result reduce_direct(dt_call *call, const dt_coll_args *a, size_t bytes)
{
    int n = call->comm->size, r = call->comm->rank;
    if (r != a->root)
        return dt_msg_send(call, a->root, a->sendbuf, bytes, call->tag);
    char *s;
    DT_TRY(get_scratch(call, 2 * bytes, &s));
    char *own = s, *tmp = s + bytes;
    copy_if(own, a->sendbuf, bytes);
    for (int j = 0; j < n; j++) {
        const char *src = own;
        if (j != r) {
            DT_TRY(dt_msg_recv(call, j, tmp, bytes, call->tag));
            src = tmp;
        }
        if (j == 0)
            copy_if(a->recvbuf, src, bytes);
        else
            dt_alg_combine(call, a->recvbuf, a->recvbuf, src, a->count, a->dtype, a->op);
    }
    return DT_OK;
}

/* Ring: a ring reduce-scatter, then every rank sends its chunk to the root. */
static dt_result reduce_ring(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), count = a->count, maxc = dt_chunk_len(count, n, 0);
    char *s;
    DT_TRY(get_scratch(call, 3 * maxc * es, &s));
    char *mine = r == a->root ? (char *)a->recvbuf + dt_chunk_off(count, n, r) * es
                              : s + 2 * maxc * es;
    DT_TRY(dt_ring_rs(call, a->sendbuf, mine, count, a->dtype, a->op, s, 0));
    if (r != a->root)
        return dt_msg_send(call, a->root, mine, dt_chunk_len(count, n, r) * es,
                          call->tag + (uint64_t)n);
    for (int j = 0; j < n; j++)
        if (j != r)
            DT_TRY(dt_msg_recv(call, j, (char *)a->recvbuf + dt_chunk_off(count, n, j) * es,
                              dt_chunk_len(count, n, j) * es, call->tag + (uint64_t)n));
    return DT_OK;
}

dt_result dt_alg_reduce(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t bytes = a->count * dt_dtype_size(a->dtype);
    dt_result res;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, bytes);
        return DT_OK;
    }
    if (a->algo == DT_ALGO_DIRECT) {
        res = reduce_direct(call, a, bytes);
    } else if (a->algo == DT_ALGO_RING) {
        res = reduce_ring(call, a);
    } else {
        char *s, *acc;
        DT_TRY(get_scratch(call, 2 * bytes, &s));
        acc = r == a->root ? (char *)a->recvbuf : s + bytes;
        copy_if(acc, a->sendbuf, bytes);
        res = dt_reduce_tree(call, acc, s, a->count, a->dtype, a->op, a->root, 0);
    }
    if (res == DT_OK && r == a->root && a->op == DT_AVG)
        dt_alg_avg(call, a->recvbuf, a->count, a->dtype, n);
    return res;
}

/* ---------------------------------------------------------------- allgather */

dt_result dt_alg_allgather(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), blk = a->count * es, total = a->count * (size_t)n;
    copy_if((char *)a->recvbuf + (size_t)r * blk, a->sendbuf, blk);
    if (n == 1)
        return DT_OK;
    if (a->algo == DT_ALGO_DIRECT)
        return dt_direct_ag(call, a->recvbuf, total, a->dtype, 0);
    if (trees(a->algo)) {
        DT_TRY(dt_gather_tree(call, a->recvbuf, total, a->dtype, 0));
        return dt_bcast_tree(call, a->recvbuf, total * es, 0, 1);
    }
    return dt_ring_ag(call, a->recvbuf, total, a->dtype, 0);
}

/* ---------------------------------------------------------------- reduce-scatter */

/* Tree: a binomial reduce of the whole vector to rank 0, which sends each
 * rank its block. */
static dt_result rs_tree(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(a->dtype), blk = a->count * es, total = a->count * (size_t)n;
    char *s;
    DT_TRY(get_scratch(call, 2 * total * es, &s));
    char *acc = s, *tmp = s + total * es;
    copy_if(acc, a->sendbuf, total * es);
    DT_TRY(dt_reduce_tree(call, acc, tmp, total, a->dtype, a->op, 0, 0));
    if (r != 0)
        return dt_msg_recv(call, 0, a->recvbuf, blk, call->tag + 1);
    dt_xfer m[DT_MAX_RANKS];
    int k = 0;
    dt_result res = DT_OK;
    for (int j = 1; j < n && res == DT_OK; j++)
        res = dt_msg_isend(call, j, acc + (size_t)j * blk, blk, call->tag + 1, &m[k++]);
    dt_result w = dt_msg_waitall(call, m, k);
    copy_if(a->recvbuf, acc, blk);
    return res != DT_OK ? res : w;
}

dt_result dt_alg_reduce_scatter(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size;
    size_t es = dt_dtype_size(a->dtype), total = a->count * (size_t)n;
    dt_result res;
    char *tmp;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, total * es);
        return DT_OK;
    }
    if (trees(a->algo)) {
        res = rs_tree(call, a);
    } else if (a->algo == DT_ALGO_DIRECT) {
        DT_TRY(get_scratch(call, total * es, &tmp));
        res = dt_direct_rs(call, a->sendbuf, a->recvbuf, total, a->dtype, a->op, tmp, 0);
    } else {
        DT_TRY(get_scratch(call, 2 * a->count * es, &tmp));
        res = dt_ring_rs(call, a->sendbuf, a->recvbuf, total, a->dtype, a->op, tmp, 0);
    }
    if (res == DT_OK && a->op == DT_AVG)
        dt_alg_avg(call, a->recvbuf, a->count, a->dtype, n);
    return res;
}

/* ---------------------------------------------------------------- alltoall */

/* Pairwise exchange for every algorithm: at step s rank r sends its block
 * for r+s and receives the block of r-s, so each step is a permutation. */
dt_result dt_alg_alltoall(dt_call *call, const dt_coll_args *a)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t blk = a->count * dt_dtype_size(a->dtype);
    const char *sb = a->sendbuf;
    char *rb = a->recvbuf;
    copy_if(rb + (size_t)r * blk, sb + (size_t)r * blk, blk);
    for (int s = 1; s < n; s++) {
        int dst = (r + s) % n, src = (r - s + n) % n;
        DT_TRY(dt_msg_sendrecv(call, dst, sb + (size_t)dst * blk, blk, src, rb + (size_t)src * blk,
                              blk, call->tag + (uint64_t)s));
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- barrier */

/* The barrier-exchange, priced as a dissemination barrier: ceil(log2 N)
 * rounds of alpha, the communicator's (its slowest link's). */
dt_result dt_alg_barrier(dt_call *call)
{
    dt_comm *c = call->comm;
    int n = c->size;
    if (n == 1)
        return DT_OK;
    dt_rec mine = {.clock = call->t};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(call, &mine, &all));
    int rounds = 0;
    while ((1 << rounds) < n)
        rounds++;
    call->t = dt_sync_max_clock(all, n) + rounds * c->link.alpha;
    dt_call_traffic(call, 1, 0, (uint64_t)rounds);
    dt_call_traffic(call, 0, 0, (uint64_t)rounds);
    return DT_OK;
}

dt_result dt_alg_collective(dt_call *call, const dt_coll_args *a)
{
    switch (a->kind) {
    case DT_COLL_ALLREDUCE: return dt_alg_allreduce(call, a);
    case DT_COLL_BROADCAST: return dt_alg_broadcast(call, a);
    case DT_COLL_REDUCE: return dt_alg_reduce(call, a);
    case DT_COLL_ALLGATHER:
        return a->halves ? dt_alg_allreduce_gather(call, a) : dt_alg_allgather(call, a);
    case DT_COLL_REDUCE_SCATTER:
        return a->halves ? dt_alg_allreduce_scatter(call, a) : dt_alg_reduce_scatter(call, a);
    case DT_COLL_ALLTOALL: return dt_alg_alltoall(call, a);
    case DT_COLL_BARRIER: return dt_alg_barrier(call);
    default: return dt_fail(DT_ERR_INTERNAL, "unknown collective %d", a->kind);
    }
}
