/* mpi_init.c - dt_init inside an MPI job: a program started by `mpirun -np
 * N PROGRAM` joins the job as this process's rank (every process of the
 * job is a rank of the world), on the mpi backend; dt_finalize leaves it.
 * It is a launch (mpi_launch.c) whose rank function is the rest of the
 * program: the control communicator and the world's are made at dt_init,
 * and dt_finalize is the launch's end, where every process waits for the
 * others (and writes DT_TRACE's file from rank 0's process). A rank that
 * fails ends its process: mpirun then ends the job, as MPI programs do. */
#include "mpi_backend.h"

#include "../shm.h"

#include <stdio.h>
#include <stdlib.h>

/* One job per process, as the emulation's dt_init (emul/attach.c). */
typedef struct {
    dt_mpi_launch l;
    dt_resolved res;
    dt_job job;
    dt_rank_ctx rc;
    dt_comm *world;
    double wall0;
} mpi_joined;

static mpi_joined *joined;

int dt_mpi_started(void)
{
    int rank, size;
    return dt_started_by_mpirun(&rank, &size);
}

/* The job of every process, its world group over comm (which it owns). */
static dt_result make_job(mpi_joined *j, MPI_Comm comm)
{
    dt_job *job = &j->job;
    int n = j->l.procs;
    DT_TRY(dt_job_init(job, &j->res, NULL, 0));
    atomic_store(&job->world->refs, 1); /* made for threads: this one is MPI's */
    dt_comm_shared_unref(job, job->world);
    int *world = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; world && i < n; i++)
        world[i] = i;
    job->world = world ? dt_mpi_shared_new(job, n, world, comm, &j->l) : NULL;
    if (!world)
        MPI_Comm_free(&comm);
    free(world);
    return job->world ? DT_OK : dt_fail(DT_ERR_NOMEM, "dt_init: out of memory for the world");
}

dt_result dt_mpi_join(dt_comm **world)
{
    DT_TRY(dt_mpi_init_once());
    int procs = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    mpi_joined *j = calloc(1, sizeof *j);
    if (!j)
        return dt_fail(DT_ERR_NOMEM, "dt_init: out of memory");
    dt_launch_opts o;
    dt_result r = dt_launch_opts_init(&o); /* the options, from the environment */
    o.nranks = procs;
    o.backend = DT_BACKEND_MPI;
    if (r == DT_OK)
        r = dt_opts_resolve(&o, &j->res);
    if (r == DT_OK)
        r = dt_mpi_launch_open(&j->l, j->res.o.timeout_s);
    if (r != DT_OK) {
        free(j);
        return r;
    }
    MPI_Comm comm = MPI_COMM_NULL;
    int *all = malloc(sizeof(int) * (size_t)procs);
    for (int i = 0; all && i < procs; i++)
        all[i] = i;
    r = all ? dt_mpi_create_group(j->l.ctl, all, procs, &comm)
            : dt_fail(DT_ERR_NOMEM, "dt_init: out of memory");
    free(all);
    if (r == DT_OK)
        r = make_job(j, comm);
    if (r == DT_OK) {
        dt_rank_ctx_init(&j->rc, &j->job, me, &j->res);
        j->rc.mem = dt_mem_ctx_create();
        j->l.board = &j->job.board[me];
        r = dt_comm_make(&j->rc, j->job.world, me, &j->world);
    }
    if (r != DT_OK) /* out of memory: the job is left as it is (the program ends it) */
        return r;
    dt_mem_bind(j->rc.mem);
    dt_rank_bind(&j->job, me);
    dt_log_set_rank(me);
    j->wall0 = dt_now();
    joined = j;
    *world = j->world;
    return DT_OK;
}

dt_result dt_mpi_leave(dt_comm *world)
{
    mpi_joined *j = joined;
    int me = j->l.me, n = j->l.procs;
    dt_rank_free_comms(&j->rc);
    dt_result r = DT_OK;
    if (j->rc.tracing)
        r = dt_mpi_trace(&j->l, n, j->res.o.trace_path, j->res.o.trace_append, j->rc.trace,
                         j->rc.ntrace, j->wall0);
    dt_rank_end(&j->job, me, r, r == DT_OK ? "" : dt_last_error());
    j->l.board = NULL;
    dt_mpi_end end = {(int32_t)r, 1, 0, ""};
    if (r != DT_OK)
        snprintf(end.msg, sizeof end.msg, "%s", dt_last_error());
    r = dt_mpi_launch_close(&j->l, &end, NULL, NULL, 0, n);
    free(j->rc.trace);
    pthread_mutex_destroy(&j->rc.trace_lock);
    dt_mem_bind(NULL);
    dt_mem_ctx_release(j->rc.mem);
    dt_shm_free(&j->job, j->job.board);
    free(j);
    joined = NULL;
    dt_log_set_rank(-1);
    (void)world;
    return r;
}
