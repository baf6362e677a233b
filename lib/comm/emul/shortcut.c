/* shortcut.c - collectives that use shared memory directly (AUTO, with the
 * job's fast paths on), and the modeled price they charge: what their
 * network algorithm would cost, replayed message by message (replay.c), so
 * that the modeled clock, the ports and the stats do not depend on the
 * shortcut.
 *
 * One-pass allreduce (large messages): every rank publishes the addresses
 * of its input and output; rank r owns chunk r and, block by block, reduces
 * that chunk over all inputs (in rank order) and writes the result into
 * every output. Each input byte is read once and each output byte written
 * once: about 2*n*N bytes of memory traffic in all, the floor. Threads
 * address each other's buffers directly; processes read and write them with
 * process_vm_readv / process_vm_writev (cross-memory attach), except
 * buffers in the job's shared arena (dt_alloc_shared), which they address
 * directly too. A second
 * barrier keeps every output alive until all writers are done. Charged as
 * the ring.
 *
 * One-pass reduce-scatter and allgather (large messages), the same way:
 * rank r reduces chunk r of all inputs into its own output only; or writes
 * its own input into its place in every rank's output. Charged as the
 * ring's one phase.
 *
 * Tiny allreduce (at most DT_TINY_MAX bytes): the values ride in the
 * barrier's own records; every rank reduces all records in rank order.
 * Charged as recursive doubling.
 *
 * The reductions run in rank order, as the direct algorithm's do: the same
 * bits as DT_ALGO_DIRECT (the ring and recursive doubling add in another
 * order). Every rank's record carries its call's signature (count, dtype,
 * op): all ranks compare them before touching a buffer, so a mismatch is
 * DT_ERR_MISMATCH on every rank and nothing is written out of bounds. */
#include "shortcut.h"

#include "../algo.h"
#include "copy.h"
#include "../diag.h"
#include "../reduce.h"
#include "replay.h"
#include "../shm.h"
#include "../stats.h"


#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE__
#include <xmmintrin.h>
#endif

/* Bytes per block: threads keep the partial result in L1; processes
 * amortize a system call per peer and block. */
#define BLOCK_THREAD 8192
#define BLOCK_PROC 262144
/* Outputs larger than this bypass the caches (no read-for-ownership). */
#define STREAM_MIN ((size_t)16 << 20)

/* Copies a finished block to an output; large outputs with streaming
 * stores, which do not pull the destination into the cache first. */
static void store(void *dst, const void *src, size_t bytes, int stream)
{
#ifdef __SSE__
    if (stream && ((uintptr_t)dst & 15) == 0 && ((uintptr_t)src & 15) == 0 && bytes % 64 == 0) {
        float *d = dst;
        const float *s = src;
        for (size_t i = 0; i < bytes / 4; i += 16) {
            _mm_stream_ps(d + i, _mm_load_ps(s + i));
            _mm_stream_ps(d + i + 4, _mm_load_ps(s + i + 4));
            _mm_stream_ps(d + i + 8, _mm_load_ps(s + i + 8));
            _mm_stream_ps(d + i + 12, _mm_load_ps(s + i + 12));
        }
        return;
    }
#endif
    (void)stream;
    memcpy(dst, src, bytes);
}

/* Writes bytes from src to byte offset off of rank j's output. */
static dt_result write_out(const dt_rec *all, int j, int self_pid, size_t off, const char *src,
                           size_t bytes, int stream)
{
    char *dst = (char *)(uintptr_t)all[j].u.bufs.recvbuf + off;
    int pid = (int)all[j].u.bufs.recv_pid;
    if (!dt_addressable(pid, self_pid))
        return dt_copy_to(pid, self_pid, dst, src, bytes);
    store(dst, src, bytes, stream);
    return DT_OK;
}

/* Reads bytes at byte offset off of rank j's input into dst. */
static dt_result read_in(const dt_rec *all, int j, int self_pid, size_t off, char *dst,
                         size_t bytes)
{
    const char *src = (const char *)(uintptr_t)all[j].u.bufs.sendbuf + off;
    return dt_copy_from((int)all[j].u.bufs.send_pid, self_pid, dst, src, bytes);
}

/* Reduces elements [off, off+len) of every rank's input, in rank order,
 * into acc (a block; stage holds the blocks read from other processes). */
static dt_result reduce_block(const dt_coll_args *a, const dt_rec *all, int n, int me,
                              int self_pid, char *acc, char *stage, size_t block, size_t off,
                              size_t len)
{
    size_t es = dt_dtype_size(a->dtype);
    const char *inp[DT_MAX_RANKS];
    for (int j = 0; j < n; j++) {
        if (dt_addressable((int)all[j].u.bufs.send_pid, self_pid)) {
            inp[j] = (const char *)(uintptr_t)all[j].u.bufs.sendbuf + off * es;
            continue;
        }
        char *dst = stage + (size_t)(j - (j > me)) * block;
        DT_TRY(read_in(all, j, self_pid, off * es, dst, len * es));
        inp[j] = dst;
    }
    dt_reduce3_fast(acc, inp[0], inp[1], len, a->dtype, a->op);
    for (int j = 2; j < n; j++)
        dt_reduce3_fast(acc, acc, inp[j], len, a->dtype, a->op);
    if (a->op == DT_AVG)
        dt_reduce_avg_fast(acc, len, a->dtype, n);
    return DT_OK;
}

/* A shortcut's record: its signature and its count (in the signature, or
 * beside the buffers' addresses when it does not fit). */
static dt_coll_id shortcut_id(const dt_rec *r)
{
    return (dt_coll_id){r->sig, dt_coll_sig_count(r->sig, r->u.bufs.count), 0};
}

/* The call ends where the replay of its network algorithm says: the
 * clock, the lane's ports and the stats of the reference path. */
static void charge(dt_call *call, const dt_replay *rp)
{
    call->t = rp->t;
    *call->ports = rp->ports;
    dt_call_traffic(call, 1, rp->bytes_sent, rp->msgs_sent);
    dt_call_traffic(call, 0, rp->bytes_recv, rp->msgs_recv);
}

static dt_result tiny_allreduce(dt_call *call, const dt_coll_args *a)
{
    dt_comm *c = call->comm;
    size_t bytes = a->count * dt_dtype_size(a->dtype);
    dt_rec mine = {.sig = dt_coll_sig(a)};
    if (bytes)
        memcpy(mine.u.words, a->sendbuf, bytes);
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(call, &mine, &all));
    int same = 1; /* a tiny call's count is in its signature */
    for (int j = 1; j < c->size; j++)
        same &= all[j].sig == all[0].sig;
    if (!same)
        return dt_coll_agree(call, all, shortcut_id);
    uint64_t acc[DT_TINY_MAX / sizeof(uint64_t)];
    dt_reduce3_fast(acc, all[0].u.words, all[1].u.words, a->count, a->dtype, a->op);
    for (int j = 2; j < c->size; j++)
        dt_reduce3_fast(acc, acc, all[j].u.words, a->count, a->dtype, a->op);
    if (a->op == DT_AVG)
        dt_reduce_avg_fast(acc, a->count, a->dtype, c->size);
    dt_replay rp;
    /* Without a network (no cost), a loop of tiny allreduces leaves the
     * clocks where they are: the last replay is kept and taken again. */
    const dt_net *net = &c->link; /* the slowest: free when it is, every pair is */
    dt_replay_memo **memo = &c->memo[call->lane]; /* kept with the handle */
    int keep = net->alpha == 0 && net->beta == INFINITY && net->gamma == 0;
    if (keep && !*memo && c->size <= DT_REPLAY_MEMO_N)
        *memo = calloc(1, sizeof **memo); /* none: replayed every time */
    DT_TRY(dt_replay_rd(c, all, c->size, c->rank, bytes, &rp, keep ? *memo : NULL));
    if (bytes)
        memcpy(a->recvbuf, acc, bytes);
    charge(call, &rp);
    return DT_OK;
}

/* A shortcut's start: every rank publishes its input and its output
 * (send_bytes and recv_bytes long), with the pid that owns each: its own,
 * the same for all threads, which address each other directly; or 0 for a
 * buffer in the proc backend's shared arena, which every process does.
 * Then, before any buffer is touched, the ranks' calls are compared and
 * the network algorithm replayed (the records are overwritten two
 * exchanges later: the replay cannot wait for the end). */
static dt_result shortcut_begin(dt_call *call, const dt_coll_args *a, size_t send_bytes,
                                size_t recv_bytes, dt_replay_phases phases, size_t ring_count,
                                const dt_rec **all, dt_replay *rp)
{
    dt_comm *c = call->comm;
    const dt_job *job = c->rc->job;
    int pid = c->rc->pid;
    dt_rec mine = {.sig = dt_coll_sig(a),
                   .u.bufs = {(uint64_t)(uintptr_t)a->sendbuf, (uint64_t)(uintptr_t)a->recvbuf,
                              dt_owner_pid(job, pid, a->sendbuf, send_bytes),
                              dt_owner_pid(job, pid, a->recvbuf, recv_bytes), a->count}};
    DT_TRY(dt_sync_exchange(call, &mine, all));
    DT_TRY(dt_coll_agree(call, *all, shortcut_id));
    return dt_replay_ring(c, *all, c->size, c->rank, ring_count,
                          dt_dtype_size(a->dtype), phases, rp);
}

/* Its end: a barrier, so that no rank releases a buffer (returns) while
 * another still reads or writes it; then the replayed price. */
static dt_result shortcut_end(dt_call *call, dt_result res, const dt_replay *rp)
{
#ifdef __SSE__
    _mm_sfence(); /* streaming stores are visible before the barrier */
#endif
    const dt_rec *all;
    dt_rec done = {.sig = 0};
    dt_result r2 = dt_sync_exchange(call, &done, &all);
    DT_TRY(res);
    DT_TRY(r2);
    charge(call, rp);
    return DT_OK;
}

/* The blocks: threads keep one in L1; processes stage the others' blocks. */
static char *block_scratch(dt_call *call, size_t *block)
{
    dt_comm *c = call->comm;
    int threads = c->rc->job->backend == DT_BACKEND_THREAD;
    *block = threads ? BLOCK_THREAD : BLOCK_PROC;
    char *acc = dt_scratch(c, call->lane, *block * (threads ? 1 : (size_t)c->size));
    if (!acc)
        dt_fail(DT_ERR_NOMEM, "no memory for the shared-memory collective's blocks");
    return acc;
}

static dt_result shortcut_allreduce(dt_call *call, const dt_coll_args *a)
{
    dt_comm *c = call->comm;
    int n = c->size, r = c->rank, self = c->rc->pid;
    size_t es = dt_dtype_size(a->dtype), count = a->count, block;
    if (count * es <= DT_TINY_MAX)
        return tiny_allreduce(call, a);
    char *acc = block_scratch(call, &block);
    if (!acc)
        return DT_ERR_NOMEM;
    const dt_rec *all;
    dt_replay rp;
    DT_TRY(shortcut_begin(call, a, count * es, count * es, DT_REPLAY_RS_AG, count, &all, &rp));
    size_t lo = dt_chunk_off(count, n, r), hi = lo + dt_chunk_len(count, n, r);
    size_t per = block / es;
    int stream = count * es >= STREAM_MIN;
    dt_result res = DT_OK;
    for (size_t b = lo; b < hi && res == DT_OK; b += per) {
        size_t len = hi - b < per ? hi - b : per;
        res = reduce_block(a, all, n, r, self, acc, acc + block, block, b, len);
        for (int j = 0; j < n && res == DT_OK; j++)
            res = write_out(all, j, self, b * es, acc, len * es, stream);
    }
    return shortcut_end(call, res, &rp);
}

/* Chunk r of every input, reduced into rank r's output: count elements of
 * inputs of n count; or, as dt_allreduce's first half, block r of inputs
 * of count (the allreduce's own chunk), in place (tiny ones as the tiny
 * allreduce, whose additions are the same). */
static dt_result shortcut_reduce_scatter(dt_call *call, const dt_coll_args *a)
{
    dt_comm *c = call->comm;
    int n = c->size, r = c->rank, self = c->rc->pid;
    size_t es = dt_dtype_size(a->dtype), total = a->halves ? a->count : (size_t)n * a->count;
    if (a->halves && a->count * es <= DT_TINY_MAX)
        return tiny_allreduce(call, a);
    size_t lo = a->halves ? dt_chunk_off(total, n, r) : (size_t)r * a->count;
    size_t len = a->halves ? dt_chunk_len(total, n, r) : a->count, block;
    char *out = (char *)a->recvbuf + (a->halves ? lo * es : 0);
    char *acc = block_scratch(call, &block);
    if (!acc)
        return DT_ERR_NOMEM;
    const dt_rec *all;
    dt_replay rp;
    DT_TRY(shortcut_begin(call, a, total * es, (a->halves ? total : len) * es, DT_REPLAY_RS,
                          total, &all, &rp));
    size_t per = block / es;
    int stream = len * es >= STREAM_MIN;
    dt_result res = DT_OK;
    for (size_t b = 0; b < len && res == DT_OK; b += per) {
        size_t l = len - b < per ? len - b : per;
        res = reduce_block(a, all, n, r, self, acc, acc + block, block, lo + b, l);
        if (res == DT_OK)
            store(out + b * es, acc, l * es, stream);
    }
    return shortcut_end(call, res, &rp);
}

/* This rank's input (count elements; or, as dt_allreduce's second half,
 * its block of the cut of count) into its place in every rank's output.
 * Pushed, not pulled: a rank that read another's input would leave a copy
 * of those lines in its cache, and the owner's next write to its input (the
 * optimizer updating its shard, in ZeRO) would have to take every line back
 * from it (BENCHMARKS.md, data parallel: the sharded step). */
static dt_result shortcut_allgather(dt_call *call, const dt_coll_args *a)
{
    dt_comm *c = call->comm;
    int n = c->size, self = c->rc->pid;
    size_t es = dt_dtype_size(a->dtype), total = a->halves ? a->count : (size_t)n * a->count;
    size_t lo = a->halves ? dt_chunk_off(total, n, c->rank) : (size_t)c->rank * a->count;
    size_t blk = (a->halves ? dt_chunk_len(total, n, c->rank) : a->count) * es;
    const char *src = a->halves ? (const char *)a->recvbuf + lo * es : a->sendbuf;
    const dt_rec *all;
    dt_replay rp;
    DT_TRY(shortcut_begin(call, a, a->halves ? total * es : blk, total * es, DT_REPLAY_AG, total,
                          &all, &rp));
    int stream = total * es >= STREAM_MIN;
    dt_result res = DT_OK;
    for (int j = 0; j < n && res == DT_OK; j++) {
        if (j == c->rank && src == (char *)a->recvbuf + lo * es)
            continue; /* in place */
        res = write_out(all, j, self, lo * es, src, blk, stream);
    }
    return shortcut_end(call, res, &rp);
}

int dt_shortcut_applies(int kind, size_t bytes)
{
    switch (kind) {
    case DT_COLL_ALLREDUCE: return bytes <= DT_TINY_MAX || bytes >= DT_SHORTCUT_MIN;
    case DT_COLL_REDUCE_SCATTER:
    case DT_COLL_ALLGATHER: return bytes >= DT_SHORTCUT_MIN;
    default: return 0;
    }
}

dt_result dt_shortcut_collective(dt_call *call, const dt_coll_args *a)
{
    switch (a->kind) {
    case DT_COLL_ALLREDUCE: return shortcut_allreduce(call, a);
    case DT_COLL_REDUCE_SCATTER: return shortcut_reduce_scatter(call, a);
    case DT_COLL_ALLGATHER: return shortcut_allgather(call, a);
    default: return dt_fail(DT_ERR_INTERNAL, "no shortcut for %s", dt_coll_name(a->kind));
    }
}
