/* algo_coll.c - each collective as ring, tree and direct algorithms, put
 * together from the blocks of algo_blocks.c. Special cases first: one
 * rank (a copy), then the algorithm the call resolved to. */
#include "algo.h"

#include <string.h>

/* Segments of the pipelined ring broadcast. */
#define RING_BCAST_SEG 131072

static dt_result get_scratch(dt_op *op, size_t bytes, char **out)
{
    *out = dt_scratch(op->comm, op->lane, bytes);
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
static dt_result allreduce_rd(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), bytes = a->count * es;
    char *tmp, *buf = a->recvbuf;
    DT_TRY(get_scratch(op, bytes, &tmp));
    copy_if(buf, a->sendbuf, bytes);
    int p = 1;
    while (p * 2 <= n)
        p *= 2;
    int rem = n - p, v;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            DT_TRY(dt_tp_send(op, r + 1, buf, bytes, op->tag));
            v = -1;
        } else {
            DT_TRY(dt_tp_recv(op, r - 1, tmp, bytes, op->tag));
            dt_reduce3(buf, tmp, buf, a->count, a->dtype, a->op);
            v = r / 2;
        }
    } else {
        v = r - rem;
    }
    int step = 1;
    for (int mask = 1; v >= 0 && mask < p; mask <<= 1, step++) {
        int pv = v ^ mask, peer = pv < rem ? 2 * pv + 1 : pv + rem;
        DT_TRY(dt_tp_sendrecv(op, peer, buf, bytes, peer, tmp, bytes, op->tag + (uint64_t)step));
        /* lower rank's operand first: every rank computes the same bits */
        if (peer < r)
            dt_reduce3(buf, tmp, buf, a->count, a->dtype, a->op);
        else
            dt_reduce3(buf, buf, tmp, a->count, a->dtype, a->op);
    }
    if (r < 2 * rem) {
        if (r % 2)
            DT_TRY(dt_tp_send(op, r - 1, buf, bytes, op->tag + 40));
        else
            DT_TRY(dt_tp_recv(op, r + 1, buf, bytes, op->tag + 40));
    }
    if (a->op == DT_AVG)
        dt_reduce_avg(buf, a->count, a->dtype, n);
    return DT_OK;
}

dt_result dt_alg_allreduce(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), count = a->count;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, count * es);
        return DT_OK;
    }
    if (a->shortcut)
        return dt_shortcut_allreduce(op, a);
    if (a->algo == DT_ALGO_TREE)
        return allreduce_rd(op, a);
    size_t maxc = dt_chunk_len(count, n, 0);
    char *mine = (char *)a->recvbuf + dt_chunk_off(count, n, r) * es, *tmp;
    size_t mylen = dt_chunk_len(count, n, r);
    if (a->algo == DT_ALGO_DIRECT) {
        DT_TRY(get_scratch(op, (size_t)n * maxc * es, &tmp));
        DT_TRY(dt_direct_rs(op, a->sendbuf, mine, count, a->dtype, a->op, tmp, 0));
        if (a->op == DT_AVG)
            dt_reduce_avg(mine, mylen, a->dtype, n);
        return dt_direct_ag(op, a->recvbuf, count, a->dtype, 1);
    }
    DT_TRY(get_scratch(op, 2 * maxc * es, &tmp));
    DT_TRY(dt_ring_rs(op, a->sendbuf, mine, count, a->dtype, a->op, tmp, 0));
    if (a->op == DT_AVG)
        dt_reduce_avg(mine, mylen, a->dtype, n);
    return dt_ring_ag(op, a->recvbuf, count, a->dtype, n);
}

/* ---------------------------------------------------------------- broadcast */

/* A pipelined chain root -> root+1 -> ... : segment i moves one hop per
 * step, so N-1 hops and S segments take S + N - 2 steps. */
static dt_result bcast_ring(dt_op *op, char *buf, size_t bytes, int root, size_t es)
{
    int n = op->comm->size, r = op->comm->rank;
    int v = (r - root + n) % n, prev = (r - 1 + n) % n, next = (r + 1) % n;
    size_t seg = RING_BCAST_SEG / es * es;
    size_t nseg = bytes ? (bytes + seg - 1) / seg : 1;
    dt_msg *pending = NULL;
    for (size_t i = 0; i < nseg; i++) {
        size_t off = i * seg, len = bytes - off < seg ? bytes - off : seg;
        if (bytes == 0)
            len = 0;
        uint64_t tag = op->tag + (uint64_t)i;
        if (v > 0)
            DT_TRY(dt_tp_recv(op, prev, buf + off, len, tag));
        if (v < n - 1) {
            DT_TRY(dt_tp_wait(op, pending));
            pending = NULL;
            DT_TRY(dt_tp_isend(op, next, buf + off, len, tag, &pending));
        }
    }
    return dt_tp_wait(op, pending);
}

dt_result dt_alg_broadcast(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), bytes = a->count * es;
    if (r == a->root)
        copy_if(a->recvbuf, a->sendbuf, bytes);
    if (n == 1)
        return DT_OK;
    if (a->algo == DT_ALGO_TREE)
        return dt_bcast_tree(op, a->recvbuf, bytes, a->root, 0);
    if (a->algo == DT_ALGO_RING)
        return bcast_ring(op, a->recvbuf, bytes, a->root, es);
    if (r != a->root)
        return dt_tp_recv(op, a->root, a->recvbuf, bytes, op->tag);
    dt_msg *m[DT_MAX_RANKS];
    int k = 0;
    dt_result res = DT_OK;
    for (int d = 1; d < n && res == DT_OK; d++)
        res = dt_tp_isend(op, (r + d) % n, a->recvbuf, bytes, op->tag, &m[k++]);
    dt_result w = dt_tp_waitall(op, m, k);
    return res != DT_OK ? res : w;
}

/* ---------------------------------------------------------------- reduce */

/* Direct: the root takes each rank's vector in rank order. */
static dt_result reduce_direct(dt_op *op, const dt_coll_args *a, size_t bytes)
{
    int n = op->comm->size, r = op->comm->rank;
    if (r != a->root)
        return dt_tp_send(op, a->root, a->sendbuf, bytes, op->tag);
    char *s;
    DT_TRY(get_scratch(op, 2 * bytes, &s));
    char *own = s, *tmp = s + bytes;
    copy_if(own, a->sendbuf, bytes);
    for (int j = 0; j < n; j++) {
        const char *src = own;
        if (j != r) {
            DT_TRY(dt_tp_recv(op, j, tmp, bytes, op->tag));
            src = tmp;
        }
        if (j == 0)
            copy_if(a->recvbuf, src, bytes);
        else
            dt_reduce_into(a->recvbuf, src, a->count, a->dtype, a->op);
    }
    return DT_OK;
}

/* Ring: a ring reduce-scatter, then every rank sends its chunk to the root. */
static dt_result reduce_ring(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), count = a->count, maxc = dt_chunk_len(count, n, 0);
    char *s;
    DT_TRY(get_scratch(op, 3 * maxc * es, &s));
    char *mine = r == a->root ? (char *)a->recvbuf + dt_chunk_off(count, n, r) * es
                              : s + 2 * maxc * es;
    DT_TRY(dt_ring_rs(op, a->sendbuf, mine, count, a->dtype, a->op, s, 0));
    if (r != a->root)
        return dt_tp_send(op, a->root, mine, dt_chunk_len(count, n, r) * es,
                          op->tag + (uint64_t)n);
    for (int j = 0; j < n; j++)
        if (j != r)
            DT_TRY(dt_tp_recv(op, j, (char *)a->recvbuf + dt_chunk_off(count, n, j) * es,
                              dt_chunk_len(count, n, j) * es, op->tag + (uint64_t)n));
    return DT_OK;
}

dt_result dt_alg_reduce(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t bytes = a->count * dt_dtype_size(a->dtype);
    dt_result res;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, bytes);
        return DT_OK;
    }
    if (a->algo == DT_ALGO_DIRECT) {
        res = reduce_direct(op, a, bytes);
    } else if (a->algo == DT_ALGO_RING) {
        res = reduce_ring(op, a);
    } else {
        char *s, *acc;
        DT_TRY(get_scratch(op, 2 * bytes, &s));
        acc = r == a->root ? (char *)a->recvbuf : s + bytes;
        copy_if(acc, a->sendbuf, bytes);
        res = dt_reduce_tree(op, acc, s, a->count, a->dtype, a->op, a->root, 0);
    }
    if (res == DT_OK && r == a->root && a->op == DT_AVG)
        dt_reduce_avg(a->recvbuf, a->count, a->dtype, n);
    return res;
}

/* ---------------------------------------------------------------- allgather */

dt_result dt_alg_allgather(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), blk = a->count * es, total = a->count * (size_t)n;
    copy_if((char *)a->recvbuf + (size_t)r * blk, a->sendbuf, blk);
    if (n == 1)
        return DT_OK;
    if (a->shortcut)
        return dt_shortcut_allgather(op, a);
    if (a->algo == DT_ALGO_DIRECT)
        return dt_direct_ag(op, a->recvbuf, total, a->dtype, 0);
    if (a->algo == DT_ALGO_TREE) {
        DT_TRY(dt_gather_tree(op, a->recvbuf, a->count, a->dtype, 0));
        return dt_bcast_tree(op, a->recvbuf, total * es, 0, 1);
    }
    return dt_ring_ag(op, a->recvbuf, total, a->dtype, 0);
}

/* ---------------------------------------------------------------- reduce-scatter */

/* Tree: a binomial reduce of the whole vector to rank 0, which sends each
 * rank its block. */
static dt_result rs_tree(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t es = dt_dtype_size(a->dtype), blk = a->count * es, total = a->count * (size_t)n;
    char *s;
    DT_TRY(get_scratch(op, 2 * total * es, &s));
    char *acc = s, *tmp = s + total * es;
    copy_if(acc, a->sendbuf, total * es);
    DT_TRY(dt_reduce_tree(op, acc, tmp, total, a->dtype, a->op, 0, 0));
    if (r != 0)
        return dt_tp_recv(op, 0, a->recvbuf, blk, op->tag + 1);
    dt_msg *m[DT_MAX_RANKS];
    int k = 0;
    dt_result res = DT_OK;
    for (int j = 1; j < n && res == DT_OK; j++)
        res = dt_tp_isend(op, j, acc + (size_t)j * blk, blk, op->tag + 1, &m[k++]);
    dt_result w = dt_tp_waitall(op, m, k);
    copy_if(a->recvbuf, acc, blk);
    return res != DT_OK ? res : w;
}

dt_result dt_alg_reduce_scatter(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size;
    size_t es = dt_dtype_size(a->dtype), total = a->count * (size_t)n;
    dt_result res;
    char *tmp;
    if (n == 1) {
        copy_if(a->recvbuf, a->sendbuf, total * es);
        return DT_OK;
    }
    if (a->shortcut)
        return dt_shortcut_reduce_scatter(op, a);
    if (a->algo == DT_ALGO_TREE) {
        res = rs_tree(op, a);
    } else if (a->algo == DT_ALGO_DIRECT) {
        DT_TRY(get_scratch(op, total * es, &tmp));
        res = dt_direct_rs(op, a->sendbuf, a->recvbuf, total, a->dtype, a->op, tmp, 0);
    } else {
        DT_TRY(get_scratch(op, 2 * a->count * es, &tmp));
        res = dt_ring_rs(op, a->sendbuf, a->recvbuf, total, a->dtype, a->op, tmp, 0);
    }
    if (res == DT_OK && a->op == DT_AVG)
        dt_reduce_avg(a->recvbuf, a->count, a->dtype, n);
    return res;
}

/* ---------------------------------------------------------------- alltoall */

/* Pairwise exchange for every algorithm: at step s rank r sends its block
 * for r+s and receives the block of r-s, so each step is a permutation. */
dt_result dt_alg_alltoall(dt_op *op, const dt_coll_args *a)
{
    int n = op->comm->size, r = op->comm->rank;
    size_t blk = a->count * dt_dtype_size(a->dtype);
    const char *sb = a->sendbuf;
    char *rb = a->recvbuf;
    copy_if(rb + (size_t)r * blk, sb + (size_t)r * blk, blk);
    for (int s = 1; s < n; s++) {
        int dst = (r + s) % n, src = (r - s + n) % n;
        DT_TRY(dt_tp_sendrecv(op, dst, sb + (size_t)dst * blk, blk, src, rb + (size_t)src * blk,
                              blk, op->tag + (uint64_t)s));
    }
    return DT_OK;
}
