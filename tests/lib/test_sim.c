/* test_sim.c - libdt sim: the alpha-beta costs of the collective
 * algorithms, bus bandwidth, step time and pipeline bubble, against values
 * worked out by hand. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>
#include <string.h>

/* alpha = 2 s, beta = 4 B/s, n = 32 B, K = 4: every figure is an integer.
 *   a whole-buffer round: 2 + 32/4 = 10 s;  a block round: 2 + 32/(4*4) = 4 s */
TEST(sim_costs_by_hand_small_integers, 2)
{
    const double a = 2, b = 4, n = 32;
    EXPECT(dt_sim_p2p(a, b, n) == 10, "p2p %g", dt_sim_p2p(a, b, n));
    EXPECT(dt_sim_ring_allreduce(a, b, n, 4) == 24, "ring allreduce: 2*3 block rounds");
    EXPECT(dt_sim_ring_reduce_scatter(a, b, n, 4) == 12, "ring reduce-scatter: 3 block rounds");
    EXPECT(dt_sim_ring_allgather(a, b, n, 4) == 12, "ring allgather: 3 block rounds");
    EXPECT(dt_sim_pairwise_alltoall(a, b, n, 4) == 12, "all-to-all: 3 block rounds");
    EXPECT(dt_sim_tree_allreduce(a, b, n, 4) == 40, "tree allreduce: 2*2 rounds");
    EXPECT(dt_sim_recursive_doubling_allreduce(a, b, n, 4) == 20, "recursive doubling: 2 rounds");
    EXPECT(dt_sim_naive_allreduce(a, b, n, 4) == 60, "naive: 2*3 rounds");
    EXPECT(dt_sim_binomial_broadcast(a, b, n, 4) == 20, "binomial broadcast: 2 rounds");
    EXPECT(dt_sim_linear_broadcast(a, b, n, 4) == 30, "linear broadcast: 3 rounds");
}

TEST(sim_costs_by_hand_realistic, 1)
{
    /* 10 us latency, 1 GB/s, 100 MB, 4 ranks.
     * round of the whole buffer 1e-5 + 0.1 = 0.10001 s; block round 1e-5 + 0.025 = 0.02501 s */
    const double a = 1e-5, b = 1e9, n = 1e8;
    EXPECT_NEAR(dt_sim_p2p(a, b, n), 0.10001, 1e-12);
    EXPECT_NEAR(dt_sim_ring_allreduce(a, b, n, 4), 0.15006, 1e-12);
    EXPECT_NEAR(dt_sim_ring_reduce_scatter(a, b, n, 4), 0.07503, 1e-12);
    EXPECT_NEAR(dt_sim_tree_allreduce(a, b, n, 4), 0.40004, 1e-12);
    EXPECT_NEAR(dt_sim_naive_allreduce(a, b, n, 4), 0.60006, 1e-12);
    /* Ring beats tree for a large buffer, tree beats ring for a tiny one on 64 ranks. */
    EXPECT(dt_sim_ring_allreduce(a, b, n, 64) < dt_sim_tree_allreduce(a, b, n, 64), "large: ring wins");
    EXPECT(dt_sim_tree_allreduce(a, b, 8, 64) < dt_sim_ring_allreduce(a, b, 8, 64), "small: tree wins");
}

TEST(sim_non_powers_of_two_and_one_rank, 1)
{
    const double a = 1, b = 1, n = 0; /* n = 0: every round costs alpha = 1, counting rounds */
    /* K:                  1  2  3  4  5  6  7  8  9 */
    const int tree[]   = {0, 2, 4, 4, 6, 6, 6, 6, 8}; /* 2 ceil(log2 K) */
    const int rd[]     = {0, 1, 3, 2, 4, 4, 4, 3, 5}; /* log2 K, or floor(log2 K) + 2 */
    const int bcast[]  = {0, 1, 2, 2, 3, 3, 3, 3, 4}; /* ceil(log2 K) */
    for (int k = 1; k <= 9; k++) {
        EXPECT(dt_sim_tree_allreduce(a, b, n, k) == tree[k - 1], "tree K=%d: %g", k,
               dt_sim_tree_allreduce(a, b, n, k));
        EXPECT(dt_sim_recursive_doubling_allreduce(a, b, n, k) == rd[k - 1], "rd K=%d: %g", k,
               dt_sim_recursive_doubling_allreduce(a, b, n, k));
        EXPECT(dt_sim_binomial_broadcast(a, b, n, k) == bcast[k - 1], "bcast K=%d", k);
        EXPECT(dt_sim_ring_allreduce(a, b, n, k) == 2 * (k - 1), "ring K=%d", k);
        EXPECT(dt_sim_linear_broadcast(a, b, n, k) == k - 1, "linear K=%d", k);
    }
    /* One rank communicates nothing, whatever the buffer. */
    EXPECT(dt_sim_ring_allreduce(1e-6, 1e9, 1e9, 1) == 0, "K = 1 ring");
    EXPECT(dt_sim_naive_allreduce(1e-6, 1e9, 1e9, 1) == 0, "K = 1 naive");
    /* A large K stays exact in the round count: 2^20 ranks, 20 rounds. */
    EXPECT(dt_sim_binomial_broadcast(1, 1, 0, 1 << 20) == 20, "2^20 ranks");
    EXPECT(dt_sim_binomial_broadcast(1, 1, 0, (1 << 20) + 1) == 21, "2^20 + 1 ranks");
}

TEST(sim_table_matches_functions, 1)
{
    const double a = 3e-6, b = 2.5e10, n = 12345678;
    for (int k = 1; k <= 12; k++) {
        EXPECT(dt_sim_cost(DT_SIM_RING_ALLREDUCE, a, b, n, k) == dt_sim_ring_allreduce(a, b, n, k), "ring");
        EXPECT(dt_sim_cost(DT_SIM_TREE_ALLREDUCE, a, b, n, k) == dt_sim_tree_allreduce(a, b, n, k), "tree");
        EXPECT(dt_sim_cost(DT_SIM_RECURSIVE_DOUBLING_ALLREDUCE, a, b, n, k) ==
               dt_sim_recursive_doubling_allreduce(a, b, n, k), "rd");
        EXPECT(dt_sim_cost(DT_SIM_LINEAR_BROADCAST, a, b, n, k) == dt_sim_linear_broadcast(a, b, n, k), "lin");
        EXPECT(dt_sim_cost(DT_SIM_P2P, a, b, n, k) == dt_sim_p2p(a, b, n), "p2p ignores K");
    }
    for (int i = 0; i < DT_SIM_NUM_ALGOS; i++) {
        EXPECT(strcmp(dt_sim_algo_name((dt_sim_algo)i), "?") != 0, "algo %d has a name", i);
        EXPECT(dt_sim_algo_collective((dt_sim_algo)i) < DT_SIM_NUM_COLLECTIVES, "algo %d collective", i);
        EXPECT(!isnan(dt_sim_cost((dt_sim_algo)i, a, b, n, 8)), "algo %d costs", i);
    }
    EXPECT(strcmp(dt_sim_algo_name(DT_SIM_RING_ALLREDUCE), "ring_allreduce") == 0, "name");
    EXPECT(dt_sim_algo_collective(DT_SIM_TREE_ALLREDUCE) == DT_SIM_ALLREDUCE, "tree computes allreduce");
    EXPECT(strcmp(dt_sim_collective_name(DT_SIM_REDUCE_SCATTER), "reduce_scatter") == 0, "coll name");
    EXPECT(strcmp(dt_sim_algo_name(DT_SIM_NUM_ALGOS), "?") == 0, "unknown algo name");
    EXPECT(isnan(dt_sim_cost(DT_SIM_NUM_ALGOS, a, b, n, 4)), "unknown algo costs NaN");
}

TEST(sim_bus_bandwidth, 1)
{
    EXPECT(dt_sim_busbw_factor(DT_SIM_ALLREDUCE, 8) == 1.75, "allreduce 2*7/8");
    EXPECT(dt_sim_busbw_factor(DT_SIM_ALLGATHER, 8) == 0.875, "allgather 7/8");
    EXPECT(dt_sim_busbw_factor(DT_SIM_REDUCE_SCATTER, 4) == 0.75, "reduce-scatter 3/4");
    EXPECT(dt_sim_busbw_factor(DT_SIM_ALLTOALL, 2) == 0.5, "alltoall 1/2");
    EXPECT(dt_sim_busbw_factor(DT_SIM_BROADCAST, 8) == 1, "broadcast 1");
    EXPECT(dt_sim_busbw_factor(DT_SIM_REDUCE, 8) == 1, "reduce 1");
    EXPECT(dt_sim_busbw_factor(DT_SIM_ALLREDUCE, 1) == 0, "one rank moves nothing");
    EXPECT(dt_sim_algbw(1e9, 0.5) == 2e9, "algbw");
    /* With no latency, a ring collective runs every link at full speed: busbw = beta. */
    const double beta = 12.5e9, n = 1 << 26;
    for (int k = 2; k <= 16; k++) {
        EXPECT_NEAR(dt_sim_busbw(DT_SIM_ALLREDUCE, n, dt_sim_ring_allreduce(0, beta, n, k), k), beta, 1e-12);
        EXPECT_NEAR(dt_sim_busbw(DT_SIM_ALLGATHER, n, dt_sim_ring_allgather(0, beta, n, k), k), beta, 1e-12);
    }
    EXPECT(isnan(dt_sim_busbw_factor(DT_SIM_NUM_COLLECTIVES, 4)), "unknown collective");
    EXPECT(isnan(dt_sim_algbw(1, 0)), "zero seconds");
}

TEST(sim_step_and_bubble, 1)
{
    EXPECT(dt_sim_step_serial(3, 2) == 5, "serial 3 + 2");
    EXPECT(dt_sim_step_overlapped(3, 2) == 3, "overlapped, compute-bound");
    EXPECT(dt_sim_step_overlapped(1, 4) == 4, "overlapped, communication-bound");
    EXPECT_NEAR(dt_sim_bubble_fraction(4, 8), 3.0 / 11.0, 1e-15);
    EXPECT(dt_sim_bubble_fraction(1, 8) == 0, "one stage has no bubble");
    EXPECT(dt_sim_bubble_fraction(4, 1) == 0.75, "one micro-batch: 3/4 idle");
    EXPECT(isnan(dt_sim_bubble_fraction(0, 8)) && isnan(dt_sim_bubble_fraction(4, 0)), "bad counts");
    EXPECT(isnan(dt_sim_step_serial(-1, 2)) && isnan(dt_sim_step_overlapped(1, NAN)), "bad times");
}

TEST(sim_bad_arguments_give_nan_and_a_reason, 1)
{
    dt_clear_error();
    EXPECT(isnan(dt_sim_ring_allreduce(1e-6, 0, 100, 4)), "beta = 0");
    EXPECT(strstr(dt_last_error(), "beta"), "names beta: '%s'", dt_last_error());
    EXPECT(isnan(dt_sim_tree_allreduce(-1, 1e9, 100, 4)), "negative alpha");
    EXPECT(strstr(dt_last_error(), "alpha"), "names alpha: '%s'", dt_last_error());
    EXPECT(isnan(dt_sim_p2p(1e-6, 1e9, -5)), "negative bytes");
    EXPECT(isnan(dt_sim_linear_broadcast(1e-6, 1e9, 100, 0)), "K = 0");
    EXPECT(strstr(dt_last_error(), "K"), "names K: '%s'", dt_last_error());
    EXPECT(isnan(dt_sim_ring_allgather(1e-6, INFINITY, 100, 4)), "infinite beta");
    EXPECT(isnan(dt_sim_cost(DT_SIM_P2P, 1e-6, 1e9, 100, 0)), "p2p through the table checks K");
}
