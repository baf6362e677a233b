/* backend.c - the one place that picks a backend's table (backend.h): by
 * the job's backend for a launch and a rank, and by how this process was
 * started for dt_init. Every other file of lib/comm reaches a backend
 * through the rank's table; each table is filled in its backend's folder. */
#include "backend.h"

#include <stdlib.h>

extern const dt_backend_ops dt_thread_ops, dt_proc_ops; /* emul/emulation.c */
#ifdef DT_HAVE_MPI
extern const dt_backend_ops dt_mpi_ops; /* mpi/mpi_ops.c */
#endif
#ifdef DT_HAVE_NCCL
/* nccl/nccl_ops.c (make gpu): the nccl table over a host backend's */
const dt_backend_ops *dt_nccl_ops_over(const dt_backend_ops *host);
#endif

const dt_backend_ops *dt_backend_of(dt_backend b)
{
    switch (b) {
    case DT_BACKEND_THREAD: return &dt_thread_ops;
    case DT_BACKEND_PROC: return &dt_proc_ops;
#ifdef DT_HAVE_MPI
    case DT_BACKEND_MPI: return &dt_mpi_ops;
#endif
#ifdef DT_HAVE_NCCL
    case DT_BACKEND_NCCL: /* GPU ranks in processes: mpirun's across machines, else proc's */
#ifdef DT_HAVE_MPI
        if (dt_started_by_mpirun(&(int){0}, &(int){0}))
            return dt_nccl_ops_over(&dt_mpi_ops);
#endif
        return dt_nccl_ops_over(&dt_proc_ops);
#endif
    default: return NULL; /* nccl only in `make gpu`'s libdt */
    }
}

dt_result dt_backend_unavailable(dt_backend b)
{
    return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: backend %d (%s) is not available; use thread "
                   "or proc%s", (int)b, dt_backend_name(b),
                   b == DT_BACKEND_MPI    ? " (this libdt was built without MPI)"
                   : b == DT_BACKEND_NCCL ? " (nccl is in `make gpu`'s libdt, build/gpu/)"
                                          : "");
}

/* mpi's processes are mpirun's: a program that starts its own ranks, or
 * one that mpirun did not start, cannot take it. */
dt_result dt_backend_usable(dt_backend b, int own_ranks)
{
    if (b == DT_BACKEND_MPI && own_ranks)
        return dt_fail(DT_ERR_UNSUPPORTED, "this program runs its ranks as threads or processes "
                       "(thread, proc)");
    if (b == DT_BACKEND_MPI && !dt_started_by_mpirun(&(int){0}, &(int){0}))
        return dt_fail(DT_ERR_UNSUPPORTED, "not available outside an MPI job (mpirun -np N "
                       "PROGRAM ...)");
    if (!dt_backend_of(b))
        return dt_fail(DT_ERR_UNSUPPORTED, "not available here (thread, proc%s)%s",
                       own_ranks ? "" : "; mpi under mpirun",
                       b == DT_BACKEND_MPI ? ": this libdt was built without MPI" : "");
    return DT_OK;
}

int dt_started_by_mpirun(int *rank, int *size)
{
    const char *pairs[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                              {"PMI_RANK", "PMI_SIZE"},
                              {"PMIX_RANK", "SLURM_STEP_NUM_TASKS"}};
    for (int i = 0; i < 3; i++) {
        const char *r = getenv(pairs[i][0]), *s = getenv(pairs[i][1]);
        if (r && s) {
            *rank = atoi(r);
            *size = atoi(s);
            return *size > 0;
        }
    }
    return 0;
}

/* dtrun's programs first: one that dtrun starts inside an mpirun job is
 * dtrun's rank. */
dt_result dt_backend_joining(const dt_backend_ops **out)
{
    *out = &dt_thread_ops;
    if (dt_proc_ops.started())
        *out = &dt_proc_ops;
#ifdef DT_HAVE_MPI
    else if (dt_mpi_ops.started())
        *out = &dt_mpi_ops;
#else
    else if (dt_started_by_mpirun(&(int){0}, &(int){0}))
        return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend is not built in (no mpicc, or MPI=0)");
#endif
    return DT_OK;
}

int dt_mpi_world_rank(void)
{
    int rank = -1, size = 0;
    return dt_started_by_mpirun(&rank, &size) ? rank : -1;
}
