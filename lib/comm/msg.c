/* msg.c - the messages every algorithm is written over (port.h): each post,
 * wait and cancel goes to the rank's backend (backend.h); what is made of
 * them (a blocking send, a send and a receive at once, waiting for several)
 * and the report of a mismatched pair are written here once. */
#include "port.h"

#include "backend.h"
#include "diag.h"

dt_result dt_msg_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    return call->comm->rc->ops->isend(call, peer, buf, bytes, tag, out);
}

dt_result dt_msg_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out)
{
    return call->comm->rc->ops->irecv(call, peer, buf, bytes, tag, out);
}

dt_result dt_msg_wait(dt_call *call, dt_xfer *x, int *src)
{
    return call->comm->rc->ops->wait(call, x, src);
}

void dt_msg_cancel(dt_call *call, dt_xfer *x)
{
    call->comm->rc->ops->cancel(call, x);
}

/* A send and a receive that do not match: the message of the side that
 * finds it, naming both calls. */
dt_result dt_msg_mismatch(dt_call *call, int peer, size_t my_bytes, uint32_t sig, uint64_t count,
                          size_t bytes, int sending)
{
    dt_comm *c = call->comm;
    const char *to = sending ? "to" : "from";
    if (call->sig == 0 && sig == 0) /* user messages: the sizes differ */
        return dt_fail(DT_ERR_MISMATCH, "rank %d %s %zu bytes %s rank %d, which %s %zu", c->rank,
                       sending ? "sends" : "receives", my_bytes, to, peer,
                       sending ? "receives" : "sends", bytes);
    char mine[160], theirs[160];
    dt_coll_describe(mine, sizeof mine, call->sig, call->count);
    dt_coll_describe(theirs, sizeof theirs, sig, count);
    dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch: rank %d called %s but rank %d called %s "
            "(a message of %zu bytes %s it, of %zu expected)", call->seq, peer, theirs, c->rank,
            mine, sending ? my_bytes : bytes, sending ? "to" : "from", sending ? bytes : my_bytes);
    return dt_comm_poison(c, DT_ERR_MISMATCH);
}

dt_result dt_msg_waitall(dt_call *call, dt_xfer *x, int n)
{
    dt_result first = DT_OK;
    for (int i = 0; i < n; i++) {
        dt_result r = dt_msg_wait(call, &x[i], NULL);
        if (r != DT_OK && first == DT_OK)
            first = r;
    }
    return first;
}

dt_result dt_msg_send(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag)
{
    dt_xfer x;
    DT_TRY(dt_msg_isend(call, peer, buf, bytes, tag, &x));
    return dt_msg_wait(call, &x, NULL);
}

dt_result dt_msg_recv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag)
{
    dt_xfer x;
    DT_TRY(dt_msg_irecv(call, peer, buf, bytes, tag, &x));
    return dt_msg_wait(call, &x, NULL);
}

/* The receive is posted first: a send that finds it waiting copies straight
 * into it. Both are posted at the call's clock. */
dt_result dt_msg_sendrecv(dt_call *call, int dest, const void *sbuf, size_t sbytes, int source,
                          void *rbuf, size_t rbytes, uint64_t tag)
{
    dt_xfer s, rx;
    DT_TRY(dt_msg_irecv(call, source, rbuf, rbytes, tag, &rx));
    dt_result r = dt_msg_isend(call, dest, sbuf, sbytes, tag, &s);
    if (r != DT_OK) {
        dt_msg_cancel(call, &rx);
        return r;
    }
    dt_result r1 = dt_msg_wait(call, &rx, NULL);
    dt_result r2 = dt_msg_wait(call, &s, NULL);
    return r1 != DT_OK ? r1 : r2;
}
