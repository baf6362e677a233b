/* mismatch.c - the debug check (DT_DEBUG=1): before a collective, every
 * rank publishes what it called, and the odd one out is named. */
#include "coll.h"

#include "sync.h"

#include <stdio.h>

static uint64_t signature(const dt_coll_args *a)
{
    int reduces = a->kind == DT_COLL_ALLREDUCE || a->kind == DT_COLL_REDUCE ||
                  a->kind == DT_COLL_REDUCE_SCATTER;
    int rooted = a->kind == DT_COLL_BROADCAST || a->kind == DT_COLL_REDUCE;
    return (uint64_t)a->kind | (uint64_t)a->dtype << 8 | (uint64_t)(reduces ? a->op : 0) << 16 |
           (uint64_t)(rooted ? a->root + 1 : 0) << 24 | (uint64_t)a->algo << 48 |
           (uint64_t)a->shortcut << 56;
}

static void describe_sig(char *out, size_t n, const dt_rec *r, int show_seq)
{
    uint64_t sig = r->u.call.sig;
    int kind = (int)(sig & 0xff), dtype = (int)(sig >> 8 & 0xff), op = (int)(sig >> 16 & 0xff);
    int root = (int)(sig >> 24 & 0xffffff) - 1;
    int len = snprintf(out, n, "%s (count %llu, %s", dt_coll_name(kind),
                       (unsigned long long)r->u.call.count, dt_dtype_name(dtype));
    if (kind == DT_COLL_ALLREDUCE || kind == DT_COLL_REDUCE || kind == DT_COLL_REDUCE_SCATTER)
        len += snprintf(out + len, n - (size_t)len, ", %s", dt_redop_name(op));
    if (root >= 0)
        len += snprintf(out + len, n - (size_t)len, ", root %d", root);
    len += snprintf(out + len, n - (size_t)len, ", algo %s)", dt_algo_name((int)(sig >> 48 & 0xff)));
    if (show_seq)
        snprintf(out + len, n - (size_t)len, " as its call #%llu", (unsigned long long)r->u.call.seq);
}

static int same_call(const dt_rec *x, const dt_rec *y)
{
    return x->u.call.sig == y->u.call.sig && x->u.call.count == y->u.call.count &&
           x->u.call.seq == y->u.call.seq;
}

/* All ranks publish what they called (and its number on the communicator:
 * blocking and async calls issued in different orders show up here); the
 * odd one out is named. Rank 0's call is the reference, unless rank 0 is
 * the only one that differs. */
dt_result dt_coll_debug_check(dt_call *call, const dt_coll_args *a)
{
    dt_rec mine = {.u.call = {signature(a), a->count, (uint64_t)call->seq}};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(call, &mine, &all));
    int n = call->comm->size, ref = 0, bad = -1, differ = 0;
    for (int i = 1; i < n; i++)
        differ += !same_call(&all[i], &all[0]);
    if (differ == 0)
        return DT_OK;
    if (differ == n - 1 && n > 2)
        ref = 1;
    for (int i = 0; i < n && bad < 0; i++)
        if (!same_call(&all[i], &all[ref]))
            bad = i;
    char x[160], y[160];
    int show_seq = all[bad].u.call.seq != all[ref].u.call.seq;
    describe_sig(x, sizeof x, &all[bad], show_seq);
    describe_sig(y, sizeof y, &all[ref], show_seq);
    return dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch: rank %d called %s but rank %d "
                   "called %s", call->seq, bad, x, ref, y);
}
