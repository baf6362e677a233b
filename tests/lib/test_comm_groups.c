/* test_comm_groups.c - split communicators, async collectives, barriers,
 * shared windows, point-to-point messages, on the backend of DT_BACKEND. */
#include "test_comm_util.h"

#include <sched.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------- split */

/* A 2 x 4 grid of 8 ranks: rows (4 ranks) and columns (2 ranks) run their
 * collectives at the same time, blocking and async mixed. */
static dt_result grid_rank(dt_comm *world, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(world), row = r / 4, col = r % 4;
    dt_comm *rows, *cols;
    EXPECT_OK(dt_comm_split(world, row, col, &rows));
    EXPECT_OK(dt_comm_split(world, col, -row, &cols)); /* key reverses the order */
    EXPECT(dt_comm_size(rows) == 4 && dt_comm_rank(rows) == col, "row rank %d size %d",
           dt_comm_rank(rows), dt_comm_size(rows));
    EXPECT(dt_comm_size(cols) == 2 && dt_comm_rank(cols) == 1 - row, "col rank %d size %d",
           dt_comm_rank(cols), dt_comm_size(cols));
    for (int it = 0; it < 20; it++) {
        int32_t x[100], y[100], z[100];
        for (int i = 0; i < 100; i++)
            x[i] = r * 1000 + i + it;
        dt_request *q;
        EXPECT_OK(dt_iallreduce(x, z, 100, DT_I32, DT_SUM, cols, &q));
        EXPECT_OK(dt_allreduce(x, y, 100, DT_I32, DT_SUM, rows));
        EXPECT_OK(dt_wait(q));
        for (int i = 0; i < 100; i++) {
            int32_t want_row = (row * 4 * 4 + 6) * 1000 + 4 * (i + it);
            int32_t want_col = (2 * col + 4) * 1000 + 2 * (i + it);
            EXPECT(y[i] == want_row, "row sum [%d] = %d, expected %d", i, y[i], want_row);
            EXPECT(z[i] == want_col, "col sum [%d] = %d, expected %d", i, z[i], want_col);
        }
    }
    /* a rank with no color gets no communicator */
    dt_comm *none = (dt_comm *)&none;
    EXPECT_OK(dt_comm_split(world, r == 0 ? DT_COLOR_NONE : 1, 0, &none));
    EXPECT((r == 0) == (none == NULL), "rank %d: newcomm %p", r, (void *)none);
    if (none) {
        EXPECT(dt_comm_size(none) == 7, "7 ranks of color 1");
        EXPECT_OK(dt_barrier(none));
        EXPECT_OK(dt_comm_free(none));
    }
    EXPECT_OK(dt_comm_free(rows));
    EXPECT_OK(dt_comm_free(cols));
    /* a freed communicator is refused, not used */
    int32_t v = 1;
    EXPECT_ERR(dt_allreduce(&v, &v, 1, DT_I32, DT_SUM, rows), DT_ERR_STATE);
    EXPECT(strstr(dt_last_error(), "after free"), "message '%s'", dt_last_error());
    EXPECT(dt_comm_rank(rows) == -1, "rank of a freed comm");
    EXPECT_ERR(dt_comm_free(world), DT_ERR_INVALID_ARG);
    return DT_OK;
}

TEST_T(comm_split_grid_concurrent, 3, 30)
{
    dt_launch_opts o = tc_opts(8, DT_ALGO_AUTO);
    EXPECT_OK(dt_launch(&o, grid_rank, NULL));
}

/* ---------------------------------------------------------------- async */

/* The request completes while the rank only computes (never calls the
 * library), so the allreduce progressed in the background. */
static dt_result overlap_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c);
    size_t count = 65536;
    float *x = malloc(count * sizeof *x), *y = malloc(count * sizeof *y);
    for (size_t i = 0; i < count; i++)
        x[i] = (float)(dt_comm_rank(c) + (int)(i % 7));
    dt_request *q;
    EXPECT_OK(dt_iallreduce(x, y, count, DT_F32, DT_SUM, c, &q));
    int done = 0;
    double until = dt_now() + 10;
    volatile double sink = 0;
    while (!done && dt_now() < until) {
        for (int k = 0; k < 10000; k++)
            sink += k * 0.5; /* compute */
        EXPECT_OK(dt_request_test(q, &done));
    }
    EXPECT(done, "the async allreduce made no progress while the rank computed");
    EXPECT_OK(dt_wait(q));
    for (size_t i = 0; i < count; i++) {
        float want = (float)(n * (n - 1) / 2 + n * (int)(i % 7));
        EXPECT(y[i] == want, "y[%zu] = %g, expected %g", i, y[i], want);
    }
    /* several in flight, waited together, other kinds too */
    float a[64], b[64 * 8], g[64 * 8], s[64];
    for (int i = 0; i < 64; i++)
        a[i] = (float)dt_comm_rank(c);
    for (int i = 0; i < 64 * n; i++)
        g[i] = (float)i;
    dt_request *qs[4];
    EXPECT_OK(dt_iallgather(a, b, 64, DT_F32, c, &qs[0]));
    EXPECT_OK(dt_ireduce_scatter(g, s, 64, DT_F32, DT_SUM, c, &qs[1]));
    EXPECT_OK(dt_ibroadcast(x, x, count, DT_F32, n - 1, c, &qs[2]));
    qs[3] = NULL;
    EXPECT_OK(dt_waitall(4, qs));
    for (int i = 0; i < 64 * n; i++)
        EXPECT(b[i] == (float)(i / 64), "allgather [%d] = %g", i, b[i]);
    for (int i = 0; i < 64; i++)
        EXPECT(s[i] == (float)(n * (dt_comm_rank(c) * 64 + i)), "reduce_scatter [%d]", i);
    free(x);
    free(y);
    return DT_OK;
}

TEST_T(comm_async_overlaps_compute, 3, 30)
{
    for (int n = 1; n <= 4; n += 3) {
        dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
        EXPECT_OK(dt_launch(&o, overlap_rank, NULL));
    }
}

/* ---------------------------------------------------------------- barriers */

/* The ranks count their arrivals in a shared window (the memory every
 * backend shares between the ranks: on mpi, MPI's shared memory of one
 * machine); each hands back the count it saw after the last barrier. */
static dt_result barrier_rank(dt_comm *c, void *argp)
{
    int iters = *(const int *)argp;
    long n = dt_comm_size(c);
    void *base;
    dt_win *w;
    EXPECT_OK(dt_win_allocate(c, 64, &base, &w));
    _Atomic long *arrived = base;
    for (int i = 0; i < iters; i++) {
        atomic_fetch_add(arrived, 1);
        EXPECT_OK(dt_barrier(c));
        long seen = atomic_load(arrived);
        EXPECT(seen >= n * (i + 1), "barrier %d passed with %ld arrivals", i, seen);
        EXPECT_OK(dt_barrier(c)); /* nobody starts i+1 before all checked i */
    }
    *(long *)tc_mine(c) = atomic_load(arrived);
    return dt_win_free(w);
}

TEST_T(comm_10000_barriers, 3, 60)
{
    int iters = 5000; /* two barriers per iteration */
    long seen[8];
    dt_launch_opts o = tc_opts(8, DT_ALGO_AUTO);
    o.debug = 0;
    tc_out(&o, seen, sizeof seen[0]);
    EXPECT_OK(dt_launch(&o, barrier_rank, &iters));
    for (int r = 0; r < 8; r++)
        EXPECT(seen[r] == 8L * iters, "rank %d saw %ld arrivals at the end, expected %ld", r,
               seen[r], 8L * iters);
}

/* ---------------------------------------------------------------- window */

/* A sense-reversing barrier on the window, as chapter 01 builds it. */
static void win_barrier(_Atomic int *count, _Atomic int *sense, int *local, int n)
{
    *local = !*local;
    if (atomic_fetch_add(count, 1) == n - 1) {
        atomic_store(count, 0);
        atomic_store(sense, *local);
    } else {
        double until = dt_now() + 10;
        while (atomic_load(sense) != *local && dt_now() < until)
            sched_yield();
    }
}

static dt_result window_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), local = 0;
    void *base;
    dt_win *win;
    EXPECT_OK(dt_win_allocate(c, 4096, &base, &win));
    unsigned char *bytes = base;
    for (int i = 0; i < 4096; i++)
        EXPECT(bytes[i] == 0, "window byte %d = %d, not zeroed", i, bytes[i]);
    EXPECT(((uintptr_t)base & 63) == 0, "window aligned to 64 bytes");
    /* threads and proc's forked ranks see the window at one address; mpi's
     * processes map the machine's shared memory each where it likes: the
     * same region (the atomics below), not the same address */
    uint64_t mine = (uint64_t)(uintptr_t)base, all[8];
    EXPECT_OK(dt_allgather(&mine, all, 2, DT_I32, c)); /* 8 bytes as 2 x i32 */
    for (int i = 0; tc_backend() != DT_BACKEND_MPI && i < n; i++)
        EXPECT(all[i] == mine, "rank %d sees the window at another address", i);
    EXPECT_OK(dt_barrier(c));
    _Atomic int *count = base, *sense = count + 1;
    _Atomic long *sum = (_Atomic long *)((char *)base + 64);
    for (int it = 0; it < 200; it++) {
        atomic_fetch_add(sum, 1);
        win_barrier(count, sense, &local, n);
        EXPECT(atomic_load(sum) >= (long)n * (it + 1), "window barrier %d let a rank through", it);
        win_barrier(count, sense, &local, n);
    }
    EXPECT_OK(dt_win_free(win));
    return DT_OK;
}

TEST_T(comm_window_shared_atomics, 2, 30)
{
    dt_launch_opts o = tc_opts(4, DT_ALGO_AUTO);
    EXPECT_OK(dt_launch(&o, window_rank, NULL));
}

/* ---------------------------------------------------------------- p2p */

static dt_result p2p_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    /* FIFO between a pair, small (eager) and large (rendezvous) mixed */
    size_t sizes[] = {1, 100, 5000, 300000, 3};
    int32_t *buf = malloc(300000 * sizeof *buf);
    if (r == 0) {
        for (int k = 0; k < 5; k++) {
            for (size_t i = 0; i < sizes[k]; i++)
                buf[i] = (int32_t)(k * 1000 + (int)i);
            EXPECT_OK(dt_send(buf, sizes[k], DT_I32, 1, c));
        }
    } else if (r == 1) {
        for (int k = 0; k < 5; k++) {
            EXPECT_OK(dt_recv(buf, sizes[k], DT_I32, 0, c));
            for (size_t i = 0; i < sizes[k]; i++)
                EXPECT(buf[i] == (int32_t)(k * 1000 + (int)i), "msg %d [%zu] = %d", k, i, buf[i]);
        }
    }
    /* a ring shift with sendrecv, and with isend/irecv */
    int32_t out = r, in = -1;
    EXPECT_OK(dt_sendrecv(&out, 1, (r + 1) % n, &in, 1, (r - 1 + n) % n, DT_I32, c));
    EXPECT(in == (r - 1 + n) % n, "sendrecv got %d", in);
    dt_request *q[2];
    EXPECT_OK(dt_irecv(buf, 200000, DT_I32, (r - 1 + n) % n, c, &q[0]));
    int32_t *big = malloc(200000 * sizeof *big);
    for (int i = 0; i < 200000; i++)
        big[i] = r + i;
    EXPECT_OK(dt_isend(big, 200000, DT_I32, (r + 1) % n, c, &q[1]));
    EXPECT_OK(dt_waitall(2, q));
    for (int i = 0; i < 200000; i++)
        EXPECT(buf[i] == (r - 1 + n) % n + i, "irecv [%d] = %d", i, buf[i]);
    /* a parameter server: rank 0 takes updates from whoever sends first */
    if (r == 0) {
        int seen[8] = {0};
        for (int k = 0; k < 3 * (n - 1); k++) {
            int32_t v = -1;
            int src = -1;
            EXPECT_OK(dt_recv_any(&v, 1, DT_I32, &src, c));
            EXPECT(src >= 1 && src < n && v == src * 10 + seen[src], "recv_any: %d from %d",
                   v, src);
            seen[src]++;
        }
    } else {
        for (int k = 0; k < 3; k++) {
            int32_t v = r * 10 + k;
            EXPECT_OK(dt_send(&v, 1, DT_I32, 0, c));
        }
    }
    /* sizes must agree */
    EXPECT_OK(dt_barrier(c)); /* the server is done with recv_any */
    if (r == 1) { /* a copied send may be gone before the receiver sees the size */
        dt_result sr = dt_send(big, 10, DT_I32, 0, c);
        EXPECT(sr == DT_OK || sr == DT_ERR_MISMATCH, "send: %s", dt_strerror(sr));
    }
    if (r == 0) {
        EXPECT_ERR(dt_recv(buf, 20, DT_I32, 1, c), DT_ERR_MISMATCH);
        EXPECT(strstr(dt_last_error(), "rank 1"), "message '%s'", dt_last_error());
    }
    dt_stats s;
    EXPECT_OK(dt_comm_stats(c, &s));
    EXPECT(s.calls[DT_COLL_SENDRECV] == 1 && s.calls[DT_COLL_SEND] >= 1, "p2p calls counted");
    free(buf);
    free(big);
    return DT_OK;
}

TEST_T(comm_point_to_point, 3, 30)
{
    dt_launch_opts o = tc_opts(4, DT_ALGO_AUTO);
    EXPECT_OK(dt_launch(&o, p2p_rank, NULL));
}

/* dt_sendrecv with itself on both sides copies, on one rank too (where the
 * next rank is itself); counts that differ are a mismatch. */
static dt_result self_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(c);
    int32_t out[3] = {r, r + 1, r + 2}, in[3] = {-1, -1, -1};
    EXPECT_OK(dt_sendrecv(out, 3, r, in, 3, r, DT_I32, c));
    for (int i = 0; i < 3; i++)
        EXPECT(in[i] == r + i, "sendrecv with itself: [%d] = %d", i, in[i]);
    EXPECT_ERR(dt_sendrecv(out, 3, r, in, 2, r, DT_I32, c), DT_ERR_MISMATCH);
    EXPECT_ERR(dt_sendrecv(NULL, 3, r, in, 3, r, DT_I32, c), DT_ERR_INVALID_ARG);
    return DT_OK;
}

TEST(comm_sendrecv_with_itself, 1)
{
    for (int n = 1; n <= 3; n += 2) {
        dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
        EXPECT_OK(dt_launch(&o, self_rank, NULL));
    }
}
