/* test_predict.c - lab 13, task (d): the predicted step time of the tiny
 * GPT's 3D run against the emulator's modeled clock, for layouts of 8
 * ranks on two nodes of 4 joined by a slower link (chapter 13, section 9).
 * The run builds its ranks with your lab_rank_init (task b). */
#include "grader.h"
#include "threed.h"

#include <math.h>
#include <stdio.h>

/* Two nodes of 4; inside a node 2 us and 20 GB/s, between them 20 us and
 * 1 GB/s: TP inside a node is cheap, a group across nodes is not. */
#define NET "nodes=2,per_node=4,intra.alpha=2us,intra.bw=20GB/s,inter.alpha=20us,inter.bw=1GB/s"

static const dt_gpt_config cfg = {32, 8, 6, 4, 32}; /* 8 layers with the ends */
enum { B = 2, M = 4 };

/* The blocks 20 us forward and 40 us back; the embedding 5 and 10 us, the
 * head 20 and 40: compute about as long as the communication. */
static void times(double *f, double *b)
{
    for (int l = 0; l < 8; l++)
        f[l] = 20e-6, b[l] = 40e-6;
    f[0] = 5e-6, b[0] = 10e-6;
}

static void check(int tp, int pp, int dp)
{
    double f[8], b[8], got = 0, want = 0, wall = 0;
    times(f, b);
    lab_step_work w;
    dt_net_topo topo;
    EXPECT_OK(dt_net_topo_parse(NET, &topo));
    EXPECT_OK(lab_step_work_gpt(&w, &cfg, tp, B, M, f, b));
    EXPECT_OK(lab_measure_step(&cfg, B, M, f, b, tp, pp, dp, NET, &want, &wall));
    EXPECT_OK(lab_predict_step(&w, tp, pp, dp, &topo, &got));
    EXPECT(fabs(got - want) <= 0.10 * want,
           "TP %d x PP %d x DP %d: predicted %.4g ms, the emulator's clock %.4g ms (%.1f%% off; "
           "10%% allowed)", tp, pp, dp, got * 1e3, want * 1e3, 100 * (got - want) / want);
    printf("measured: TP %d x PP %d x DP %d: predicted %.4g ms, modeled %.4g ms (%+.1f%%)\n", tp,
           pp, dp, got * 1e3, want * 1e3, 100 * (got - want) / want);
}

TEST_T(predict_data_and_tensor_parallel, 2, 30)
{
    dt_test_see("chapter 13, section 9");
    check(1, 1, 8);
    check(2, 1, 4);
    check(4, 1, 2);
}

TEST_T(predict_pipelines, 2, 30)
{
    dt_test_see("chapter 13, section 9");
    check(1, 2, 4);
    check(1, 4, 2);
    check(1, 8, 1);
}

TEST_T(predict_3d, 2, 30)
{
    dt_test_see("chapter 13, section 9");
    check(2, 2, 2);
    check(2, 4, 1);
    check(4, 2, 1);
}
