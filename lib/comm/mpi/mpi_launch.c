/* mpi_launch.c - the mpi backend's launch: dt_launch inside an MPI job runs
 * the rank function once, in this process, as the rank MPI gave it.
 *
 * A test function that launches 1, 2, ..., 8 ranks one after another runs
 * under `mpirun -np MAX` (MAX at least the largest launch): every process
 * runs the whole program, and every dt_launch is a step all of them take.
 * A launch of N ranks runs the function on the processes of MPI ranks 0 ..
 * N-1; the others take no part but its end, and every process returns the
 * same result, the first failure in time as "rank R: message", as the
 * thread and proc backends do. Each rank's out block (dt_rank_out) is sent
 * to every process at the end.
 *
 * Each launch makes its own MPI communicators: a control communicator over
 * every process (MPI_Comm_idup of MPI_COMM_WORLD, waited for within the
 * timeout), which carries the failure notices (a rank whose function
 * failed tells every other process at once: their waits return
 * DT_ERR_PEER_DIED, as on the other backends), dt_recv_any's questions and
 * the records of the ranks' ends; and the world group's communicator of
 * exactly the N ranks. Every wait polls (mpi_wait.c) with the job's
 * deadline: no call blocks in MPI, except MPI_Comm_create_group for a world
 * smaller than the job and for dt_comm_split, both taken only by ranks
 * that have all just met.
 *
 * The communicators of a launch that failed are kept, never freed: a
 * failure leaves messages on their way (notices, a collective's steps), and
 * MPI would hand a freed communicator's context id to a later launch's,
 * where they would arrive. */
#include "mpi_backend.h"

#include "../rank.h"
#include "../shm.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Every process of the job takes part in every launch, in the same order:
 * this count names a launch alike in all of them (dt_mpi_launch.epoch). */
static _Atomic uint32_t launches;

static void finalize(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

/* MPI_THREAD_MULTIPLE: the async lane's progress thread calls MPI too. */
dt_result dt_mpi_init_once(void)
{
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS)
            return dt_mpi_fail(rc, "MPI_Init_thread");
        atexit(finalize);
    } else {
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE)
        return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend needs MPI_THREAD_MULTIPLE; this MPI "
                       "library gives level %d", provided);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    if (!flag || *ub < DT_MPI_TAG_MAX)
        return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend needs MPI_TAG_UB >= 2^28 - 1 "
                       "(MPICH's; Open MPI's is 2^31 - 1); this MPI library gives %d",
                       flag ? *ub : -1);
    return DT_OK;
}

/* ---------------------------------------------------------------- open and close */

/* The processes' meeting at a launch waits at least this long, whatever
 * the job's timeout: a process may still be in its own code before the
 * launch (the last job's teardown on a loaded machine), which a job's
 * short timeout for its calls says nothing about; a 0.3 s timeout failed
 * the launch itself under a load of 25. */
#define LAUNCH_MEET_MIN_S 10.0

dt_result dt_mpi_launch_open(dt_mpi_launch *l, double timeout_s)
{
    memset(l, 0, sizeof *l);
    double meet_s = timeout_s > LAUNCH_MEET_MIN_S ? timeout_s : LAUNCH_MEET_MIN_S;
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Request req;
    int rc = MPI_Comm_idup(MPI_COMM_WORLD, &l->ctl, &req);
    if (rc != MPI_SUCCESS)
        return dt_mpi_fail(rc, "MPI_Comm_idup");
    double deadline = dt_now() + meet_s;
    for (;;) {
        int flag = 0;
        MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
        if (flag)
            break;
        if (dt_now() >= deadline) /* the others never came: keep what it made */
            return dt_fail(DT_ERR_TIMEOUT, "dt_launch (mpi): rank %d waited %g s for every "
                           "process of the MPI job to come to this launch", me, meet_s);
        sched_yield();
    }
    MPI_Comm_set_errhandler(l->ctl, MPI_ERRORS_RETURN);
    MPI_Comm_size(l->ctl, &l->procs);
    MPI_Comm_rank(l->ctl, &l->me);
    l->epoch = atomic_fetch_add(&launches, 1) + 1;
    l->timeout_s = timeout_s;
    if (!dt_mpi_board_open(l)) {
        MPI_Comm_free(&l->ctl);
        return dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for %d processes", l->procs);
    }
    pthread_mutex_init(&l->lock, NULL);
    return DT_OK;
}

/* Frees the launch's communicators, or keeps them after a failure. */
static void close_launch(dt_mpi_launch *l, int keep)
{
    dt_mpi_board_free(l);
    for (int i = 0; !keep && i < l->nretired; i++)
        MPI_Comm_free(&l->retired[i]);
    free(l->retired);
    if (!keep)
        MPI_Comm_free(&l->ctl);
    pthread_mutex_destroy(&l->lock);
}

void dt_mpi_notify_failure(dt_mpi_launch *l, const char *msg, MPI_Request *notes)
{
    for (int p = 0; p < l->procs; p++)
        notes[p] = MPI_REQUEST_NULL;
    for (int p = 0; p < l->procs; p++)
        if (p != l->me)
            MPI_Isend(msg, DT_MPI_MSG_MAX, MPI_CHAR, p, DT_MPI_TAG_FAILED, l->ctl, &notes[p]);
}

/* Waits for reqs[0..k), answering dt_recv_any's questions and napping while
 * ranks still run. No deadline here, as the thread backend's join has
 * none: a rank still running is in its own code or in a libdt call, whose
 * waits have theirs (a rank that computes forever is the grader's to stop). */
static void wait_all(dt_mpi_launch *l, MPI_Request *reqs, int k)
{
    long nap_ns = 50000;
    for (;;) {
        int all = 1;
        for (int p = 0; p < k; p++) {
            int flag = 1;
            if (reqs[p] != MPI_REQUEST_NULL)
                MPI_Test(&reqs[p], &flag, MPI_STATUS_IGNORE);
            all = all && flag;
        }
        if (all)
            return;
        dt_mpi_serve(l);
        /* ranks still run: leave them the cores, the more the longer they run */
        struct timespec nap = {0, nap_ns};
        nanosleep(&nap, NULL);
        nap_ns = nap_ns < 2000000 ? nap_ns * 2 : nap_ns;
    }
}

/* The first failure in time, named as the other backends name it. */
static dt_result first_failure(const dt_mpi_end *ends, int n)
{
    int best = -1;
    for (int p = 0; p < n; p++)
        if (ends[p].ran && ends[p].result != DT_OK &&
            (best < 0 || ends[p].when < ends[best].when))
            best = p;
    if (best < 0)
        return DT_OK;
    return dt_fail((dt_result)ends[best].result, "rank %d: %s", best, ends[best].msg);
}

dt_result dt_mpi_launch_close(dt_mpi_launch *l, const dt_mpi_end *mine, MPI_Request *notes,
                              char *out, size_t out_bytes, int nranks)
{
    int n = l->procs, answered = dt_mpi_board_finish(l, l->timeout_s);
    dt_mpi_end *ends = calloc((size_t)n, sizeof *ends);
    MPI_Request *reqs = calloc(5 * (size_t)n, sizeof *reqs);
    if (!ends || !reqs) {
        free(ends);
        free(reqs);
        close_launch(l, 1);
        return dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for %d ends", n);
    }
    ends[l->me] = *mine;
    for (int p = 0; p < 5 * n; p++)
        reqs[p] = notes && p >= 4 * n ? notes[p - 4 * n] : MPI_REQUEST_NULL;
    for (int p = 0; p < n; p++) {
        if (p == l->me)
            continue;
        MPI_Irecv(&ends[p], sizeof *ends, MPI_BYTE, p, DT_MPI_TAG_END, l->ctl, &reqs[p]);
        MPI_Isend(&ends[l->me], sizeof *ends, MPI_BYTE, p, DT_MPI_TAG_END, l->ctl,
                  &reqs[n + p]);
        if (out && p < nranks)
            MPI_Irecv(out + (size_t)p * out_bytes, (int)out_bytes, MPI_BYTE, p, DT_MPI_TAG_OUT,
                      l->ctl, &reqs[2 * n + p]);
        if (out && l->me < nranks)
            MPI_Isend(out + (size_t)l->me * out_bytes, (int)out_bytes, MPI_BYTE, p,
                      DT_MPI_TAG_OUT, l->ctl, &reqs[3 * n + p]);
    }
    wait_all(l, reqs, 5 * n);
    dt_result r = first_failure(ends, n);
    close_launch(l, r != DT_OK || !answered || atomic_load(&l->failed));
    free(ends);
    free(reqs);
    return r;
}

/* ---------------------------------------------------------------- the rank */

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs this process's rank of the launch: the job and its world group of
 * n ranks, in this process's memory. */
static dt_result run_rank(const dt_resolved *res, dt_mpi_launch *l, MPI_Comm world_comm,
                          dt_rank_fn fn, void *arg, dt_mpi_end *mine)
{
    int n = res->o.nranks, ran = 0;
    double wall0 = dt_now();
    dt_job *job = calloc(1, sizeof *job);
    dt_rank_ctx *rc = calloc(1, sizeof *rc);
    int *world = malloc(sizeof(int) * (size_t)n);
    dt_result r = job && rc && world ? DT_OK : dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory");
    if (r == DT_OK)
        r = dt_job_init(job, res, NULL, 0);
    if (r == DT_OK) { /* dt_job_init made a world group for threads: this one is MPI's */
        atomic_store(&job->world->refs, 1);
        dt_comm_shared_unref(job, job->world);
        for (int i = 0; i < n; i++)
            world[i] = i;
        job->world = dt_mpi_shared_new(job, n, world, world_comm, l);
        world_comm = MPI_COMM_NULL; /* the group owns it now, or it was freed */
        if (!job->world)
            r = dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for the world group");
    }
    if (world_comm != MPI_COMM_NULL)
        MPI_Comm_free(&world_comm);
    if (r == DT_OK) {
        dt_rank_ctx_init(rc, job, l->me, res);
        rc->mem = dt_mem_ctx_create();
        l->board = &job->board[l->me];
        r = dt_rank_run(rc, fn, arg);
        ran = 1;
        if (r != DT_OK)
            snprintf(mine->msg, sizeof mine->msg, "%s", job->board[l->me].msg);
    } else {
        snprintf(mine->msg, sizeof mine->msg, "%s", dt_last_error());
    }
    if (res->o.trace_path && res->o.trace_path[0]) { /* every rank, or rank 0 waits */
        dt_result tr = dt_mpi_trace(l, n, res->o.trace_path, res->o.trace_append,
                                    ran ? rc->trace : NULL, ran ? rc->ntrace : 0, wall0);
        if (r == DT_OK && tr != DT_OK) {
            r = tr;
            snprintf(mine->msg, sizeof mine->msg, "%s", dt_last_error());
        }
    }
    if (ran) {
        dt_rank_ctx_destroy(rc);
        dt_mem_ctx_release(rc->mem);
    }
    l->board = NULL; /* dt_recv_any's answers say "ended" from here on */
    mine->result = (int32_t)r;
    mine->when = wall_now();
    if (job && job->board)
        dt_shm_free(job, job->board);
    free(world);
    free(rc);
    free(job);
    return r;
}

dt_result dt_launch_mpi(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    int me, procs, n = res->o.nranks;
    if (!dt_started_by_mpirun(&me, &procs))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: the mpi backend runs in processes "
                       "started by mpirun (OMPI_COMM_WORLD_SIZE or PMI_SIZE is not set): "
                       "mpirun -np %d PROGRAM", n);
    DT_TRY(dt_mpi_init_once());
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (n > procs)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_launch: nranks = %d, but the MPI job has %d "
                       "processes (mpirun -np %d or more)", n, procs, n);
    dt_mpi_launch l;
    DT_TRY(dt_mpi_launch_open(&l, res->o.timeout_s));
    MPI_Request *notes = calloc((size_t)procs, sizeof *notes);
    if (!notes) {
        close_launch(&l, 0);
        return dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for %d processes", procs);
    }
    if (res->o.out) /* a process that runs no rank gets the others' blocks */
        memset(res->o.out, 0, res->o.out_bytes * (size_t)n);
    dt_mpi_end mine = {0};
    int sent_notes = 0;
    if (me < n) {
        mine.ran = 1;
        MPI_Comm world = MPI_COMM_NULL;
        int *ranks = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; ranks && i < n; i++)
            ranks[i] = i;
        dt_result r = ranks ? dt_mpi_create_group(l.ctl, ranks, n, &world)
                            : dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory");
        free(ranks);
        if (r == DT_OK) {
            r = run_rank(res, &l, world, fn, arg, &mine);
        } else {
            mine.result = (int32_t)r;
            mine.when = wall_now();
            snprintf(mine.msg, sizeof mine.msg, "%s", dt_last_error());
        }
        if (r != DT_OK) {
            dt_mpi_notify_failure(&l, mine.msg, notes);
            sent_notes = 1;
        }
    }
    dt_result r = dt_mpi_launch_close(&l, &mine, sent_notes ? notes : NULL, res->o.out,
                                      res->o.out_bytes, n);
    free(notes);
    return r;
}
