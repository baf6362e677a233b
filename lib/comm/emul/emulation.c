/* emulation.c - the emulation backends (thread, proc): every call runs the
 * algorithms of lib/comm over the messages of port.c. */
#include "../coll.h"

#include "shortcut.h"

/* The emulation backends' collectives: the debug check, then a shortcut
 * over shared memory when AUTO allowed one, else the algorithm over
 * messages. */
dt_result dt_emulated_collective(dt_call *call, const dt_coll_args *a)
{
    if (dt_call_job(call)->debug && call->comm->size > 1)
        DT_TRY(dt_coll_debug_check(call, a));
    if (a->shortcut)
        return dt_shortcut_collective(call, a);
    switch (a->kind) {
    case DT_COLL_ALLREDUCE: return dt_alg_allreduce(call, a);
    case DT_COLL_BROADCAST: return dt_alg_broadcast(call, a);
    case DT_COLL_REDUCE: return dt_alg_reduce(call, a);
    case DT_COLL_ALLGATHER: return dt_alg_allgather(call, a);
    case DT_COLL_REDUCE_SCATTER: return dt_alg_reduce_scatter(call, a);
    case DT_COLL_ALLTOALL: return dt_alg_alltoall(call, a);
    case DT_COLL_BARRIER: return dt_alg_barrier(call);
    default: return dt_fail(DT_ERR_INTERNAL, "unknown collective %d", a->kind);
    }
}

/* User messages carry tag 0: they never match a collective's messages. */
static dt_result emulated_send(dt_call *call, int peer, const void *buf, size_t bytes,
                               dt_xfer *out)
{
    return dt_msg_isend(call, peer, buf, bytes, 0, out);
}

static dt_result emulated_recv(dt_call *call, int peer, void *buf, size_t bytes, dt_xfer *out)
{
    return dt_msg_irecv(call, peer, buf, bytes, 0, out);
}

const dt_backend_ops dt_emulation_ops = {
    "emulation", dt_emulated_collective, emulated_send, emulated_recv, dt_msg_wait, dt_msg_done,
    dt_msg_cancel, dt_choose_any,
};

dt_result dt_coll_run(dt_call *call, const dt_coll_args *a)
{
    return call->comm->rc->ops->collective(call, a);
}
