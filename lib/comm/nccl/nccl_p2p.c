/* nccl_p2p.c - point-to-point messages as ncclSend and ncclRecv.
 *
 * NCCL matches a send with the receive its peer posts in the same order,
 * and a send of more than a few bytes does not complete before its
 * receive is there: two ranks that each send, then receive, hang unless
 * both calls are in one group (ncclGroupStart ... ncclGroupEnd). So a post
 * only queues its transfer; the first wait (or done) on the lane launches
 * every queued one as one group, then records a CUDA event behind each:
 * dt_sendrecv and an algorithm's posts before their waits go together,
 * as NCCL asks. Each collective launches the queue first, so that a send
 * posted before it is ahead of it on the stream. The tag is not carried (NCCL's messages between two ranks
 * arrive in the order sent, as dt_send's user messages do); nor is the
 * size, so a receive of another size than its send cannot be diagnosed
 * here, as it is on the other backends. A host buffer is staged through
 * device memory of its own (nccl_stage.c's rule). */
#include "nccl_backend.h"

#include "../stats.h"

#include <stdlib.h>

typedef struct nccl_xfer {
    dt_msg m;               /* first: dt_xfer.m points here */
    dt_nccl_comm *s;
    int lane, peer, launched;
    cudaEvent_t ev;
    void *dev;              /* device staging of a host buffer (NULL: buf is on the GPU) */
    struct nccl_xfer *next_queued;
} nccl_xfer;

/* A host buffer's device copy for NCCL (nccl_stage.c's rule, per message:
 * a send's data copied up before the group launches). */
static dt_result stage(nccl_xfer *x)
{
    if (!x->m.bytes || dt_nccl_on_device(x->m.buf))
        return DT_OK;
    cudaStream_t st = x->s->stream[x->lane];
    DT_TRY(dt_cuda_check(cudaMallocAsync(&x->dev, x->m.bytes, st), "nccl: staging a message"));
    if (x->m.dir == DT_MSG_SEND)
        DT_TRY(dt_cuda_check(cudaMemcpyAsync(x->dev, x->m.buf, x->m.bytes,
                                             cudaMemcpyHostToDevice, st),
                             "nccl: staging a message"));
    return DT_OK;
}

/* Stream-ordered frees: cudaFree would wait for the whole device, the
 * other lane's NCCL kernel included, which may be waiting for a peer. */
static void release(nccl_xfer *x)
{
    if (x->ev)
        cudaEventDestroy(x->ev);
    if (x->dev)
        cudaFreeAsync(x->dev, x->s->stream[x->lane]);
    free(x);
}

/* The posts not yet launched, per lane (a rank is a process; its lanes are
 * its two threads, each with its own queue). */
static _Thread_local nccl_xfer *queued;

static dt_result post(dt_call *call, int peer, void *buf, size_t bytes, dt_msg_dir dir,
                      dt_xfer *out)
{
    dt_nccl_comm *s;
    DT_TRY(dt_nccl_comm_of(call, 0, &s));
    nccl_xfer *x = calloc(1, sizeof *x);
    if (!x)
        return DT_ERR_NOMEM;
    x->m.dir = dir;
    x->m.src = dir == DT_MSG_RECV ? peer : call->comm->rank;
    x->m.buf = buf;
    x->m.bytes = bytes;
    x->s = s;
    x->lane = call->lane;
    x->peer = peer;
    x->next_queued = queued;
    queued = x;
    out->m = &x->m;
    out->done = call->t;
    return DT_OK;
}

dt_result dt_nccl_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out)
{
    (void)tag;
    return post(call, peer, (void *)buf, bytes, DT_MSG_SEND, out);
}

dt_result dt_nccl_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out)
{
    (void)tag;
    return post(call, peer, buf, bytes, DT_MSG_RECV, out);
}

/* Launches every queued post of this thread as one group, in the order
 * posted (also before each collective: a send posted before it must come
 * before it on the stream, as the peer's receive may). */
dt_result dt_nccl_flush(void)
{
    nccl_xfer *rev = NULL;
    while (queued) { /* the queue is newest first */
        nccl_xfer *x = queued;
        queued = x->next_queued;
        x->next_queued = rev;
        rev = x;
    }
    if (!rev)
        return DT_OK;
    ncclComm_t nc = rev->s->nc[rev->lane];
    dt_result r = DT_OK;
    for (nccl_xfer *x = rev; r == DT_OK && x; x = x->next_queued)
        r = stage(x);
    ncclResult_t e = r == DT_OK ? ncclGroupStart() : ncclSuccess;
    for (nccl_xfer *x = rev; r == DT_OK && e == ncclSuccess && x; x = x->next_queued) {
        cudaStream_t st = x->s->stream[x->lane];
        ncclComm_t c = x->s->nc[x->lane];
        void *b = x->dev ? x->dev : x->m.buf;
        e = x->m.dir == DT_MSG_SEND ? ncclSend(b, x->m.bytes, ncclUint8, x->peer, c, st)
                                    : ncclRecv(b, x->m.bytes, ncclUint8, x->peer, c, st);
    }
    if (r == DT_OK) {
        ncclResult_t g = ncclGroupEnd();
        r = dt_nccl_check(e != ncclSuccess ? e : g, nc, "nccl: send/recv group");
    }
    for (nccl_xfer *x = rev; x; x = x->next_queued) {
        x->launched = 1;
        if (r == DT_OK)
            r = dt_cuda_check(cudaEventCreateWithFlags(&x->ev, cudaEventDisableTiming),
                              "nccl: cudaEventCreate");
        if (r == DT_OK)
            r = dt_cuda_check(cudaEventRecord(x->ev, x->s->stream[x->lane]), "nccl: cudaEventRecord");
    }
    return r;
}

dt_result dt_nccl_wait(dt_call *call, dt_xfer *xf, int *src)
{
    if (!xf->m)
        return DT_OK;
    nccl_xfer *x = (nccl_xfer *)xf->m;
    dt_result r = x->launched ? DT_OK : dt_nccl_flush();
    if (r == DT_OK && !x->ev)
        r = dt_fail(DT_ERR_INTERNAL, "nccl: a transfer without its event");
    if (r == DT_OK)
        r = dt_nccl_wait_event(call, x->s, x->lane, x->ev,
                               x->m.dir == DT_MSG_SEND ? "dt_send (nccl)" : "dt_recv (nccl)");
    if (r == DT_OK && x->dev && x->m.dir == DT_MSG_RECV) /* done: the copy cannot hang */
        r = dt_cuda_check(cudaMemcpyAsync(x->m.buf, x->dev, x->m.bytes, cudaMemcpyDeviceToHost,
                                          x->s->stream[x->lane]),
                          "nccl: staging a message back");
    if (r == DT_OK && x->dev && x->m.dir == DT_MSG_RECV)
        r = dt_cuda_check(cudaStreamSynchronize(x->s->stream[x->lane]),
                          "nccl: staging a message back");
    if (r == DT_OK) {
        dt_call_traffic(call, x->m.dir == DT_MSG_SEND, x->m.bytes, 1);
        if (src)
            *src = x->peer;
    }
    release(x);
    xf->m = NULL;
    return r;
}

int dt_nccl_done(const dt_xfer *xf)
{
    if (!xf->m)
        return 1;
    nccl_xfer *x = (nccl_xfer *)xf->m;
    if (!x->launched && dt_nccl_flush() != DT_OK)
        return 1; /* its wait reports the failure */
    if (!x->launched) /* another thread's post: its wait launches it */
        return 0;
    return !x->ev || cudaEventQuery(x->ev) != cudaErrorNotReady;
}

/* A launched transfer cannot be taken back from NCCL: its communicator is
 * aborted, so that no byte lands in the buffer after this returns. */
void dt_nccl_cancel(dt_call *call, dt_xfer *xf)
{
    (void)call;
    if (!xf->m)
        return;
    nccl_xfer *x = (nccl_xfer *)xf->m;
    if (!x->launched) {
        for (nccl_xfer **p = &queued; *p; p = &(*p)->next_queued)
            if (*p == x) {
                *p = x->next_queued;
                break;
            }
    } else if (x->ev && cudaEventQuery(x->ev) == cudaErrorNotReady) {
        dt_nccl_abort(x->s);
    }
    release(x);
    xf->m = NULL;
}
