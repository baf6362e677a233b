/* nccl_ops.c - the nccl backend's table (backend.h), made over a host
 * backend's: a GPU rank needs a host process, and its job a host side (the
 * ranks' processes, the barrier-exchange that carries NCCL's unique id,
 * the rank board, the deadline and its timeout report). That side is the
 * host table's, which backend.c picks (proc's; mpi's under mpirun); the data side
 * is NCCL's, on device buffers. The nccl folder names no other backend:
 * it reaches the host side through the table it is given. */
#include "nccl_backend.h"

#include <pthread.h>

static dt_backend_ops table;

static dt_result no_any(dt_call *call, size_t bytes, int *src)
{
    (void)call, (void)bytes, (void)src;
    return dt_fail(DT_ERR_UNSUPPORTED, "dt_recv_any: NCCL receives from a named rank only "
                   "(ncclRecv has no any-source)");
}

static dt_result no_win(dt_comm *comm, size_t bytes, void **base, void **handle)
{
    (void)comm, (void)bytes, (void)base, (void)handle;
    return dt_fail(DT_ERR_UNSUPPORTED, "dt_win_allocate: the nccl backend has no shared "
                   "windows (device memory is the rank's own; use the collectives)");
}

static void no_win_free(dt_comm *comm, void *base, void *handle, int synced)
{
    (void)comm, (void)base, (void)handle, (void)synced;
}

/* dt_sendrecv with itself: a copy on the GPU (cudaMemcpyDefault: the
 * pointers say where they are). */
static dt_result device_copy(void *dst, const void *src, size_t bytes)
{
    DT_TRY(dt_cuda_check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "dt_sendrecv (nccl)"));
    return DT_OK;
}

static const dt_backend_ops *pending_host;

static void make_table(void)
{
    dt_nccl_set_host(pending_host);
    table = *pending_host;   /* launch, kill, groups' host part, exchange, wait */
    table.name = "nccl";
    table.started = NULL;    /* a program joins nccl's jobs only through dt_launch */
    table.attach = NULL;
    table.detach = NULL;
    table.rank_start = dt_nccl_rank_start;
    table.rank_end = dt_nccl_rank_end;
    table.split = dt_nccl_split;
    table.win_allocate = no_win;
    table.win_free = no_win_free;
    table.collective = dt_nccl_collective;
    table.shortcut = NULL;   /* NCCL chooses its own algorithm */
    table.isend = dt_nccl_isend;
    table.irecv = dt_nccl_irecv;
    table.wait = dt_nccl_wait;
    table.done = dt_nccl_done;
    table.cancel = dt_nccl_cancel;
    table.choose_any = no_any;
    table.copy = device_copy;
}

const dt_backend_ops *dt_nccl_ops_over(const dt_backend_ops *h)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pending_host = h;
    pthread_once(&once, make_table);
    return &table;
}
