/* mpi_ops.c - the mpi backend's table (backend.h): libdt's algorithms
 * (algo_coll.c) over MPI point-to-point messages, with no shortcut (they
 * would address other processes' memory); user messages are MPI messages
 * of tag 0, the barrier-exchange n^2 small messages, groups MPI
 * communicators, windows MPI_Win_allocate_shared's. */
#include "mpi_backend.h"

#include "../fault.h"

const dt_backend_ops dt_mpi_ops = {
    .name = "mpi",
    .launch = dt_launch_mpi,
    .started = dt_mpi_started,
    .attach = dt_mpi_join,
    .detach = dt_mpi_leave,
    .kill = dt_fault_fail_rank, /* its function fails: the others are told */
    .group_init = NULL,         /* dt_mpi_shared_new attaches its MPI communicator */
    .group_free = dt_mpi_group_free,
    .split = dt_mpi_split,
    .win_allocate = dt_mpi_win_allocate,
    .win_free = dt_mpi_win_free,
    .collective = dt_alg_collective,
    .shortcut = NULL,
    .isend = dt_mpi_isend,
    .irecv = dt_mpi_irecv,
    .wait = dt_mpi_wait,
    .done = dt_mpi_done,
    .cancel = dt_mpi_cancel,
    .choose_any = dt_mpi_choose_any,
    .exchange = dt_mpi_exchange,
    .wait_until = dt_mpi_wait_until,
};
