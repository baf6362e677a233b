/* recv_any.c - which message dt_recv_any takes: the one that arrives first in
 * modeled time (ties: the lowest rank), and only once no other rank can
 * still send an earlier one. So the choice, and every clock after it,
 * depends on modeled times only, never on which rank ran first in wall time
 * (a parameter server's staleness figures are the same run after run).
 *
 * A pending message from rank s that departed at d would start at
 * start(d) = max(d', the receive port's free time), d' = max(d, the time
 * the receive is posted) above the eager limit, else d (THE RULE of
 * dt/net.h); the candidate is the pending message with the least
 * (start, s). Another rank s cannot send one that beats it when
 *   - it has ended;
 *   - it is blocked in a call on this communicator that cannot complete
 *     without the receiver: a receive from the receiver of a message the
 *     receiver has not sent yet (each rank publishes which message it
 *     waits for: its k-th receive from a rank takes that rank's k-th
 *     send), or a blocking collective of this communicator;
 *   - its clock, which it publishes at the end of each call (a lower bound
 *     on its next departure), gives start(clock) past the candidate's
 *     (or equal, and s is the higher rank).
 * The boards are read before the port: a message sent before a rank
 * published its state is in the port by then. When every rank that could
 * still beat the candidate is itself blocked in a receive from a third
 * rank (servers waiting on each other's workers), no rank can move before
 * one delivers: the candidate is taken then. */
#include "coll.h"

#include "diag.h"
#include "wait.h"

#include <math.h>
#include <stdlib.h>

/* How often a waiting dt_recv_any looks at the boards again when it sleeps:
 * a rank that publishes its clock rings no doorbell. */
#define ANY_POLL_S 200e-6

typedef struct {
    dt_call *call;
    size_t bytes;
    double *bound;   /* [size]: a rank's least start, INFINITY: cannot send */
    int *in_recv;    /* [size]: blocked in a receive from a third rank */
    double *pending; /* [size]: its first pending message's start, NAN: none */
    int chosen;
} any_arg;

/* The least start of a message that departs at d (or later). */
static double start_at(const any_arg *a, double d)
{
    const dt_call *call = a->call;
    if (a->bytes > DT_NET_EAGER_MAX)
        d = fmax(d, call->t); /* the receive is posted at the call's clock */
    return fmax(d, call->ports->recv_free);
}

/* What each other rank can still do, from its board. */
static void read_boards(any_arg *a)
{
    const dt_comm *c = a->call->comm;
    const dt_job *job = c->rc->job;
    for (int s = 0; s < c->size; s++) {
        const dt_board *b = &job->board[c->sh->world[s]];
        dt_doing_view d;
        dt_doing_read(&b->doing[0], &d);
        int running = atomic_load_explicit(&b->state, memory_order_acquire) == DT_RANK_RUNNING;
        int here = d.active && d.comm_id == c->sh->id;
        int receives = d.active && (d.kind == DT_COLL_RECV || d.kind == DT_COLL_SENDRECV) &&
                       d.from != DT_FROM_NONE;
        /* a receive from me of a message I have not sent yet */
        int on_me = here && ((receives && d.from == c->rank && d.want > c->sent_to[s]) ||
                             (d.kind < DT_COLL_SEND && !d.waiting));
        a->bound[s] = !running || on_me || s == c->rank ? INFINITY
                                                        : start_at(a, dt_clock_published(b));
        a->in_recv[s] = receives && d.from != c->rank; /* waits on a third rank */
    }
}

static int beats(double start, int s, double best, int best_s)
{
    return start < best || (start == best && s < best_s);
}

/* The dt_wait_until condition: 1 once the message to take is known. */
static int decided(const void *arg)
{
    any_arg *a = (any_arg *)arg;
    dt_call *call = a->call;
    const dt_comm *c = call->comm;
    read_boards(a);
    for (int s = 0; s < c->size; s++)
        a->pending[s] = NAN;
    double depart[DT_MAX_RANKS];
    dt_port_pending(call, 0, depart);
    int best_s = -1;
    double best = INFINITY;
    for (int s = 0; s < c->size; s++) {
        if (isnan(depart[s]))
            continue;
        a->pending[s] = start_at(a, depart[s]);
        if (best_s < 0 || beats(a->pending[s], s, best, best_s))
            best = a->pending[s], best_s = s;
    }
    if (best_s < 0)
        return 0;
    int stuck = 1, blocked = 0;
    for (int s = 0; s < c->size; s++) {
        if (!isnan(a->pending[s]) || !beats(a->bound[s], s, best, best_s))
            continue;
        blocked = 1;
        stuck = stuck && a->in_recv[s];
    }
    if (blocked && !stuck)
        return 0;
    a->chosen = best_s;
    return 1;
}

dt_result dt_choose_any(dt_call *call, size_t bytes, int *src)
{
    int n = call->comm->size;
    any_arg a = {call, bytes, malloc(sizeof(double) * (size_t)n), malloc(sizeof(int) * (size_t)n),
                 malloc(sizeof(double) * (size_t)n), -1};
    dt_result r = DT_OK;
    if (!a.bound || !a.in_recv || !a.pending)
        r = dt_fail(DT_ERR_NOMEM, "dt_recv_any: out of memory for %d ranks", n);
    if (r == DT_OK) {
        double poll = call->poll_s;
        call->poll_s = ANY_POLL_S;
        r = dt_wait_until(call, decided, &a);
        call->poll_s = poll;
    }
    *src = a.chosen;
    free(a.bound);
    free(a.in_recv);
    free(a.pending);
    return r;
}
