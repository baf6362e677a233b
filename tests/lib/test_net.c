/* test_net.c - libdt net: links and their strings, the closed forms of the
 * collective algorithms and bus bandwidth, against values worked out by
 * hand. (The rule for one message, measured on the communicator's clock:
 * test_comm_model.c.) */
#include "grader.h"

#include "dt/net.h"

#include <math.h>
#include <string.h>

/* A link of alpha and beta, no reduction cost, as a compound literal. */
#define LINK(a, b) (&(dt_net){(a), (b), 0})

/* alpha = 2 s, beta = 4 B/s, n = 32 B, K = 4: every figure is an integer.
 *   a whole-buffer round: 2 + 32/4 = 10 s;  a block round: 2 + 32/(4*4) = 4 s */
TEST(sim_costs_by_hand_small_integers, 2)
{
    const double a = 2, b = 4, n = 32;
    EXPECT(dt_net_p2p(LINK(a, b), n) == 10, "p2p %g", dt_net_p2p(LINK(a, b), n));
    EXPECT(dt_net_ring_allreduce(LINK(a, b), n, 4) == 24, "ring allreduce: 2*3 block rounds");
    EXPECT(dt_net_ring_reduce_scatter(LINK(a, b), n, 4) == 12, "ring reduce-scatter: 3 block rounds");
    EXPECT(dt_net_ring_allgather(LINK(a, b), n, 4) == 12, "ring allgather: 3 block rounds");
    EXPECT(dt_net_pairwise_alltoall(LINK(a, b), n, 4) == 12, "all-to-all: 3 block rounds");
    EXPECT(dt_net_tree_allreduce(LINK(a, b), n, 4) == 40, "tree allreduce: 2*2 rounds");
    EXPECT(dt_net_recursive_doubling_allreduce(LINK(a, b), n, 4) == 20, "recursive doubling: 2 rounds");
    EXPECT(dt_net_naive_allreduce(LINK(a, b), n, 4) == 52, "naive: 2 alpha + 2*3 n/beta");
    EXPECT(dt_net_binomial_broadcast(LINK(a, b), n, 4) == 20, "binomial broadcast: 2 rounds");
    EXPECT(dt_net_linear_broadcast(LINK(a, b), n, 4) == 26, "linear broadcast: alpha + 3 n/beta");
}

TEST(sim_costs_by_hand_realistic, 1)
{
    /* 10 us latency, 1 GB/s, 100 MB, 4 ranks.
     * round of the whole buffer 1e-5 + 0.1 = 0.10001 s; block round 1e-5 + 0.025 = 0.02501 s */
    const double a = 1e-5, b = 1e9, n = 1e8;
    EXPECT_NEAR(dt_net_p2p(LINK(a, b), n), 0.10001, 1e-12);
    EXPECT_NEAR(dt_net_ring_allreduce(LINK(a, b), n, 4), 0.15006, 1e-12);
    EXPECT_NEAR(dt_net_ring_reduce_scatter(LINK(a, b), n, 4), 0.07503, 1e-12);
    EXPECT_NEAR(dt_net_tree_allreduce(LINK(a, b), n, 4), 0.40004, 1e-12);
    EXPECT_NEAR(dt_net_naive_allreduce(LINK(a, b), n, 4), 0.60002, 1e-12);
    /* Ring beats tree for a large buffer, tree beats ring for a tiny one on 64 ranks. */
    EXPECT(dt_net_ring_allreduce(LINK(a, b), n, 64) < dt_net_tree_allreduce(LINK(a, b), n, 64), "large: ring wins");
    EXPECT(dt_net_tree_allreduce(LINK(a, b), 8, 64) < dt_net_ring_allreduce(LINK(a, b), 8, 64), "small: tree wins");
}

/* Rank 0 posting its receives one at a time (lab 02's naive allreduce):
 * eager buffers queue as before; above the eager limit each buffer after
 * the first waits for its receive: k alpha + 2 (k-1) n/beta (gamma = 0). */
TEST(net_naive_allreduce_in_turn, 1)
{
    const double a = 2, b = 4;
    for (int k = 1; k <= 7; k++) {
        double small = 1024, big = 65536;
        EXPECT(dt_net_naive_allreduce_in_turn(LINK(a, b), small, k) ==
                   dt_net_naive_allreduce(LINK(a, b), small, k),
               "eager (n %g, K %d): the queue of dt_net_naive_allreduce", small, k);
        double want = k == 1 ? 0 : (k > 2 ? k : 2) * a + 2 * (k - 1) * big / b;
        EXPECT(dt_net_naive_allreduce_in_turn(LINK(a, b), big, k) == want,
               "above the eager limit, K %d: %g, expected %g", k,
               dt_net_naive_allreduce_in_turn(LINK(a, b), big, k), want);
    }
    EXPECT(isnan(dt_net_naive_allreduce_in_turn(NULL, 65536, 4)), "no link: NaN");
}

TEST(sim_non_powers_of_two_and_one_rank, 1)
{
    const double a = 1, b = 1, n = 0; /* n = 0: every round costs alpha = 1, counting rounds */
    /* K:                  1  2  3  4  5  6  7  8  9 */
    const int tree[]   = {0, 2, 4, 4, 6, 6, 6, 6, 8}; /* 2 ceil(log2 K) */
    /* naive and linear: alpha once or twice, whatever K (ports, not rounds) */
    const int rd[]     = {0, 1, 3, 2, 4, 4, 4, 3, 5}; /* log2 K, or floor(log2 K) + 2 */
    const int bcast[]  = {0, 1, 2, 2, 3, 3, 3, 3, 4}; /* ceil(log2 K) */
    for (int k = 1; k <= 9; k++) {
        EXPECT(dt_net_tree_allreduce(LINK(a, b), n, k) == tree[k - 1], "tree K=%d: %g", k,
               dt_net_tree_allreduce(LINK(a, b), n, k));
        EXPECT(dt_net_recursive_doubling_allreduce(LINK(a, b), n, k) == rd[k - 1], "rd K=%d: %g", k,
               dt_net_recursive_doubling_allreduce(LINK(a, b), n, k));
        EXPECT(dt_net_binomial_broadcast(LINK(a, b), n, k) == bcast[k - 1], "bcast K=%d", k);
        EXPECT(dt_net_ring_allreduce(LINK(a, b), n, k) == 2 * (k - 1), "ring K=%d", k);
        EXPECT(dt_net_linear_broadcast(LINK(a, b), n, k) == (k > 1), "linear K=%d", k);
        EXPECT(dt_net_naive_allreduce(LINK(a, b), n, k) == 2 * (k > 1), "naive K=%d", k);
    }
    /* One rank communicates nothing, whatever the buffer. */
    EXPECT(dt_net_ring_allreduce(LINK(1e-6, 1e9), 1e9, 1) == 0, "K = 1 ring");
    EXPECT(dt_net_naive_allreduce(LINK(1e-6, 1e9), 1e9, 1) == 0, "K = 1 naive");
    /* A large K stays exact in the round count: 2^20 ranks, 20 rounds. */
    EXPECT(dt_net_binomial_broadcast(LINK(1, 1), 0, 1 << 20) == 20, "2^20 ranks");
    EXPECT(dt_net_binomial_broadcast(LINK(1, 1), 0, (1 << 20) + 1) == 21, "2^20 + 1 ranks");
}

TEST(sim_table_matches_functions, 1)
{
    const double a = 3e-6, b = 2.5e10, n = 12345678;
    for (int k = 1; k <= 12; k++) {
        EXPECT(dt_net_cost(DT_NET_RING_ALLREDUCE, LINK(a, b), n, k) == dt_net_ring_allreduce(LINK(a, b), n, k), "ring");
        EXPECT(dt_net_cost(DT_NET_TREE_ALLREDUCE, LINK(a, b), n, k) == dt_net_tree_allreduce(LINK(a, b), n, k), "tree");
        EXPECT(dt_net_cost(DT_NET_RECURSIVE_DOUBLING_ALLREDUCE, LINK(a, b), n, k) ==
               dt_net_recursive_doubling_allreduce(LINK(a, b), n, k), "rd");
        EXPECT(dt_net_cost(DT_NET_LINEAR_BROADCAST, LINK(a, b), n, k) == dt_net_linear_broadcast(LINK(a, b), n, k), "lin");
        EXPECT(dt_net_cost(DT_NET_P2P, LINK(a, b), n, k) == dt_net_p2p(LINK(a, b), n), "p2p ignores K");
    }
    for (int i = 0; i < DT_NET_NUM_ALGOS; i++) {
        EXPECT(strcmp(dt_net_algo_name((dt_net_algo)i), "?") != 0, "algo %d has a name", i);
        EXPECT(dt_net_algo_collective((dt_net_algo)i) < DT_NUM_COLLS, "algo %d collective", i);
        EXPECT(!isnan(dt_net_cost((dt_net_algo)i, LINK(a, b), n, 8)), "algo %d costs", i);
    }
    EXPECT(strcmp(dt_net_algo_name(DT_NET_RING_ALLREDUCE), "ring_allreduce") == 0, "name");
    EXPECT(dt_net_algo_collective(DT_NET_TREE_ALLREDUCE) == DT_COLL_ALLREDUCE, "tree computes allreduce");
    EXPECT(strcmp(dt_coll_name(DT_COLL_REDUCE_SCATTER), "reduce_scatter") == 0, "coll name");
    EXPECT(strcmp(dt_net_algo_name(DT_NET_NUM_ALGOS), "?") == 0, "unknown algo name");
    EXPECT(isnan(dt_net_cost(DT_NET_NUM_ALGOS, LINK(a, b), n, 4)), "unknown algo costs NaN");
}

TEST(sim_bus_bandwidth, 1)
{
    EXPECT(dt_net_busbw_factor(DT_COLL_ALLREDUCE, 8) == 1.75, "allreduce 2*7/8");
    EXPECT(dt_net_busbw_factor(DT_COLL_ALLGATHER, 8) == 0.875, "allgather 7/8");
    EXPECT(dt_net_busbw_factor(DT_COLL_REDUCE_SCATTER, 4) == 0.75, "reduce-scatter 3/4");
    EXPECT(dt_net_busbw_factor(DT_COLL_ALLTOALL, 2) == 0.5, "alltoall 1/2");
    EXPECT(dt_net_busbw_factor(DT_COLL_BROADCAST, 8) == 1, "broadcast 1");
    EXPECT(dt_net_busbw_factor(DT_COLL_REDUCE, 8) == 1, "reduce 1");
    EXPECT(dt_net_busbw_factor(DT_COLL_SENDRECV, 8) == 1, "sendrecv 1");
    EXPECT(dt_net_busbw_factor(DT_COLL_BARRIER, 8) == 0, "a barrier moves no data");
    EXPECT(dt_net_busbw_factor(DT_COLL_ALLREDUCE, 1) == 0, "one rank moves nothing");
    EXPECT(dt_net_algbw(1e9, 0.5) == 2e9, "algbw");
    /* With no latency, a ring collective runs every link at full speed: busbw = beta. */
    const double beta = 12.5e9, n = 1 << 26;
    for (int k = 2; k <= 16; k++) {
        EXPECT_NEAR(dt_net_busbw(DT_COLL_ALLREDUCE, n, dt_net_ring_allreduce(LINK(0, beta), n, k), k), beta, 1e-12);
        EXPECT_NEAR(dt_net_busbw(DT_COLL_ALLGATHER, n, dt_net_ring_allgather(LINK(0, beta), n, k), k), beta, 1e-12);
    }
    EXPECT(isnan(dt_net_busbw_factor(DT_NUM_COLLS, 4)), "unknown collective");
    EXPECT(isnan(dt_net_algbw(1, 0)), "zero seconds");
}

TEST(sim_bad_arguments_give_nan_and_a_reason, 1)
{
    dt_clear_error();
    EXPECT(isnan(dt_net_ring_allreduce(LINK(1e-6, 0), 100, 4)), "beta = 0");
    EXPECT(strstr(dt_last_error(), "beta"), "names beta: '%s'", dt_last_error());
    EXPECT(isnan(dt_net_tree_allreduce(LINK(-1, 1e9), 100, 4)), "negative alpha");
    EXPECT(strstr(dt_last_error(), "alpha"), "names alpha: '%s'", dt_last_error());
    EXPECT(isnan(dt_net_p2p(LINK(1e-6, 1e9), -5)), "negative bytes");
    EXPECT(isnan(dt_net_linear_broadcast(LINK(1e-6, 1e9), 100, 0)), "K = 0");
    EXPECT(strstr(dt_last_error(), "K"), "names K: '%s'", dt_last_error());
    EXPECT(isnan(dt_net_ring_allreduce(&(dt_net){1e-6, 1e9, -1e-9}, 100, 4)), "negative gamma");
    EXPECT(strstr(dt_last_error(), "gamma"), "names gamma: '%s'", dt_last_error());
    EXPECT(isnan(dt_net_ring_allreduce(NULL, 100, 4)), "no link");
    /* an infinite bandwidth is the "none" network: only latency is left */
    EXPECT(dt_net_ring_allgather(LINK(1e-6, INFINITY), 100, 4) == 3e-6, "infinite beta");
    EXPECT(isnan(dt_net_cost(DT_NET_P2P, LINK(1e-6, 1e9), 100, 0)), "p2p through the table checks K");
}

/* gamma: the ring reduces (K-1) blocks of n/K on each rank's path, the tree
 * ceil(log2 K) whole buffers at the root, recursive doubling one per round
 * and one more for the fold. alpha = 2, beta = 4, gamma = 0.5, n = 32, K = 4
 * and 3: every figure an integer. */
TEST(net_gamma_terms_by_hand, 2)
{
    const dt_net l = {2, 4, 0.5};
    const double n = 32; /* n gamma = 16, n/K gamma = 4 (K = 4) */
    EXPECT(dt_net_ring_allreduce(&l, n, 4) == 24 + 12, "ring + 3 blocks reduced");
    EXPECT(dt_net_ring_reduce_scatter(&l, n, 4) == 12 + 12, "reduce-scatter + 3 blocks");
    EXPECT(dt_net_ring_allgather(&l, n, 4) == 12, "allgather reduces nothing");
    EXPECT(dt_net_tree_allreduce(&l, n, 4) == 40 + 2 * 16, "tree + 2 whole buffers");
    EXPECT(dt_net_recursive_doubling_allreduce(&l, n, 4) == 20 + 2 * 16, "rd + 2 rounds");
    EXPECT(dt_net_recursive_doubling_allreduce(&l, n, 3) == 30 + 2 * 16, "rd K=3: 3 rounds, "
           "2 reductions (fold, exchange)");
    /* naive: buffers arrive at 2 + 8 j; gamma (16) > n/beta (8): the root's
     * reductions are the bottleneck, w + (K-1) g = 8 + 48 = 56 after alpha */
    EXPECT(dt_net_naive_allreduce(&l, n, 4) == 2 + 56 + 2 + 24, "naive, reduction-bound: %g",
           dt_net_naive_allreduce(&l, n, 4));
    const dt_net fast = {2, 4, 0.125}; /* n gamma = 4 < n/beta: hidden but the last */
    EXPECT(dt_net_naive_allreduce(&fast, n, 4) == 2 + 24 + 4 + 2 + 24, "naive, link-bound: %g",
           dt_net_naive_allreduce(&fast, n, 4));
}

/* ---------------------------------------------------------------- links */

TEST(net_links_presets_and_strings, 2)
{
    dt_net l;
    EXPECT_OK(dt_net_link("alpha=2us,bw=10GB/s", &l));
    EXPECT(l.alpha == 2e-6 && l.beta == 10e9 && l.gamma == 0, "%g %g %g", l.alpha, l.beta,
           l.gamma);
    EXPECT_OK(dt_net_link("bw=100Gb/s", &l));
    EXPECT(l.alpha == 0 && l.beta == 12.5e9, "100 Gb/s is 12.5 GB/s: %g", l.beta);
    EXPECT_OK(dt_net_link("alpha=1.5ms", &l));
    EXPECT(l.alpha == 1.5e-3 && isinf(l.beta), "alpha only: %g %g", l.alpha, l.beta);
    EXPECT_OK(dt_net_link("alpha=1us,bw=1GB/s,gamma=0.25ns", &l));
    EXPECT_NEAR(l.gamma, 0.25e-9, 1e-12);
    EXPECT_OK(dt_net_link("ib100,gamma=1ns", &l));
    EXPECT(l.alpha == 1.5e-6 && l.beta == 12.5e9 && l.gamma == 1e-9, "a preset and gamma: "
           "%g %g %g", l.alpha, l.beta, l.gamma);
    EXPECT_OK(dt_net_link("eth10,alpha=5us", &l));
    EXPECT_NEAR(l.alpha, 5e-6, 1e-12);
    EXPECT(l.beta == 1.25e9, "a preset, alpha overridden: beta %g", l.beta);
    EXPECT_OK(dt_net_link(NULL, &l));
    EXPECT(l.alpha == 0 && isinf(l.beta) && l.gamma == 0, "no network: zero cost");
    EXPECT_OK(dt_net_link("", &l));
    EXPECT(l.alpha == 0 && isinf(l.beta), "empty: none");
    const char *names[] = {"nvlink", "pcie4", "ib100", "ib400", "eth10", "eth100"};
    for (int i = 0; i < 6; i++) {
        double a, b;
        EXPECT_OK(dt_net_preset(names[i], &a, &b));
        EXPECT(a > 0 && a < 1e-4 && b > 1e9 && b < 1e12, "%s: %g %g", names[i], a, b);
        EXPECT_OK(dt_net_link(names[i], &l));
        EXPECT(l.alpha == a && l.beta == b && l.gamma == 0, "%s: the presets give gamma 0",
               names[i]);
    }
    double a, b;
    EXPECT_OK(dt_net_parse("eth10", &a, &b));
    EXPECT(a == 30e-6 && b == 1.25e9, "eth10 %g %g", a, b);
    const char *bad[] = {"alpha=2parsecs", "bw=-1GB/s", "bw=0GB/s", "gamma=-1ns", "gamma=1GB/s",
                         "carrier-pigeon", "alpha=1us,", "alpha=1us,ib100", "ib100,,bw=1GB/s",
                         "alpha=nan", "alpha=inf"};
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        EXPECT_ERR(dt_net_link(bad[i], &l), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i]), "the message names '%s': '%s'", bad[i],
               dt_last_error());
    }
    EXPECT_ERR(dt_net_link("wifi", &l), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "unknown network preset 'wifi'"),
           "a name alone is a preset that does not exist: '%s'", dt_last_error());
    EXPECT_ERR(dt_net_preset("carrier-pigeon", &a, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_net_preset("alpha=1us", &a, &b), DT_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- one message */

/* THE RULE of dt/net.h on its worked example: K workers push n bytes into
 * rank 0 at time 0 (receives posted at 0): the last arrives at
 * alpha + K n/beta, every sender is done at n/beta. alpha = 1, beta = 1,
 * n = 10: a port is busy 10 per message. */
TEST(net_rule_pushes_queue_at_the_receiver, 2)
{
    const dt_net l = {1, 1, 0};
    for (int k = 1; k <= 6; k++) {
        for (int big = 0; big <= 1; big++) { /* eager and rendezvous: the same here */
            double n = big ? 2.0 * DT_NET_EAGER_MAX : 10, w = n;
            dt_net_ports server = {0, 0}, worker[6];
            double last = 0;
            for (int j = 0; j < k; j++) {
                worker[j] = (dt_net_ports){0, 0};
                double d = dt_net_depart(&l, &worker[j], 0, n);
                EXPECT(d == 0 && worker[j].send_free == w, "worker %d departs at %g", j, d);
                EXPECT(dt_net_sent(&l, d, 0, n) == w, "worker %d's send completes at n/beta", j);
                last = dt_net_arrive(&l, &server, d, 0, n);
                EXPECT(last == (j + 1) * w + 1, "message %d arrives at %g, expected %g", j, last,
                       (j + 1) * w + 1);
            }
            EXPECT(last == 1 + k * w, "K = %d: the server has the last push at %g = alpha + K "
                   "n/beta", k, last);
            EXPECT(server.recv_free == k * w, "its receive port was busy until %g", server.recv_free);
        }
    }
}

/* Steps 1, 2 and 5: a sender's port serves its sends in order; above the
 * eager limit a message waits for its receive to be posted, and so does the
 * sender's completion; an eager message does not. */
TEST(net_rule_send_port_and_rendezvous, 2)
{
    const dt_net l = {1, 1, 0};
    const double small = 100, big = DT_NET_EAGER_MAX + 1.0;
    dt_net_ports s = {0, 0}, r = {0, 0};
    double d1 = dt_net_depart(&l, &s, 0, small), d2 = dt_net_depart(&l, &s, 0, small);
    EXPECT(d1 == 0 && d2 == small, "the second send leaves when the first has: %g", d2);
    EXPECT(dt_net_depart(&l, &s, 500, small) == 500, "a later post leaves when posted");
    /* the receive is posted at 1000: an eager message is buffered... */
    EXPECT(dt_net_sent(&l, 0, 1000, small) == small, "eager: done at d + w");
    EXPECT(dt_net_arrive(&l, &r, 0, 1000, small) == small + 1, "eager: arrives at d + alpha + w "
           "(the receiver sees it when it looks)");
    /* ... a rendezvous one waits for it */
    r = (dt_net_ports){0, 0};
    EXPECT(dt_net_sent(&l, 0, 1000, big) == 1000 + big, "rendezvous: done at t_posted + w");
    EXPECT(dt_net_arrive(&l, &r, 0, 1000, big) == 1000 + 1 + big, "rendezvous: arrives at "
           "t_posted + alpha + w");
    EXPECT(r.recv_free == 1000 + big, "the receive port was busy from t_posted");
    /* the receive port serves in the receiver's order: a message that left
     * earlier still waits for the port */
    EXPECT(dt_net_arrive(&l, &r, 0, 0, small) == 1000 + big + small + 1, "queued behind the "
           "big one");
    /* an infinite bandwidth: ports are never busy, only alpha is left */
    const dt_net none = {0, INFINITY, 0};
    dt_net_ports p = {0, 0};
    EXPECT(dt_net_depart(&none, &p, 3, 1e9) == 3 && p.send_free == 3, "none: no port time");
    EXPECT(dt_net_arrive(&none, &p, 3, 0, 1e9) == 3, "none: arrives when sent");
}
