/* nccl_wait.c - NCCL's and CUDA's errors as dt_result, and the one wait of
 * the nccl backend: a CUDA event recorded behind the call on its stream,
 * polled until it completes, within the job's deadline.
 *
 * NCCL reports a failure in two places: the return of the call that
 * enqueues (a bad argument, a setup failure), and later, for a failure
 * while the kernels run (a peer gone, a network error), through
 * ncclCommGetAsyncError. A kernel that waits for a peer that never comes
 * never ends on its own, so the wait polls both the event and the async
 * error, and on its deadline aborts the communicator (ncclCommAbort), the
 * only way to get the GPU back from such a kernel. */
#include "nccl_backend.h"

#include <sched.h>
#include <time.h>

dt_result dt_nccl_check(ncclResult_t e, ncclComm_t nc, const char *what)
{
    if (e == ncclSuccess || e == ncclInProgress)
        return DT_OK;
    const char *last = nc ? ncclGetLastError(nc) : ncclGetLastError(NULL);
    return dt_fail(e == ncclInvalidArgument || e == ncclInvalidUsage ? DT_ERR_INVALID_ARG
                   : e == ncclSystemError ? DT_ERR_IO : DT_ERR_INTERNAL,
                   "%s: NCCL error %d: %s%s%s", what, (int)e, ncclGetErrorString(e),
                   last && last[0] ? ": " : "", last ? last : "");
}

dt_result dt_cuda_check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return DT_OK;
    return dt_fail(e == cudaErrorMemoryAllocation ? DT_ERR_NOMEM
                   : e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary
                     ? DT_ERR_UNSUPPORTED
                   : DT_ERR_INTERNAL,
                   "%s: CUDA error %d (%s): %s", what, (int)e, cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

void dt_nccl_abort(dt_nccl_comm *s)
{
    if (atomic_exchange(&s->aborted, 1))
        return;
    for (int l = 0; l < DT_LANES; l++)
        if (s->nc[l])
            ncclCommAbort(s->nc[l]);
}

dt_result dt_nccl_wait_event(dt_call *call, dt_nccl_comm *s, int lane, cudaEvent_t ev,
                             const char *what)
{
    ncclComm_t nc = s->nc[lane];
    dt_job *job = dt_call_job(call);
    double deadline = dt_now() + job->timeout_s;
    for (long spins = 0;; spins++) {
        cudaError_t ce = cudaEventQuery(ev);
        if (ce == cudaSuccess)
            return DT_OK;
        if (ce != cudaErrorNotReady)
            return dt_cuda_check(ce, what);
        ncclResult_t async = ncclSuccess;
        ncclResult_t e = ncclCommGetAsyncError(nc, &async);
        if (e != ncclSuccess || (async != ncclSuccess && async != ncclInProgress)) {
            dt_result r = dt_nccl_check(e != ncclSuccess ? e : async, nc, what);
            dt_nccl_abort(s);
            return r;
        }
        if (atomic_load_explicit(&job->failed, memory_order_acquire)) {
            dt_nccl_abort(s); /* its peer's kernels will never come */
            return dt_fail(DT_ERR_PEER_DIED, "%s (nccl): a rank of the job failed; the NCCL "
                           "communicator is aborted", what);
        }
        if (dt_now() >= deadline) {
            dt_nccl_abort(s);
            return dt_fail(DT_ERR_TIMEOUT, "timeout after %g s in %s #%ld (nccl): the GPU's "
                           "kernel did not complete; the NCCL communicator is aborted",
                           job->timeout_s, what, call->seq);
        }
        /* a short kernel ends within microseconds: spin, then yield, then
         * sleep 50 us between looks */
        if (spins > 1000)
            nanosleep(&(struct timespec){0, 50000}, NULL);
        else if (spins > 100)
            sched_yield();
    }
}
