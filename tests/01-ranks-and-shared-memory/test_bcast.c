/* test_bcast.c - lab 01, task 2: broadcast from any root, linear and
 * binomial tree.
 *
 * Expected costs, worked out from the network model of dt/comm.h (a send
 * occupies the sender's link for n/beta; its message arrives alpha + n/beta
 * after it starts), never from the lab's code:
 *  - linear: the root's N-1 sends go out one after another, so the root's
 *    clock ends at (N-1) n/beta and the last copy lands at
 *    alpha + (N-1) n/beta;
 *  - tree: ceil(log2 N) rounds of one message time, alpha + n/beta each.
 * The message is 1 MiB, so that n/beta (84 us) dominates alpha (1.5 us) on
 * "ib100": when N is not a power of two the tree's last rank finishes one
 * alpha early ((ceil(log2 N) - 1) alpha + ceil(log2 N) n/beta), still
 * within 2% of whole rounds. */
#include "lab01.h"

typedef dt_result (*bcast_fn)(void *, size_t, dt_dtype, int, dt_comm *);

typedef struct {
    bcast_fn fn;
    const char *name;
    int root;
} bcast_args;

/* Data: counts around the 16 KiB at which a send starts waiting for its
 * receiver; each count once, one after another. */
static dt_result data_rank(dt_comm *w, void *arg)
{
    const bcast_args *a = arg;
    int rank = dt_comm_rank(w);
    const size_t counts[] = {0, 1, 1000, 5000};
    for (int c = 0; c < 4; c++) {
        size_t count = counts[c];
        int32_t *buf = t01_buffer(count, -7);
        if (rank == a->root)
            for (size_t i = 0; i < count; i++)
                buf[i] = t01_value(a->root, i + c);
        EXPECT_OK(a->fn(buf, count, DT_I32, a->root, w));
        for (size_t i = 0; i < count; i++)
            EXPECT(buf[i] == t01_value(a->root, i + c),
                   "%s from root %d, count %zu: buf[%zu] = %d, expected %d", a->name, a->root,
                   count, i, buf[i], t01_value(a->root, i + c));
        EXPECT(buf[count] == -7, "%s, count %zu: wrote past the end of the buffer", a->name,
               count);
        free(buf);
    }
    return DT_OK;
}

static void every_n_every_root(bcast_fn fn, const char *name)
{
    for (int n = 1; n <= 8; n++)
        for (int root = 0; root < n; root++) {
            dt_launch_opts o = t01_opts(n, NULL, 5);
            bcast_args a = {fn, name, root};
            EXPECT_OK(dt_launch(&o, data_rank, &a));
        }
}

TEST_T(bcast_linear_every_n_every_root, 3, 20)
{
    dt_test_see("chapter 01, section 6");
    every_n_every_root(lab_bcast_linear, "lab_bcast_linear");
}

TEST_T(bcast_tree_every_n_every_root, 3, 20)
{
    dt_test_see("chapter 01, section 6");
    every_n_every_root(lab_bcast_tree, "lab_bcast_tree");
}

/* ---------------------------------------------------------------- costs */

#define COST_COUNT ((size_t)1 << 18) /* int32: 1 MiB */
#define COST_NET "ib100"

typedef enum { CHECK_LINEAR_TIME, CHECK_TREE_BYTES, CHECK_TREE_TIME } cost_check;

typedef struct {
    bcast_fn fn;
    const char *name;
    int root;
    cost_check check;
} cost_args;

static dt_result cost_rank(dt_comm *w, void *arg)
{
    const cost_args *a = arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    int32_t *buf = malloc(COST_COUNT * sizeof *buf);
    EXPECT(buf != NULL, "out of memory");
    if (rank == a->root)
        for (size_t i = 0; i < COST_COUNT; i++)
            buf[i] = t01_value(a->root, i);
    EXPECT(dt_clock(w) == 0, "the clock reads %g s at launch", dt_clock(w));
    EXPECT_OK(a->fn(buf, COST_COUNT, DT_I32, a->root, w));
    t01_record mine;
    t01_snapshot(w, &mine);
    for (size_t i = 0; i < COST_COUNT; i += 4093)
        EXPECT(buf[i] == t01_value(a->root, i), "%s: buf[%zu] = %d, expected %d", a->name, i,
               buf[i], t01_value(a->root, i));
    free(buf);
    t01_record *all = t01_gather(w, &mine);
    if (rank == 0) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset(COST_NET, &alpha, &beta));
        const double bytes = (double)COST_COUNT * sizeof(int32_t);
        uint64_t total = 0;
        for (int r = 0; r < n; r++) {
            total += all[r].bytes_sent;
            EXPECT(all[r].coll_calls == 0,
                   "%s: rank %d called the library's collectives %llu times (allowed: 0)",
                   a->name, r, (unsigned long long)all[r].coll_calls);
            /* Every rank but the root receives the buffer exactly once. */
            EXPECT(all[r].msgs_recv == (r == a->root ? 0u : 1u),
                   "%s, N = %d, root %d: rank %d received %llu messages, expected %d", a->name,
                   n, a->root, r, (unsigned long long)all[r].msgs_recv, r == a->root ? 0 : 1);
        }
        /* (N-1) copies of n elements, in total over the ranks. */
        EXPECT(total == (uint64_t)(n - 1) * COST_COUNT * sizeof(int32_t),
               "%s, N = %d: %llu bytes sent in total, expected (N-1) n = %llu", a->name, n,
               (unsigned long long)total,
               (unsigned long long)((uint64_t)(n - 1) * COST_COUNT * sizeof(int32_t)));
        double done = t01_completion(all, n);
        if (a->check == CHECK_LINEAR_TIME && n > 1) {
            EXPECT(all[a->root].msgs_sent == (uint64_t)(n - 1),
                   "linear, N = %d: the root sent %llu messages, expected N-1", n,
                   (unsigned long long)all[a->root].msgs_sent);
            /* The root's link is busy for N-1 message times. */
            EXPECT_NEAR(all[a->root].clock, (n - 1) * bytes / beta, 0.02);
            EXPECT_NEAR(done, alpha + (n - 1) * bytes / beta, 0.02);
        }
        if (a->check == CHECK_TREE_TIME && n > 1) {
            double round = alpha + bytes / beta;
            EXPECT(fabs(done - t01_ceil_log2(n) * round) <= 0.02 * t01_ceil_log2(n) * round,
                   "tree, N = %d, root %d: the last rank finished at %.2f us of modeled time "
                   "= %.3f rounds of %.2f us, expected ceil(log2 N) = %d rounds",
                   n, a->root, done * 1e6, done / round, round * 1e6, t01_ceil_log2(n));
        }
        if (n == 1)
            EXPECT(done == 0, "%s on one rank took %g s of modeled time", a->name, done);
    }
    free(all);
    return DT_OK;
}

static void cost_sweep(bcast_fn fn, const char *name, cost_check check)
{
    for (int n = 1; n <= 8; n++) {
        int roots[2] = {0, n - 1};
        for (int k = 0; k < (n > 1 ? 2 : 1); k++) {
            dt_launch_opts o = t01_opts(n, COST_NET, 5);
            cost_args a = {fn, name, roots[k], check};
            EXPECT_OK(dt_launch(&o, cost_rank, &a));
        }
    }
}

TEST_T(bcast_linear_costs_n_minus_1_sends_at_root, 2, 20)
{
    dt_test_see("chapter 01, sections 5 and 6");
    cost_sweep(lab_bcast_linear, "lab_bcast_linear", CHECK_LINEAR_TIME);
}

TEST_T(bcast_tree_sends_n_minus_1_copies, 2, 20)
{
    dt_test_see("chapter 01, section 6");
    cost_sweep(lab_bcast_tree, "lab_bcast_tree", CHECK_TREE_BYTES);
}

TEST_T(bcast_tree_takes_log2_rounds, 2, 20)
{
    dt_test_see("chapter 01, section 6");
    cost_sweep(lab_bcast_tree, "lab_bcast_tree", CHECK_TREE_TIME);
}

/* ---------------------------------------------------------------- bad root */

static dt_result bad_root_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w);
    int32_t v = dt_comm_rank(w) == 1 ? 42 : 0;
    /* A good call first: a stub that fails everything does not pass. */
    EXPECT_OK(lab_bcast_linear(&v, 1, DT_I32, 1, w));
    EXPECT(v == 42, "linear from root 1: got %d, expected 42", v);
    v = dt_comm_rank(w) == 2 ? 43 : 0;
    EXPECT_OK(lab_bcast_tree(&v, 1, DT_I32, 2, w));
    EXPECT(v == 43, "tree from root 2: got %d, expected 43", v);
    EXPECT_ERR(lab_bcast_linear(&v, 1, DT_I32, -1, w), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_bcast_linear(&v, 1, DT_I32, n, w), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_bcast_tree(&v, 1, DT_I32, -1, w), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_bcast_tree(&v, 1, DT_I32, n, w), DT_ERR_INVALID_ARG);
    return DT_OK;
}

TEST(bcast_rejects_a_root_out_of_range, 1)
{
    dt_test_see("chapter 01, section 6");
    dt_launch_opts o = t01_opts(3, NULL, 5);
    EXPECT_OK(dt_launch(&o, bad_root_rank, NULL));
}
