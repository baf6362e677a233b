/* sync.c - the barrier-exchange: a barrier that also exchanges one record
 * per rank. */
#include "sync.h"

#include "mpi/mpi_backend.h"
#include "emul/wait.h"

#include <string.h>

_Static_assert(sizeof(dt_rec) == 64, "a record is one cache line");

typedef struct {
    const dt_rec *rec;
    int size;
    uint32_t stamp;
} all_stamped_arg;

static int all_stamped(const void *arg)
{
    const all_stamped_arg *a = arg;
    for (int i = 0; i < a->size; i++)
        if (atomic_load_explicit(&a->rec[i].stamp, memory_order_seq_cst) != a->stamp)
            return 0;
    return 1;
}

/* A barrier of stamps: each rank writes its record into its own cache line
 * and stamps it, then polls the others' stamps. A waiter sees the last
 * arrival after one cache-line transfer (a counter and a generation flag
 * take three in a row). Who wakes sleepers: a rank that, after its own
 * stamp, sees every stamp set. Stamps are stored and read sequentially
 * consistent, so the rank whose store comes last in that one order sees
 * all of them: at least one rank rings; the others only wait. */
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
    dt_comm *c = call->comm;
    if (dt_mpi_job(c->rc->job))
        return dt_mpi_exchange(call, mine, all);
    uint32_t g = c->sync_gen[call->lane];
    dt_rec *rec = dt_sync_records(call, mine), *slot = &rec[c->rank];
    all_stamped_arg arg = {rec, c->size, g + 1};
    atomic_store_explicit(&slot->stamp, g + 1, memory_order_seq_cst);
    if (all_stamped(&arg)) {
        dt_job *job = c->rc->job;
        for (int i = 0; i < c->size; i++)
            if (i != c->rank)
                dt_bell_ring(&job->board[c->sh->world[i]].bell);
    } else {
        DT_TRY(dt_wait_until(call, all_stamped, &arg));
    }
    c->sync_gen[call->lane] = g + 1;
    *all = rec;
    return DT_OK;
}

double dt_sync_max_clock(const dt_rec *all, int n)
{
    double t = all[0].clock;
    for (int i = 1; i < n; i++)
        if (all[i].clock > t)
            t = all[i].clock;
    return t;
}
