/* window.c - shared windows (like MPI_Win_allocate_shared): one zeroed
 * region that every rank of a communicator addresses directly. Rank 0 of
 * the communicator allocates it in the job's shared memory (the heap in
 * the thread backend, the arena in the proc backend, which every process
 * maps at the same address) and hands the address to the others through
 * the barrier-exchange. On the mpi backend, MPI_Win_allocate_shared
 * (mpi_group.c) gives the processes of one machine the region. And
 * dt_alloc_shared: one rank's buffer in that same shared memory, which the
 * collectives then address directly. */
#include "diag.h"
#include "mpi/mpi_backend.h"
#include "shm.h"
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN_LIVE 0x77696e21U /* "win!" */

struct dt_win {
    uint32_t magic;
    dt_comm *comm;
    void *base;
    size_t bytes;
    void *mpi; /* the mpi backend's window (mpi_group.c), else NULL */
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
    dt_job *job = comm->rc->job;
    int mpi = dt_mpi_job(job); /* MPI allocates it once every rank came */
    void *p = comm->rank == 0 && !mpi ? dt_shm_alloc(job, bytes) : NULL;
    dt_rec mine = {.sig = comm->rank == 0 && !p && !mpi,
                   .u.win = {bytes, {(uint64_t)(uintptr_t)p}}};
    char err[256] = "";
    if (mine.sig) { /* the others learn why: the words before ':' */
        snprintf(err, sizeof err, "%s", dt_last_error());
        snprintf(mine.u.win.to.why, sizeof mine.u.win.to.why, "%.*s", (int)strcspn(err, ":"),
                 err);
    }
    const dt_rec *all;
    dt_result r = win_sync(comm, &mine, &all);
    if (r != DT_OK) {
        dt_shm_free(job, p);
        return r;
    }
    for (int i = 0; i < comm->size; i++) {
        if (all[i].u.win.bytes != bytes) {
            dt_shm_free(job, p);
            return dt_fail(DT_ERR_MISMATCH, "dt_win_allocate: rank %d asks for %llu bytes, "
                           "rank %d for %zu", i, (unsigned long long)all[i].u.win.bytes, comm->rank,
                           bytes);
        }
    }
    if (mine.sig)
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: %s", err);
    if (all[0].sig) {
        char why[sizeof all[0].u.win.to.why + 1];
        snprintf(why, sizeof why, "%.*s", (int)sizeof all[0].u.win.to.why, all[0].u.win.to.why);
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: rank 0 could not allocate %zu bytes: %s",
                       bytes, why);
    }
    void *shared = (void *)(uintptr_t)all[0].u.win.to.base, *mw = NULL;
    if (mpi)
        DT_TRY(dt_mpi_win_allocate(comm, bytes, &shared, &mw));
    dt_win *w = calloc(1, sizeof *w);
    if (!w) {
        dt_shm_free(job, p);
        if (mw)
            dt_mpi_win_free(mw);
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: out of memory");
    }
    w->mpi = mw;
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
    /* after the barrier nobody touches the region: rank 0 releases it */
    if (win->mpi)
        dt_mpi_win_free(win->mpi);
    else if (r == DT_OK && comm->rank == 0)
        dt_shm_free(comm->rc->job, win->base);
    win->magic = 0;
    free(win);
    return r;
}
