/* coll.c - the collective calls of dt/comm.h: argument checks, the choice of
 * algorithm, and the bookkeeping around each call (sequence number, stats,
 * clock, trace, what the rank is doing for the timeout report). The
 * rank's backend carries them out (backend.h). */
#include "coll.h"

#include "backend.h"
#include "diag.h"
#include "progress.h"
#include "stats.h"

#include <string.h>

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

/* The algorithm of a call: the communicator's choice, or by size. The
 * first of dt_allreduce's halves is sized as the allreduce it halves, so
 * that it takes the allreduce's algorithm and shortcut. */
static void resolve_algo(const dt_comm *c, dt_coll_args *a)
{
    size_t bytes = a->count * dt_dtype_size(a->dtype);
    if ((a->kind == DT_COLL_ALLGATHER || a->kind == DT_COLL_REDUCE_SCATTER) && !a->halves)
        bytes *= (size_t)c->size;
    int as = a->halves && a->kind == DT_COLL_REDUCE_SCATTER ? DT_COLL_ALLREDUCE : a->kind;
    a->algo = c->algo;
    a->shortcut = 0;
    if (a->algo != DT_ALGO_AUTO)
        return;
    /* small: the tree algorithms (fewer steps, each paying alpha); large:
     * the ring (bandwidth-optimal) */
    a->algo = bytes <= DT_ALGO_AUTO_TREE_MAX ? DT_ALGO_TREE : DT_ALGO_RING;
    /* a backend's shortcuts (the emulation's address the other ranks' memory) */
    const dt_backend_ops *be = c->rc->ops;
    a->shortcut = c->size > 1 && c->rc->job->fast && be->shortcut && be->shortcut(as, bytes);
}

static dt_result blocking(dt_comm *comm, dt_coll_args *a)
{
    DT_TRY(dt_comm_poisoned(comm));
    resolve_algo(comm, a);
    long seq = ++comm->seq;
    double w0 = dt_now();
    int root = (a->kind == DT_COLL_BROADCAST || a->kind == DT_COLL_REDUCE) ? a->root : -1;
    dt_call call;
    dt_call_init(&call, comm, 0, a->kind, seq, 1);
    dt_coll_call(&call, a);
    DT_TRY(dt_api_enter(comm, a->kind, seq, a->count, root, call.sig));
    double m0 = comm->rc->clock;
    call.t = m0; /* a delay fault may have moved the clock */
    dt_result r = dt_coll_run(&call, a);
    if (call.t > comm->rc->clock)
        comm->rc->clock = call.t;
    dt_api_leave(comm, w0, m0, a->kind, 1, &call.traffic);
    return r;
}

static dt_result issue(dt_comm *comm, dt_coll_args *a, dt_request **req)
{
    DT_TRY(dt_comm_poisoned(comm));
    resolve_algo(comm, a);
    long seq = ++comm->seq;
    DT_TRY(dt_fault_check(comm, a->kind));
    dt_stats_call(comm, a->kind);
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
    dt_coll_args a = {DT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1, 0, 0, 0};
    DT_TRY(args_allreduce(&a, comm, "dt_allreduce"));
    return blocking(comm, &a);
}

dt_result dt_broadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                       int root, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, DT_SUM, root, 0, 0, 0};
    DT_TRY(args_broadcast(&a, comm, "dt_broadcast"));
    return blocking(comm, &a);
}

dt_result dt_reduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                    dt_redop op, int root, dt_comm *comm)
{
    const char *fn = "dt_reduce";
    dt_coll_args a = {DT_COLL_REDUCE, sendbuf, recvbuf, count, dtype, op, root, 0, 0, 0};
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
    dt_coll_args a = {DT_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, DT_SUM, -1, 0, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_allgather"));
    return blocking(comm, &a);
}

dt_result dt_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                            dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1, 0, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_reduce_scatter"));
    return blocking(comm, &a);
}

dt_result dt_allreduce_scatter(void *buf, size_t count, dt_dtype dtype, dt_redop op,
                               dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_REDUCE_SCATTER, buf, buf, count, dtype, op, -1, 0, 0, 1};
    DT_TRY(args_allreduce(&a, comm, "dt_allreduce_scatter"));
    return blocking(comm, &a);
}

dt_result dt_allreduce_gather(void *buf, size_t count, dt_dtype dtype, dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_ALLGATHER, buf, buf, count, dtype, DT_SUM, -1, 0, 0, 1};
    DT_TRY(args_allreduce(&a, comm, "dt_allreduce_gather"));
    return blocking(comm, &a);
}

dt_result dt_alltoall(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                      dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, DT_SUM, -1, 0, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_alltoall"));
    if (sendbuf == recvbuf && count > 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_alltoall: in place is not supported "
                       "(sendbuf == recvbuf)");
    return blocking(comm, &a);
}

dt_result dt_barrier(dt_comm *comm)
{
    dt_coll_args a = {DT_COLL_BARRIER, NULL, NULL, 0, DT_U8, DT_SUM, -1, 0, 0, 0};
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
    dt_coll_args a = {DT_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, -1, 0, 0, 0};
    DT_TRY(args_allreduce(&a, comm, "dt_iallreduce"));
    return issue(comm, &a, req);
}

dt_result dt_ibroadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        int root, dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_ibroadcast"));
    dt_coll_args a = {DT_COLL_BROADCAST, sendbuf, recvbuf, count, dtype, DT_SUM, root, 0, 0, 0};
    DT_TRY(args_broadcast(&a, comm, "dt_ibroadcast"));
    return issue(comm, &a, req);
}

dt_result dt_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, dt_dtype dtype,
                        dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_iallgather"));
    dt_coll_args a = {DT_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, DT_SUM, -1, 0, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_iallgather"));
    return issue(comm, &a, req);
}

dt_result dt_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                             dt_dtype dtype, dt_redop op, dt_comm *comm, dt_request **req)
{
    DT_TRY(null_req(req, "dt_ireduce_scatter"));
    dt_coll_args a = {DT_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, -1, 0, 0, 0};
    DT_TRY(args_gather(&a, comm, "dt_ireduce_scatter"));
    return issue(comm, &a, req);
}
