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

/* The blocking call this thread runs, as the caller's code made it: set
 * by dt/comm.h's macros around each call, so that only the innermost call
 * made outside libdt is recorded, and cleared when it returns. */
static _Thread_local const char *site_file;
static _Thread_local int site_line;

void dt_call_site(const char *file, int line)
{
    site_file = file;
    site_line = line;
}

const char *dt_site_prefix(char *out, size_t n)
{
    if (site_file && site_line > 0)
        snprintf(out, n, "%s:%d: ", site_file, site_line);
    else if (n)
        out[0] = '\0';
    return out;
}

/* The site's file name without its folders (the report names the file the
 * student edits; the message's prefix has the whole path), in words. */
static void store_site(dt_doing *d, int lane)
{
    uint64_t w[DT_SITE_WORDS] = {0};
    int line = 0;
    if (lane == 0 && site_file && site_line > 0) {
        const char *base = strrchr(site_file, '/');
        base = base ? base + 1 : site_file;
        size_t len = strlen(base);
        if (len > sizeof w - 1)
            len = sizeof w - 1;
        memcpy(w, base, len);
        line = site_line;
    }
    for (int i = 0; i < DT_SITE_WORDS; i++)
        atomic_store_explicit(&d->file[i], w[i], memory_order_release);
    atomic_store_explicit(&d->line, line, memory_order_release);
}

void dt_doing_timed_out(dt_comm *comm, int lane)
{
    dt_doing *d = begin_write(comm, lane);
    atomic_store_explicit(&d->timed_out, 1, memory_order_release);
    end_write(d);
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
    /* the report names a sub-communicator's peer by its world rank too */
    int world = root >= 0 && root < comm->sh->size ? comm->sh->world[root] : -1;
    atomic_store_explicit(&d->peer_world, world, memory_order_release);
    atomic_store_explicit(&d->timed_out, 0, memory_order_release);
    store_site(d, lane);
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
        out->peer_world = atomic_load_explicit(&w->peer_world, memory_order_acquire);
        out->timed_out = atomic_load_explicit(&w->timed_out, memory_order_acquire);
        out->line = atomic_load_explicit(&w->line, memory_order_acquire);
        uint64_t f[DT_SITE_WORDS];
        for (int i = 0; i < DT_SITE_WORDS; i++)
            f[i] = atomic_load_explicit(&w->file[i], memory_order_acquire);
        memcpy(out->file, f, sizeof f);
        out->file[sizeof f] = '\0';
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
    int timed_out = lane == 0 && d->timed_out;
    if (!d->active && !timed_out)
        return;
    const char *what = d->kind < DT_NUM_COLLS ? dt_coll_name(d->kind) : "comm setup";
    int p2p = d->kind == DT_COLL_SEND || d->kind == DT_COLL_RECV || d->kind == DT_COLL_SENDRECV;
    char extra[64] = "", site[48] = "";
    /* On a split communicator its ranks are not the job's: "peer 1 = world
     * rank 3", else "rank 1 ... peer 1" reads as a rank waiting on itself. */
    if (d->root >= 0 && d->peer_world >= 0 && (d->comm_id != 0 || d->peer_world != d->root))
        snprintf(extra, sizeof extra, ", %s %d = world rank %d", p2p ? "peer" : "root", d->root,
                 d->peer_world);
    else if (d->root >= 0)
        snprintf(extra, sizeof extra, ", %s %d", p2p ? "peer" : "root", d->root);
    if (d->line > 0 && d->file[0])
        snprintf(site, sizeof site, " at %s:%d", d->file, d->line);
    snprintf(out, n, "rank %d %s %s #%ld (count %ld%s)%s", r,
             lane ? "(async) in" : timed_out ? "timed out in" : "waits in", what, d->seq,
             d->count, extra, site);
}

int dt_describe_rank(int r, int state, const dt_doing_view *lanes, char *out, size_t n)
{
    /* A call that ran past its deadline still counts as waiting once it has
     * returned (and its rank ended): the reports of the ranks that time out
     * after it say the same, whatever order they ran in. */
    if (lanes[0].timed_out && !lanes[0].active) {
        dt_describe_view(r, 0, &lanes[0], out, n);
        return 1;
    }
    if (state == DT_RANK_DONE) {
        snprintf(out, n, "rank %d has returned", r);
        return 0;
    }
    if (state == DT_RANK_FAILED || state == DT_RANK_DIED) {
        snprintf(out, n, "rank %d %s", r, state == DT_RANK_DIED ? "died" : "failed");
        return 0;
    }
    int len = 0, waits = 0;
    out[0] = '\0';
    for (int lane = 0; lane < DT_LANES && len < (int)n; lane++) {
        char one[160];
        dt_describe_view(r, lane, &lanes[lane], one, sizeof one);
        if (one[0])
            len += snprintf(out + len, n - (size_t)len, "%s%s", len ? "; " : "", one);
        waits |= lanes[lane].active;
    }
    if (len == 0)
        snprintf(out, n, "rank %d is in no communication call", r);
    return waits;
}

dt_result dt_timeout_fail(double timeout_s, const char *what, long seq, int waiting,
                          int nranks, const char *report, const char *tail)
{
    char at[300];
    dt_site_prefix(at, sizeof at);
    /* Every rank blocked in a call that needs another: none can move on,
     * so none ever will; a rank in its own code or ended is something else
     * (a message never sent, a rank that computes for too long). */
    return dt_fail(DT_ERR_TIMEOUT, "%stimeout after %g s in %s #%ld: %s%s%s", at, timeout_s,
                   what, seq, nranks > 1 && waiting == nranks ? "deadlock: every rank waits "
                   "on another: " : "", report, tail ? tail : "");
}

int dt_describe_job(dt_job *job, char *out, size_t n)
{
    size_t used = 0;
    int waiting = 0;
    out[0] = '\0';
    for (int r = 0; r < job->nranks; r++) { /* every rank counts, even past n */
        dt_board *b = &job->board[r];
        dt_doing_view lanes[DT_LANES];
        for (int lane = 0; lane < DT_LANES; lane++)
            dt_doing_read(&b->doing[lane], &lanes[lane]);
        char one[320];
        waiting += dt_describe_rank(r, atomic_load_explicit(&b->state, memory_order_acquire),
                                    lanes, one, sizeof one);
        if (used + 1 < n) {
            int w = snprintf(out + used, n - used, "%s%s", used ? "; " : "", one);
            used = w < 0 ? n : used + (size_t)w;
        }
    }
    return waiting;
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
