/* test_comm_mpi_p2p.c - the mpi backend's point-to-point calls, async
 * requests and splits: the data, and the modeled clock of THE RULE
 * (dt/net.h) as the thread backend gives it. */
#include "mpi_test.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define BIG 9000 /* floats: 36 KB, above the eager limit */

/* Rank 0 sends a small and a big message to every other rank; each answers
 * with a sendrecv; all compare their clocks with the thread backend's. */
static void exchange(dt_comm *c, float *small, float *big)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    if (r == 0) {
        for (int p = 1; p < n; p++) {
            for (int i = 0; i < 4; i++)
                small[i] = (float)(p * 10 + i);
            for (int i = 0; i < BIG; i++)
                big[i] = (float)(p + i);
            EXPECT_OK(dt_send(small, 4, DT_F32, p, c));
            EXPECT_OK(dt_send(big, BIG, DT_F32, p, c));
        }
    } else {
        EXPECT_OK(dt_recv(small, 4, DT_F32, 0, c));
        EXPECT_OK(dt_recv(big, BIG, DT_F32, 0, c));
        for (int i = 0; i < 4; i++)
            EXPECT(small[i] == (float)(r * 10 + i), "small[%d] = %g", i, small[i]);
        for (int i = 0; i < BIG; i++)
            EXPECT(big[i] == (float)(r + i), "big[%d] = %g, expected %d", i, big[i], r + i);
    }
    /* a ring of sendrecvs, then async messages the other way round */
    float mine = (float)r, left = -1;
    if (n > 1) {
        EXPECT_OK(dt_sendrecv(&mine, 1, (r + 1) % n, &left, 1, (r + n - 1) % n, DT_F32, c));
        EXPECT(left == (float)((r + n - 1) % n), "sendrecv: got %g from the left", left);
        dt_request *rq[2];
        float right = -1;
        EXPECT_OK(dt_irecv(&right, 1, DT_F32, (r + 1) % n, c, &rq[0]));
        EXPECT_OK(dt_isend(&mine, 1, DT_F32, (r + n - 1) % n, c, &rq[1]));
        EXPECT_OK(dt_waitall(2, rq));
        EXPECT(right == (float)((r + 1) % n), "irecv: got %g from the right", right);
    }
    dt_request *ar;
    float sum = (float)(r + 1), total = 0;
    EXPECT_OK(dt_iallreduce(&sum, &total, 1, DT_F32, DT_SUM, c, &ar));
    EXPECT_OK(dt_wait(ar));
    EXPECT(total == (float)(n * (n + 1) / 2), "iallreduce: %g", total);
}

typedef struct {
    double *clock; /* [n]: the thread backend's */
} clock_arg;

static dt_result p2p_thread_rank(dt_comm *c, void *arg)
{
    float *small = malloc(sizeof(float) * 4), *big = malloc(sizeof(float) * BIG);
    exchange(c, small, big);
    ((clock_arg *)arg)->clock[dt_comm_rank(c)] = dt_clock(c);
    free(small);
    free(big);
    return DT_OK;
}

static dt_result p2p_mpi_rank(dt_comm *c, void *arg)
{
    float *small = malloc(sizeof(float) * 4), *big = malloc(sizeof(float) * BIG);
    exchange(c, small, big);
    double want = ((clock_arg *)arg)->clock[dt_comm_rank(c)];
    EXPECT(dt_clock(c) == want, "modeled clock %.9g s, the thread backend's %.9g s", dt_clock(c),
           want);
    free(small);
    free(big);
    return DT_OK;
}

TEST_T(mpi_point_to_point_and_async, 3, 60)
{
    int p = mt_job_size();
    for (int n = 1; n <= p; n++) {
        clock_arg a = {calloc((size_t)n, sizeof(double))};
        EXPECT(a.clock != NULL, "out of memory");
        mt_thread_then_mpi(n, "eth10", p2p_thread_rank, p2p_mpi_rank, &a);
        free(a.clock);
    }
}

/* Every rank but 0 sends its rank to rank 0, which takes them with
 * dt_recv_any: each sender once. */
static dt_result any_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    if (r != 0) {
        int v = r;
        return dt_send(&v, 1, DT_I32, 0, c);
    }
    int seen[64] = {0};
    for (int k = 1; k < n; k++) {
        int v = -1, src = -1;
        EXPECT_OK(dt_recv_any(&v, 1, DT_I32, &src, c));
        EXPECT(src == v && src > 0 && src < n && !seen[src], "recv_any: %d from %d", v, src);
        seen[src] = 1;
    }
    return DT_OK;
}

TEST_T(mpi_recv_any_takes_each_sender, 2, 30)
{
    int p = mt_job_size();
    dt_launch_opts o = mt_opts(p, DT_ALGO_AUTO, 10);
    EXPECT_OK(dt_launch(&o, any_rank, NULL));
}

/* A split into even and odd ranks (reversed by key), an allreduce in each
 * half and a broadcast from the half's rank 0; color NONE gets no comm. */
static dt_result split_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    dt_comm *half = NULL, *none = NULL;
    EXPECT_OK(dt_comm_split(c, r % 2, -r, &half));
    int size = (n + 1 - r % 2) / 2;
    EXPECT(dt_comm_size(half) == size, "half of %d ranks: size %d, expected %d", n,
           dt_comm_size(half), size);
    int want_rank = (size - 1) - r / 2; /* keys -r: the highest rank first */
    EXPECT(dt_comm_rank(half) == want_rank, "rank %d in its half: %d, expected %d", r,
           dt_comm_rank(half), want_rank);
    int v = r, sum = 0;
    EXPECT_OK(dt_allreduce(&v, &sum, 1, DT_I32, DT_SUM, half));
    int want = 0;
    for (int i = r % 2; i < n; i += 2)
        want += i;
    EXPECT(sum == want, "the sum over the half of rank %d: %d, expected %d", r, sum, want);
    EXPECT_OK(dt_comm_split(c, r == 0 ? 0 : DT_COLOR_NONE, 0, &none));
    EXPECT((r == 0) == (none != NULL), "color NONE: rank %d got %p", r, (void *)none);
    EXPECT_OK(dt_comm_free(none));
    EXPECT_OK(dt_comm_free(half));
    return dt_barrier(c);
}

TEST_T(mpi_split_groups, 2, 30)
{
    int p = mt_job_size();
    for (int n = 1; n <= p; n++) {
        dt_launch_opts o = mt_opts(n, DT_ALGO_AUTO, 10);
        EXPECT_OK(dt_launch(&o, split_rank, NULL));
    }
}

/* A window is shared memory between the processes: every rank adds 1000
 * to one counter with atomics; after a barrier each reads n * 1000. */
static dt_result window_rank(dt_comm *c, void *arg)
{
    (void)arg;
    void *base;
    dt_win *win;
    EXPECT_OK(dt_win_allocate(c, sizeof(atomic_long), &base, &win));
    atomic_long *count = base;
    EXPECT(atomic_load(count) == 0, "a new window reads %ld", atomic_load(count));
    EXPECT_OK(dt_barrier(c));
    for (int i = 0; i < 1000; i++)
        atomic_fetch_add(count, 1);
    EXPECT_OK(dt_barrier(c));
    long want = 1000L * dt_comm_size(c);
    EXPECT(atomic_load(count) == want, "the counter reads %ld, expected %ld",
           atomic_load(count), want);
    return dt_win_free(win);
}

TEST_T(mpi_window_is_shared_memory, 2, 30)
{
    int p = mt_job_size();
    for (int n = 1; n <= p; n++) {
        dt_launch_opts o = mt_opts(n, DT_ALGO_AUTO, 10);
        EXPECT_OK(dt_launch(&o, window_rank, NULL));
    }
}

/* DT_TRACE: rank 0's process writes one file with every rank's events. */
static dt_result traced_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x = 1, y;
    EXPECT_OK(dt_allreduce(&x, &y, 1, DT_F32, DT_SUM, c));
    return dt_barrier(c);
}

TEST_T(mpi_trace_has_every_rank, 1, 30)
{
    int p = mt_job_size();
    char path[4200];
    mt_trace_path(path, sizeof path, "trace");
    dt_launch_opts o = mt_opts(p, DT_ALGO_AUTO, 10);
    o.trace_path = path;
    EXPECT_OK(dt_launch(&o, traced_rank, NULL));
    if (mt_job_rank() == 0)
        mt_check_trace(path, p);
}
