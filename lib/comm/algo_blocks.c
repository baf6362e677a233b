/* algo_blocks.c - the building blocks of the collective algorithms, each
 * written once over the messages of port.h (dt_msg_*): ring reduce-scatter and
 * allgather, direct (all-to-all) exchange, binomial trees.
 *
 * A buffer of count elements on N ranks is cut in N chunks; chunk i starts
 * at dt_chunk_off and holds dt_chunk_len elements (the first count % N
 * chunks one more). Tags: call->tag + step, so the messages of different
 * steps and calls never match each other. */
#include "algo.h"

#include "reduce.h"

#include <stdlib.h>
#include <string.h>

void dt_alg_combine(dt_call *call, void *dst, const void *a, const void *b, size_t n,
                   dt_dtype t, dt_redop op)
{
    const dt_job *job = dt_call_job(call);
    if (job->fast)
        dt_reduce3_fast(dst, a, b, n, t, op);
    else
        dt_reduce3(dst, a, b, n, t, op);
    call->t += dt_net_reduce_time(&call->comm->link, (double)(n * dt_dtype_size(t)));
}

void dt_alg_avg(dt_call *call, void *buf, size_t n, dt_dtype t, int nranks)
{
    if (dt_call_job(call)->fast)
        dt_reduce_avg_fast(buf, n, t, nranks);
    else
        dt_reduce_avg(buf, n, t, nranks);
}

size_t dt_chunk_len(size_t count, int n, int i)
{
    return count / (size_t)n + ((size_t)i < count % (size_t)n);
}

size_t dt_chunk_off(size_t count, int n, int i)
{
    size_t q = count / (size_t)n, r = count % (size_t)n;
    return (size_t)i * q + ((size_t)i < r ? (size_t)i : r);
}

void dt_block(size_t count, int size, int rank, size_t *offset, size_t *len)
{
    int ok = size > 0 && rank >= 0 && rank < size; /* else an empty block */
    if (offset)
        *offset = ok ? dt_chunk_off(count, size, rank) : 0;
    if (len)
        *len = ok ? dt_chunk_len(count, size, rank) : 0;
}

/* Ring reduce-scatter. Rank r ends with chunk r reduced in out. At step s
 * it sends the partial sum of chunk (r-s-1) to its right and receives the
 * partial of chunk (r-s-2) from its left, adding its own part:
 *
 *   N=4, step 0:  r0 sends c3, r1 sends c0, r2 sends c1, r3 sends c2
 *   step 1: each forwards what it received, plus its own part, ...
 *   after N-1 steps r owns chunk r, reduced over all ranks.
 *
 * tmp holds 2 * (largest chunk) elements: the partial being sent and the
 * one being received alternate between its halves. */
dt_result dt_ring_rs(dt_call *call, const void *in, void *out, size_t count, dt_dtype t,
                     dt_redop red, void *tmp, int step0)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(t), maxc = dt_chunk_len(count, n, 0);
    int left = (r - 1 + n) % n, right = (r + 1) % n;
    char *half[2] = {tmp, (char *)tmp + maxc * es};
    const char *src = in;
    if (n == 1) {
        if (out != in && count)
            memmove(out, in, count * es);
        return DT_OK;
    }
    for (int s = 0; s < n - 1; s++) {
        int sc = (r - s - 1 + 2 * n) % n, rc = (r - s - 2 + 2 * n) % n;
        const void *sp = s == 0 ? src + dt_chunk_off(count, n, sc) * es : half[(s - 1) & 1];
        size_t rlen = dt_chunk_len(count, n, rc);
        DT_TRY(dt_msg_sendrecv(call, right, sp, dt_chunk_len(count, n, sc) * es, left, half[s & 1],
                              rlen * es, call->tag + (uint64_t)(step0 + s)));
        const char *own = src + dt_chunk_off(count, n, rc) * es;
        /* the partial from the left comes first: the same order on every rank */
        if (s < n - 2)
            dt_alg_combine(call, half[s & 1], half[s & 1], own, rlen, t, red);
        else
            dt_alg_combine(call, out, half[s & 1], own, rlen, t, red);
    }
    return DT_OK;
}

/* Ring allgather in place: chunk r of buf is this rank's; at step s it
 * sends chunk (r-s) to the right and receives chunk (r-s-1) from the left. */
dt_result dt_ring_ag(dt_call *call, void *buf, size_t count, dt_dtype t, int step0)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(t);
    char *b = buf;
    int left = (r - 1 + n) % n, right = (r + 1) % n;
    for (int s = 0; s < n - 1; s++) {
        int sc = (r - s + n) % n, rc = (r - s - 1 + 2 * n) % n;
        DT_TRY(dt_msg_sendrecv(call, right, b + dt_chunk_off(count, n, sc) * es,
                              dt_chunk_len(count, n, sc) * es, left,
                              b + dt_chunk_off(count, n, rc) * es,
                              dt_chunk_len(count, n, rc) * es, call->tag + (uint64_t)(step0 + s)));
    }
    return DT_OK;
}

/* Direct reduce-scatter: chunk j of in goes straight to rank j; rank r
 * reduces the N parts of chunk r in rank order. tmp holds N * (largest
 * chunk) elements. */
dt_result dt_direct_rs(dt_call *call, const void *in, void *out, size_t count, dt_dtype t,
                       dt_redop red, void *tmp, int step)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(t), len = dt_chunk_len(count, n, r);
    size_t maxc = dt_chunk_len(count, n, 0);
    const char *src = in;
    char *part = tmp;
    dt_xfer *m = calloc((size_t)(2 * n), sizeof *m);
    if (!m)
        return dt_fail(DT_ERR_NOMEM, "out of memory for %d requests", 2 * n);
    dt_result res = DT_OK;
    int k = 0;
    for (int j = 0; j < n && res == DT_OK; j++) {
        if (j == r)
            continue;
        res = dt_msg_irecv(call, j, part + (size_t)j * maxc * es, len * es, call->tag + (uint64_t)step,
                          &m[k++]);
    }
    for (int d = 1; d < n && res == DT_OK; d++) {
        int j = (r + d) % n; /* spread the load: not everyone to rank 0 first */
        res = dt_msg_isend(call, j, src + dt_chunk_off(count, n, j) * es,
                          dt_chunk_len(count, n, j) * es, call->tag + (uint64_t)step, &m[k++]);
    }
    dt_result w = dt_msg_waitall(call, m, k);
    free(m);
    DT_TRY(res);
    DT_TRY(w);
    if (len) {
        memcpy(part + (size_t)r * maxc * es, src + dt_chunk_off(count, n, r) * es, len * es);
        memcpy(out, part, len * es);
        for (int j = 1; j < n; j++)
            dt_alg_combine(call, out, out, part + (size_t)j * maxc * es, len, t, red);
    }
    return DT_OK;
}

/* Direct allgather in place: chunk r of buf goes to every rank at once. */
dt_result dt_direct_ag(dt_call *call, void *buf, size_t count, dt_dtype t, int step)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(t);
    char *b = buf;
    dt_xfer *m = calloc((size_t)(2 * n), sizeof *m);
    if (!m)
        return dt_fail(DT_ERR_NOMEM, "out of memory for %d requests", 2 * n);
    dt_result res = DT_OK;
    int k = 0;
    for (int j = 0; j < n && res == DT_OK; j++)
        if (j != r)
            res = dt_msg_irecv(call, j, b + dt_chunk_off(count, n, j) * es,
                              dt_chunk_len(count, n, j) * es, call->tag + (uint64_t)step, &m[k++]);
    for (int d = 1; d < n && res == DT_OK; d++)
        res = dt_msg_isend(call, (r + d) % n, b + dt_chunk_off(count, n, r) * es,
                          dt_chunk_len(count, n, r) * es, call->tag + (uint64_t)step, &m[k++]);
    dt_result w = dt_msg_waitall(call, m, k);
    free(m);
    DT_TRY(res);
    return w;
}

/* Binomial tree broadcast of bytes from root. In ranks relative to the
 * root (v = r - root mod N), v receives from v - lowbit(v) and sends to
 * v + 2^k for every 2^k < lowbit(v), farthest first:
 *
 *   N=8:  0 -> 4, 0 -> 2, 0 -> 1;  4 -> 6, 4 -> 5;  2 -> 3;  6 -> 7
 */
dt_result dt_bcast_tree(dt_call *call, void *buf, size_t bytes, int root, int step)
{
    int n = call->comm->size, r = call->comm->rank;
    int v = (r - root + n) % n, top = 1;
    while (top < n)
        top <<= 1;
    int low = v ? (v & -v) : top;
    if (v)
        DT_TRY(dt_msg_recv(call, (v - low + root) % n, buf, bytes, call->tag + (uint64_t)step));
    dt_xfer m[32];
    int k = 0;
    dt_result res = DT_OK;
    for (int mask = low >> 1; mask > 0 && res == DT_OK; mask >>= 1)
        if (v + mask < n)
            res = dt_msg_isend(call, (v + mask + root) % n, buf, bytes, call->tag + (uint64_t)step,
                              &m[k++]);
    dt_result w = dt_msg_waitall(call, m, k);
    DT_TRY(res);
    return w;
}

/* Binomial tree reduce to root, the broadcast's mirror: v receives from
 * v + 2^k (nearest first) while bit k of v is clear, then sends to
 * v - lowbit(v). acc holds this rank's part on entry and, on the root, the
 * result on return; tmp holds count elements. The order of reduction
 * depends only on the ranks, never on timing. */
dt_result dt_reduce_tree(dt_call *call, void *acc, void *tmp, size_t count, dt_dtype t,
                         dt_redop red, int root, int step)
{
    int n = call->comm->size, r = call->comm->rank;
    int v = (r - root + n) % n;
    size_t bytes = count * dt_dtype_size(t);
    for (int mask = 1; mask < n; mask <<= 1) {
        if (v & mask)
            return dt_msg_send(call, (v - mask + root) % n, acc, bytes, call->tag + (uint64_t)step);
        if (v + mask < n) {
            DT_TRY(dt_msg_recv(call, (v + mask + root) % n, tmp, bytes, call->tag + (uint64_t)step));
            dt_alg_combine(call, acc, acc, tmp, count, t, red);
        }
    }
    return DT_OK;
}

/* Binomial gather to rank 0 into buf, a vector of count elements cut into
 * the ranks' blocks (dt_chunk_off): the subtree of v is the contiguous
 * range of ranks [v, v + lowbit(v)), so each message is one range of
 * blocks. */
dt_result dt_gather_tree(dt_call *call, void *buf, size_t count, dt_dtype t, int step)
{
    int n = call->comm->size, r = call->comm->rank;
    size_t es = dt_dtype_size(t);
    char *b = buf;
    for (int mask = 1; mask < n; mask <<= 1) {
        if (r & mask) {
            int hi = r + mask < n ? r + mask : n;
            size_t lo = dt_chunk_off(count, n, r);
            return dt_msg_send(call, r - mask, b + lo * es, (dt_chunk_off(count, n, hi) - lo) * es,
                              call->tag + (uint64_t)step);
        }
        if (r + mask < n) {
            int c = r + mask, hi = c + mask < n ? c + mask : n;
            size_t lo = dt_chunk_off(count, n, c);
            DT_TRY(dt_msg_recv(call, c, b + lo * es, (dt_chunk_off(count, n, hi) - lo) * es,
                              call->tag + (uint64_t)step));
        }
    }
    return DT_OK;
}
