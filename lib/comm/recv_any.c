/* recv_any.c - which message dt_recv_any takes: the one that arrives first in
 * modeled time, and only once no other rank can still send an earlier one.
 * So the choice, and every clock after it, depends on modeled times only,
 * never on which rank ran first in wall time (a parameter server's
 * staleness figures are the same run after run).
 *
 * A pending message from rank s that departed at d would start at
 * start(d) = max(d', the receive port's free time), d' = max(d, the time
 * the receive is posted) above the eager limit, else d (THE RULE of
 * dt/net.h). The port's order, the candidate being the first pending
 * message in it:
 *   1. the least start;
 *   2. then the least departure: a busy port serves its queue first come,
 *      first served (every message waiting for it starts at its free time);
 *   3. then the rank next after the one dt_recv_any took last, round the
 *      ranks: a fair arbiter. With "the lower rank" instead, a worker of a
 *      zero-cost network (every time 0) that always has the next message
 *      ready would starve the higher ranks for good.
 * Another rank s cannot send one that comes before it when
 *   - it has ended;
 *   - it is blocked in a call on this communicator that cannot complete
 *     without the receiver: a receive from the receiver of a message the
 *     receiver has not sent yet (each rank publishes which message it
 *     waits for: its k-th receive from a rank takes that rank's k-th
 *     send), or a blocking collective of this communicator;
 *   - its clock, which it publishes at the end of each call (a lower bound
 *     on its next departure), puts any message it sends later after the
 *     candidate.
 * When every rank that could still come before the candidate is itself
 * blocked in a receive from a third rank (servers waiting on each other's
 * workers), no rank can move before one delivers: the candidate is taken
 * then. The rule (dt_any_choose) reads what each rank can do from a view,
 * which the backend fills (the choose_any entry of backend.h: from the
 * boards in shared memory, emul/any_boards.c, or from the ranks' answers,
 * mpi/mpi_any.c). */
#include "any.h"

#include <math.h>

/* The least start of a message that departs at d (or later). */
static double start_at(const dt_call *call, size_t bytes, double d)
{
    if (bytes > DT_NET_EAGER_MAX)
        d = fmax(d, call->t); /* the receive is posted at the call's clock */
    return fmax(d, call->ports->recv_free);
}

/* A message's place in the port's order (see the top). */
typedef struct {
    double start, depart;
    int turn; /* 0: the rank after the one taken last */
} any_key;

static any_key key_of(const dt_call *call, size_t bytes, int s, double depart)
{
    const dt_comm *c = call->comm;
    int turn = ((s - c->any_last - 1) % c->size + c->size) % c->size;
    return (any_key){start_at(call, bytes, depart), depart, turn};
}

static int before(any_key a, any_key b)
{
    if (a.start != b.start)
        return a.start < b.start;
    if (a.depart != b.depart)
        return a.depart < b.depart;
    return a.turn < b.turn;
}

/* What rank s can still do: *bound, the least key of a message it may still
 * send (start INFINITY: none before this rank acts); *in_recv, 1 when it
 * is blocked in a receive from a third rank. A message it sends later
 * departs at its clock or after, so its key is at least *bound. */
static void peer_bound(const dt_call *call, size_t bytes, int s, const dt_peer_view *v,
                       any_key *bound, int *in_recv)
{
    const dt_comm *c = call->comm;
    const dt_doing_view *d = &v->doing;
    int here = d->active && d->comm_id == c->sh->id;
    int receives = d->active && (d->kind == DT_COLL_RECV || d->kind == DT_COLL_SENDRECV) &&
                   d->from != DT_FROM_NONE;
    /* a receive from me of a message I have not sent yet, or a collective */
    int on_me = here && ((receives && d->from == c->rank && d->want > c->sent_to[s]) ||
                         (d->kind < DT_COLL_SEND && !d->waiting));
    *bound = key_of(call, bytes, s, v->clock);
    if (!v->running || on_me)
        bound->start = INFINITY;
    *in_recv = receives && d->from != c->rank; /* waits on a third rank */
}

int dt_any_choose(const dt_call *call, size_t bytes, const double *depart,
                  const dt_peer_view *view)
{
    const dt_comm *c = call->comm;
    int best_s = -1;
    any_key best = {INFINITY, INFINITY, 0};
    for (int s = 0; s < c->size; s++) {
        if (s == c->rank || isnan(depart[s]))
            continue;
        any_key k = key_of(call, bytes, s, depart[s]);
        if (best_s < 0 || before(k, best))
            best = k, best_s = s;
    }
    if (best_s < 0)
        return -1;
    int stuck = 1, blocked = 0;
    for (int s = 0; s < c->size; s++) {
        if (s == c->rank || !isnan(depart[s]))
            continue;
        any_key bound;
        int in_recv;
        peer_bound(call, bytes, s, &view[s], &bound, &in_recv);
        if (!before(bound, best))
            continue;
        blocked = 1;
        stuck = stuck && in_recv;
    }
    return blocked && !stuck ? -1 : best_s;
}
