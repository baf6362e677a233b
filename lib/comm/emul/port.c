/* port.c - the emulation's messages (thread and proc backends): the
 * isend, irecv, wait, done and cancel of their tables (backend.h).
 *
 * Each rank has a port (inbox) per communicator with two FIFO lists: sends
 * posted to it that no receive has matched yet, and receives it posted that
 * no send has matched yet. Whoever arrives second does the copy:
 *
 *   sender arrives first:   send waits in the port  -> receiver copies out
 *   receiver arrives first: recv waits in the port  -> sender copies in
 *
 * so a posted receive fills while its rank computes. Sends of at most
 * DT_EAGER_MAX bytes are copied into the message itself and complete at
 * once. A message matches on (source, tag); source may be "any".
 *
 * The modeled network is THE RULE of dt/net.h, applied where the program
 * order decides it: a send's departure when it is posted (the rank's send
 * port), a receive's arrival when the program waits for it (the rank's
 * receive port, in the order of its waits), a send's completion when the
 * program waits for it. The matcher hands each side the other's time (the
 * send's departure, the receive's posting), so that no figure depends on
 * which rank came first in wall time.
 */
#include "emul.h"

#include "copy.h"
#include "../diag.h"
#include "../shm.h"
#include "../stats.h"
#include "wait.h"

#include <math.h>
#include <sched.h>
#include <string.h>

/* ---------------------------------------------------------------- lists */

void dt_port_init(dt_port *port)
{
    dt_shared_mutex_init(&port->lock);
}

void dt_port_destroy(dt_job *job, dt_port *port)
{
    for (dt_msg *m = port->sends, *next; m; m = next) {
        next = m->next;
        if (m->eager) /* eager messages nobody received belong to the port */
            dt_shm_free(job, m);
    }
    pthread_mutex_destroy(&port->lock);
}

static void list_append(dt_msg **head, dt_msg **tail, dt_msg *m)
{
    m->next = NULL;
    if (*tail)
        (*tail)->next = m;
    else
        *head = m;
    *tail = m;
}

static void list_unlink(dt_msg **head, dt_msg **tail, dt_msg *prev, dt_msg *m)
{
    if (prev)
        prev->next = m->next;
    else
        *head = m->next;
    if (*tail == m)
        *tail = prev;
    m->next = NULL;
}

/* Unlinks and returns the first message of the list matching (src, tag). */
static dt_msg *list_take(dt_msg **head, dt_msg **tail, int src, uint64_t tag, int want_recv)
{
    dt_msg *prev = NULL;
    for (dt_msg *m = *head; m; prev = m, m = m->next) {
        int ok = m->tag == tag &&
                 (want_recv ? (m->src == DT_ANY_SOURCE || m->src == src)
                            : (src == DT_ANY_SOURCE || m->src == src));
        if (ok) {
            list_unlink(head, tail, prev, m);
            return m;
        }
    }
    return NULL;
}

/* Unlinks m if it is still waiting in the list (a cancelled wait). */
static int list_remove(dt_msg **head, dt_msg **tail, dt_msg *m)
{
    dt_msg *prev = NULL;
    for (dt_msg *x = *head; x; prev = x, x = x->next) {
        if (x == m) {
            list_unlink(head, tail, prev, x);
            return 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- posting */

/* The link between the caller and peer: THE RULE's figures are the pair's. */
static const dt_net *call_link(const dt_call *call, int peer)
{
    return dt_comm_pair_link(call->comm, call->comm->rank, peer);
}

static dt_msg *msg_new(dt_job *job, dt_msg_dir dir, size_t extra)
{
    dt_msg *m = dt_shm_alloc(job, sizeof(dt_msg) + extra);
    if (m)
        m->dir = dir;
    return m;
}

static void finish(dt_job *job, dt_msg *m, dt_msg_state state)
{
    /* read the owner first: once the state is stored, the owner may free m */
    int owner = m->owner_world;
    atomic_store_explicit(&m->state, state, memory_order_release);
    dt_bell_ring(&job->board[owner].bell);
}

/* Whether a send and a receive belong together: the same size and, for a
 * collective's messages, the same collective called the same way. Checked
 * before any byte is copied. */
static int matches(const dt_msg *s, const dt_msg *r)
{
    return s->bytes == r->bytes && s->sig == r->sig && s->count == r->count;
}

/* The sender found receive r waiting for send m: fills it. */
static dt_result fill_waiting_recv(dt_call *call, dt_msg *m, dt_msg *r, int peer)
{
    dt_comm *c = call->comm;
    dt_job *job = dt_call_job(call);
    r->got_src = c->rank;
    r->got_depart = m->depart;
    r->got_bytes = m->bytes;
    r->got_sig = m->sig;
    r->got_count = m->count;
    if (!matches(m, r)) {
        /* read before finish: then the receiver may free r */
        size_t want = r->bytes;
        uint32_t sig = r->sig;
        uint64_t count = r->count;
        finish(job, r, DT_MSG_ERROR);
        return dt_msg_mismatch(call, peer, m->bytes, sig, count, want, 1);
    }
    dt_result res = dt_copy_to(r->pid, c->rc->pid, r->buf, m->buf, m->bytes);
    finish(job, r, res == DT_OK ? DT_MSG_DONE : DT_MSG_ERROR);
    return res;
}

dt_result dt_port_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out)
{
    dt_comm *c = call->comm;
    dt_job *job = dt_call_job(call);
    dt_port *port = dt_port_of(c->sh, peer);
    *out = (dt_xfer){NULL, call->t};
    int eager = bytes <= DT_EAGER_MAX;
    dt_msg *m = msg_new(job, DT_MSG_SEND, eager ? bytes : 0);
    if (!m)
        return DT_ERR_NOMEM;
    m->src = c->rank;
    m->tag = tag;
    m->bytes = bytes;
    m->sig = call->sig;
    m->count = call->count;
    double depart = dt_net_depart(call_link(call, peer), call->ports, call->t, (double)bytes);
    m->depart = depart;
    /* eager data lies in shared memory, and so may the sender's buffer */
    m->pid = eager ? 0 : dt_owner_pid(job, c->rc->pid, buf, bytes);
    m->owner_world = c->rc->world_rank;
    m->eager = eager;
    m->port_rank = peer;
    m->buf = eager ? (void *)(m + 1) : (void *)buf;
    if (eager && bytes)
        memcpy(m->buf, buf, bytes);
    dt_call_traffic(call, 1, bytes, 1);

    dt_shared_lock(&port->lock);
    dt_msg *r = list_take(&port->recvs, &port->recvs_tail, c->rank, tag, 1);
    if (!r)
        list_append(&port->sends, &port->sends_tail, m);
    pthread_mutex_unlock(&port->lock);
    if (!r) /* a dt_recv_any may be asleep on the port */
        dt_bell_ring(&job->board[c->sh->world[peer]].bell);
    if (!r && !eager) {
        out->m = m; /* its completion waits for its receive */
        return DT_OK;
    }
    /* Complete now: an eager message belongs to the port from here on (its
     * receiver may have freed it already). */
    out->done = dt_net_sent(call_link(call, peer), depart, r ? r->posted : 0, (double)bytes);
    if (!r)
        return DT_OK;
    dt_result res = fill_waiting_recv(call, m, r, peer);
    dt_shm_free(job, m);
    return res;
}

dt_result dt_port_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                        dt_xfer *out)
{
    dt_comm *c = call->comm;
    dt_job *job = dt_call_job(call);
    dt_port *port = dt_port_of(c->sh, c->rank);
    *out = (dt_xfer){NULL, call->t};
    dt_msg *m = msg_new(job, DT_MSG_RECV, 0);
    if (!m)
        return DT_ERR_NOMEM;
    m->src = peer;
    m->tag = tag;
    m->bytes = bytes;
    m->sig = call->sig;
    m->count = call->count;
    m->buf = buf;
    m->port_rank = c->rank;
    m->pid = dt_owner_pid(job, c->rc->pid, buf, bytes);
    m->owner_world = c->rc->world_rank;
    m->posted = call->t;

    dt_shared_lock(&port->lock);
    dt_msg *s = list_take(&port->sends, &port->sends_tail, peer, tag, 0);
    if (!s)
        list_append(&port->recvs, &port->recvs_tail, m);
    pthread_mutex_unlock(&port->lock);
    out->m = m;
    if (!s)
        return DT_OK;
    /* A send was waiting: take its data. */
    m->got_src = s->src;
    m->got_depart = s->depart;
    m->got_bytes = s->bytes;
    m->got_sig = s->sig;
    m->got_count = s->count;
    dt_msg_state state = DT_MSG_DONE;
    if (!matches(s, m))
        state = DT_MSG_ERROR;
    else if (dt_copy_from(s->pid, c->rc->pid, buf, s->buf, bytes) != DT_OK)
        state = DT_MSG_ERROR;
    atomic_store_explicit(&m->state, state, memory_order_release);
    if (s->eager) {
        dt_shm_free(job, s);
    } else {
        s->got_posted = m->posted;
        s->got_bytes = m->bytes;
        s->got_sig = m->sig;
        s->got_count = m->count;
        finish(job, s, state);
    }
    return DT_OK;
}

void dt_port_pending(dt_call *call, uint64_t tag, double *depart)
{
    dt_comm *c = call->comm;
    dt_port *port = dt_port_of(c->sh, c->rank);
    for (int s = 0; s < c->size; s++)
        depart[s] = NAN;
    dt_shared_lock(&port->lock);
    for (dt_msg *m = port->sends; m; m = m->next)
        if (m->tag == tag && isnan(depart[m->src]))
            depart[m->src] = m->depart;
    pthread_mutex_unlock(&port->lock);
}

/* ---------------------------------------------------------------- waiting */

static int msg_done(const dt_msg *m)
{
    return atomic_load_explicit(&m->state, memory_order_acquire) != DT_MSG_PENDING;
}

int dt_port_done(const dt_xfer *x)
{
    return !x->m || msg_done(x->m);
}

static int msg_done_cond(const void *arg) { return msg_done(arg); }

/* A wait that failed: take the message out of its port so no one writes
 * into a buffer the caller is about to give up; if a matcher already has
 * it, let that copy finish first. */
static void cancel(dt_call *call, dt_msg *m)
{
    dt_port *port = dt_port_of(call->comm->sh, m->port_rank);
    dt_shared_lock(&port->lock);
    int removed = m->dir == DT_MSG_SEND ? list_remove(&port->sends, &port->sends_tail, m)
                                        : list_remove(&port->recvs, &port->recvs_tail, m);
    pthread_mutex_unlock(&port->lock);
    if (!removed) {
        double until = dt_now() + 2.0;
        while (!msg_done(m) && dt_now() < until)
            sched_yield();
        if (!msg_done(m))
            return; /* leak it rather than free what another rank writes */
    }
    dt_shm_free(dt_call_job(call), m);
}

void dt_port_cancel(dt_call *call, dt_xfer *x)
{
    if (x->m)
        cancel(call, x->m);
    x->m = NULL;
}

static void advance(dt_call *call, double t)
{
    if (t > call->t)
        call->t = t;
}

/* A completed receive: its arrival through the receive port, the stats. */
static dt_result received(dt_call *call, dt_msg *m, int *src)
{
    if (atomic_load_explicit(&m->state, memory_order_acquire) != DT_MSG_DONE)
        return dt_msg_mismatch(call, m->got_src, m->bytes, m->got_sig, m->got_count,
                               m->got_bytes, 0);
    advance(call, dt_net_arrive(call_link(call, m->got_src), call->ports, m->got_depart,
                                m->posted, (double)m->got_bytes));
    dt_call_traffic(call, 0, m->got_bytes, 1);
    if (src)
        *src = m->got_src;
    return DT_OK;
}

dt_result dt_port_wait(dt_call *call, dt_xfer *x, int *src)
{
    dt_msg *m = x->m;
    if (!m) { /* a send that completed when posted */
        advance(call, x->done);
        return DT_OK;
    }
    x->m = NULL;
    dt_result r = dt_wait_until(call, msg_done_cond, m);
    if (r != DT_OK) {
        cancel(call, m);
        return r;
    }
    if (m->dir == DT_MSG_RECV)
        r = received(call, m, src);
    else if (atomic_load_explicit(&m->state, memory_order_acquire) != DT_MSG_DONE)
        r = dt_msg_mismatch(call, m->port_rank, m->bytes, m->got_sig, m->got_count,
                            m->got_bytes, 1);
    else
        advance(call, dt_net_sent(call_link(call, m->port_rank), m->depart, m->got_posted,
                                  (double)m->bytes));
    dt_shm_free(dt_call_job(call), m);
    return r;
}
