/* test_barrier.c - lab 01, task 1: the sense-reversing barrier.
 *
 * The check that no rank leaves early: a counter shared by the ranks (in a
 * window). Every rank adds 1 just before entering barrier i, so a rank that
 * has left barrier i must read at least (i+1) N; it may read more (ranks
 * already past it add for barrier i+1) but never more than (i+2) N, since
 * barrier i+1 cannot open without this rank. */
#include "lab01.h"

static dt_result counter_rank(dt_comm *w, void *arg)
{
    const int iters = *(const int *)arg;
    int n = dt_comm_size(w);
    lab_barrier b;
    EXPECT_OK(lab_barrier_init(&b, w, 20.0));
    void *base;
    dt_win *win;
    EXPECT_OK(dt_win_allocate(w, sizeof(atomic_llong), &base, &win));
    atomic_llong *arrivals = base;
    for (int i = 0; i < iters; i++) {
        atomic_fetch_add_explicit(arrivals, 1, memory_order_relaxed);
        EXPECT_OK(lab_barrier_wait(&b));
        long long seen = atomic_load_explicit(arrivals, memory_order_relaxed);
        EXPECT(seen >= (long long)(i + 1) * n,
               "left barrier %d having seen %lld arrivals, expected at least %lld: "
               "a rank left before every rank had arrived",
               i, seen, (long long)(i + 1) * n);
        EXPECT(seen <= (long long)(i + 2) * n,
               "after barrier %d the counter reads %lld, more than %lld: a rank "
               "went through the next barrier without this one",
               i, seen, (long long)(i + 2) * n);
    }
    EXPECT_OK(dt_win_free(win));
    EXPECT_OK(lab_barrier_destroy(&b));
    return DT_OK;
}

/* The waiting policy alone, without ranks: after poll p of a wait,
 * lab_pause spins while p < spin_polls, yields for the next yield_polls
 * polls, and naps after that, counting each poll, yield and nap. Checked
 * call by call, so the verdict does not depend on the machine's load (the
 * barrier tests below only show a missing yield as slowness). */
TEST(barrier_pause_follows_the_policy, 2)
{
    dt_test_see("chapter 01, section 4, \"How to wait\"");
    const uint64_t policy[][2] = {{3, 4}, {0, 2}, {5, 0}, {LAB_SPIN_POLLS, LAB_YIELD_POLLS}};
    for (int c = 0; c < 4; c++) {
        lab_barrier b;
        memset(&b, 0, sizeof b);
        b.nranks = 1;
        b.spin_polls = policy[c][0];
        b.yield_polls = policy[c][1];
        const uint64_t spin = policy[c][0], yield = policy[c][1], total = spin + yield + 3;
        for (uint64_t p = 0; p < total; p++) {
            uint64_t yields = b.yields, sleeps = b.sleeps;
            lab_pause(&b, p);
            const char *want = p < spin ? "spin" : p < spin + yield ? "yield" : "nap";
            EXPECT(b.polls == p + 1,
                   "spin_polls %llu, yield_polls %llu: after poll %llu, polls = %llu, "
                   "expected %llu",
                   (unsigned long long)spin, (unsigned long long)yield, (unsigned long long)p,
                   (unsigned long long)b.polls, (unsigned long long)(p + 1));
            EXPECT(b.yields - yields == (p >= spin && p < spin + yield) &&
                       b.sleeps - sleeps == (p >= spin + yield),
                   "spin_polls %llu, yield_polls %llu: poll %llu should %s, but it counted "
                   "%llu yield(s) and %llu nap(s)",
                   (unsigned long long)spin, (unsigned long long)yield, (unsigned long long)p,
                   want, (unsigned long long)(b.yields - yields),
                   (unsigned long long)(b.sleeps - sleeps));
        }
    }
}

TEST(barrier_one_rank, 1)
{
    dt_test_see("chapter 01, section 4");
    dt_launch_opts o = t01_opts(1, NULL, 10);
    int iters = 1000;
    EXPECT_OK(dt_launch(&o, counter_rank, &iters));
}

TEST_T(barrier_no_rank_leaves_early, 3, 20)
{
    dt_test_see("chapter 01, section 4");
    for (int n = 2; n <= 8; n++) {
        dt_launch_opts o = t01_opts(n, NULL, 10);
        int iters = 300;
        EXPECT_OK(dt_launch(&o, counter_rank, &iters));
    }
}

/* 8 ranks, usually on fewer cores, many episodes in a row: waiting ranks
 * must let the others run (a barrier that only spins took 28 to 81 ms per
 * episode on 2 cores: minutes for these 3000). The policy itself is checked
 * poll by poll above; 3000 episodes take well under a second, so the 30 s
 * limit holds on a machine loaded far beyond its cores. */
TEST_T(barrier_3000_in_a_row_8_ranks, 3, 30)
{
    dt_test_see("chapter 01, section 4");
    dt_launch_opts o = t01_opts(8, NULL, 10);
    int iters = 3000;
    EXPECT_OK(dt_launch(&o, counter_rank, &iters));
}

/* What a rank wrote with plain stores before the barrier, every rank reads
 * after it: the barrier's release/acquire publishes it. A second barrier
 * keeps a fast rank from overwriting its slot while others still read. */
static dt_result publish_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    lab_barrier b;
    EXPECT_OK(lab_barrier_init(&b, w, 20.0));
    void *base;
    dt_win *win;
    EXPECT_OK(dt_win_allocate(w, (size_t)n * sizeof(int), &base, &win));
    int *slot = base;
    for (int i = 0; i < 200; i++) {
        slot[rank] = i * n + rank;
        EXPECT_OK(lab_barrier_wait(&b));
        for (int q = 0; q < n; q++)
            EXPECT(slot[q] == i * n + q, "after barrier %d rank %d's slot holds %d, expected %d",
                   2 * i, q, slot[q], i * n + q);
        EXPECT_OK(lab_barrier_wait(&b));
    }
    EXPECT_OK(dt_win_free(win));
    EXPECT_OK(lab_barrier_destroy(&b));
    return DT_OK;
}

TEST_T(barrier_publishes_writes, 2, 20)
{
    dt_test_see("chapter 01, sections 3 and 4");
    const int sizes[] = {2, 3, 5, 8};
    for (int k = 0; k < 4; k++) {
        dt_launch_opts o = t01_opts(sizes[k], NULL, 10);
        EXPECT_OK(dt_launch(&o, publish_rank, NULL));
    }
}

/* A rank that never arrives: the others get DT_ERR_TIMEOUT after the
 * barrier's timeout, not a hang. One barrier passes first, so that a stub
 * cannot pass by failing at once. */
static dt_result missing_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    lab_barrier b;
    EXPECT_OK(lab_barrier_init(&b, w, 0.3));
    EXPECT_OK(lab_barrier_wait(&b));
    if (rank != n - 1) {
        double t0 = dt_now();
        EXPECT_ERR(lab_barrier_wait(&b), DT_ERR_TIMEOUT);
        double waited = dt_now() - t0;
        EXPECT(waited >= 0.29 && waited < 5.0,
               "the wait returned DT_ERR_TIMEOUT after %.3f s, its timeout is 0.3 s", waited);
    }
    EXPECT_OK(lab_barrier_destroy(&b));
    return DT_OK;
}

TEST(barrier_times_out_when_a_rank_is_missing, 1)
{
    dt_test_see("chapter 01, section 4");
    for (int n = 2; n <= 3; n++) {
        dt_launch_opts o = t01_opts(n, NULL, 10);
        EXPECT_OK(dt_launch(&o, missing_rank, NULL));
    }
}
