/* stamps.c - the emulation's barrier-exchange (sync.h): each rank writes
 * its record into its own cache line of the group's shared records and
 * stamps it, then polls the others' stamps. */
#include "emul.h"

#include "wait.h"

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

/* A barrier of stamps: a waiter sees the last arrival after one cache-line
 * transfer (a counter and a generation flag take three in a row). Who
 * wakes sleepers: a rank that, after its own stamp, sees every stamp set.
 * Stamps are stored and read sequentially consistent, so the rank whose
 * store comes last in that one order sees all of them: at least one rank
 * rings; the others only wait. */
dt_result dt_stamps_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all)
{
    dt_comm *c = call->comm;
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
