/* p2p.c - the point-to-point calls of dt/comm.h, through the rank's backend
 * (backend.h). User messages carry tag 0: they never match a collective's
 * messages, and between two ranks they arrive in the order sent. */
#include "backend.h"
#include "diag.h"
#include "progress.h"
#include "stats.h"

#include <string.h>

static dt_result check_p2p(const dt_comm *c, const void *buf, size_t count, dt_dtype t, int peer,
                           int any_ok, const char *fn)
{
    DT_TRY(dt_comm_check(c, fn));
    if (!dt_dtype_valid(t))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)t);
    if (count > (SIZE_MAX / 2) / dt_dtype_size(t))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: count %zu of %s overflows", fn, count,
                       dt_dtype_name(t));
    if (!buf && count > 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: buffer is NULL with count %zu", fn, count);
    if (any_ok && peer == DT_ANY_SOURCE)
        return DT_OK;
    if (peer < 0 || peer >= c->size)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: peer %d out of range [0, %d)", fn, peer, c->size);
    if (peer == c->rank)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: rank %d cannot send to itself (use "
                       "dt_sendrecv)", fn, peer);
    return DT_OK;
}

/* Runs one blocking p2p call on lane 0 with the usual bookkeeping. */
static dt_result p2p_call(dt_comm *c, int kind, int peer, size_t count, const void *sbuf,
                          void *rbuf, size_t sbytes, size_t rbytes, int source, int *got)
{
    long seq = ++c->p2p_seq;
    double w0 = dt_now();
    DT_TRY(dt_api_enter(c, kind, seq, count, peer, 0));
    double m0 = c->rc->clock;
    dt_call call;
    dt_call_init(&call, c, 0, kind, seq, 1);
    call.tag = 0;
    const dt_backend_ops *be = c->rc->ops;
    dt_xfer sx = {NULL, call.t}, rx = {NULL, call.t};
    dt_result r = DT_OK;
    if (kind != DT_COLL_RECV)
        c->sent_to[peer]++;
    if (kind != DT_COLL_SEND) {
        if (source == DT_ANY_SOURCE) {
            dt_doing_detail(c, DT_FROM_ANY, 0, 0);
            r = be->choose_any(&call, rbytes, &source);
            if (r == DT_OK)
                c->any_last = source; /* ties go round the ranks after it */
        }
        if (r == DT_OK) /* the rank it waits for, and for which message */
            dt_doing_detail(c, source, ++c->posted_from[source], 0);
    }
    /* a sendrecv posts both before waiting: no order of peers deadlocks */
    if (r == DT_OK && kind != DT_COLL_SEND)
        r = be->irecv(&call, source, rbuf, rbytes, 0, &rx);
    if (r == DT_OK && kind != DT_COLL_RECV)
        r = be->isend(&call, peer, sbuf, sbytes, 0, &sx);
    if (r == DT_OK) {
        r = be->wait(&call, &rx, got);
        dt_result r2 = be->wait(&call, &sx, NULL);
        r = r != DT_OK ? r : r2;
    } else {
        be->cancel(&call, &rx);
    }
    if (call.t > c->rc->clock)
        c->rc->clock = call.t;
    dt_api_leave(c, w0, m0, kind, 1, &call.traffic);
    return r;
}

dt_result dt_send(const void *sendbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm)
{
    DT_TRY(check_p2p(comm, sendbuf, count, dtype, peer, 0, "dt_send"));
    size_t bytes = count * dt_dtype_size(dtype);
    return p2p_call(comm, DT_COLL_SEND, peer, count, sendbuf, NULL, bytes, 0, -1, NULL);
}

dt_result dt_recv(void *recvbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm)
{
    DT_TRY(check_p2p(comm, recvbuf, count, dtype, peer, 0, "dt_recv"));
    size_t bytes = count * dt_dtype_size(dtype);
    return p2p_call(comm, DT_COLL_RECV, peer, count, NULL, recvbuf, 0, bytes, peer, NULL);
}

dt_result dt_recv_any(void *recvbuf, size_t count, dt_dtype dtype, int *source, dt_comm *comm)
{
    DT_TRY(check_p2p(comm, recvbuf, count, dtype, DT_ANY_SOURCE, 1, "dt_recv_any"));
    if (!source)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_recv_any: source is NULL");
    if (comm->size == 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_recv_any: no other rank to receive from");
    size_t bytes = count * dt_dtype_size(dtype);
    *source = -1;
    return p2p_call(comm, DT_COLL_RECV, -1, count, NULL, recvbuf, 0, bytes, DT_ANY_SOURCE,
                    source);
}

dt_result dt_sendrecv(const void *sendbuf, size_t sendcount, int dest, void *recvbuf,
                      size_t recvcount, int source, dt_dtype dtype, dt_comm *comm)
{
    const char *fn = "dt_sendrecv";
    DT_TRY(dt_comm_check(comm, fn));
    int self = comm->rank;
    if ((dest == self) != (source == self))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: dest %d and source %d: a rank can only "
                       "exchange with itself on both sides", fn, dest, source);
    if (dest == self) {
        /* the buffers' checks only (any peer: on one rank, the next is itself) */
        DT_TRY(check_p2p(comm, sendbuf, sendcount, dtype, DT_ANY_SOURCE, 1, fn));
        DT_TRY(check_p2p(comm, recvbuf, recvcount, dtype, DT_ANY_SOURCE, 1, fn));
        if (sendcount != recvcount)
            return dt_fail(DT_ERR_MISMATCH, "%s: rank %d sends %zu elements to itself but "
                           "receives %zu", fn, self, sendcount, recvcount);
        const dt_backend_ops *ops = comm->rc->ops;
        if (sendcount && sendbuf != recvbuf && ops->copy) /* the backend's memory */
            return ops->copy(recvbuf, sendbuf, sendcount * dt_dtype_size(dtype));
        if (sendcount && sendbuf != recvbuf)
            memmove(recvbuf, sendbuf, sendcount * dt_dtype_size(dtype));
        return DT_OK;
    }
    DT_TRY(check_p2p(comm, sendbuf, sendcount, dtype, dest, 0, fn));
    DT_TRY(check_p2p(comm, recvbuf, recvcount, dtype, source, 0, fn));
    size_t es = dt_dtype_size(dtype);
    return p2p_call(comm, DT_COLL_SENDRECV, dest, sendcount, sendbuf, recvbuf, sendcount * es,
                    recvcount * es, source, NULL);
}

dt_result dt_isend(const void *sendbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm,
                   dt_request **req)
{
    if (!req)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_isend: req is NULL");
    *req = NULL;
    DT_TRY(check_p2p(comm, sendbuf, count, dtype, peer, 0, "dt_isend"));
    DT_TRY(dt_fault_check(comm, DT_COLL_SEND));
    dt_stats_call(comm, DT_COLL_SEND);
    return dt_p2p_post(comm, 1, (void *)sendbuf, count * dt_dtype_size(dtype), peer, req);
}

dt_result dt_irecv(void *recvbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm,
                   dt_request **req)
{
    if (!req)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_irecv: req is NULL");
    *req = NULL;
    DT_TRY(check_p2p(comm, recvbuf, count, dtype, peer, 0, "dt_irecv"));
    DT_TRY(dt_fault_check(comm, DT_COLL_RECV));
    dt_stats_call(comm, DT_COLL_RECV);
    return dt_p2p_post(comm, 0, recvbuf, count * dt_dtype_size(dtype), peer, req);
}
