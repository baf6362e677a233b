/* mpi_port.c - the mpi backend's messages: port.c's dt_msg_* over MPI
 * point-to-point, with THE RULE of dt/net.h applied at the same points of
 * the program as port.c applies it, so that the modeled clock, the ports
 * and the stats are the emulation's to the bit.
 *
 * What crosses the wire. Every message carries a header: the sender's
 * departure d (THE RULE, step 1), its size, and the signature and count of
 * the collective it belongs to (0 for a user message), so that the
 * receiver checks the match before it takes any byte.
 *   eager (at most DT_EAGER_MAX bytes): one MPI message, header and data,
 *     from a copy (the sender's buffer is free at once, as in port.c); the
 *     send completes at d + w.
 *   rendezvous (above): the header, then the data straight from the
 *     sender's buffer; the receiver, when it posts, sends back an ack with
 *     the time t_r it posted at (and its size, signature and count): the
 *     send completes at max(d, t_r) + w (step 5), and a sender whose
 *     receiver expects something else learns it from the ack.
 * MPI keeps the messages of one (source, tag, communicator) in order, as
 * port.c's FIFO lists do.
 *
 * Tags. MPI tags are 31 bits; a message's channel (user, a lane's
 * collectives, their acks, a lane's barrier-exchange) takes 3, and the
 * collective's kind, the low 8 bits of its number and the algorithm's step
 * the rest. Two calls 256 numbers apart never have messages in flight at
 * once on a communicator, except those a failure left behind. */
#include "mpi.h"

#ifdef DT_HAVE_MPI

#include "diag.h"
#include "stats.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CH_USER = 0, CH_USER_ACK, CH_COLL0, CH_ACK0, CH_COLL1, CH_ACK1, CH_SYNC0, CH_SYNC1 };

typedef struct {
    double depart;  /* send: d; ack: the time the receive was posted */
    uint64_t bytes, count;
    uint32_t sig, pad;
} wire_hdr;
_Static_assert(sizeof(wire_hdr) == 32, "a header is 32 bytes");

/* A posted MPI message: the dt_msg of port.h (its fields as port.c uses
 * them) and the MPI side. */
typedef struct {
    dt_msg m;
    MPI_Request req[3]; /* send: data, header, ack; receive: data, header, ack */
    wire_hdr hdr;       /* send: what it sent; receive: what came */
    wire_hdr ack;       /* send: what came back; receive: what it sent back */
    int rendezvous;
    char *stage;        /* eager: header and data in one buffer, after the struct */
} mpi_msg;

static dt_mpi_group *group_of(const dt_call *call) { return call->comm->sh->mpi; }

static const dt_net *call_net(const dt_call *call) { return &dt_call_job(call)->net; }

/* The MPI tag of a dt tag on a channel: [chan 3][kind+1 4][seq 8][step 16]. */
static int wire_tag(int chan, uint64_t tag)
{
    uint64_t kind1 = (tag >> 56) & 0xf, seq = (tag >> 20) & 0xff, step = tag & 0xffff;
    return (int)((uint64_t)chan << 28 | kind1 << 24 | seq << 16 | step);
}

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

/* ---------------------------------------------------------------- waiting */

dt_result dt_mpi_check_failed(dt_mpi_launch *l)
{
    if (!atomic_load(&l->failed)) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        MPI_Improbe(MPI_ANY_SOURCE, 1, l->ctl, &flag, &msg, &st);
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

/* Spin while every rank may have a core (the job's spin_s), then yield:
 * MPI progresses only inside its calls, so the wait keeps calling them. */
dt_result dt_mpi_poll(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                      const char *what, int peer)
{
    int err = MPI_SUCCESS;
    if (all_done(reqs, n, &err))
        return err == MPI_SUCCESS ? DT_OK : dt_mpi_fail(err, what);
    dt_job *job = dt_call_job(call);
    double t0 = dt_now(), deadline = t0 + job->timeout_s, next_check = t0;
    for (unsigned i = 1;; i++) {
        if (all_done(reqs, n, &err))
            return err == MPI_SUCCESS ? DT_OK : dt_mpi_fail(err, what);
        if (i % 16)
            continue;
        double now = dt_now();
        if (now >= next_check) { /* a failure notice, about every millisecond */
            DT_TRY(dt_mpi_check_failed(l));
            next_check = now + 1e-3;
        }
        if (now >= deadline) {
            const char *in = call->kind >= 0 && call->kind < DT_NUM_COLLS
                                 ? dt_coll_name(call->kind) : "setup";
            return dt_fail(DT_ERR_TIMEOUT, "timeout after %g s in %s #%ld: rank %d waits for "
                           "%s rank %d (mpi backend: the other ranks' state is not visible)",
                           job->timeout_s, in, call->seq, call->comm->rank, what, peer);
        }
        if (now - t0 > job->spin_s)
            sched_yield();
    }
}

/* ---------------------------------------------------------------- posting */

static mpi_msg *msg_new(dt_call *call, dt_msg_dir dir, int peer, const void *buf, size_t bytes,
                        uint64_t tag)
{
    /* one allocation: an eager message's stage (header, then data) follows it */
    int rendezvous = bytes > DT_EAGER_MAX;
    mpi_msg *x = malloc(sizeof *x + (rendezvous ? 0 : sizeof(wire_hdr) + bytes));
    if (!x)
        return NULL;
    memset(x, 0, sizeof *x);
    for (int i = 0; i < 3; i++)
        x->req[i] = MPI_REQUEST_NULL;
    x->m.dir = dir;
    x->m.src = dir == DT_MSG_SEND ? call->comm->rank : peer;
    x->m.port_rank = peer; /* here: the other side */
    x->m.tag = tag;
    x->m.bytes = bytes;
    x->m.buf = (void *)buf;
    x->m.sig = call->sig;
    x->m.count = call->count;
    x->rendezvous = rendezvous;
    x->stage = rendezvous ? NULL : (char *)(x + 1);
    return x;
}

static dt_result too_big(size_t bytes)
{
    return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend sends at most %d bytes in one message, "
                   "not %zu", INT_MAX - (int)sizeof(wire_hdr), bytes);
}

dt_result dt_mpi_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    if (bytes > (size_t)INT_MAX - sizeof(wire_hdr))
        return too_big(bytes);
    *out = (dt_xfer){NULL, call->t};
    mpi_msg *x = msg_new(call, DT_MSG_SEND, peer, buf, bytes, tag);
    if (!x)
        return dt_fail(DT_ERR_NOMEM, "out of memory for a message");
    MPI_Comm comm = group_of(call)->comm;
    int chan = data_chan(call, tag), wtag = wire_tag(chan, tag);
    x->m.depart = dt_net_depart(call_net(call), call->ports, call->t, (double)bytes);
    x->hdr = (wire_hdr){x->m.depart, bytes, call->count, call->sig, 0};
    int rc;
    if (!x->rendezvous) {
        memcpy(x->stage, &x->hdr, sizeof x->hdr);
        if (bytes)
            memcpy(x->stage + sizeof x->hdr, buf, bytes);
        rc = MPI_Isend(x->stage, (int)(sizeof x->hdr + bytes), MPI_BYTE, peer, wtag, comm,
                       &x->req[0]);
    } else {
        rc = MPI_Irecv(&x->ack, sizeof x->ack, MPI_BYTE, peer, wire_tag(chan + 1, tag), comm,
                       &x->req[2]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(&x->hdr, sizeof x->hdr, MPI_BYTE, peer, wtag, comm, &x->req[1]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, wtag, comm, &x->req[0]);
    }
    dt_call_traffic(call, 1, bytes, 1);
    out->m = &x->m;
    return rc == MPI_SUCCESS ? DT_OK : dt_mpi_fail(rc, "MPI_Isend");
}

dt_result dt_mpi_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    if (bytes > (size_t)INT_MAX - sizeof(wire_hdr))
        return too_big(bytes);
    *out = (dt_xfer){NULL, call->t};
    if (peer < 0)
        return dt_fail(DT_ERR_INTERNAL, "mpi backend: a receive from any rank is chosen first");
    mpi_msg *x = msg_new(call, DT_MSG_RECV, peer, buf, bytes, tag);
    if (!x)
        return dt_fail(DT_ERR_NOMEM, "out of memory for a message");
    MPI_Comm comm = group_of(call)->comm;
    int chan = data_chan(call, tag), wtag = wire_tag(chan, tag);
    x->m.posted = call->t;
    int rc;
    if (!x->rendezvous) {
        rc = MPI_Irecv(x->stage, (int)(sizeof(wire_hdr) + bytes), MPI_BYTE, peer, wtag, comm,
                       &x->req[1]);
    } else {
        x->ack = (wire_hdr){call->t, bytes, call->count, call->sig, 0};
        rc = MPI_Irecv(&x->hdr, sizeof x->hdr, MPI_BYTE, peer, wtag, comm, &x->req[1]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, wtag, comm, &x->req[0]);
        if (rc == MPI_SUCCESS)
            rc = MPI_Isend(&x->ack, sizeof x->ack, MPI_BYTE, peer, wire_tag(chan + 1, tag), comm,
                           &x->req[2]);
    }
    out->m = &x->m;
    return rc == MPI_SUCCESS ? DT_OK : dt_mpi_fail(rc, "MPI_Irecv");
}

/* ---------------------------------------------------------------- completing */

/* Lets go of a message's MPI side: receives are cancelled; a send still in
 * flight keeps its buffers (leaked: MPI may still read them). */
static void release(mpi_msg *x)
{
    int leak = 0;
    for (int i = 0; i < 3; i++) {
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
    if (!leak)
        free(x);
}

/* Whether the other side's header (or ack) describes the same message. */
static int same(const mpi_msg *x, const wire_hdr *h)
{
    return h->bytes == x->m.bytes && h->sig == x->m.sig && h->count == x->m.count;
}

static dt_result wait_recv(dt_call *call, mpi_msg *x, int *src)
{
    dt_mpi_launch *l = group_of(call)->launch;
    int peer = x->m.port_rank;
    dt_result r = dt_mpi_poll(call, l, &x->req[1], 1, "a message from", peer);
    if (r == DT_OK && !x->rendezvous)
        memcpy(&x->hdr, x->stage, sizeof x->hdr);
    if (r == DT_ERR_MISMATCH) { /* truncated: the sender sent more than this receive takes */
        dt_fail(DT_ERR_MISMATCH, "rank %d receives %zu bytes from rank %d, which sends more "
                "(%s)", call->comm->rank, x->m.bytes, peer, dt_last_error());
        return call->sig ? dt_comm_poison(call->comm, DT_ERR_MISMATCH) : DT_ERR_MISMATCH;
    }
    DT_TRY(r);
    if (!same(x, &x->hdr)) {
        if (x->hdr.bytes > DT_EAGER_MAX && !x->rendezvous) { /* it waits for an ack */
            wire_hdr nack = {x->m.posted, x->m.bytes, x->m.count, x->m.sig, 0};
            int chan = data_chan(call, x->m.tag);
            MPI_Send(&nack, sizeof nack, MPI_BYTE, peer, wire_tag(chan + 1, x->m.tag),
                     group_of(call)->comm);
        }
        return dt_msg_mismatch(call, peer, x->m.bytes, x->hdr.sig, x->hdr.count,
                               x->hdr.bytes, 0);
    }
    DT_TRY(dt_mpi_poll(call, l, x->req, 3, "the data of a message from", peer));
    if (!x->rendezvous && x->m.bytes)
        memcpy(x->m.buf, x->stage + sizeof x->hdr, x->m.bytes);
    double t = dt_net_arrive(call_net(call), call->ports, x->hdr.depart, x->m.posted,
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
        DT_TRY(dt_mpi_poll(call, l, &x->req[2], 1, "the receive (ack) of", peer));
        if (!same(x, &x->ack))
            return dt_msg_mismatch(call, peer, x->m.bytes, x->ack.sig, x->ack.count,
                                   x->ack.bytes, 1);
        posted = x->ack.depart;
    }
    DT_TRY(dt_mpi_poll(call, l, x->req, 3, "a send to", peer));
    double t = dt_net_sent(call_net(call), x->m.depart, posted, (double)x->m.bytes);
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

int dt_mpi_done(const dt_xfer *xf)
{
    if (!xf->m)
        return 1;
    mpi_msg *x = (mpi_msg *)xf->m;
    for (int i = 0; i < 3; i++) {
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

/* ---------------------------------------------------------------- the backend */

static dt_result mpi_send(dt_call *call, int peer, const void *buf, size_t bytes, dt_xfer *out)
{
    return dt_mpi_isend(call, peer, buf, bytes, 0, out);
}

static dt_result mpi_recv(dt_call *call, int peer, void *buf, size_t bytes, dt_xfer *out)
{
    return dt_mpi_irecv(call, peer, buf, bytes, 0, out);
}

/* dt_recv_any: the first sender whose user message MPI has here. Not the
 * emulation's rule (the first in modeled time): the ranks' boards that it
 * reads are not shared between MPI processes. */
static dt_result mpi_choose_any(dt_call *call, size_t bytes, int *src)
{
    (void)bytes;
    dt_mpi_group *g = group_of(call);
    dt_job *job = dt_call_job(call);
    double deadline = dt_now() + job->timeout_s;
    for (unsigned i = 1;; i++) {
        int flag = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, wire_tag(CH_USER, 0), g->comm, &flag, &st);
        if (rc != MPI_SUCCESS)
            return dt_mpi_fail(rc, "MPI_Iprobe");
        if (flag) {
            *src = st.MPI_SOURCE;
            return DT_OK;
        }
        if (i % 64)
            continue;
        DT_TRY(dt_mpi_check_failed(g->launch));
        if (dt_now() >= deadline)
            return dt_fail(DT_ERR_TIMEOUT, "timeout after %g s in dt_recv_any: rank %d waits "
                           "for a message from any rank", job->timeout_s, call->comm->rank);
        sched_yield();
    }
}

const dt_backend_ops dt_mpi_ops = {
    "mpi", dt_emulated_collective, mpi_send, mpi_recv, dt_mpi_wait, dt_mpi_done,
    dt_mpi_cancel, mpi_choose_any,
};

#endif /* DT_HAVE_MPI */
