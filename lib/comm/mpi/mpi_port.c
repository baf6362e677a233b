/* mpi_port.c - the mpi backend's messages: the isend ... cancel entries of
 * its table (backend.h, port.h) over MPI point-to-point, with THE RULE of
 * dt/net.h applied at the same points of the program as the emulation's
 * emul/port.c applies it, so that the modeled clock, the ports
 * and the stats are the emulation's to the bit.
 *
 * What crosses the wire. Every message is one MPI message: a header
 * (dt_wire_hdr: the sender's departure d, its size, the signature and
 * count of the collective it belongs to, 0 for a user message), then the
 * data.
 *   eager (at most DT_EAGER_MAX bytes): from a copy (the sender's buffer
 *     is free at once, as in port.c); the send completes at d + w.
 *   rendezvous (above): the header and the data straight from the
 *     sender's buffer, described by one MPI datatype (two blocks); the
 *     receiver, when it posts, sends back an ack with the time t_r it
 *     posted at (and its size, signature and count): the send completes
 *     at max(d, t_r) + w (step 5), and a sender whose receiver expects
 *     something else learns it from the ack.
 * One message, not a header and then the data: each ring step pays one
 * MPI message's costs, not two (BENCHMARKS.md, "The mpi backend"). MPI
 * keeps the messages of one (source, tag, communicator) in order, as
 * port.c's FIFO lists do.
 *
 * Nothing is ever truncated: MPI libraries do not all handle a message
 * longer than its receive (Open MPI's single-copy path writes past the
 * buffer). A receive is matched only once its message has come
 * (MPI_Improbe says its size): one of the receive's size goes straight
 * into the header and the receive's buffer; any other into a buffer of
 * its own size, whose header then says what the sender sent (an eager
 * message's data is copied out of it; a mismatch is reported).
 *
 * Tags. MPI tags are 28 bits here, MPICH's MPI_TAG_UB (Open MPI gives
 * 31): a message's channel (user, a lane's collectives, their acks, a
 * lane's barrier-exchange) takes 3, the collective's kind 4, the low 5 bits
 * of its number 5 and the algorithm's step 16. Two calls 32 numbers apart
 * may both have messages in flight on a channel (a broadcast's root sends
 * eagerly and goes on), with the same tag: MPI delivers the messages of
 * one (source, tag, communicator) in the order they were sent, and each
 * rank receives its calls' messages in their order, so the earlier call's
 * message is the one the earlier receive takes. Only a message that a
 * failure left behind could be taken by a later call (the communicators of
 * a failed launch are never reused: dt_mpi_launch). */
#include "mpi_backend.h"

#include "../diag.h"
#include "../stats.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CH_USER = 0, CH_USER_ACK, CH_COLL0, CH_ACK0, CH_COLL1, CH_ACK1, CH_SYNC0, CH_SYNC1 };

/* A posted MPI message: the dt_msg of port.h (its fields as port.c uses
 * them) and the MPI side. */
typedef struct mpi_msg mpi_msg;
struct mpi_msg {
    dt_msg m;
    MPI_Request req[2]; /* the message; the ack (a rendezvous message's) */
    dt_wire_hdr hdr;    /* send: what it sent; receive: what came */
    dt_wire_hdr ack;    /* send: what came back; receive: what it sent back */
    int rendezvous;
    MPI_Comm comm;
    int wire_tag;       /* the message's MPI tag */
    int matched;        /* receive: its message has come and is being received */
    char *stage;        /* send: an eager message; receive: a message not received
                           straight into the buffer (NULL: it was) */
    int stage_bytes;
    MPI_Message held;   /* receive: its message, matched, not received yet */
    dt_mpi_group *group;
    mpi_msg *next;      /* a user receive not matched yet: the next one from its peer */
};

static dt_mpi_group *group_of(const dt_call *call) { return call->comm->sh->be; }

/* The link between the caller and peer: THE RULE's figures are the pair's. */
static const dt_net *call_link(const dt_call *call, int peer)
{
    return dt_comm_pair_link(call->comm, call->comm->rank, peer);
}

/* The MPI tag of a dt tag on a channel: [chan 3][kind+1 4][seq 5][step 16],
 * at most DT_MPI_TAG_MAX. */
static int wire_tag(int chan, uint64_t tag)
{
    uint64_t kind1 = (tag >> 56) & 0xf, seq = (tag >> 20) & 0x1f, step = tag & 0xffff;
    return (int)((uint64_t)chan << 25 | kind1 << 21 | seq << 16 | step);
}

_Static_assert(((uint64_t)CH_SYNC1 << 25 | 0xfull << 21 | 0x1full << 16 | 0xffff) <=
                   DT_MPI_TAG_MAX, "the largest tag fits MPI_TAG_UB's least");

_Static_assert(CH_USER == 0 && DT_MPI_USER_TAG == 0, "user messages: channel 0, tag 0");

static int data_chan(const dt_call *call, uint64_t tag)
{
    return tag == 0 ? CH_USER : call->lane == 0 ? CH_COLL0 : CH_COLL1;
}

dt_result dt_mpi_fail(int code, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    int cls = 0;
    if (MPI_Error_string(code, text, &len) != MPI_SUCCESS)
        snprintf(text, sizeof text, "MPI error %d", code);
    /* a message longer than its receive: the two sides called different things */
    dt_result r = MPI_Error_class(code, &cls) == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE
                      ? DT_ERR_MISMATCH : DT_ERR_IO;
    return dt_fail(r, "%s: %s", what, text);
}

/* A header and a buffer as one MPI datatype (addresses from MPI_BOTTOM). */
static int pair_type(dt_wire_hdr *h, const void *buf, size_t bytes, MPI_Datatype *t)
{
    int len[2] = {(int)sizeof *h, (int)bytes};
    MPI_Aint disp[2];
    MPI_Get_address(h, &disp[0]);
    MPI_Get_address(buf, &disp[1]);
    int rc = MPI_Type_create_hindexed(2, len, disp, MPI_BYTE, t);
    return rc == MPI_SUCCESS ? MPI_Type_commit(t) : rc;
}

/* ---------------------------------------------------------------- posting */

static mpi_msg *msg_new(dt_call *call, dt_msg_dir dir, int peer, const void *buf, size_t bytes,
                        uint64_t tag)
{
    mpi_msg *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->req[0] = x->req[1] = MPI_REQUEST_NULL;
    x->held = MPI_MESSAGE_NULL;
    x->m.dir = dir;
    x->m.src = dir == DT_MSG_SEND ? call->comm->rank : peer;
    x->m.port_rank = peer; /* here: the other side */
    x->m.tag = tag;
    x->m.bytes = bytes;
    x->m.buf = (void *)buf;
    x->m.sig = call->sig;
    x->m.count = call->count;
    x->rendezvous = bytes > DT_EAGER_MAX;
    x->group = group_of(call);
    x->comm = x->group->comm;
    x->wire_tag = wire_tag(data_chan(call, tag), tag);
    if (dir == DT_MSG_SEND && !x->rendezvous) { /* the eager message's copy */
        x->stage_bytes = (int)(sizeof(dt_wire_hdr) + bytes);
        if (!(x->stage = malloc((size_t)x->stage_bytes))) {
            free(x);
            return NULL;
        }
    }
    return x;
}

/* User receives from one peer take its messages in the order they were
 * posted (the k-th receive takes the k-th send), as MPI's posted receives
 * would: the ones not matched yet wait in a list per peer, matched from
 * the oldest, whichever of them is waited for. */
static void enqueue(mpi_msg *x)
{
    mpi_msg **p = (mpi_msg **)&x->group->unmatched[x->m.port_rank];
    while (*p)
        p = &(*p)->next;
    *p = x;
}

static void unqueue(mpi_msg *x)
{
    for (mpi_msg **p = (mpi_msg **)&x->group->unmatched[x->m.port_rank]; *p; p = &(*p)->next)
        if (*p == x) {
            *p = x->next;
            return;
        }
}

static dt_result too_big(size_t bytes)
{
    return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend sends at most %d bytes in one message, "
                   "not %zu", INT_MAX - (int)sizeof(dt_wire_hdr), bytes);
}

dt_result dt_mpi_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    if (bytes > (size_t)INT_MAX - sizeof(dt_wire_hdr))
        return too_big(bytes);
    *out = (dt_xfer){NULL, call->t};
    mpi_msg *x = msg_new(call, DT_MSG_SEND, peer, buf, bytes, tag);
    if (!x)
        return dt_fail(DT_ERR_NOMEM, "out of memory for a message");
    dt_mpi_launch *l = group_of(call)->launch;
    if (tag == 0) { /* a user message: dt_recv_any's answers count it */
        dt_mpi_count_send(l, call->comm, peer);
        dt_mpi_serve(l);
    }
    x->m.depart = dt_net_depart(call_link(call, peer), call->ports, call->t, (double)bytes);
    x->hdr = (dt_wire_hdr){x->m.depart, bytes, call->count, call->sig, 0};
    int rc;
    if (!x->rendezvous) {
        memcpy(x->stage, &x->hdr, sizeof x->hdr);
        if (bytes)
            memcpy(x->stage + sizeof x->hdr, buf, bytes);
        rc = MPI_Isend(x->stage, x->stage_bytes, MPI_BYTE, peer, x->wire_tag, x->comm,
                       &x->req[0]);
    } else {
        MPI_Datatype t;
        int chan = data_chan(call, tag);
        rc = MPI_Irecv(&x->ack, sizeof x->ack, MPI_BYTE, peer, wire_tag(chan + 1, tag), x->comm,
                       &x->req[1]);
        if (rc == MPI_SUCCESS && (rc = pair_type(&x->hdr, buf, bytes, &t)) == MPI_SUCCESS) {
            rc = MPI_Isend(MPI_BOTTOM, 1, t, peer, x->wire_tag, x->comm, &x->req[0]);
            MPI_Type_free(&t); /* the send keeps what it needs */
        }
    }
    dt_call_traffic(call, 1, bytes, 1);
    out->m = &x->m;
    return rc == MPI_SUCCESS ? DT_OK : dt_mpi_fail(rc, "MPI_Isend");
}

dt_result dt_mpi_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    if (bytes > (size_t)INT_MAX - sizeof(dt_wire_hdr))
        return too_big(bytes);
    *out = (dt_xfer){NULL, call->t};
    if (peer < 0)
        return dt_fail(DT_ERR_INTERNAL, "mpi backend: a receive from any rank is chosen first");
    mpi_msg *x = msg_new(call, DT_MSG_RECV, peer, buf, bytes, tag);
    if (!x)
        return dt_fail(DT_ERR_NOMEM, "out of memory for a message");
    x->m.posted = call->t;
    if (tag == 0 && dt_mpi_take_early(x->group, peer, &x->stage, &x->stage_bytes, &x->req[0]))
        x->matched = 1; /* dt_recv_any took it out of MPI: into x->stage */
    else if (tag == 0)
        enqueue(x);
    int rc = MPI_SUCCESS;
    if (x->rendezvous) {
        int chan = data_chan(call, tag);
        x->ack = (dt_wire_hdr){call->t, bytes, call->count, call->sig, 0};
        rc = MPI_Isend(&x->ack, sizeof x->ack, MPI_BYTE, peer, wire_tag(chan + 1, tag), x->comm,
                       &x->req[1]);
    }
    out->m = &x->m;
    return rc == MPI_SUCCESS ? DT_OK : dt_mpi_fail(rc, "MPI_Isend (ack)");
}

/* ---------------------------------------------------------------- completing */

/* Lets go of a message's MPI side: receives are cancelled; a send still in
 * flight keeps its buffers (leaked: MPI may still read them). */
static void release(mpi_msg *x)
{
    if (x->m.tag == 0 && !x->matched)
        unqueue(x);
    if (x->held != MPI_MESSAGE_NULL)
        return; /* out of memory for the message MPI holds for it: both leaked */
    int leak = 0;
    for (int i = 0; i < 2; i++) {
        if (x->req[i] == MPI_REQUEST_NULL)
            continue;
        int flag = 0;
        MPI_Test(&x->req[i], &flag, MPI_STATUS_IGNORE);
        if (flag)
            continue;
        MPI_Cancel(&x->req[i]);
        double until = dt_now() + 0.1;
        while (!flag && dt_now() < until)
            MPI_Test(&x->req[i], &flag, MPI_STATUS_IGNORE);
        if (!flag) {
            MPI_Request_free(&x->req[i]);
            leak = 1;
        }
    }
    if (leak)
        return;
    free(x->stage);
    free(x);
}

/* Whether the other side's header (or ack) describes the same message. */
static int same(const mpi_msg *x, const dt_wire_hdr *h)
{
    return h->bytes == x->m.bytes && h->sig == x->m.sig && h->count == x->m.count;
}

/* A receive's message, once it has come (see the top): a rendezvous
 * message of the receive's size straight into the header and the buffer;
 * any other into x->stage, of its own size. 1 once it is being received. */
static int match_one(mpi_msg *x)
{
    if (x->held == MPI_MESSAGE_NULL) {
        int flag = 0;
        MPI_Status st;
        MPI_Improbe(x->m.port_rank, x->wire_tag, x->comm, &flag, &x->held, &st);
        if (!flag)
            return 0;
        MPI_Get_count(&st, MPI_BYTE, &x->stage_bytes);
    }
    MPI_Datatype t;
    if (x->rendezvous && x->stage_bytes == (int)(sizeof x->hdr + x->m.bytes) &&
        pair_type(&x->hdr, x->m.buf, x->m.bytes, &t) == MPI_SUCCESS) {
        MPI_Imrecv(MPI_BOTTOM, 1, t, &x->held, &x->req[0]);
        MPI_Type_free(&t);
    } else if ((x->stage = malloc(x->stage_bytes > 0 ? (size_t)x->stage_bytes : 1))) {
        MPI_Imrecv(x->stage, x->stage_bytes, MPI_BYTE, &x->held, &x->req[0]);
    } else {
        return 0; /* out of memory: held, and tried again while the wait lasts */
    }
    x->matched = 1;
    return 1;
}

int dt_mpi_user_matched(dt_mpi_group *g, int peer)
{
    mpi_msg **head = (mpi_msg **)&g->unmatched[peer];
    while (*head && match_one(*head))
        *head = (*head)->next;
    return *head == NULL;
}

/* dt_mpi_poll_step's step: 1 once x's message is being received. */
static int match(void *arg)
{
    mpi_msg *x = arg;
    if (!x->matched && x->m.tag == 0)
        dt_mpi_user_matched(x->group, x->m.port_rank); /* the older ones first */
    else if (!x->matched)
        match_one(x);
    return x->matched;
}

/* A message that did not go straight into the buffer: its header, and an
 * eager message's data copied out. 0 when it has no header. */
static int unstage(mpi_msg *x)
{
    if (!x->stage)
        return 1; /* received straight into x->hdr and the buffer */
    if (x->stage_bytes < (int)sizeof x->hdr)
        return 0;
    memcpy(&x->hdr, x->stage, sizeof x->hdr);
    if (same(x, &x->hdr) && x->stage_bytes == (int)(sizeof x->hdr + x->m.bytes) && x->m.bytes)
        memcpy(x->m.buf, x->stage + sizeof x->hdr, x->m.bytes);
    return 1;
}

static dt_result wait_recv(dt_call *call, mpi_msg *x, int *src)
{
    dt_mpi_launch *l = group_of(call)->launch;
    int peer = x->m.port_rank;
    DT_TRY(dt_mpi_poll_step(call, l, x->req, 1, match, x, "a message from", peer));
    if (!unstage(x))
        return dt_fail(DT_ERR_IO, "a message of %d bytes from rank %d has no header",
                       x->stage_bytes, peer);
    if (!same(x, &x->hdr)) {
        if (x->hdr.bytes > DT_EAGER_MAX && !x->rendezvous) { /* it waits for an ack */
            /* an eager receive sent no ack: its slot carries this one (release
             * keeps x while MPI may still read it) */
            x->ack = (dt_wire_hdr){x->m.posted, x->m.bytes, x->m.count, x->m.sig, 0};
            int chan = data_chan(call, x->m.tag);
            MPI_Isend(&x->ack, sizeof x->ack, MPI_BYTE, peer, wire_tag(chan + 1, x->m.tag),
                      x->comm, &x->req[1]);
            dt_mpi_poll(call, l, &x->req[1], 1, "the ack to a mismatched message of", peer);
        }
        return dt_msg_mismatch(call, peer, x->m.bytes, x->hdr.sig, x->hdr.count,
                               x->hdr.bytes, 0);
    }
    DT_TRY(dt_mpi_poll(call, l, &x->req[1], 1, "the ack of a message from", peer));
    double t = dt_net_arrive(call_link(call, peer), call->ports, x->hdr.depart, x->m.posted,
                             (double)x->hdr.bytes);
    if (t > call->t)
        call->t = t;
    dt_call_traffic(call, 0, x->hdr.bytes, 1);
    if (src)
        *src = peer;
    return DT_OK;
}

static dt_result wait_send(dt_call *call, mpi_msg *x)
{
    dt_mpi_launch *l = group_of(call)->launch;
    int peer = x->m.port_rank;
    double posted = 0;
    if (x->rendezvous) {
        DT_TRY(dt_mpi_poll(call, l, &x->req[1], 1, "the receive (ack) of", peer));
        if (!same(x, &x->ack))
            return dt_msg_mismatch(call, peer, x->m.bytes, x->ack.sig, x->ack.count,
                                   x->ack.bytes, 1);
        posted = x->ack.depart;
    }
    DT_TRY(dt_mpi_poll(call, l, x->req, 1, "a send to", peer));
    double t = dt_net_sent(call_link(call, peer), x->m.depart, posted, (double)x->m.bytes);
    if (t > call->t)
        call->t = t;
    return DT_OK;
}

dt_result dt_mpi_wait(dt_call *call, dt_xfer *xf, int *src)
{
    if (!xf->m) {
        if (xf->done > call->t)
            call->t = xf->done;
        return DT_OK;
    }
    mpi_msg *x = (mpi_msg *)xf->m;
    xf->m = NULL;
    dt_result r = x->m.dir == DT_MSG_RECV ? wait_recv(call, x, src) : wait_send(call, x);
    release(x);
    return r;
}

/* Never blocks; matches a receive whose message has come, as MPI_Test
 * moves a posted receive on. */
int dt_mpi_done(const dt_xfer *xf)
{
    if (!xf->m)
        return 1;
    mpi_msg *x = (mpi_msg *)xf->m;
    if (x->m.dir == DT_MSG_RECV && !match(x))
        return 0;
    for (int i = 0; i < 2; i++) {
        int flag = 1;
        if (x->req[i] != MPI_REQUEST_NULL)
            MPI_Request_get_status(x->req[i], &flag, MPI_STATUS_IGNORE);
        if (!flag)
            return 0;
    }
    return 1;
}

void dt_mpi_cancel(dt_call *call, dt_xfer *xf)
{
    (void)call;
    if (xf->m)
        release((mpi_msg *)xf->m);
    xf->m = NULL;
}

/* ---------------------------------------------------------------- the exchange */

dt_result dt_mpi_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all)
{
    dt_comm *c = call->comm;
    uint32_t g = c->sync_gen[call->lane];
    dt_rec *rec = dt_sync_records(call, mine), *slot = &rec[c->rank];
    int n = c->size, tag = wire_tag(call->lane ? CH_SYNC1 : CH_SYNC0, g & 0xffff);
    MPI_Request *reqs = malloc(sizeof *reqs * 2 * (size_t)n);
    if (!reqs)
        return dt_fail(DT_ERR_NOMEM, "out of memory for an exchange of %d ranks", n);
    MPI_Comm comm = group_of(call)->comm;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < 2 * n; i++)
        reqs[i] = MPI_REQUEST_NULL;
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++) {
        if (i == c->rank)
            continue;
        rc = MPI_Irecv(&rec[i], sizeof *rec, MPI_BYTE, i, tag, comm, &reqs[i]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(slot, sizeof *slot, MPI_BYTE, i, tag, comm, &reqs[n + i]);
    }
    dt_result r = rc == MPI_SUCCESS ? dt_mpi_poll(call, group_of(call)->launch, reqs, 2 * n,
                                                  "the barrier-exchange with", -1)
                                    : dt_mpi_fail(rc, "the barrier-exchange");
    for (int i = 0; r != DT_OK && i < 2 * n; i++)
        if (reqs[i] != MPI_REQUEST_NULL) { /* the records stay: they are the comm's */
            MPI_Cancel(&reqs[i]);
            MPI_Request_free(&reqs[i]);
        }
    free(reqs);
    DT_TRY(r);
    c->sync_gen[call->lane] = g + 1;
    *all = rec;
    return DT_OK;
}
