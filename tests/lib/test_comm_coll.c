/* test_comm_coll.c - every collective x backend x N in {1,2,3,4,5,8} x
 * algorithm x counts {0, 1, N-1, N+1, 1037} x dtype x op, in and out of
 * place, against a serial reference on exact integer data. */
#include "test_comm_util.h"

typedef struct {
    dt_coll_kind kind;
} sweep_arg;

static int reduces(dt_coll_kind k)
{
    return k == DT_COLL_ALLREDUCE || k == DT_COLL_REDUCE || k == DT_COLL_REDUCE_SCATTER;
}

static void check_elem(const void *buf, dt_dtype t, size_t i, int64_t want, const char *what,
                       size_t count, dt_redop op, int inplace)
{
    int64_t got = tc_get(buf, t, i);
    EXPECT(got == want, "%s: %s[%zu] = %lld, expected %lld (count %zu, %s, %s, %s)", what,
           "recvbuf", i, (long long)got, (long long)want, count, dt_dtype_name(t),
           dt_redop_name(op), inplace ? "in place" : "out of place");
}

static void one_allreduce(dt_comm *c, size_t count, dt_dtype t, dt_redop op, int inplace)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    void *send = tc_alloc(count, t), *recv = inplace ? send : tc_alloc(count, t);
    tc_fill(send, op, t, n, r, 0, count);
    EXPECT_OK(dt_allreduce(send, recv, count, t, op, c));
    for (size_t i = 0; i < count; i++)
        check_elem(recv, t, i, tc_ref(op, t, n, i), "allreduce", count, op, inplace);
    if (!inplace)
        free(recv);
    free(send);
}

static void one_broadcast(dt_comm *c, size_t count, dt_dtype t, int inplace)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c), root = (int)(count % (size_t)n);
    void *send = r == root ? tc_alloc(count, t) : NULL;
    void *recv = r == root && inplace ? send : tc_alloc(count, t);
    if (send)
        tc_fill(send, DT_SUM, t, n, root, 0, count);
    EXPECT_OK(dt_broadcast(send, recv, count, t, root, c));
    for (size_t i = 0; i < count; i++)
        check_elem(recv, t, i, tc_gen(DT_SUM, t, n, root, i), "broadcast", count, DT_SUM,
                   inplace);
    if (recv != send)
        free(recv);
    free(send);
}

static void one_reduce(dt_comm *c, size_t count, dt_dtype t, dt_redop op, int inplace)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c), root = (int)((count + 1) % (size_t)n);
    void *send = tc_alloc(count, t);
    void *recv = r != root ? NULL : inplace ? send : tc_alloc(count, t);
    tc_fill(send, op, t, n, r, 0, count);
    EXPECT_OK(dt_reduce(send, recv, count, t, op, root, c));
    for (size_t i = 0; recv && i < count; i++)
        check_elem(recv, t, i, tc_ref(op, t, n, i), "reduce", count, op, inplace);
    if (recv && recv != send)
        free(recv);
    free(send);
}

static void one_allgather(dt_comm *c, size_t count, dt_dtype t, int inplace)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    size_t es = dt_dtype_size(t);
    char *recv = tc_alloc(count * (size_t)n, t);
    char *send = inplace ? recv + (size_t)r * count * es : tc_alloc(count, t);
    tc_fill(send, DT_SUM, t, n, r, (size_t)r * count, count);
    EXPECT_OK(dt_allgather(send, recv, count, t, c));
    for (size_t j = 0; j < count * (size_t)n; j++)
        check_elem(recv, t, j, tc_gen(DT_SUM, t, n, (int)(j / count), j), "allgather", count,
                   DT_SUM, inplace);
    if (!inplace)
        free(send);
    free(recv);
}

static void one_reduce_scatter(dt_comm *c, size_t count, dt_dtype t, dt_redop op, int inplace)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    size_t es = dt_dtype_size(t);
    char *send = tc_alloc(count * (size_t)n, t);
    char *recv = inplace ? send + (size_t)r * count * es : tc_alloc(count, t);
    tc_fill(send, op, t, n, r, 0, count * (size_t)n);
    EXPECT_OK(dt_reduce_scatter(send, recv, count, t, op, c));
    for (size_t i = 0; i < count; i++)
        check_elem(recv, t, i, tc_ref(op, t, n, (size_t)r * count + i), "reduce_scatter", count,
                   op, inplace);
    if (!inplace)
        free(recv);
    free(send);
}

static void one_alltoall(dt_comm *c, size_t count, dt_dtype t)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    char *send = tc_alloc(count * (size_t)n, t), *recv = tc_alloc(count * (size_t)n, t);
    tc_fill(send, DT_SUM, t, n, r, 0, count * (size_t)n);
    EXPECT_OK(dt_alltoall(send, recv, count, t, c));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < count; i++)
            check_elem(recv, t, (size_t)j * count + i,
                       tc_gen(DT_SUM, t, n, j, (size_t)r * count + i), "alltoall", count, DT_SUM,
                       0);
    free(send);
    free(recv);
}

static dt_result sweep_rank(dt_comm *c, void *argp)
{
    const sweep_arg *a = argp;
    int n = dt_comm_size(c);
    size_t counts[] = {0, 1, (size_t)n - 1, (size_t)n + 1, 1037};
    for (int ci = 0; ci < TC_LEN(counts); ci++)
        for (int ti = 0; ti < TC_LEN(tc_dtypes); ti++)
            for (int op = 0; op < (reduces(a->kind) ? DT_NUM_REDOPS : 1); op++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    size_t count = counts[ci];
                    dt_dtype t = tc_dtypes[ti];
                    switch (a->kind) {
                    case DT_COLL_ALLREDUCE: one_allreduce(c, count, t, op, inplace); break;
                    case DT_COLL_BROADCAST: one_broadcast(c, count, t, inplace); break;
                    case DT_COLL_REDUCE: one_reduce(c, count, t, op, inplace); break;
                    case DT_COLL_ALLGATHER: one_allgather(c, count, t, inplace); break;
                    case DT_COLL_REDUCE_SCATTER:
                        one_reduce_scatter(c, count, t, op, inplace);
                        break;
                    default:
                        if (!inplace)
                            one_alltoall(c, count, t);
                        break;
                    }
                }
    return DT_OK;
}

/* Every rank count of tc_nranks and every algorithm on backend; the
 * sweeps named comm_proc_* run on processes whatever DT_BACKEND says, with
 * the two algorithms that cover what differs there (auto: the shortcuts and
 * cross-memory attach; ring: messages), as the same code runs both. */
static void sweep_on(dt_coll_kind kind, dt_backend backend, int nalgos)
{
    sweep_arg a = {kind};
    for (int ni = 0; ni < TC_LEN(tc_nranks); ni++)
        for (int ai = 0; ai < nalgos; ai++) {
            dt_launch_opts o = tc_opts(tc_nranks[ni], tc_algos[ai]);
            o.backend = backend;
            o.debug = ai % 2; /* half the runs check signatures too */
            dt_result r = dt_launch(&o, sweep_rank, &a);
            EXPECT(r == DT_OK, "%s on %d ranks (%s), algo %s: %s: %s", dt_coll_name(kind),
                   tc_nranks[ni], dt_backend_name(backend), dt_algo_name(tc_algos[ai]),
                   dt_strerror(r), dt_last_error());
        }
}

static void sweep(dt_coll_kind kind) { sweep_on(kind, tc_backend(), TC_LEN(tc_algos)); }
static void proc_sweep(dt_coll_kind kind) { sweep_on(kind, DT_BACKEND_PROC, 2); }

TEST_T(comm_sweep_allreduce, 3, 120) { sweep(DT_COLL_ALLREDUCE); }
TEST_T(comm_sweep_broadcast, 2, 120) { sweep(DT_COLL_BROADCAST); }
TEST_T(comm_sweep_reduce, 2, 120) { sweep(DT_COLL_REDUCE); }
TEST_T(comm_sweep_allgather, 2, 120) { sweep(DT_COLL_ALLGATHER); }
TEST_T(comm_sweep_reduce_scatter, 2, 120) { sweep(DT_COLL_REDUCE_SCATTER); }
TEST_T(comm_sweep_alltoall, 2, 120) { sweep(DT_COLL_ALLTOALL); }

/* The same sweeps with ranks as processes over shared memory. */
TEST_T(comm_proc_sweep_allreduce, 3, 120, .own_backend = 1) { proc_sweep(DT_COLL_ALLREDUCE); }
TEST_T(comm_proc_sweep_broadcast, 2, 120, .own_backend = 1) { proc_sweep(DT_COLL_BROADCAST); }
TEST_T(comm_proc_sweep_reduce, 2, 120, .own_backend = 1) { proc_sweep(DT_COLL_REDUCE); }
TEST_T(comm_proc_sweep_allgather, 2, 120, .own_backend = 1) { proc_sweep(DT_COLL_ALLGATHER); }
TEST_T(comm_proc_sweep_reduce_scatter, 2, 120, .own_backend = 1)
{
    proc_sweep(DT_COLL_REDUCE_SCATTER);
}
TEST_T(comm_proc_sweep_alltoall, 2, 120, .own_backend = 1) { proc_sweep(DT_COLL_ALLTOALL); }

/* One large case per algorithm: multi-chunk, multi-segment paths and the
 * shared-memory shortcut (auto, above its threshold). Under
 * ThreadSanitizer, which checks every access, a third of the count takes
 * the same paths (1.2 MB: ten 128 KiB segments of a ring broadcast, and
 * each rank's part above the shortcut's 256 KiB): the run is about races,
 * the plain and AddressSanitizer runs check the full count. */
#ifdef __SANITIZE_THREAD__
#define LARGE_COUNT 300007
#else
#define LARGE_COUNT 1000003
#endif
static dt_result large_rank(dt_comm *c, void *arg)
{
    (void)arg;
    size_t count = LARGE_COUNT;
    one_allreduce(c, count, DT_F32, DT_SUM, dt_comm_rank(c) % 2);
    one_broadcast(c, count, DT_F32, 1);
    one_reduce_scatter(c, count, DT_F32, DT_AVG, 0);
    one_allgather(c, count, DT_F32, 1);
    return DT_OK;
}

/* On the backend of DT_BACKEND (every algorithm), and on proc too (auto
 * and ring) when that is thread. */
TEST_T(comm_large_counts, 2, 120)
{
    dt_backend backends[2];
    int nb = tc_backends(backends);
    for (int b = 0; b < nb; b++)
        for (int ai = 0; ai < (b ? 2 : TC_LEN(tc_algos)); ai++) {
            dt_launch_opts o = tc_opts(ai == 0 ? 4 : 3, tc_algos[ai]);
            o.debug = 0;
            o.backend = backends[b];
            EXPECT_OK(dt_launch(&o, large_rank, NULL));
        }
}

/* The shared-memory shortcuts (auto: tiny and large allreduces, large
 * reduce-scatters and allgathers) with every dtype and op, threads and
 * processes, in and out of place. On mpi, which has no shortcuts, AUTO
 * runs the tree and the ring at these sizes: the same exact results. */
static dt_result shortcut_rank(dt_comm *c, void *arg)
{
    (void)arg;
    size_t count = 270000; /* above the shortcut's 256 KiB even in u8 */
    size_t per_rank = 100003; /* times 3 ranks: above it too */
    for (int ti = 0; ti < TC_LEN(tc_dtypes); ti++) {
        for (int op = 0; op < DT_NUM_REDOPS; op++) {
            one_allreduce(c, count, tc_dtypes[ti], op, (ti + op) % 2);
            one_allreduce(c, 3, tc_dtypes[ti], op, (ti + op + 1) % 2);
            one_reduce_scatter(c, per_rank, tc_dtypes[ti], op, (ti + op) % 2);
        }
        one_allgather(c, per_rank, tc_dtypes[ti], ti % 2);
        one_allgather(c, per_rank, tc_dtypes[ti], (ti + 1) % 2);
    }
    return DT_OK;
}

TEST_T(comm_shortcut_all_dtypes_ops, 2, 120)
{
    dt_backend backends[2];
    int nb = tc_backends(backends);
    for (int b = 0; b < nb; b++) {
        dt_launch_opts o = tc_opts(3, DT_ALGO_AUTO);
        o.debug = 0;
        o.backend = backends[b];
        EXPECT_OK(dt_launch(&o, shortcut_rank, NULL));
    }
}
