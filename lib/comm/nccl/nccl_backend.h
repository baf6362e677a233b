/* nccl_backend.h - the nccl backend's parts (backend.h): one rank per GPU,
 * its buffers in device memory, each call mapped onto NCCL on the rank's
 * CUDA stream. Built by `make gpu` only (DT_HAVE_NCCL), where nvcc, the CUDA
 * runtime and NCCL are found. Not a public header.
 *
 * The host side of a job is a host backend's table (backend.c passes
 * proc's, or mpi's under mpirun; nccl_ops.c): the ranks' processes, the
 * barrier-exchange, the rank board and its timeout report. Through the
 * barrier-exchange passes what NCCL needs from the host: the unique id
 * that rank 0 makes and every rank's verdict on ncclCommInitRank.
 *
 * Per rank and communicator (private to the rank's process, found by its
 * handle): one NCCL communicator and one stream for each lane, so that the
 * blocking calls (lane 0) and the progress thread's (lane 1) never
 * interleave their NCCL calls differently on different ranks. */
#ifndef DT_COMM_NCCL_BACKEND_H
#define DT_COMM_NCCL_BACKEND_H

#include "../backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

typedef struct dt_nccl_comm {
    const dt_comm *comm;          /* whose (the handle) */
    ncclComm_t nc[DT_LANES];      /* one per lane */
    cudaStream_t stream[DT_LANES];
    int device;
    void *scratch;                /* 4 bytes of device memory: the barrier */
    _Atomic int aborted;          /* 1 once ncclCommAbort freed a communicator */
    char *stage[DT_LANES];        /* device memory for host buffers (nccl_stage.c) */
    size_t stage_bytes[DT_LANES];
    struct dt_nccl_comm *next;
} dt_nccl_comm;

/* ---- nccl_ops.c */
/* The nccl table over the host table h (backend.c passes proc's). */
const dt_backend_ops *dt_nccl_ops_over(const dt_backend_ops *h);

/* ---- nccl_group.c */
/* The host table (set by nccl_ops.c), whose split makes a group's host side. */
void dt_nccl_set_host(const dt_backend_ops *h);
const dt_backend_ops *dt_nccl_host(void);
/* The rank's NCCL state on call->comm: the world's is made at the rank's
 * start (dt_nccl_rank_start: rank 0's unique id through the exchange,
 * ncclCommInitRank, every rank's verdict), a split's by dt_nccl_split;
 * may_init makes a missing one (a collective: every rank is there), else
 * a missing or aborted one is refused, naming why. */
dt_result dt_nccl_comm_of(dt_call *call, int may_init, dt_nccl_comm **out);
dt_result dt_nccl_rank_start(dt_comm *world);
void dt_nccl_rank_end(dt_rank_ctx *rc);
dt_result dt_nccl_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                        dt_comm **out);
/* The GPU of world rank r: r modulo the visible devices, or device 0 for
 * every rank on the NCCL_HOSTID route (DT_NCCL_HOSTID=1). */
dt_result dt_nccl_device(int world_rank, int *device);

/* ---- nccl_wait.c */
/* DT_OK for ncclSuccess, else r with "what: NCCL's message" (and the
 * asynchronous error of nc, when it has one). */
dt_result dt_nccl_check(ncclResult_t e, ncclComm_t nc, const char *what);
dt_result dt_cuda_check(cudaError_t e, const char *what);
/* Waits for ev within the job's deadline, polling ncclCommGetAsyncError
 * and the job's failed ranks; on a timeout or an NCCL error the
 * communicator is aborted (its calls cannot complete any more). */
dt_result dt_nccl_wait_event(dt_call *call, dt_nccl_comm *s, int lane, cudaEvent_t ev,
                             const char *what);
/* ncclCommAbort of both lanes' communicators, once (their work cannot
 * complete any more). */
void dt_nccl_abort(dt_nccl_comm *s);

/* ---- nccl_stage.c */
/* A call's buffers as NCCL gets them: device memory as given; host memory
 * staged through the state's device buffer of the lane. */
typedef struct {
    void *send, *recv;  /* what NCCL gets */
    void *host_recv;    /* the host buffer to copy recv back into; NULL: none */
    size_t rbytes;
} dt_nccl_staged;
int dt_nccl_on_device(const void *p);
/* Before the NCCL call: the staged pointers, the host send range copied
 * up on lane l's stream. After its event completed: the receive copied
 * back, then the stream synchronized by the caller. */
dt_result dt_nccl_stage_in(dt_nccl_comm *s, int l, dt_nccl_staged *st, const void *send,
                           size_t sbytes, void *recv, size_t rbytes);
dt_result dt_nccl_stage_out(dt_nccl_comm *s, int l, const dt_nccl_staged *st);

/* ---- nccl_coll.c */
dt_result dt_nccl_collective(dt_call *call, const dt_coll_args *a);

/* ---- nccl_p2p.c */
dt_result dt_nccl_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out);
dt_result dt_nccl_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out);
dt_result dt_nccl_wait(dt_call *call, dt_xfer *x, int *src);
int dt_nccl_done(const dt_xfer *x);
void dt_nccl_cancel(dt_call *call, dt_xfer *x);
/* Launches this thread's queued posts as one NCCL group. */
dt_result dt_nccl_flush(void);

#endif /* DT_COMM_NCCL_BACKEND_H */
