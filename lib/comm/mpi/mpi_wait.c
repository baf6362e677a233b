/* mpi_wait.c - how the mpi backend waits: every wait polls its MPI
 * requests (no call blocks in MPI) with the job's deadline, looks for the
 * launch's failure notices, and answers and asks the other ranks what
 * they do (mpi_board.c): the mismatch check and the timeout's report that
 * the other backends read on the boards. */
#include "mpi_backend.h"

#include "../diag.h"

#include <sched.h>
#include <stdio.h>
#include <time.h>

/* A rank whose function failed sends a notice to every process of the
 * launch (mpi_launch.c); the first one that comes is kept. */
dt_result dt_mpi_check_failed(dt_mpi_launch *l)
{
    if (!atomic_load(&l->failed)) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        MPI_Improbe(MPI_ANY_SOURCE, DT_MPI_TAG_FAILED, l->ctl, &flag, &msg, &st);
        if (!flag)
            return DT_OK;
        char why[DT_MPI_MSG_MAX];
        MPI_Mrecv(why, DT_MPI_MSG_MAX, MPI_CHAR, &msg, MPI_STATUS_IGNORE);
        why[DT_MPI_MSG_MAX - 1] = 0;
        pthread_mutex_lock(&l->lock);
        if (!atomic_load(&l->failed)) {
            snprintf(l->failed_msg, sizeof l->failed_msg, "%s", why);
            atomic_store(&l->failed, 1 + st.MPI_SOURCE);
        }
        pthread_mutex_unlock(&l->lock);
    }
    pthread_mutex_lock(&l->lock);
    dt_result r = dt_fail(DT_ERR_PEER_DIED, "rank %d failed: %s", atomic_load(&l->failed) - 1,
                          l->failed_msg);
    pthread_mutex_unlock(&l->lock);
    return r;
}

/* 1 when every request completed; *err: the first MPI error. */
static int all_done(MPI_Request *reqs, int n, int *err)
{
    int done = 1;
    for (int i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL)
            continue;
        int flag = 0;
        int rc = MPI_Test(&reqs[i], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            *err = rc;
            return 1;
        }
        done = done && flag;
    }
    return done;
}

/* A wait asks the job's other ranks what they do once it has waited this
 * long, and again this often: what the thread backend reads on their
 * boards once its spin and yield are over. */
#define ASK_AFTER_S 20e-3
#define ASK_EVERY_S 50e-3

/* The answers against this call: a member in the same collective with
 * another signature or count is a mismatch, as on the boards (diag.c). */
static dt_result compare_answers(dt_call *call, dt_mpi_launch *l)
{
    dt_comm *c = call->comm;
    DT_TRY(dt_comm_poisoned(c));
    for (int i = 0; call->sig && i < c->size; i++) {
        dt_mpi_answer a;
        if (i == c->rank || !dt_mpi_answer_of(l, c->sh->world[i], &a))
            continue;
        for (int lane = 0; lane < DT_LANES; lane++)
            DT_TRY(dt_diag_compare(call, i, &a.doing[lane]));
    }
    return DT_OK;
}

/* The timeout's report, as the other backends give it: this rank from its
 * board, the others from their last answers ("is in no communication
 * call" for a rank that has not answered: it has been in its own code);
 * then what this rank waited for. */
static dt_result poll_timeout(dt_call *call, dt_mpi_launch *l, const char *what, int peer)
{
    dt_job *job = dt_call_job(call);
    char report[800], one[320];
    size_t used = 0;
    int waiting = 0;
    report[0] = '\0';
    for (int r = 0; r < job->nranks && used + 1 < sizeof report; r++) {
        dt_mpi_answer a = {DT_RANK_RUNNING, 0, {{0}}, 0, 0, 0};
        if (r == call->comm->rc->world_rank) {
            for (int lane = 0; lane < DT_LANES; lane++)
                dt_doing_read(&job->board[r].doing[lane], &a.doing[lane]);
        } else {
            dt_mpi_answer_of(l, r, &a);
        }
        waiting += dt_describe_rank(r, a.state, a.doing, one, sizeof one);
        int w = snprintf(report + used, sizeof report - used, "%s%s", used ? "; " : "", one);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    const char *in = call->kind >= 0 && call->kind < DT_NUM_COLLS ? dt_coll_name(call->kind)
                                                                  : "setup";
    dt_doing_timed_out(call->comm, call->lane); /* before the call returns */
    char tail[160] = "";
    if (peer >= 0)
        snprintf(tail, sizeof tail, " (rank %d waited for %s rank %d)", call->comm->rank, what,
                 peer);
    else
        snprintf(tail, sizeof tail, " (rank %d waited for %s the other ranks)",
                 call->comm->rank, what);
    return dt_timeout_fail(job->timeout_s, in, call->seq, waiting, job->nranks, report, tail);
}

/* Spin while every rank may have a core (the job's spin_s), then yield
 * for YIELD_S (with more processes than cores, the one waited for may
 * need this core), then nap between looks, for an eighth of the time
 * waited so far and at most NAP_MAX_S: a wait that long is on a rank that
 * computes, or waits in its turn, and yielding processes would take the
 * cores from it (a test's 8 processes on 2 cores spent 60% of their CPU
 * time in the kernel, 29,000 sched_yield calls in one test). A nap delays the wait's end by at most
 * an eighth of its length. */
#define YIELD_S 200e-6
#define NAP_MAX_S 1e-3

void dt_mpi_pause(double waited_s, double spin_s)
{
    if (waited_s <= spin_s)
        return;
    if (waited_s <= spin_s + YIELD_S) {
        sched_yield();
        return;
    }
    double nap = (waited_s - spin_s) / 8;
    if (nap > NAP_MAX_S)
        nap = NAP_MAX_S;
    struct timespec ts = {0, (long)(nap * 1e9)};
    nanosleep(&ts, NULL);
}

/* MPI progresses only inside its calls, so the wait keeps calling them.
 * About every millisecond it looks for a failure notice and answers the
 * others' questions; after ASK_AFTER_S it asks them what they do, checks
 * their answers against this call, and reports them if it times out. */
dt_result dt_mpi_poll(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                      const char *what, int peer)
{
    return dt_mpi_poll_step(call, l, reqs, n, NULL, NULL, what, peer);
}

dt_result dt_mpi_poll_step(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                           int (*step)(void *), void *arg, const char *what, int peer)
{
    int err = MPI_SUCCESS;
    if ((!step || step(arg)) && all_done(reqs, n, &err))
        return err == MPI_SUCCESS ? DT_OK : dt_mpi_fail(err, what);
    dt_job *job = dt_call_job(call);
    double t0 = dt_now(), deadline = t0 + job->timeout_s, next_check = t0;
    double next_ask = t0 + ASK_AFTER_S;
    for (unsigned i = 1;; i++) {
        if ((!step || step(arg)) && all_done(reqs, n, &err))
            return err == MPI_SUCCESS ? DT_OK : dt_mpi_fail(err, what);
        if (i % 16)
            continue;
        double now = dt_now();
        if (now >= next_check) {
            DT_TRY(dt_mpi_check_failed(l));
            dt_mpi_serve(l);
            dt_mpi_take_answers(l);
            DT_TRY(compare_answers(call, l));
            next_check = now + 1e-3;
        }
        if (now >= next_ask) {
            for (int r = 0; r < job->nranks; r++)
                dt_mpi_ask(l, r, call->comm->sh->id);
            next_ask = now + ASK_EVERY_S;
        }
        if (now >= deadline)
            return poll_timeout(call, l, what, peer);
        dt_mpi_pause(now - t0, job->spin_s);
    }
}

/* The wait_until entry: a condition of this process (what the progress
 * thread completes) polled as the requests above are, answering the
 * others' questions and hearing failure notices meanwhile. */
typedef struct {
    int (*cond)(const void *);
    const void *arg;
} cond_step;

static int cond_holds(void *p)
{
    const cond_step *c = p;
    return c->cond(c->arg);
}

dt_result dt_mpi_wait_until(dt_call *call, int (*cond)(const void *), const void *arg)
{
    dt_mpi_group *g = call->comm->sh->be;
    cond_step c = {cond, arg};
    return dt_mpi_poll_step(call, g->launch, NULL, 0, cond_holds, &c, "an async collective with",
                            -1);
}
