/* mpi_trace.c - DT_TRACE on the mpi backend: each rank's events travel to
 * rank 0's process (over the launch's control communicator), which writes
 * the one trace file the other backends write. Wall times are taken
 * relative to each process's own start of the launch: clocks of different
 * machines are not comparable. */
#include "mpi.h"

#ifdef DT_HAVE_MPI

#include "launch.h"

#include <stdlib.h>
#include <string.h>

/* Rank 0 takes the others' events, in rank order, and writes the file. */
static dt_result write_all(dt_mpi_launch *l, int n, const char *path, dt_trace_ev *mine,
                           size_t nmine)
{
    dt_rank_ctx *rcs = calloc((size_t)n, sizeof *rcs);
    dt_rank_ctx **ptrs = calloc((size_t)n, sizeof *ptrs);
    dt_result r = rcs && ptrs ? DT_OK : dt_fail(DT_ERR_NOMEM, "DT_TRACE: out of memory");
    for (int i = 0; i < n && rcs && ptrs; i++) {
        rcs[i].world_rank = i;
        ptrs[i] = &rcs[i];
        uint64_t count = nmine;
        if (i > 0)
            MPI_Recv(&count, 1, MPI_UINT64_T, i, DT_MPI_TAG_TRACE, l->ctl, MPI_STATUS_IGNORE);
        rcs[i].ntrace = (size_t)count;
        rcs[i].trace = i == 0 ? mine : malloc(sizeof(dt_trace_ev) * (size_t)count + 1);
        if (i > 0 && rcs[i].trace)
            MPI_Recv(rcs[i].trace, (int)(sizeof(dt_trace_ev) * count), MPI_BYTE, i, DT_MPI_TAG_TRACE,
                     l->ctl, MPI_STATUS_IGNORE);
        else if (i > 0) /* take the message anyway, and say so */
            MPI_Recv(NULL, 0, MPI_BYTE, i, DT_MPI_TAG_TRACE, l->ctl, MPI_STATUS_IGNORE),
                r = dt_fail(DT_ERR_NOMEM, "DT_TRACE: out of memory for rank %d's events", i);
    }
    if (r == DT_OK)
        r = dt_trace_write(path, ptrs, n, 0);
    for (int i = 1; rcs && i < n; i++)
        free(rcs[i].trace);
    free(rcs);
    free(ptrs);
    return r;
}

dt_result dt_mpi_trace(dt_mpi_launch *l, int n, const char *path, dt_trace_ev *ev, size_t nev,
                       double wall0)
{
    for (size_t e = 0; e < nev; e++) {
        ev[e].w0 -= wall0;
        ev[e].w1 -= wall0;
    }
    if (l->me == 0)
        return write_all(l, n, path, ev, nev);
    uint64_t count = nev;
    MPI_Send(&count, 1, MPI_UINT64_T, 0, DT_MPI_TAG_TRACE, l->ctl);
    MPI_Send(ev, (int)(sizeof *ev * nev), MPI_BYTE, 0, DT_MPI_TAG_TRACE, l->ctl);
    return DT_OK;
}

#endif /* DT_HAVE_MPI */
