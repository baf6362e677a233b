/* wait.c - the wait policy: how a rank waits for what another rank
 * publishes (a message, a stamp of the barrier-exchange, a request).
 *
 * Spin first (long when every rank has a core, short when ranks outnumber
 * cores: the partner may be waiting for this very core), then yield for a
 * while (with more ranks than cores, yielding hands the core over without
 * the cost of a sleep and a wake-up), then sleep on the rank's doorbell in
 * slices, checking for failed peers and the deadline. */
#include "wait.h"

#include "../bell.h"
#include "../diag.h"

#include <sched.h>
#include <unistd.h>

#define YIELD_S 200e-6     /* how long a wait yields before it sleeps */
#define SLEEP_SLICE_S 0.1  /* a sleeper looks at peers and the deadline this often */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

/* ---------------------------------------------------------------- peers */

dt_result dt_check_peers(dt_job *job)
{
    if (!atomic_load_explicit(&job->failed, memory_order_acquire))
        return DT_OK;
    for (int r = 0; r < job->nranks; r++) {
        int st = atomic_load_explicit(&job->board[r].state, memory_order_acquire);
        if (st == DT_RANK_DIED)
            return dt_fail(DT_ERR_PEER_DIED, "rank %d died: %s", r, job->board[r].msg);
        if (st == DT_RANK_FAILED)
            return dt_fail(DT_ERR_PEER_DIED, "rank %d failed: %s", r, job->board[r].msg);
    }
    return dt_fail(DT_ERR_PEER_DIED, "a rank of the job failed");
}

/* ---------------------------------------------------------------- the wait */

/* Spins until cond holds or spin_s has passed; 1 when it holds. */
static int spin(double spin_s, int (*cond)(const void *), const void *arg)
{
    double t0 = 0;
    for (int i = 1;; i++) {
        cpu_relax();
        if (cond(arg))
            return 1;
        if (i % 64 == 0) { /* read the clock rarely: it costs more than a poll */
            if (t0 == 0)
                t0 = dt_now();
            else if (dt_now() - t0 >= spin_s)
                return 0;
        }
    }
}

static int yield_for(double seconds, int (*cond)(const void *), const void *arg)
{
    double until = dt_now() + seconds;
    do {
        sched_yield();
        if (cond(arg))
            return 1;
    } while (dt_now() < until);
    return 0;
}

static dt_result timeout(const dt_call *call, dt_job *job)
{
    char report[800];
    int waiting = dt_describe_job(job, report, sizeof report);
    dt_doing_timed_out(call->comm, call->lane); /* before the call returns */
    const char *what = call->kind >= 0 && call->kind < DT_NUM_COLLS ? dt_coll_name(call->kind)
                                                                     : "setup";
    return dt_timeout_fail(job->timeout_s, what, call->seq, waiting, job->nranks, report, NULL);
}

dt_result dt_wait_until(dt_call *call, int (*cond)(const void *), const void *arg)
{
    if (cond(arg))
        return DT_OK;
    dt_job *job = dt_call_job(call);
    if (spin(job->spin_s, cond, arg) || yield_for(YIELD_S, cond, arg))
        return DT_OK;
    dt_bell *b = &job->board[call->comm->rc->world_rank].bell;
    double deadline = dt_now() + job->timeout_s;
    for (;;) {
        uint32_t v = atomic_load_explicit(&b->seq, memory_order_seq_cst);
        if (cond(arg))
            return DT_OK;
        /* a mismatch first: the rank that found it may have ended since */
        DT_TRY(dt_diag_check(call)); /* the others called the same, if they wait too */
        dt_result peers = dt_check_peers(job);
        if (peers != DT_OK) { /* a rank that failed of a mismatch found since the check */
            DT_TRY(dt_comm_poisoned(call->comm));
            return peers;
        }
        double now = dt_now();
        if (now >= deadline)
            return timeout(call, job);
        double slice = call->poll_s > 0 ? call->poll_s : SLEEP_SLICE_S;
        if (deadline - now < slice)
            slice = deadline - now;
        atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
        if (!cond(arg))
            dt_bell_sleep(b, v, slice);
        atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
    }
}
