/* nccl_coll.c - every collective of dt/comm.h as its NCCL call on the
 * rank's stream for the call's lane, then a CUDA event behind it, waited
 * for within the job's deadline (nccl_wait.c). The API has checked the
 * arguments, numbered the call and, with debug on, checked over the barrier-exchange
 * that every rank called the same (the signature check runs before NCCL
 * sees the call: a mismatch is named, not hung on). Host buffers are
 * staged through device memory (nccl_stage.c).
 *
 * Which algorithm runs is NCCL's choice (rings, trees, NVLS; chapter 15):
 * dt_algo is not passed on. The stats count what the ring would move per
 * rank, as nccl-tests' bus bandwidth does (the chapter's busbw factors):
 * allreduce 2(N-1)/N n, reduce-scatter and allgather (N-1)/N n of the
 * whole buffer, broadcast and reduce n, alltoall (N-1)/N n. */
#include "nccl_backend.h"

#include "../stats.h"

static dt_result type_of(dt_dtype t, ncclDataType_t *out)
{
    static const ncclDataType_t map[DT_NUM_DTYPES] = {
        [DT_F32] = ncclFloat32, [DT_F16] = ncclFloat16, [DT_BF16] = ncclBfloat16,
        [DT_I32] = ncclInt32,   [DT_I8] = ncclInt8,     [DT_U8] = ncclUint8,
    };
    if ((int)t < 0 || t >= DT_NUM_DTYPES)
        return dt_fail(DT_ERR_INVALID_ARG, "nccl: dtype %d has no NCCL type", (int)t);
    *out = map[t];
    return DT_OK;
}

static ncclRedOp_t op_of(dt_redop op)
{
    switch (op) {
    case DT_PROD: return ncclProd;
    case DT_MAX: return ncclMax;
    case DT_MIN: return ncclMin;
    case DT_AVG: return ncclAvg;
    default: return ncclSum;
    }
}

/* What the ring moves per rank (the stats), for a collective of n bytes
 * in all on N ranks. */
static void count_traffic(dt_call *call, int kind, size_t n, int N)
{
    double f = kind == DT_COLL_ALLREDUCE ? 2.0 * (N - 1) / N
             : kind == DT_COLL_BROADCAST || kind == DT_COLL_REDUCE ? (N > 1 ? 1.0 : 0.0)
             : kind == DT_COLL_BARRIER ? 0.0 : (double)(N - 1) / N;
    uint64_t bytes = (uint64_t)(f * (double)n);
    uint64_t msgs = N > 1 && kind != DT_COLL_BARRIER ? 1 : 0;
    dt_call_traffic(call, 1, bytes, msgs);
    dt_call_traffic(call, 0, bytes, msgs);
}

/* dt_allreduce's halves in place on count elements cut by dt_block. The
 * first: the whole ncclAllReduce, since its contract is dt_allreduce's sums
 * bit for bit, which NCCL's reduce-scatter does not promise (it may add in
 * another order than the allreduce NCCL picks: a tree); this rank's block
 * is then reduced, as every other. The second: ncclAllGather in place
 * where the blocks are equal, else a broadcast of each block from its
 * owner, in one group. */
static ncclResult_t halves(const dt_coll_args *a, ncclDataType_t t, size_t esize, int rank,
                           int size, ncclComm_t nc, cudaStream_t st)
{
    char *buf = a->recvbuf;
    int even = a->count % (size_t)size == 0;
    size_t blk = a->count / (size_t)size;
    if (a->kind == DT_COLL_REDUCE_SCATTER)
        return ncclAllReduce(buf, buf, a->count, t, op_of(a->op), nc, st);
    if (even)
        return ncclAllGather(buf + (size_t)rank * blk * esize, buf, blk, t, nc, st);
    ncclResult_t e = ncclGroupStart();
    for (int r = 0; e == ncclSuccess && r < size; r++) {
        size_t off, len;
        dt_block(a->count, size, r, &off, &len);
        e = ncclBroadcast(buf + off * esize, buf + off * esize, len, t, r, nc, st);
    }
    ncclResult_t g = ncclGroupEnd();
    return e != ncclSuccess ? e : g;
}

/* alltoall: a send and a receive of each block with every rank, in one
 * group (NCCL has no alltoall of its own). */
static ncclResult_t alltoall(const dt_coll_args *a, ncclDataType_t t, size_t esize, int size,
                             ncclComm_t nc, cudaStream_t st)
{
    const char *s = a->sendbuf;
    char *d = a->recvbuf;
    size_t blk = a->count * esize;
    ncclResult_t e = ncclGroupStart();
    for (int r = 0; e == ncclSuccess && r < size; r++) {
        e = ncclSend(s + (size_t)r * blk, a->count, t, r, nc, st);
        if (e == ncclSuccess)
            e = ncclRecv(d + (size_t)r * blk, a->count, t, r, nc, st);
    }
    ncclResult_t g = ncclGroupEnd();
    return e != ncclSuccess ? e : g;
}

dt_result dt_nccl_collective(dt_call *call, const dt_coll_args *a)
{
    dt_nccl_comm *s;
    DT_TRY(dt_nccl_comm_of(call, 1, &s));
    DT_TRY(dt_nccl_flush());
    ncclDataType_t t = ncclFloat32;
    DT_TRY(type_of(a->dtype, &t));
    int rank = call->comm->rank, size = call->comm->size, l = call->lane;
    ncclComm_t nc = s->nc[l];
    cudaStream_t st = s->stream[l];
    size_t esize = dt_dtype_size(a->dtype), n = a->count * esize;
    const char *what = dt_coll_name((dt_coll_kind)a->kind);
    size_t N = (size_t)size, sb = n, rb = n; /* the bytes of each buffer */
    if (a->kind == DT_COLL_BROADCAST)
        sb = rank == a->root ? n : 0;
    else if (a->kind == DT_COLL_REDUCE)
        rb = rank == a->root ? n : 0;
    else if (a->kind == DT_COLL_ALLGATHER && !a->halves)
        rb = n * N;
    else if (a->kind == DT_COLL_REDUCE_SCATTER && !a->halves)
        sb = n * N;
    else if (a->kind == DT_COLL_ALLTOALL)
        sb = rb = n * N;
    else if (a->kind == DT_COLL_BARRIER)
        sb = rb = 0;
    dt_nccl_staged stg;
    DT_TRY(dt_nccl_stage_in(s, l, &stg, a->sendbuf, sb, a->recvbuf, rb));
    dt_coll_args staged = *a;
    staged.sendbuf = stg.send;
    staged.recvbuf = stg.recv;
    a = &staged;
    ncclResult_t e;
    switch (a->kind) {
    case DT_COLL_ALLREDUCE:
        e = ncclAllReduce(a->sendbuf, a->recvbuf, a->count, t, op_of(a->op), nc, st);
        break;
    case DT_COLL_BROADCAST:
        e = ncclBroadcast(a->sendbuf, a->recvbuf, a->count, t, a->root, nc, st);
        break;
    case DT_COLL_REDUCE:
        e = ncclReduce(a->sendbuf, a->recvbuf, a->count, t, op_of(a->op), a->root, nc, st);
        break;
    case DT_COLL_ALLGATHER:
        e = a->halves ? halves(a, t, esize, rank, size, nc, st)
                      : ncclAllGather(a->sendbuf, a->recvbuf, a->count, t, nc, st);
        n = a->halves ? n : n * (size_t)size;
        break;
    case DT_COLL_REDUCE_SCATTER:
        e = a->halves ? halves(a, t, esize, rank, size, nc, st)
                      : ncclReduceScatter(a->sendbuf, a->recvbuf, a->count, t, op_of(a->op), nc,
                                          st);
        n = a->halves ? n : n * (size_t)size;
        break;
    case DT_COLL_ALLTOALL:
        e = alltoall(a, t, esize, size, nc, st);
        n *= (size_t)size;
        break;
    case DT_COLL_BARRIER: /* a one-word allreduce: every rank has entered */
        e = ncclAllReduce(s->scratch, s->scratch, 1, ncclInt32, ncclSum, nc, st);
        break;
    default:
        return dt_fail(DT_ERR_INTERNAL, "nccl: collective kind %d", a->kind);
    }
    DT_TRY(dt_nccl_check(e, nc, what));
    cudaEvent_t ev;
    DT_TRY(dt_cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), what));
    dt_result r = dt_cuda_check(cudaEventRecord(ev, st), what);
    if (r == DT_OK)
        r = dt_nccl_wait_event(call, s, l, ev, what);
    cudaEventDestroy(ev);
    if (r == DT_OK && stg.host_recv) { /* the kernel is done: the copy back cannot hang */
        r = dt_nccl_stage_out(s, l, &stg);
        if (r == DT_OK)
            r = dt_cuda_check(cudaStreamSynchronize(st), what);
    }
    if (r == DT_OK)
        count_traffic(call, a->kind, n, size);
    return r;
}
