/* mpi_trace.c - DT_TRACE on the mpi backend: each rank's events travel to
 * rank 0's process (over the launch's control communicator), which writes
 * the one trace file the other backends write. Wall times are taken
 * relative to each process's own start of the launch: clocks of different
 * machines are not comparable.
 *
 * Three steps, each waited for within the launch's timeout (a rank that
 * never comes is reported, never waited for without end): every rank sends
 * how many events it has; rank 0 makes room for them and answers each rank
 * "send" or, where it has no room, "keep them"; the ranks told to send do. */
#include "mpi_backend.h"

#include "../launch.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Waits for reqs[0..k) within the launch's timeout, answering dt_recv_any's
 * questions; on timeout what is left is cancelled. */
static dt_result trace_wait(dt_mpi_launch *l, MPI_Request *reqs, int k, const char *what)
{
    double deadline = dt_now() + l->timeout_s;
    for (;;) {
        int all = 1;
        for (int i = 0; i < k; i++) {
            int flag = 1;
            if (reqs[i] != MPI_REQUEST_NULL && MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE))
                return dt_fail(DT_ERR_IO, "DT_TRACE: MPI failed in %s", what);
            all = all && flag;
        }
        if (all)
            return DT_OK;
        dt_mpi_serve(l);
        if (dt_now() >= deadline)
            break;
        sched_yield();
    }
    for (int i = 0; i < k; i++)
        if (reqs[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&reqs[i]);
            MPI_Request_free(&reqs[i]);
        }
    return dt_fail(DT_ERR_TIMEOUT, "DT_TRACE: timeout after %g s in %s (process %d)",
                   l->timeout_s, what, l->me);
}

/* Rank 0: the others' event counts, room for them, "send" or "keep them"
 * to each, their events (in rank order in the file). */
static dt_result write_all(dt_mpi_launch *l, int n, const char *path, int append,
                           dt_trace_ev *mine, size_t nmine)
{
    dt_rank_ctx *rcs = calloc((size_t)n, sizeof *rcs);
    dt_rank_ctx **ptrs = calloc((size_t)n, sizeof *ptrs);
    uint64_t *count = calloc((size_t)n, sizeof *count);
    unsigned char *go = calloc((size_t)n, 1);
    MPI_Request *reqs = malloc(sizeof *reqs * 2 * (size_t)n);
    if (!rcs || !ptrs || !count || !go || !reqs) { /* the others time out: nothing to say yes */
        free(rcs), free(ptrs), free(count), free(go), free(reqs);
        return dt_fail(DT_ERR_NOMEM, "DT_TRACE: out of memory for %d ranks", n);
    }
    for (int i = 0; i < 2 * n; i++)
        reqs[i] = MPI_REQUEST_NULL;
    for (int i = 1; i < n; i++)
        MPI_Irecv(&count[i], 1, MPI_UINT64_T, i, DT_MPI_TAG_TRACE, l->ctl, &reqs[i]);
    dt_result r = trace_wait(l, reqs, n, "taking the ranks' event counts");
    for (int i = 0; i < n && r == DT_OK; i++) {
        rcs[i].world_rank = i;
        ptrs[i] = &rcs[i];
        rcs[i].ntrace = i == 0 ? nmine : (size_t)count[i];
        rcs[i].trace = i == 0 ? mine : malloc(sizeof(dt_trace_ev) * rcs[i].ntrace + 1);
        go[i] = rcs[i].trace != NULL;
        if (!go[i])
            rcs[i].ntrace = 0;
    }
    for (int i = 1; i < n && r == DT_OK; i++) {
        MPI_Isend(&go[i], 1, MPI_BYTE, i, DT_MPI_TAG_TRACE, l->ctl, &reqs[i]);
        if (go[i])
            MPI_Irecv(rcs[i].trace, (int)(sizeof(dt_trace_ev) * count[i]), MPI_BYTE, i,
                      DT_MPI_TAG_TRACE, l->ctl, &reqs[n + i]);
    }
    if (r == DT_OK)
        r = trace_wait(l, reqs, 2 * n, "taking the ranks' events");
    for (int i = 1; i < n && r == DT_OK; i++)
        if (!go[i])
            r = dt_fail(DT_ERR_NOMEM, "DT_TRACE: out of memory for rank %d's %llu events", i,
                        (unsigned long long)count[i]);
    if (r == DT_OK)
        r = dt_trace_write(path, append, ptrs, n, 0);
    for (int i = 1; i < n; i++)
        free(rcs[i].trace);
    free(rcs), free(ptrs), free(count), free(go), free(reqs);
    return r;
}

dt_result dt_mpi_trace(dt_mpi_launch *l, int n, const char *path, int append, dt_trace_ev *ev,
                       size_t nev, double wall0)
{
    for (size_t e = 0; e < nev; e++) {
        ev[e].w0 -= wall0;
        ev[e].w1 -= wall0;
    }
    if (l->me == 0)
        return write_all(l, n, path, append, ev, nev);
    uint64_t count = nev;
    unsigned char go = 0;
    MPI_Request reqs[2];
    MPI_Isend(&count, 1, MPI_UINT64_T, 0, DT_MPI_TAG_TRACE, l->ctl, &reqs[0]);
    MPI_Irecv(&go, 1, MPI_BYTE, 0, DT_MPI_TAG_TRACE, l->ctl, &reqs[1]);
    DT_TRY(trace_wait(l, reqs, 2, "sending rank 0 the event count"));
    if (!go)
        return DT_OK; /* rank 0 had no room for them: it says so */
    MPI_Isend(ev, (int)(sizeof *ev * nev), MPI_BYTE, 0, DT_MPI_TAG_TRACE, l->ctl, &reqs[0]);
    return trace_wait(l, reqs, 1, "sending rank 0 the events");
}
