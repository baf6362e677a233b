/* sync.c - the barrier-exchange: a barrier that also exchanges one record
 * per rank. The records live in the group's state; how they travel is the
 * backend's (backend.h: the emulation stamps them in shared memory,
 * emul/stamps.c; mpi sends each to every other rank). */
#include "sync.h"

#include "backend.h"

#include <string.h>

_Static_assert(sizeof(dt_rec) == 64, "a record is one cache line");

dt_rec *dt_sync_records(dt_call *call, const dt_rec *mine)
{
    dt_comm *c = call->comm;
    dt_rec *rec = c->sh->rec[call->lane][c->sync_gen[call->lane] & 1], *slot = &rec[c->rank];
    memcpy(&slot->u, &mine->u, sizeof slot->u);
    slot->sig = mine->sig;
    slot->clock = call->t;
    slot->ports = *call->ports;
    return rec;
}

dt_result dt_sync_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all)
{
    return call->comm->rc->ops->exchange(call, mine, all);
}

double dt_sync_max_clock(const dt_rec *all, int n)
{
    double t = all[0].clock;
    for (int i = 1; i < n; i++)
        if (all[i].clock > t)
            t = all[i].clock;
    return t;
}
