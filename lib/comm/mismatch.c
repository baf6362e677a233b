/* mismatch.c - ranks that called different collectives. A collective's
 * signature (what must agree across ranks: kind, dtype, op, root,
 * algorithm, count) rides on what the call publishes anyway; the debug
 * check (DT_DEBUG=1) exchanges it before every collective. */
#include "coll.h"

#include "diag.h"
#include "sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t dt_coll_sig_count(uint32_t sig, uint64_t payload_count)
{
    uint32_t c = sig >> 25 & 63;
    return c < DT_SIG_COUNT_MAX ? c : payload_count;
}

static int same_id(const dt_coll_id *x, const dt_coll_id *y)
{
    return x->sig == y->sig && x->count == y->count && x->seq == y->seq;
}

static void describe_id(char *out, size_t n, const dt_coll_id *id, int show_seq)
{
    dt_coll_describe(out, n, id->sig, id->count);
    size_t len = strlen(out);
    if (show_seq && len < n)
        snprintf(out + len, n - len, " as its call #%llu", (unsigned long long)id->seq);
}

/* Rank 0's call is the reference, unless rank 0 is the only one that
 * differs; the first rank that differs from it is named. */
dt_result dt_coll_mismatch(long seq, const dt_coll_id *ids, int n)
{
    int ref = 0, bad = -1, differ = 0;
    for (int i = 1; i < n; i++)
        differ += !same_id(&ids[i], &ids[0]);
    if (differ == 0)
        return DT_OK;
    if (differ == n - 1 && n > 2)
        ref = 1;
    for (int i = 0; i < n && bad < 0; i++)
        if (!same_id(&ids[i], &ids[ref]))
            bad = i;
    char x[160], y[160];
    int show_seq = ids[bad].seq != ids[ref].seq;
    describe_id(x, sizeof x, &ids[bad], show_seq);
    describe_id(y, sizeof y, &ids[ref], show_seq);
    return dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch: rank %d called %s but rank %d "
                   "called %s", seq, bad, x, ref, y);
}

static int same_id(const dt_coll_id *x, const dt_coll_id *y);

dt_result dt_coll_agree(dt_call *call, const struct dt_rec *all,
                        dt_coll_id (*id_of)(const struct dt_rec *r))
{
    int n = call->comm->size, same = 1;
    dt_coll_id first = id_of(&all[0]);
    for (int i = 1; i < n && same; i++) {
        dt_coll_id id = id_of(&all[i]);
        same = same_id(&id, &first);
    }
    if (same)
        return DT_OK;
    dt_coll_id *ids = malloc(sizeof *ids * (size_t)n);
    if (!ids)
        return dt_comm_poison(call->comm, dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch "
                                                  "(no memory to say more)", call->seq));
    for (int i = 0; i < n; i++)
        ids[i] = id_of(&all[i]);
    dt_result r = dt_coll_mismatch(call->seq, ids, n);
    free(ids);
    return dt_comm_poison(call->comm, r);
}

/* The debug check's records: the call as issued, with its number. */
static dt_coll_id debug_id(const dt_rec *r)
{
    return (dt_coll_id){r->sig, r->u.call.count, r->u.call.seq};
}

/* All ranks publish what they called (and its number on the communicator:
 * blocking and async calls issued in different orders show up here). */
dt_result dt_coll_debug_check(dt_call *call, const dt_coll_args *a)
{
    dt_rec mine = {.sig = dt_coll_sig(a), .u.call = {a->count, (uint64_t)call->seq}};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(call, &mine, &all));
    return dt_coll_agree(call, all, debug_id);
}
