/* diag.c - diagnosis instead of hangs: each rank publishes on its board
 * what each of its lanes is doing, and a timeout reports them all. */
#include "diag.h"

#include <stdio.h>

void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root)
{
    dt_doing *d = &comm->rc->job->board[comm->rc->world_rank].doing[lane];
    if (kind < 0) {
        atomic_store_explicit(&d->active, 0, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&d->kind, kind, memory_order_relaxed);
    atomic_store_explicit(&d->comm_id, comm->sh->id, memory_order_relaxed);
    atomic_store_explicit(&d->seq, seq, memory_order_relaxed);
    atomic_store_explicit(&d->count, (long)count, memory_order_relaxed);
    atomic_store_explicit(&d->root, root, memory_order_relaxed);
    atomic_store_explicit(&d->active, 1, memory_order_relaxed);
}

/* "rank R waits in KIND #SEQ (count C, root X)" for each active lane. */
static int describe_lanes(const dt_board *b, int r, char *one, size_t n)
{
    int len = 0;
    one[0] = '\0';
    for (int lane = 0; lane < DT_LANES; lane++) {
        const dt_doing *d = &b->doing[lane];
        if (!atomic_load_explicit(&d->active, memory_order_relaxed))
            continue;
        int kind = atomic_load_explicit(&d->kind, memory_order_relaxed);
        int root = atomic_load_explicit(&d->root, memory_order_relaxed);
        const char *what = kind < DT_NUM_COLLS ? dt_coll_name(kind) : "comm setup";
        int p2p = kind == DT_COLL_SEND || kind == DT_COLL_RECV || kind == DT_COLL_SENDRECV;
        char extra[40] = "";
        if (root >= 0)
            snprintf(extra, sizeof extra, ", %s %d", p2p ? "peer" : "root", root);
        len += snprintf(one + len, n - (size_t)len, "%srank %d %sin %s #%ld (count %ld%s)",
                        len ? "; " : "", r, lane ? "(async) " : "waits ", what,
                        atomic_load_explicit(&d->seq, memory_order_relaxed),
                        atomic_load_explicit(&d->count, memory_order_relaxed), extra);
        if (len >= (int)n)
            break;
    }
    return len;
}

void dt_describe_job(dt_job *job, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < job->nranks && used + 1 < n; r++) {
        dt_board *b = &job->board[r];
        int st = atomic_load_explicit(&b->state, memory_order_acquire);
        char one[160];
        if (st == DT_RANK_DONE)
            snprintf(one, sizeof one, "rank %d has returned", r);
        else if (st == DT_RANK_FAILED || st == DT_RANK_DIED)
            snprintf(one, sizeof one, "rank %d %s", r, st == DT_RANK_DIED ? "died" : "failed");
        else if (describe_lanes(b, r, one, sizeof one) == 0)
            snprintf(one, sizeof one, "rank %d is in no communication call", r);
        int w = snprintf(out + used, n - used, "%s%s", used ? "; " : "", one);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}
