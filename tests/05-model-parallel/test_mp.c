/* test_mp.c - lab 05: model parallelism. The partition against a brute
 * force; the bytes formula against the cuts; the multi-rank tests train
 * with the lab inside dt_launch and check, inside the ranks, the loss and
 * every rank's gradients against one rank with the whole model, and the
 * messages each rank sent (dt_comm_stats); the utilisation on the modeled
 * clock. */
#include "grader.h"
#include "mp_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ task 1 */

/* The largest stage cost of first[0..K] over cost, after checking that it
 * is a split of the L layers into K non-empty contiguous stages. */
static double largest_stage(const double *cost, int L, int K, const int *first)
{
    EXPECT(first[0] == 0 && first[K] == L, "L=%d K=%d: first[0] = %d and first[K] = %d, expected "
           "0 and %d", L, K, first[0], first[K], L);
    double worst = 0;
    for (int k = 0; k < K; k++) {
        EXPECT(first[k] < first[k + 1], "L=%d K=%d: stage %d is [%d, %d), empty or reversed", L,
               K, k, first[k], first[k + 1]);
        double s = 0;
        for (int l = first[k]; l < first[k + 1]; l++)
            s += cost[l];
        worst = fmax(worst, s);
    }
    return worst;
}

/* The smallest largest stage over every split of layers [from, L) into k
 * stages, by trying every first cut. */
static double brute_force(const double *cost, int from, int L, int k)
{
    if (k == 1) {
        double s = 0;
        for (int l = from; l < L; l++)
            s += cost[l];
        return s;
    }
    double best = INFINITY, head = 0;
    for (int cut = from + 1; cut <= L - (k - 1); cut++) {
        head += cost[cut - 1];
        best = fmin(best, fmax(head, brute_force(cost, cut, L, k - 1)));
    }
    return best;
}

static void expect_optimal(const double *cost, int L, int K)
{
    int first[LAB_MP_MAX_LAYERS + 1];
    EXPECT_OK(lab_mp_partition(cost, L, K, first));
    double got = largest_stage(cost, L, K, first), want = brute_force(cost, 0, L, K);
    EXPECT(got == want, "L=%d K=%d: your largest stage costs %g, the best split's %g (costs %g "
           "%g %g ...)", L, K, got, want, cost[0], L > 1 ? cost[1] : 0, L > 2 ? cost[2] : 0);
}

TEST(partition_equal_costs, 2)
{
    dt_test_see("chapter 05, section 5");
    double cost[10];
    for (int l = 0; l < 10; l++)
        cost[l] = 1;
    for (int K = 1; K <= 4; K++) {
        int first[11];
        EXPECT_OK(lab_mp_partition(cost, 10, K, first));
        double got = largest_stage(cost, 10, K, first);
        EXPECT(got == (10 + K - 1) / K, "10 equal layers on %d stages: the largest has %g "
               "layers, expected %d", K, got, (10 + K - 1) / K);
    }
    expect_optimal(cost, 7, 7); /* K = L: one layer each */
}

TEST(partition_skewed_costs_against_brute_force, 3)
{
    dt_test_see("chapter 05, section 5");
    double cost[9];
    for (int trial = 0; trial < 40; trial++) {
        int L = 1 + trial % 9;
        for (int l = 0; l < L; l++) /* integer costs 0..12 */
            cost[l] = (double)((l * 5 + trial * 7 + (l * trial) % 4) % 13);
        for (int K = 1; K <= L; K++)
            expect_optimal(cost, L, K);
    }
    int first[12];
    EXPECT_ERR(lab_mp_partition(cost, 3, 4, first), DT_ERR_INVALID_ARG); /* K > L */
    EXPECT_ERR(lab_mp_partition(cost, 3, 0, first), DT_ERR_INVALID_ARG);
}

/* ------------------------------------------------------------ task 2 */

static void expect_bytes(const char *spec, mp_placement p, size_t B)
{
    dt_model m;
    int owner[LAB_MP_MAX_LAYERS];
    EXPECT_OK(dt_model_create_spec(&m, spec, 1));
    for (int K = 1; K <= 4; K++) {
        mp_test_placement(p, m.num_layers, K, owner);
        for (int rank = 0; rank < K; rank++) {
            uint64_t got = 0, msgs, want;
            mp_expected_traffic(&m, owner, rank, B, &msgs, &want);
            EXPECT_OK(lab_mp_bytes_sent(&m, owner, rank, B, &got));
            EXPECT(got == want, "%s, %s on %d ranks, batch %zu: rank %d sends %llu bytes per "
                   "step, your formula says %llu", spec, mp_placement_name(p), K, B,
                   rank, (unsigned long long)want, (unsigned long long)got);
        }
    }
    dt_model_free(&m);
}

TEST(bytes_formula_contiguous_and_round_robin, 2)
{
    dt_test_see("chapter 05, section 3");
    expect_bytes("deep:12,16,5,4", MP_CONTIGUOUS, 3);
    expect_bytes("deep:12,16,5,4", MP_ROUND_ROBIN, 3);
    expect_bytes("mlp:12,16,8,6,4", MP_ROUND_ROBIN, 5); /* cuts of different widths */
}

/* ------------------------------------------------------------ tasks 3, 4 */

TEST_T(forward_backward_equal_one_rank, 4, 30)
{
    dt_test_see("chapter 05, section 2");
    static const char *const specs[2] = {"deep:12,16,5,4", "deep:12,16,8,4"}; /* L = 7, 10 */
    for (int s = 0; s < 2; s++)
        for (int p = MP_CONTIGUOUS; p <= MP_ROUND_ROBIN; p++)
            for (int K = 1; K <= 4; K++) {
                mp_run run = {specs[s], (mp_placement)p, 6, 1, 1e-5, NULL, 0, 0, 0, NULL};
                EXPECT_OK(mp_launch(K, DT_BACKEND_THREAD, &run));
            }
}

/* ------------------------------------------------------------ utilisation */

/* Equal layers (forward 1 ms, backward 2 ms) and a free network: K equal
 * stages, one busy at a time. U = sum of busy time / (K x step). */
static dt_result utilisation_rank(dt_comm *world, void *arg)
{
    (void)arg;
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    dt_model m = {0};
    int owner[LAB_MP_MAX_LAYERS];
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    lab_mp_cost cost = {f, b};
    dt_optim_config cfg = dt_sgd_config(0.1f, 0, 0);
    lab_mp mp;
    float x[4 * 6];
    int32_t y[4];
    DT_CHECK(dt_model_create_spec(&m, "deep:6,8,6,3", 1)); /* 8 layers */
    mp_test_placement(MP_CONTIGUOUS, m.num_layers, K, owner);
    float busy = 0, sums[2], mine[2];
    for (int l = 0; l < m.num_layers; l++) {
        f[l] = 1e-3, b[l] = 2e-3;
        busy += owner[l] == rank ? 3.0f : 0.0f; /* ms */
    }
    mp_batch(4, 6, 3, 0, x, y);
    dt_result r = lab_mp_init(&mp, world, &m, owner, 4, &cfg, &cost);
    if (r == DT_OK) {
        r = lab_mp_step(&mp, x, y, NULL);
        lab_mp_free(&mp);
    }
    mine[0] = busy, mine[1] = (float)(dt_clock(world) * 1e3);
    if (r == DT_OK)
        r = dt_allreduce(&mine[0], &sums[0], 1, DT_F32, DT_SUM, world);
    if (r == DT_OK)
        r = dt_allreduce(&mine[1], &sums[1], 1, DT_F32, DT_MAX, world);
    double U = sums[1] > 0 ? sums[0] / (K * sums[1]) : 0;
    if (r == DT_OK && !(fabs(U - 1.0 / K) <= 0.02 / K))
        r = dt_fail(DT_ERR_MISMATCH, "%d equal stages: busy %.3f ms of %d x %.3f ms, "
                    "utilisation %.4f, expected 1/K = %.4f", K, (double)sums[0], K,
                    (double)sums[1], U, 1.0 / K);
    dt_model_free(&m);
    return r;
}

TEST(utilisation_is_one_over_K, 2)
{
    dt_test_see("chapter 05, section 4");
    for (int K = 1; K <= 4; K *= 2) {
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = K;
        o.net = "none";
        o.timeout_s = 5;
        EXPECT_OK(dt_launch(&o, utilisation_rank, NULL));
    }
}

/* ------------------------------------------------------------ task 5: predict, then measure */

/* Your prediction against the modeled clock of your forward and backward:
 * cuts of three widths (16, 8, 6), placed three ways on 3 ranks, on eth10.
 * Hidden tests hold the prediction to the formulas on models and
 * placements no run here makes. */
TEST_T(predict_then_measure_step, 3, 30)
{
    dt_test_see("chapter 05, sections 3 and 4");
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    lab_mp_cost cost = {f, b};
    dt_model m = {0};
    dt_net eth10;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:12,16,8,6,4", MP_MODEL_SEED));
    EXPECT_OK(dt_net_link("eth10", &eth10));
    for (int l = 0; l < m.num_layers; l++)
        f[l] = 1e-3, b[l] = 2e-3; /* mp_run's costs: the same for every layer */
    for (int p = MP_CONTIGUOUS; p <= MP_SCATTERED; p++) {
        int owner[LAB_MP_MAX_LAYERS];
        double got = -1;
        char what[160];
        mp_test_placement((mp_placement)p, m.num_layers, 3, owner);
        EXPECT_OK(lab_mp_predict_step(&m, owner, 40, &cost, &eth10, &got));
        snprintf(what, sizeof what, "%s on 3 ranks, batch 40, on eth10: lab_mp_predict_step "
                 "says", mp_placement_name((mp_placement)p));
        mp_run run = {"mlp:12,16,8,6,4", (mp_placement)p, 40, 1, 1e-5, "eth10", 1e-3, 2e-3, got,
                      what};
        EXPECT_OK(mp_launch(3, DT_BACKEND_THREAD, &run));
    }
    double s = -1;
    EXPECT_ERR(lab_mp_predict_step(&m, (int[4]){0, 0, 1, 1}, 0, &cost, &eth10, &s),
               DT_ERR_INVALID_ARG);
    EXPECT(s == -1, "a refused prediction wrote %g to *step_s", s);
    dt_model_free(&m);
}
