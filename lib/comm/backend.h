/* backend.h - the seam between the communicator and its backends: one
 * table, dt_backend_ops, holds everything a backend does, and backend.c is
 * the one place that picks a table. Not a public header.
 *
 * Above the seam (the files of lib/comm/), written once for every backend: the API
 * (argument checks, the choice of algorithm, numbering, stats, clock,
 * trace, requests and the progress thread), the algorithms over messages
 * (algo_coll.c, algo_blocks.c: ring, trees, recursive doubling), the
 * barrier-exchange's records, handles and splits, windows' handles, launch
 * options and the rank's life, the boards and their diagnosis, and
 * dt_recv_any's rule. Below it, each backend in a folder of its own fills
 * the table:
 *
 *   lib/comm/emul/  thread and proc: ranks emulated over shared memory
 *                   (emulation.c holds their two tables)
 *   lib/comm/mpi/   mpi: the processes of an MPI job (mpi_ops.c; built
 *                   with MPI only)
 *
 * A rank's calls find its table in rc->ops (dt_rank_ctx_init sets it from
 * the job's backend); nothing above the seam names a backend, and no
 * backend calls another's code. docs/design.md draws the table, which file
 * fills each entry, and one allreduce's path on each backend.
 *
 *   lib/comm/nccl/  nccl: one rank per GPU, each call onto NCCL on the
 *                   rank's CUDA stream, over device buffers (built by
 *                   `make gpu` only; its host side is proc's table, which
 *                   backend.c hands it: nccl_ops.c)
 *
 * The API never reads a collective's or a message's buffers (it checks
 * them for NULL and passes them on; dt_sendrecv to itself goes through
 * copy), so a backend's buffers may be device memory. */
#ifndef DT_COMM_BACKEND_H
#define DT_COMM_BACKEND_H

#include "coll.h"
#include "launch.h"
#include "sync.h"

typedef struct dt_backend_ops {
    const char *name;

    /* ---- launch and attach */
    /* dt_launch's ranks: runs fn on every rank of res and returns the
     * first failure in time, "rank R: message". */
    dt_result (*launch)(const dt_resolved *res, dt_rank_fn fn, void *arg);
    /* 1 when this process was started as a rank of this backend's job
     * (dtrun's DT_SHM, mpirun's environment); NULL: never (the fallback,
     * a job of one rank). */
    int (*started)(void);
    /* dt_init and dt_finalize of such a process (world: its handle). */
    dt_result (*attach)(dt_comm **world);
    dt_result (*detach)(dt_comm *world);
    /* DT_FAULT's kill of the rank rc, with r its DT_ERR_FAULT: ends the
     * rank as this backend's ranks die (a process by SIGKILL; a thread or
     * an MPI process fails its call and the rank's function), returning r
     * when it returns. */
    dt_result (*kill)(dt_rank_ctx *rc, dt_result r);

    /* A rank's start, on its world handle, before the rank's function
     * (every rank calls it: it may be collective), and its end, before its
     * handles are freed; NULL: nothing to do. */
    dt_result (*rank_start)(dt_comm *world);
    void (*rank_end)(dt_rank_ctx *rc);

    /* ---- groups */
    /* The backend's part of a new group (sh->be), and its end; init NULL:
     * the backend attaches its part itself. free must take sh->be NULL. */
    dt_result (*group_init)(dt_job *job, dt_comm_shared *sh);
    void (*group_free)(dt_job *job, dt_comm_shared *sh);
    /* dt_comm_split's new group, after the exchange of every member's
     * color and key (all, on call's lane of the parent call->comm): this
     * rank is at place me (-1: in no group) of the n parent ranks
     * ranks[0..n) in their new order. Called on every rank of the parent. */
    dt_result (*split)(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                       dt_comm **out);
    /* dt_win_allocate's region: zeroed, 64-byte aligned, the same bytes
     * asked by every rank (dt_win_exchange); *handle: the backend's, for
     * win_free. win_free after the window's last barrier (synced 0: it
     * failed, or there was none). */
    dt_result (*win_allocate)(dt_comm *comm, size_t bytes, void **base, void **handle);
    void (*win_free)(dt_comm *comm, void *base, void *handle, int synced);

    /* ---- collectives */
    /* Every collective of dt/comm.h, as issued (the API has checked it,
     * numbered it and run the debug check). */
    dt_result (*collective)(dt_call *call, const dt_coll_args *a);
    /* Whether AUTO takes a shortcut for a collective of kind moving bytes
     * in all (dt_coll_args.shortcut); NULL: never. */
    int (*shortcut)(int kind, size_t bytes);

    /* ---- point-to-point messages (port.h: tag 0 for user messages) */
    dt_result (*isend)(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
    dt_result (*irecv)(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
    /* completes a posted transfer (src: the sender of a receive) */
    dt_result (*wait)(dt_call *call, dt_xfer *x, int *src);
    /* 1 once it can complete without blocking; never blocks */
    int (*done)(const dt_xfer *x);
    /* gives up a posted transfer (another part of the call failed) */
    void (*cancel)(dt_call *call, dt_xfer *x);
    /* dt_sendrecv's exchange of a rank with itself: a copy of bytes
     * between the rank's buffers (device memory on a GPU backend); NULL:
     * memmove on the host. */
    dt_result (*copy)(void *dst, const void *src, size_t bytes);
    /* dt_recv_any: the source whose message to take, by the rule of any.h
     * (blocks until it is known) */
    dt_result (*choose_any)(dt_call *call, size_t bytes, int *src);

    /* ---- the barrier-exchange (sync.h) */
    dt_result (*exchange)(dt_call *call, const dt_rec *mine, const dt_rec **all);

    /* ---- the wait and progress loop */
    /* Waits until cond(arg) holds (something another thread or rank
     * completes), within the job's deadline, moving the backend's own
     * work on meanwhile; DT_ERR_TIMEOUT with what every rank does, or
     * DT_ERR_PEER_DIED when a rank of the job failed. */
    dt_result (*wait_until)(dt_call *call, int (*cond)(const void *), const void *arg);
} dt_backend_ops;

/* ---------------------------------------------------------------- above the seam, for the backends */

/* dt_win_allocate's barrier-exchange (window.c), internal work on lane 0:
 * publishes mine (mine->u.win.bytes: the size this rank asks for) and
 * returns every rank's record; DT_ERR_MISMATCH when the sizes differ. */
dt_result dt_win_exchange(dt_comm *comm, dt_rec *mine, const dt_rec **all);

/* ---------------------------------------------------------------- the selection (backend.c) */

/* The table of backend b, or NULL where this libdt does not have it. */
const dt_backend_ops *dt_backend_of(dt_backend b);

/* DT_ERR_INVALID_ARG: "dt_launch: backend B (name) is not available ...". */
dt_result dt_backend_unavailable(dt_backend b);

/* The backend dt_init joins, by how this process was started: dtrun's
 * programs first, then mpirun's, else a job of one rank. A process that
 * mpirun started while this libdt has no mpi backend is refused
 * (DT_ERR_UNSUPPORTED), rather than run as a job of one rank. */
dt_result dt_backend_joining(const dt_backend_ops **out);

/* 1 when this process was started by an MPI launcher, with its rank and
 * the job's size: Open MPI's mpirun (4 and 5: PRRTE still sets
 * OMPI_COMM_WORLD_RANK and _SIZE), MPICH's Hydra and Slurm's srun
 * --mpi=pmi2 (PMI_RANK, PMI_SIZE), srun --mpi=pmix (PMIX_RANK, with the
 * step's SLURM_STEP_NUM_TASKS). docs/cluster.md lists them. */
int dt_started_by_mpirun(int *rank, int *size);

#endif /* DT_COMM_BACKEND_H */
