/* diag.c - diagnosis instead of hangs: each rank publishes on its board
 * what each of its lanes is doing, and a timeout reports them all. */
#include "diag.h"

#include "bell.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* A seqlock: the lane is the only writer; version is odd while it writes.
 * No fences (ThreadSanitizer does not model them): the fields are stored
 * with release, so a reader that sees a new field sees the odd version
 * stored before it, and loaded with acquire, so the reader's second look
 * at the version comes after them. Both are plain moves on x86. */
static dt_doing *begin_write(dt_comm *comm, int lane)
{
    dt_doing *d = &comm->rc->job->board[comm->rc->world_rank].doing[lane];
    uint32_t v = atomic_load_explicit(&d->version, memory_order_relaxed);
    atomic_store_explicit(&d->version, v + 1, memory_order_relaxed);
    return d;
}

static void end_write(dt_doing *d)
{
    uint32_t v = atomic_load_explicit(&d->version, memory_order_relaxed);
    atomic_store_explicit(&d->version, v + 1, memory_order_release);
}

void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root,
                  uint32_t sig)
{
    if (kind < 0) { /* one store: a reader that sees it inactive reads no more */
        dt_doing *d = &comm->rc->job->board[comm->rc->world_rank].doing[lane];
        atomic_store_explicit(&d->active, 0, memory_order_release);
        return;
    }
    dt_doing *d = begin_write(comm, lane);
    atomic_store_explicit(&d->kind, kind, memory_order_release);
    atomic_store_explicit(&d->comm_id, comm->sh->id, memory_order_release);
    atomic_store_explicit(&d->seq, seq, memory_order_release);
    atomic_store_explicit(&d->count, (long)count, memory_order_release);
    atomic_store_explicit(&d->root, root, memory_order_release);
    atomic_store_explicit(&d->from, DT_FROM_NONE, memory_order_release);
    atomic_store_explicit(&d->waiting, 0, memory_order_release);
    atomic_store_explicit(&d->sig, sig, memory_order_release);
    atomic_store_explicit(&d->active, 1, memory_order_release);
    end_write(d);
}

void dt_doing_detail(dt_comm *comm, int from, uint32_t want, int waiting)
{
    dt_doing *d = begin_write(comm, 0);
    atomic_store_explicit(&d->from, from, memory_order_release);
    atomic_store_explicit(&d->want, want, memory_order_release);
    atomic_store_explicit(&d->waiting, waiting, memory_order_release);
    end_write(d);
}

void dt_doing_read(const dt_doing *d, dt_doing_view *out)
{
    dt_doing *w = (dt_doing *)d;
    for (int tries = 1;; tries++) {
        if (tries % 64 == 0)
            sched_yield(); /* the writer was preempted halfway */
        uint32_t v1 = atomic_load_explicit(&w->version, memory_order_acquire);
        out->active = atomic_load_explicit(&w->active, memory_order_acquire);
        out->kind = atomic_load_explicit(&w->kind, memory_order_acquire);
        out->comm_id = atomic_load_explicit(&w->comm_id, memory_order_acquire);
        out->root = atomic_load_explicit(&w->root, memory_order_acquire);
        out->from = atomic_load_explicit(&w->from, memory_order_acquire);
        out->waiting = atomic_load_explicit(&w->waiting, memory_order_acquire);
        out->want = atomic_load_explicit(&w->want, memory_order_acquire);
        out->sig = atomic_load_explicit(&w->sig, memory_order_acquire);
        out->seq = atomic_load_explicit(&w->seq, memory_order_acquire);
        out->count = atomic_load_explicit(&w->count, memory_order_acquire);
        if (!(v1 & 1) && atomic_load_explicit(&w->version, memory_order_relaxed) == v1)
            return;
    }
}

void dt_clock_publish(dt_rank_ctx *rc)
{
    uint64_t bits;
    memcpy(&bits, &rc->clock, sizeof bits);
    atomic_store_explicit(&rc->job->board[rc->world_rank].clock, bits, memory_order_release);
}

double dt_clock_published(const dt_board *b)
{
    uint64_t bits = atomic_load_explicit(&((dt_board *)b)->clock, memory_order_acquire);
    double t;
    memcpy(&t, &bits, sizeof t);
    return t;
}

void dt_describe_view(int r, int lane, const dt_doing_view *d, char *out, size_t n)
{
    out[0] = '\0';
    if (!d->active)
        return;
    const char *what = d->kind < DT_NUM_COLLS ? dt_coll_name(d->kind) : "comm setup";
    int p2p = d->kind == DT_COLL_SEND || d->kind == DT_COLL_RECV || d->kind == DT_COLL_SENDRECV;
    char extra[40] = "";
    if (d->root >= 0)
        snprintf(extra, sizeof extra, ", %s %d", p2p ? "peer" : "root", d->root);
    snprintf(out, n, "rank %d %sin %s #%ld (count %ld%s)", r, lane ? "(async) " : "waits ", what,
             d->seq, d->count, extra);
}

void dt_describe_rank(int r, int state, const dt_doing_view *lanes, char *out, size_t n)
{
    if (state == DT_RANK_DONE) {
        snprintf(out, n, "rank %d has returned", r);
        return;
    }
    if (state == DT_RANK_FAILED || state == DT_RANK_DIED) {
        snprintf(out, n, "rank %d %s", r, state == DT_RANK_DIED ? "died" : "failed");
        return;
    }
    int len = 0;
    out[0] = '\0';
    for (int lane = 0; lane < DT_LANES && len < (int)n; lane++) {
        char one[120];
        dt_describe_view(r, lane, &lanes[lane], one, sizeof one);
        if (one[0])
            len += snprintf(out + len, n - (size_t)len, "%s%s", len ? "; " : "", one);
    }
    if (len == 0)
        snprintf(out, n, "rank %d is in no communication call", r);
}

void dt_describe_job(dt_job *job, char *out, size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int r = 0; r < job->nranks && used + 1 < n; r++) {
        dt_board *b = &job->board[r];
        dt_doing_view lanes[DT_LANES];
        for (int lane = 0; lane < DT_LANES; lane++)
            dt_doing_read(&b->doing[lane], &lanes[lane]);
        char one[240];
        dt_describe_rank(r, atomic_load_explicit(&b->state, memory_order_acquire), lanes, one,
                         sizeof one);
        int w = snprintf(out + used, n - used, "%s%s", used ? "; " : "", one);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* ---------------------------------------------------------------- mismatches */

/* The layout of a signature is coll.h's (dt_coll_sig). */
void dt_coll_describe(char *out, size_t n, uint32_t sig, uint64_t count)
{
    int kind = (int)(sig & 15), dtype = (int)(sig >> 4 & 7), op = (int)(sig >> 7 & 7);
    int root = (int)(sig >> 10 & 2047) - 1;
    const char *name = dt_coll_name((dt_coll_kind)kind);
    if (sig >> 31) /* one of dt_allreduce's halves */
        name = kind == DT_COLL_REDUCE_SCATTER ? "allreduce_scatter" : "allreduce_gather";
    int len = snprintf(out, n, "%s (count %llu, %s", name, (unsigned long long)count,
                       dt_dtype_name((dt_dtype)dtype));
    if ((kind == DT_COLL_ALLREDUCE || kind == DT_COLL_REDUCE || kind == DT_COLL_REDUCE_SCATTER) && len < (int)n)
        len += snprintf(out + len, n - (size_t)len, ", %s", dt_redop_name((dt_redop)op));
    if (root >= 0 && len < (int)n)
        len += snprintf(out + len, n - (size_t)len, ", root %d", root);
    if (len < (int)n)
        snprintf(out + len, n - (size_t)len, ", algo %s)", dt_algo_name((dt_algo)(sig >> 21 & 7)));
}

dt_result dt_comm_poison(dt_comm *comm, dt_result r)
{
    dt_comm_shared *sh = comm->sh;
    int none = DT_POISON_NONE;
    if (atomic_compare_exchange_strong(&sh->poison, &none, DT_POISON_WRITING)) {
        snprintf(sh->poison_why, sizeof sh->poison_why, "%s", dt_last_error());
        atomic_store_explicit(&sh->poison, DT_POISON_SET, memory_order_release);
    }
    dt_job *job = comm->rc->job;
    for (int i = 0; i < sh->size; i++)
        if (i != comm->rank)
            dt_bell_ring(&job->board[sh->world[i]].bell);
    return r;
}

dt_result dt_comm_poisoned(const dt_comm *comm)
{
    if (atomic_load_explicit(&comm->sh->poison, memory_order_acquire) != DT_POISON_SET)
        return DT_OK;
    return dt_fail(DT_ERR_MISMATCH, "%s", comm->sh->poison_why);
}

dt_result dt_diag_compare(dt_call *call, int i, const dt_doing_view *v)
{
    if (!v->active || v->comm_id != call->comm->sh->id || v->seq != call->seq ||
        v->kind >= DT_COLL_SEND || v->sig == 0)
        return DT_OK; /* not in the same collective */
    if (v->sig == call->sig && (uint64_t)v->count == call->count)
        return DT_OK;
    char mine[160], theirs[160];
    dt_coll_describe(mine, sizeof mine, call->sig, call->count);
    dt_coll_describe(theirs, sizeof theirs, v->sig, (uint64_t)v->count);
    dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch: rank %d called %s but rank %d "
            "called %s", call->seq, i, theirs, call->comm->rank, mine);
    return dt_comm_poison(call->comm, DT_ERR_MISMATCH);
}

dt_result dt_diag_check(dt_call *call)
{
    dt_comm *c = call->comm;
    DT_TRY(dt_comm_poisoned(c));
    if (call->sig == 0)
        return DT_OK;
    const dt_job *job = c->rc->job;
    for (int i = 0; i < c->size; i++) {
        if (i == c->rank)
            continue;
        for (int lane = 0; lane < DT_LANES; lane++) {
            dt_doing_view v;
            dt_doing_read(&job->board[c->sh->world[i]].doing[lane], &v);
            DT_TRY(dt_diag_compare(call, i, &v));
        }
    }
    return DT_OK;
}
