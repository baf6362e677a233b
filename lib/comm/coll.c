/* coll.c - the collective calls of dt/comm.h: argument checks, the choice of
 * algorithm, the debug check that all ranks called the same thing, and the
 * bookkeeping around each call (sequence number, stats, clock, trace,
 * what the rank is doing for the timeout report). */
#include "comm_internal.h"

#include <stdio.h>
#include <string.h>

/* Below this many bytes AUTO uses the tree algorithms (fewer steps, each
 * paying alpha); above, the ring (bandwidth-optimal). */
#define AUTO_TREE_MAX 32768
/* The one-pass shared-memory allreduce, reduce-scatter and allgather, from
 * this many bytes in all (shortcut.c). */
#define SHORTCUT_MIN 262144

/* ---------------------------------------------------------------- checks */

static dt_result check_dtype(dt_dtype t, const char *fn)
{
    if (!dt_dtype_valid(t))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: unknown dtype %d", fn, (int)t);
    return DT_OK;
}

static dt_result check_op(dt_redop op, const char *fn)
{
    if ((int)op < 0 || op >= DT_NUM_REDOPS)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: unknown reduction op %d", fn, (int)op);
    return DT_OK;
}

static dt_result check_root(const dt_comm *c, int root, const char *fn, const char *what)
{
    if (root < 0 || root >= c->size)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %s %d out of range [0, %d)", fn, what, root,
                       c->size);
    return DT_OK;
}

/* count * times elements of dtype must fit in a size_t (and an ssize_t). */
static dt_result check_bytes(size_t count, size_t times, dt_dtype t, const char *fn)
{
    size_t es = dt_dtype_size(t);
    if (times && count > (SIZE_MAX / 2) / es / times)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: count %zu x %zu of %s overflows", fn, count,
                       times, dt_dtype_name(t));
    return DT_OK;
}

static dt_result check_buf(const void *p, size_t count, const char *fn, const char *name)
{
    if (!p && count > 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %s is NULL with count %zu", fn, name, count);
    return DT_OK;
}

/* ---------------------------------------------------------------- debug check */

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
    uint64_t sig = r->w[0];
    int kind = (int)(sig & 0xff), dtype = (int)(sig >> 8 & 0xff), op = (int)(sig >> 16 & 0xff);
    int root = (int)(sig >> 24 & 0xffffff) - 1;
    int len = snprintf(out, n, "%s (count %llu, %s", dt_coll_name(kind),
                       (unsigned long long)r->w[1], dt_dtype_name(dtype));
    if (kind == DT_COLL_ALLREDUCE || kind == DT_COLL_REDUCE || kind == DT_COLL_REDUCE_SCATTER)
        len += snprintf(out + len, n - (size_t)len, ", %s", dt_redop_name(op));
    if (root >= 0)
        len += snprintf(out + len, n - (size_t)len, ", root %d", root);
    len += snprintf(out + len, n - (size_t)len, ", algo %s)", dt_algo_name((int)(sig >> 48 & 0xff)));
    if (show_seq)
        snprintf(out + len, n - (size_t)len, " as its call #%llu", (unsigned long long)r->w[2]);
}

static int same_call(const dt_rec *x, const dt_rec *y)
{
    return x->w[0] == y->w[0] && x->w[1] == y->w[1] && x->w[2] == y->w[2];
}

/* All ranks publish what they called (and its number on the communicator:
 * blocking and async calls issued in different orders show up here); the
 * odd one out is named. Rank 0's call is the reference, unless rank 0 is
 * the only one that differs. */
static dt_result debug_check(dt_op *op, const dt_coll_args *a)
{
    dt_rec mine = {.w = {signature(a), a->count, (uint64_t)op->seq}};
    const dt_rec *all;
    DT_TRY(dt_sync_exchange(op, &mine, &all));
    int n = op->comm->size, ref = 0, bad = -1, differ = 0;
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
    int show_seq = all[bad].w[2] != all[ref].w[2];
    describe_sig(x, sizeof x, &all[bad], show_seq);
    describe_sig(y, sizeof y, &all[ref], show_seq);
    return dt_fail(DT_ERR_MISMATCH, "collective #%ld mismatch: rank %d called %s but rank %d "
                   "called %s", op->seq, bad, x, ref, y);
}

/* ---------------------------------------------------------------- running */

/* The emulation backends' collectives: the debug check, then the
 * algorithm over the transport. */
static dt_result emulated_collective(dt_op *op, const dt_coll_args *a)
{
    if (op->comm->rc->job->debug && op->comm->size > 1)
        DT_TRY(debug_check(op, a));
    switch (a->kind) {
    case DT_COLL_ALLREDUCE: return dt_alg_allreduce(op, a);
    case DT_COLL_BROADCAST: return dt_alg_broadcast(op, a);
    case DT_COLL_REDUCE: return dt_alg_reduce(op, a);
    case DT_COLL_ALLGATHER: return dt_alg_allgather(op, a);
    case DT_COLL_REDUCE_SCATTER: return dt_alg_reduce_scatter(op, a);
    case DT_COLL_ALLTOALL: return dt_alg_alltoall(op, a);
    case DT_COLL_BARRIER: return dt_alg_barrier(op);
    default: return dt_fail(DT_ERR_INTERNAL, "unknown collective %d", a->kind);
    }
}

static dt_result emulated_send(dt_op *op, int peer, const void *buf, size_t bytes, dt_msg **out)
{
    return dt_tp_isend(op, peer, buf, bytes, 0, out);
}

static dt_result emulated_recv(dt_op *op, int peer, void *buf, size_t bytes, dt_msg **out)
{
    return dt_tp_irecv(op, peer, buf, bytes, 0, out);
}

const dt_backend_ops dt_emulation_ops = {
    "emulation", emulated_collective, emulated_send, emulated_recv, dt_tp_wait_src, dt_tp_done,
};

dt_result dt_coll_run(dt_op *op, const dt_coll_args *a)
{
    return op->comm->rc->ops->collective(op, a);
}

/* The algorithm of a call: the communicator's choice, or by size. */
static void resolve_algo(const dt_comm *c, dt_coll_args *a)
{
    size_t bytes = a->count * dt_dtype_size(a->dtype);
    if (a->kind == DT_COLL_ALLGATHER || a->kind == DT_COLL_REDUCE_SCATTER)
        bytes *= (size_t)c->size;
    a->algo = c->algo;
    a->shortcut = 0;
    if (a->algo != DT_ALGO_AUTO)
        return;
    a->algo = bytes <= AUTO_TREE_MAX ? DT_ALGO_TREE : DT_ALGO_RING;
    if (a->kind == DT_COLL_ALLREDUCE && c->size > 1 &&
        (bytes <= DT_TINY_MAX || bytes >= SHORTCUT_MIN))
        a->shortcut = 1;
    if ((a->kind == DT_COLL_REDUCE_SCATTER || a->kind == DT_COLL_ALLGATHER) && c->size > 1 &&
        bytes >= SHORTCUT_MIN)
        a->shortcut = 1;
}

/* Common start of every top-level call on lane 0: fault injection and the
 * doing board (the call is counted in dt_call_end: one lock per call). */
dt_result dt_call_begin(dt_comm *comm, int kind, long seq, size_t count, int root)
{
    DT_TRY(dt_fault_check(comm, kind));
    dt_doing_set(comm, 0, kind, seq, count, root);
    return DT_OK;
}

void dt_call_end(dt_comm *comm, double w0, double m0, int kind, int new_call)
{
    double w1 = dt_now();
    dt_rank_ctx *rc = comm->rc;
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.calls[kind] += new_call != 0;
    comm->stats.time_comm_wall += w1 - w0;
    comm->stats.time_comm_modeled += rc->clock - m0;
    pthread_mutex_unlock(&comm->stats_lock);
    dt_trace_add(rc, kind, 0, w0, w1, m0, rc->clock);
    dt_doing_set(comm, 0, -1, 0, 0, 0);
}

static dt_result blocking(dt_comm *comm, dt_coll_args *a)
{
    resolve_algo(comm, a);
    long seq = ++comm->seq;
    double w0 = dt_now();
    int root = (a->kind == DT_COLL_BROADCAST || a->kind == DT_COLL_REDUCE) ? a->root : -1;
    DT_TRY(dt_call_begin(comm, a->kind, seq, a->count, root));
    double m0 = comm->rc->clock;
    dt_op op;
    dt_op_begin(&op, comm, 0, a->kind, seq, 1);
    dt_result r = dt_coll_run(&op, a);
    if (op.t > comm->rc->clock)
        comm->rc->clock = op.t;
    dt_call_end(comm, w0, m0, a->kind, 1);
    return r;
}

static dt_result issue(dt_comm *comm, dt_coll_args *a, dt_request **req)
{
    resolve_algo(comm, a);
    long seq = ++comm->seq;
    DT_TRY(dt_fault_check(comm, a->kind));
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.calls[a->kind]++;
    pthread_mutex_unlock(&comm->stats_lock);
    return dt_progress_submit(comm, a, seq, req);
}

/* ---------------------------------------------------------------- argument checks per call */

static dt_result args_allreduce(dt_coll_args *a, const dt_comm *c, const char *fn)
{
    DT_TRY(dt_comm_check(c, fn));
    DT_TRY(check_dtype(a->dtype, fn));
    DT_TRY(check_op(a->op, fn));
    DT_TRY(check_bytes(a->count, 1, a->dtype, fn));
    DT_TRY(check_buf(a->sendbuf, a->count, fn, "sendbuf"));
    DT_TRY(check_buf(a->recvbuf, a->count, fn, "recvbuf"));
    return DT_OK;
}

static dt_result args_broadcast(dt_coll_args *a, const dt_comm *c, const char *fn)
{
    DT_TRY(dt_comm_check(c, fn));
    DT_TRY(check_dtype(a->dtype, fn));
    DT_TRY(check_root(c, a->root, fn, "root"));
    DT_TRY(check_bytes(a->count, 1, a->dtype, fn));
    if (c->rank == a->root)
        DT_TRY(check_buf(a->sendbuf, a->count, fn, "sendbuf (root)"));
    DT_TRY(check_buf(a->recvbuf, a->count, fn, "recvbuf"));
    return DT_OK;
}

static dt_result args_gather(dt_coll_args *a, const dt_comm *c, const char *fn)
{
    DT_TRY(dt_comm_check(c, fn));
    DT_TRY(check_dtype(a->dtype, fn));
    if (a->kind == DT_COLL_REDUCE_SCATTER)
        DT_TRY(check_op(a->op, fn));
    DT_TRY(check_bytes(a->count, (size_t)c->size, a->dtype, fn));
    DT_TRY(check_buf(a->sendbuf, a->count, fn, "sendbuf"));
    DT_TRY(check_buf(a->recvbuf, a->count, fn, "recvbuf"));
    return DT_OK;
}

/* ---------------------------------------------------------------- the API */

dt_result dt_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                       dt_redop op, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1, 0, 0};
    DT_TRY(args_allreduce(&a, comm, "dt_allreduce"));
    return blocking(comm, &a);
}

dt_result dt_broadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                       int root, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, DT_SUM, root, 0, 0};
    DT_TRY(args_broadcast(&a, comm, "dt_broadcast"));
    return blocking(comm, &a);
}

dt_result dt_reduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                    dt_redop op, int root, dt_comm *comm)
{
    const char *fn = "dt_reduce";
    dt_coll_args a = {DT_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, 0, 0};
    DT_TRY(dt_comm_check(comm, fn));
    DT_TRY(check_dtype(dtype, fn));
    DT_TRY(check_op(op, fn));
    DT_TRY(check_root(comm, root, fn, "root"));
    DT_TRY(check_bytes(count, 1, dtype, fn));
    DT_TRY(check_buf(sendbuf, count, fn, "sendbuf"));
    if (comm->rank == root)
        DT_TRY(check_buf(recvbuf, count, fn, "recvbuf (root)"));
    return blocking(comm, &a);
}

dt_result dt_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, dt_dtype dtype,
                       dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, DT_SUM, -1, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_allgather"));
    return blocking(comm, &a);
}

dt_result dt_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                            dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_reduce_scatter"));
    return blocking(comm, &a);
}

dt_result dt_alltoall(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                      dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, DT_SUM, -1, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_alltoall"));
    if (sendbuf == recvbuf && count > 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_alltoall: in place is not supported "
                       "(sendbuf == recvbuf)");
    return blocking(comm, &a);
}

dt_result dt_barrier(dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_BARRIER, NULL, NULL, 0, DT_U8, DT_SUM, -1, 0, 0};
    DT_TRY(dt_comm_check(comm, "dt_barrier"));
    return blocking(comm, &a);
}

static dt_result null_req(dt_request **req, const char *fn)
{
    if (!req)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: req is NULL", fn);
    *req = NULL;
    return DT_OK;
}

dt_result dt_iallreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        dt_redop op, dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_iallreduce"));
    dt_coll_args a = {DT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1, 0, 0};
    DT_TRY(args_allreduce(&a, comm, "dt_iallreduce"));
    return issue(comm, &a, req);
}

dt_result dt_ibroadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        int root, dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_ibroadcast"));
    dt_coll_args a = {DT_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, DT_SUM, root, 0, 0};
    DT_TRY(args_broadcast(&a, comm, "dt_ibroadcast"));
    return issue(comm, &a, req);
}

dt_result dt_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, dt_dtype dtype,
                        dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_iallgather"));
    dt_coll_args a = {DT_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, DT_SUM, -1, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_iallgather"));
    return issue(comm, &a, req);
}

dt_result dt_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                             dt_dtype dtype, dt_redop op, dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_ireduce_scatter"));
    dt_coll_args a = {DT_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_ireduce_scatter"));
    return issue(comm, &a, req);
}
