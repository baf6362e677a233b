/* window.c - shared windows (like MPI_Win_allocate_shared): one zeroed
 * region that every rank of a communicator addresses directly, the
 * backend's (backend.h: the emulation's rank 0 allocates it in the job's
 * shared memory, mpi asks MPI for it); the handle, the checks and the
 * barriers are here. And dt_alloc_shared: one rank's buffer in the job's
 * shared memory, which the collectives then address directly. */
#include "backend.h"
#include "diag.h"
#include "shm.h"

#include <stdlib.h>

#define WIN_LIVE 0x77696e21U /* "win!" */

struct dt_win {
    uint32_t magic;
    dt_comm *comm;
    void *base;
    size_t bytes;
    void *handle; /* the backend's (win_allocate) */
};

static dt_result win_sync(dt_comm *comm, dt_rec *mine, const dt_rec **all)
{
    long seq = ++comm->seq;
    dt_call call;
    dt_call_init(&call, comm, 0, DT_NUM_COLLS, seq, 0);
    dt_doing_set(comm, 0, DT_NUM_COLLS, seq, mine->u.win.bytes, -1, 0);
    dt_result r = dt_sync_exchange(&call, mine, all);
    dt_doing_set(comm, 0, -1, 0, 0, 0, 0);
    return r;
}

dt_result dt_win_exchange(dt_comm *comm, dt_rec *mine, const dt_rec **all)
{
    size_t bytes = mine->u.win.bytes;
    DT_TRY(win_sync(comm, mine, all));
    for (int i = 0; i < comm->size; i++)
        if ((*all)[i].u.win.bytes != bytes)
            return dt_fail(DT_ERR_MISMATCH, "dt_win_allocate: rank %d asks for %llu bytes, "
                           "rank %d for %zu", i, (unsigned long long)(*all)[i].u.win.bytes,
                           comm->rank, bytes);
    return DT_OK;
}

dt_result dt_alloc_shared(dt_comm *comm, size_t bytes, void **p)
{
    DT_TRY(dt_comm_check(comm, "dt_alloc_shared"));
    if (!p)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_alloc_shared: p is NULL");
    *p = NULL;
    if (bytes == 0 || bytes > SIZE_MAX / 4)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_alloc_shared: bad size %zu bytes", bytes);
    *p = dt_shm_alloc(comm->rc->job, bytes); /* says why when it fails */
    return *p ? DT_OK : DT_ERR_NOMEM;
}

void dt_free_shared(dt_comm *comm, void *p)
{
    if (p && dt_comm_check(comm, "dt_free_shared") == DT_OK)
        dt_shm_free(comm->rc->job, p);
}

dt_result dt_win_allocate(dt_comm *comm, size_t bytes, void **base, dt_win **win)
{
    DT_TRY(dt_comm_check(comm, "dt_win_allocate"));
    if (!base || !win)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_win_allocate: %s is NULL", base ? "win" : "base");
    *base = NULL;
    *win = NULL;
    if (bytes == 0 || bytes > SIZE_MAX / 4)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_win_allocate: bad size %zu bytes", bytes);
    const dt_backend_ops *be = comm->rc->ops;
    void *shared = NULL, *handle = NULL;
    DT_TRY(be->win_allocate(comm, bytes, &shared, &handle));
    dt_win *w = calloc(1, sizeof *w);
    if (!w) {
        be->win_free(comm, shared, handle, 1);
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: out of memory");
    }
    w->handle = handle;
    w->magic = WIN_LIVE;
    w->comm = comm;
    w->base = shared;
    w->bytes = bytes;
    *base = shared;
    *win = w;
    return DT_OK;
}

dt_result dt_win_free(dt_win *win)
{
    if (!win)
        return DT_OK;
    if (win->magic != WIN_LIVE)
        return dt_fail(DT_ERR_STATE, "dt_win_free: not a live window");
    dt_comm *comm = win->comm;
    DT_TRY(dt_comm_check(comm, "dt_win_free"));
    dt_rec mine = {.sig = 0};
    const dt_rec *all;
    dt_result r = win_sync(comm, &mine, &all);
    /* after the barrier nobody touches the region */
    comm->rc->ops->win_free(comm, win->base, win->handle, r == DT_OK);
    win->magic = 0;
    free(win);
    return r;
}
