/* call.c - what every call on a handle starts with: the handle's check,
 * the call's modeled clock and tag base, the lane's scratch memory; and a
 * collective's run on its lane, through the rank's backend. */
#include "handle.h"

#include "backend.h"
#include "port.h"

#include <string.h>

dt_result dt_comm_check(const dt_comm *comm, const char *fn)
{
    if (!comm)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: communicator is NULL", fn);
    uint32_t m = atomic_load(&((dt_comm *)comm)->magic);
    if (m == DT_COMM_FREED)
        return dt_fail(DT_ERR_STATE, "%s: communicator used after free", fn);
    if (m != DT_COMM_LIVE)
        return dt_fail(DT_ERR_STATE, "%s: not a live communicator", fn);
    return DT_OK;
}

void dt_call_init(dt_call *call, dt_comm *comm, int lane, int kind, long seq, int counted)
{
    *call = (dt_call){
        .comm = comm,
        .lane = lane,
        .t = lane == 0 ? comm->rc->clock : comm->stream_clock,
        .ports = lane == 0 ? &comm->rc->ports : &comm->stream_ports,
        .tag = DT_TAG(kind, seq),
        .counted = counted,
        .kind = kind,
        .seq = seq,
    };
}

void *dt_scratch(dt_comm *comm, int lane, size_t bytes)
{
    if (bytes == 0)
        bytes = 64;
    if (comm->scratch_bytes[lane] >= bytes)
        return comm->scratch[lane];
    dt_mem_free(comm->scratch[lane]);
    comm->scratch_bytes[lane] = 0;
    comm->scratch[lane] = dt_mem_alloc(DT_MEM_COMM, bytes);
    if (comm->scratch[lane])
        comm->scratch_bytes[lane] = bytes;
    return comm->scratch[lane];
}

dt_result dt_coll_run(dt_call *call, const dt_coll_args *a)
{
    if (dt_call_job(call)->debug && call->comm->size > 1)
        DT_TRY(dt_coll_debug_check(call, a));
    return call->comm->rc->ops->collective(call, a);
}
