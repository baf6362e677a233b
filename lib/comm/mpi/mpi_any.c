/* mpi_any.c - dt_recv_any on the mpi backend: the rule of recv_any.c (the
 * message that starts first in modeled time, taken once no other rank can
 * still send an earlier one: dt_any_choose), with what the emulation reads
 * on the boards asked of the ranks (mpi_board.c).
 *
 * Pending messages. MPI holds them. dt_recv_any takes the first pending
 * user message of each rank out of MPI (MPI_Iprobe, then MPI_Mrecv: its
 * header says when it departed) and keeps it in the group
 * (dt_mpi_early) until a receive from that rank is posted, which takes it
 * instead of MPI's next message: each pair's order stays.
 *
 * What a rank can still do. The ranks that could still send an earlier
 * message are asked. An answer counts once every user message it says the
 * rank had posted to this one on the communicator has been seen here (its
 * receive posted, or taken early): one still on its way could be earlier.
 * Its clock is a lower bound for good (clocks only grow; a message posted
 * after the answer departs after that clock); what the rank was doing (a
 * receive from this rank, a collective, a receive from a third rank) is
 * read only from answers to questions of this call, as the emulation reads
 * the boards now. Like the boards, a rank that computes tells nothing until
 * its next call: dt_recv_any waits for it in wall time, never guesses, so
 * the choice is the emulation's. */
#include "../any.h"
#include "mpi_backend.h"

#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- pending messages */

int dt_mpi_take_early(dt_mpi_group *g, int peer, char **buf, int *bytes, MPI_Request *req)
{
    dt_mpi_early *e = &g->early[peer];
    if (!e->buf) {
        g->claimed[peer]++; /* the receive about to be posted takes the next one */
        return 0;
    }
    *buf = e->buf;
    *bytes = e->bytes;
    *req = e->req;
    e->buf = NULL;
    e->req = MPI_REQUEST_NULL;
    return 1;
}

/* The first pending user message from s, out of MPI (sized first:
 * nothing is truncated; received without blocking: a large message's
 * data follows when its sender's MPI moves it), unless a receive from s
 * is still waiting for its message (the message is that receive's). Only
 * this rank's thread takes user messages: the one probed is the one
 * received. */
static void take_early(dt_mpi_group *g, int s)
{
    int flag = 0, bytes = 0;
    MPI_Status st;
    if (!dt_mpi_user_matched(g, s))
        return;
    MPI_Iprobe(s, DT_MPI_USER_TAG, g->comm, &flag, &st);
    if (!flag)
        return;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    char *buf = NULL;
    if (bytes >= (int)sizeof(dt_wire_hdr))
        buf = malloc((size_t)bytes);
    if (!buf)
        return; /* left in MPI (out of memory, or no header): the receive says */
    MPI_Message m;
    MPI_Improbe(s, DT_MPI_USER_TAG, g->comm, &flag, &m, &st);
    g->early[s] = (dt_mpi_early){buf, bytes, MPI_REQUEST_NULL};
    MPI_Imrecv(buf, bytes, MPI_BYTE, &m, &g->early[s].req);
    g->claimed[s]++;
}

/* ---------------------------------------------------------------- the choice */

/* What rank s of the call's communicator can still do, as far as its
 * answers tell (see the top); since: the first question of this call. */
static dt_peer_view view_of(dt_mpi_launch *l, const dt_comm *c, int s, uint32_t since)
{
    const dt_mpi_group *g = c->sh->be;
    dt_peer_view v = {1, -INFINITY, {0}};
    dt_mpi_answer a;
    if (!dt_mpi_answer_of(l, c->sh->world[s], &a) || a.comm_id != c->sh->id ||
        a.sent > g->claimed[s])
        return v; /* nothing known, or messages on their way */
    v.running = a.state == DT_RANK_RUNNING;
    v.clock = a.clock;
    if (a.seq >= since)
        v.doing = a.doing[0];
    return v;
}

/* One look: the pending messages and the answers; the chosen rank, or -1
 * (then the ranks that could still send earlier are asked again). */
static int look(dt_call *call, size_t bytes, double *depart, dt_peer_view *view,
                uint32_t since)
{
    dt_comm *c = call->comm;
    dt_mpi_group *g = c->sh->be;
    dt_mpi_launch *l = g->launch;
    dt_mpi_serve(l);
    dt_mpi_take_answers(l);
    int pending = 0, landing = 0;
    for (int s = 0; s < c->size; s++) {
        dt_mpi_early *e = &g->early[s];
        if (s != c->rank && !e->buf)
            take_early(g, s);
        depart[s] = NAN;
        int flag = 1;
        if (e->req != MPI_REQUEST_NULL)
            MPI_Test(&e->req, &flag, MPI_STATUS_IGNORE);
        landing = landing || !flag;
        if (e->buf && flag) {
            dt_wire_hdr h;
            memcpy(&h, e->buf, sizeof h);
            depart[s] = h.depart;
            pending = 1;
        }
        view[s] = view_of(l, c, s, since);
    }
    if (landing)
        return -1; /* a message taken early is still coming: its departure is not known */
    int chosen = dt_any_choose(call, bytes, depart, view);
    for (int s = 0; chosen < 0 && pending && s < c->size; s++)
        if (s != c->rank && isnan(depart[s]) && view[s].running)
            dt_mpi_ask(l, c->sh->world[s], c->sh->id);
    return chosen;
}

dt_result dt_mpi_choose_any(dt_call *call, size_t bytes, int *src)
{
    dt_comm *c = call->comm;
    dt_mpi_launch *l = ((dt_mpi_group *)c->sh->be)->launch;
    dt_job *job = dt_call_job(call);
    double *depart = malloc(sizeof(double) * (size_t)c->size);
    dt_peer_view *view = malloc(sizeof(dt_peer_view) * (size_t)c->size);
    dt_result r = DT_OK;
    if (!depart || !view)
        r = dt_fail(DT_ERR_NOMEM, "dt_recv_any: out of memory for %d ranks", c->size);
    uint32_t since = dt_mpi_asked(l) + 1;
    double t0 = dt_now(), deadline = t0 + job->timeout_s, next_check = t0;
    for (unsigned i = 1; r == DT_OK; i++) {
        if ((*src = look(call, bytes, depart, view, since)) >= 0)
            break;
        double now = dt_now();
        if (now >= next_check) {
            r = dt_mpi_check_failed(l);
            next_check = now + 1e-3;
        }
        if (r == DT_OK && now >= deadline) {
            char at[300];
            r = dt_fail(DT_ERR_TIMEOUT, "%stimeout after %g s in recv #%ld: rank %d waits in "
                        "dt_recv_any for a message from any rank (mpi backend: the other "
                        "ranks' state is in their own processes)",
                        dt_site_prefix(at, sizeof at), job->timeout_s, call->seq, c->rank);
        }
        if (now - t0 > job->spin_s)
            dt_mpi_pause(now - t0, job->spin_s);
        else if (i % 64 == 0)
            sched_yield();
    }
    free(depart);
    free(view);
    return r;
}
