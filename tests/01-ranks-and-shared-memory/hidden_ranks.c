/* hidden_ranks.c - lab 01: hidden tests (staff only; graded, but not in
 * the student tree). Same functions, other shapes: a straggler at the
 * barrier, another network and dtype for the broadcasts, and a ring pass
 * repeated all the way around. */
#include "lab01.h"

/* ---------------------------------------------------------------- barrier */

/* Rank 2 arrives 20 ms late at every barrier: the others must wait for it
 * through every phase of lab_pause (spins, yields, naps), which the shared
 * counter shows: nobody leaves barrier i before rank 2 has added its
 * arrival. (No check of how long rank 0 waited: a verdict must not depend
 * on how the machine schedules the threads.) */
static dt_result straggler_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    lab_barrier b;
    EXPECT_OK(lab_barrier_init(&b, w, 20.0));
    void *base;
    dt_win *win;
    EXPECT_OK(dt_win_allocate(w, sizeof(atomic_llong), &base, &win));
    atomic_llong *arrivals = base;
    for (int i = 0; i < 5; i++) {
        if (rank == 2)
            dt_sleep(0.02);
        atomic_fetch_add_explicit(arrivals, 1, memory_order_relaxed);
        EXPECT_OK(lab_barrier_wait(&b));
        long long seen = atomic_load_explicit(arrivals, memory_order_relaxed);
        EXPECT(seen >= (long long)(i + 1) * n,
               "barrier %d: left having seen %lld arrivals, expected at least %lld: a rank "
               "left before the late rank 2 arrived",
               i, seen, (long long)(i + 1) * n);
    }
    EXPECT_OK(dt_win_free(win));
    EXPECT_OK(lab_barrier_destroy(&b));
    return DT_OK;
}

TEST_HIDDEN(hidden_barrier_waits_for_a_straggler, 2, .race = 1)
{
    dt_test_see("chapter 01, section 4");
    dt_launch_opts o = t01_opts(4, NULL, 10);
    EXPECT_OK(dt_launch(&o, straggler_rank, NULL));
}

/* ---------------------------------------------------------------- broadcast */

/* 10 Gb Ethernet, u8, an odd size: the costs of test_bcast.c again. */
#define ETH_COUNT ((size_t)2000001) /* n/beta = 1.6 ms, alpha = 30 us */

typedef struct {
    int tree;
    int root;
} eth_args;

static dt_result eth_rank(dt_comm *w, void *arg)
{
    const eth_args *a = arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    uint8_t *buf = malloc(ETH_COUNT);
    EXPECT(buf != NULL, "out of memory");
    memset(buf, 0, ETH_COUNT);
    if (rank == a->root)
        for (size_t i = 0; i < ETH_COUNT; i++)
            buf[i] = (uint8_t)(i * 31 + (size_t)a->root);
    if (a->tree)
        EXPECT_OK(lab_bcast_tree(buf, ETH_COUNT, DT_U8, a->root, w));
    else
        EXPECT_OK(lab_bcast_linear(buf, ETH_COUNT, DT_U8, a->root, w));
    t01_record mine;
    t01_snapshot(w, &mine);
    for (size_t i = 0; i < ETH_COUNT; i += 997)
        EXPECT(buf[i] == (uint8_t)(i * 31 + (size_t)a->root), "%s, N = %d, root %d, %zu bytes on "
               "eth10: buf[%zu] = %u, expected the root's %u", a->tree ? "tree" : "linear", n,
               a->root, ETH_COUNT, i, buf[i], (uint8_t)(i * 31 + (size_t)a->root));
    free(buf);
    t01_record *all = t01_gather(w, &mine);
    if (rank == 0) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset("eth10", &alpha, &beta));
        uint64_t total = 0;
        for (int r = 0; r < n; r++) {
            total += all[r].bytes_sent;
            EXPECT(all[r].coll_calls == 0, "rank %d called library collectives", r);
        }
        EXPECT(total == (uint64_t)(n - 1) * ETH_COUNT,
               "N = %d: %llu bytes sent in total, expected %llu", n, (unsigned long long)total,
               (unsigned long long)((uint64_t)(n - 1) * ETH_COUNT));
        double done = t01_completion(all, n), msg = ETH_COUNT / beta;
        double want = a->tree ? t01_ceil_log2(n) * (alpha + msg) : alpha + (n - 1) * msg;
        EXPECT(fabs(done - want) <= 0.02 * want,
               "%s, N = %d, root %d: finished at %.2f us of modeled time, expected %.2f us",
               a->tree ? "tree" : "linear", n, a->root, done * 1e6, want * 1e6);
    }
    free(all);
    return DT_OK;
}

TEST_HIDDEN_T(hidden_bcast_costs_on_eth10_u8, 2, 20)
{
    dt_test_see("chapter 01, sections 5 and 6");
    for (int tree = 0; tree <= 1; tree++)
        for (int n = 2; n <= 8; n++) {
            dt_launch_opts o = t01_opts(n, "eth10", 5);
            eth_args a = {tree, n / 2};
            EXPECT_OK(dt_launch(&o, eth_rank, &a));
        }
}

/* i8 across the 16 KiB boundary, every root of 6 ranks. */
static dt_result i8_rank(dt_comm *w, void *arg)
{
    const int root = *(const int *)arg;
    int rank = dt_comm_rank(w);
    const size_t count = 16385;
    int8_t *lin = malloc(count), *tree = malloc(count);
    EXPECT(lin && tree, "out of memory");
    for (size_t i = 0; i < count; i++) {
        lin[i] = rank == root ? (int8_t)(i * 7 + (size_t)root) : 0;
        tree[i] = rank == root ? (int8_t)(i * 13 + (size_t)root) : 0;
    }
    EXPECT_OK(lab_bcast_linear(lin, count, DT_I8, root, w));
    EXPECT_OK(lab_bcast_tree(tree, count, DT_I8, root, w));
    for (size_t i = 0; i < count; i++) {
        EXPECT(lin[i] == (int8_t)(i * 7 + (size_t)root), "linear, root %d, %zu i8: buf[%zu] = %d, "
               "expected the root's %d", root, count, i, lin[i], (int8_t)(i * 7 + (size_t)root));
        EXPECT(tree[i] == (int8_t)(i * 13 + (size_t)root), "tree, root %d, %zu i8: buf[%zu] = %d, "
               "expected the root's %d", root, count, i, tree[i],
               (int8_t)(i * 13 + (size_t)root));
    }
    free(lin);
    free(tree);
    return DT_OK;
}

TEST_HIDDEN(hidden_bcast_i8_every_root_of_6, 1)
{
    dt_test_see("chapter 01, section 6");
    for (int root = 0; root < 6; root++) {
        dt_launch_opts o = t01_opts(6, NULL, 5);
        EXPECT_OK(dt_launch(&o, i8_rank, &root));
    }
}

/* ---------------------------------------------------------------- ring */

/* N passes in a row, each forwarding what the last one brought: after k
 * passes rank r holds rank (r-k) mod N's data, after N its own again. */
static dt_result circle_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    const size_t count = 5000; /* 20 KB: every send waits for its receiver */
    int32_t *a = t01_buffer(count, 0), *b = t01_buffer(count, 0);
    for (size_t i = 0; i < count; i++)
        a[i] = t01_value(rank, i);
    for (int k = 1; k <= n; k++) {
        EXPECT_OK(lab_ring_pass(a, b, count, DT_I32, w));
        int from = ((rank - k) % n + n) % n;
        for (size_t i = 0; i < count; i++)
            EXPECT(b[i] == t01_value(from, i), "after %d passes [%zu] = %d, expected rank %d's %d",
                   k, i, b[i], from, t01_value(from, i));
        int32_t *t = a;
        a = b;
        b = t;
    }
    free(a);
    free(b);
    return DT_OK;
}

TEST_HIDDEN(hidden_ring_pass_all_the_way_around, 2)
{
    dt_test_see("chapter 01, section 7");
    const int sizes[] = {2, 5, 8};
    for (int k = 0; k < 3; k++) {
        dt_launch_opts o = t01_opts(sizes[k], NULL, 3);
        EXPECT_OK(dt_launch(&o, circle_rank, NULL));
    }
}
