/* hidden_mp.c - lab 05, staff tests: the chapter's worked partition,
 * training over several steps with processes as ranks, the modeled step
 * time of both placements on a real link, layer counts K does not divide
 * on every rank count, and a placement where the next layer's owner is
 * not the next rank. */
#include "grader.h"
#include "mp_test.h"

#include <math.h>

/* Section 5's example: deep:64,512,8,10 by multiply-adds, on 4 stages the
 * balanced split's largest stage is 557,056 (3, 2, 2, 3 layers), not the
 * 786,432 of equal counts. */
TEST_HIDDEN(partition_worked_example, 1)
{
    dt_test_see("chapter 05, section 5");
    double cost[10] = {32768, 0, 0, 0, 0, 0, 0, 0, 0, 5120};
    for (int l = 1; l <= 8; l++)
        cost[l] = 262144;
    int first[5];
    EXPECT_OK(lab_mp_partition(cost, 10, 4, first));
    double worst = 0;
    for (int k = 0; k < 4; k++) {
        double s = 0;
        EXPECT(first[k] < first[k + 1], "deep:64,512,8,10 on 4 stages: stage %d is [%d, %d), "
               "empty", k, first[k], first[k + 1]);
        for (int l = first[k]; l < first[k + 1]; l++)
            s += cost[l];
        worst = fmax(worst, s);
    }
    EXPECT(first[0] == 0 && first[4] == 10 && worst == 557056, "the largest stage costs %g "
           "multiply-adds, the balanced split's 557056", worst);
}

/* Three steps of SGD with momentum: every rank's layers end with the
 * parameters of one rank, also when ranks are processes. */
TEST_HIDDEN_T(training_equals_one_rank_proc, 2, 40)
{
    dt_test_see("chapter 05, section 2");
    for (int p = MP_CONTIGUOUS; p <= MP_ROUND_ROBIN; p++) {
        mp_run run = {"deep:12,16,5,4", (mp_placement)p, 5, 3, 1e-5, NULL, 0, 0, 0, NULL};
        EXPECT_OK(mp_launch(3, DT_BACKEND_PROC, &run));
    }
}

/* The step is the sum of every layer's work and of the messages on the
 * chain: sum (T_F + T_B) + (messages on the path) (alpha + n / beta), with
 * 2 (K-1) messages for contiguous stages and 2 (L-1) for round-robin. */
TEST_HIDDEN_T(modeled_step_time_on_eth10, 2, 30)
{
    dt_test_see("chapter 05, section 4");
    const double alpha = 30e-6, beta = 1.25e9, t_f = 1e-3, t_b = 2e-3;
    const int L = 7, K = 4;
    const size_t B = 8;
    double msg = alpha + (double)(B * 16 * 4) / beta; /* every cut of deep:12,16,5,4 is 16 wide */
    for (int p = MP_CONTIGUOUS; p <= MP_ROUND_ROBIN; p++) {
        int cuts = p == MP_CONTIGUOUS ? K - 1 : L - 1;
        mp_run run = {"deep:12,16,5,4", (mp_placement)p, B, 1, 1e-5, "eth10", t_f, t_b,
                      L * (t_f + t_b) + 2 * cuts * msg, NULL};
        EXPECT_OK(mp_launch(K, DT_BACKEND_THREAD, &run));
    }
}

/* More layer counts against rank counts, 2 steps. */
TEST_HIDDEN_T(layer_counts_not_divisible, 2, 40)
{
    dt_test_see("chapter 05, section 2");
    static const char *const specs[3] = {"deep:12,16,3,4", "deep:12,16,4,4", "mlp:12,16,8,6,4"};
    for (int s = 0; s < 3; s++)
        for (int K = 2; K <= 4; K++) {
            mp_run run = {specs[s], (mp_placement)(K % 2), 4, 2, 1e-5, NULL, 0, 0, 0, NULL};
            EXPECT_OK(mp_launch(K, DT_BACKEND_THREAD, &run));
        }
}

/* Any placement (section 2): layers go to the owner of the next layer,
 * whoever it is. The scattered placement sends to lower ranks, wraps
 * around, and gives a rank segments of two lengths (mp_test.h); the bytes
 * formula, the gradients, the loss and each rank's messages. */
TEST_HIDDEN_T(any_placement_equals_one_rank, 2, 40)
{
    dt_test_see("chapter 05, sections 2 and 3");
    static const char *const specs[2] = {"deep:12,16,5,4", "deep:12,16,8,4"}; /* L = 7, 10 */
    for (int s = 0; s < 2; s++) {
        dt_model m;
        int owner[LAB_MP_MAX_LAYERS];
        EXPECT_OK(dt_model_create_spec(&m, specs[s], 1));
        for (int K = 2; K <= 4; K++) {
            mp_test_placement(MP_SCATTERED, m.num_layers, K, owner);
            for (int rank = 0; rank < K; rank++) {
                uint64_t got = 0, msgs, want;
                mp_expected_traffic(&m, owner, rank, 3, &msgs, &want);
                EXPECT_OK(lab_mp_bytes_sent(&m, owner, rank, 3, &got));
                EXPECT(got == want, "%s, scattered on %d ranks, batch 3: rank %d sends %llu "
                       "bytes per step, your formula says %llu", specs[s], K, rank,
                       (unsigned long long)want, (unsigned long long)got);
            }
            mp_run run = {specs[s], MP_SCATTERED, 6, 1, 1e-5, NULL, 0, 0, 0, NULL};
            EXPECT_OK(mp_launch(K, DT_BACKEND_THREAD, &run));
        }
        dt_model_free(&m);
    }
}

/* ------------------------------------------------------------ predict: the formulas */

/* Sections 3 and 4, written here apart from the lab: every layer's work,
 * and two messages per cut (the activation forward, its gradient back),
 * each alpha + n / beta. */
static double formula_step(const dt_model *m, const int *owner, size_t B, const double *f,
                           const double *b, const dt_net *link)
{
    double t = 0;
    for (int l = 0; l < m->num_layers; l++) {
        t += f[l] + b[l];
        if (l + 1 < m->num_layers && owner[l] != owner[l + 1])
            t += 2 * (link->alpha + dt_net_wire(link, 4.0 * (double)B * m->layers[l].out_width));
    }
    return t;
}

/* Cuts of different widths, layers of different costs, placements the
 * chapter does not work out. */
TEST_HIDDEN(hidden_predict_step_against_the_formulas, 2)
{
    dt_test_see("chapter 05, sections 3 and 4");
    static const char *const specs[] = {"mlp:12,16,8,6,4", "deep:12,24,5,4", "mlp:64,40,30,20,10"};
    static const char *const nets[] = {"eth10", "ib100", "alpha=3us,bw=400MB/s", "none"};
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    for (int l = 0; l < LAB_MP_MAX_LAYERS; l++)
        f[l] = (1 + l % 3) * 1e-4, b[l] = (2 + l % 4) * 1e-4;
    lab_mp_cost cost = {f, b};
    for (size_t s = 0; s < sizeof specs / sizeof *specs; s++) {
        dt_model m = {0};
        EXPECT_OK(dt_model_create_spec(&m, specs[s], 1));
        for (size_t n = 0; n < sizeof nets / sizeof *nets; n++) {
            dt_net link;
            EXPECT_OK(dt_net_link(nets[n], &link));
            for (int p = MP_CONTIGUOUS; p <= MP_SCATTERED; p++)
                for (int K = 1; K <= 4; K++) {
                    int owner[LAB_MP_MAX_LAYERS];
                    size_t B = 3 + (size_t)K * 5;
                    mp_test_placement((mp_placement)p, m.num_layers, K, owner);
                    double got = -1, want = formula_step(&m, owner, B, f, b, &link);
                    EXPECT_OK(lab_mp_predict_step(&m, owner, B, &cost, &link, &got));
                    EXPECT(fabs(got - want) <= 1e-9 * want, "%s, %s on %d ranks, batch %zu, on "
                           "%s: lab_mp_predict_step says %.4f us, sections 3 and 4 give %.4f us",
                           specs[s], mp_placement_name((mp_placement)p), K, B, nets[n],
                           got * 1e6, want * 1e6);
                }
        }
        dt_model_free(&m);
    }
}
