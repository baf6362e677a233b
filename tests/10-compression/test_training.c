/* test_training.c - lab 10 in training: the digits MLP on 4 ranks with
 * each compressor and error feedback ends within 2 points of the
 * uncompressed accuracy, and top-k at 1% without feedback measurably below;
 * on 10 Gb Ethernet (modeled) every compressor shortens the step; a run
 * checkpointed mid-way and resumed in a new process gives the parameters
 * of a run that never stopped, bit for bit (chapter 10, sections 5 to 7). The runs are
 * deterministic: fixed seeds, and reductions in rank order. */
#include "cmp_test.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ convergence */

TEST_T(sign_with_feedback_trains_digits, 3, 60)
{
    dt_test_see("chapter 10, section 5");
    cmp_expect_within_two_points((lab_compress_config){LAB_SIGN, 1, 0, 0, 0}, NULL, NULL);
}

TEST_T(int8_with_feedback_trains_digits, 2, 60)
{
    dt_test_see("chapter 10, section 5");
    cmp_expect_within_two_points((lab_compress_config){LAB_INT8, 1, 0, 0, 0}, NULL, NULL);
}

/* Top-k keeps 1% of the gradient. With feedback the other 99% arrive
 * later; without, most of them never do. */
TEST_T(topk_needs_error_feedback, 4, 60)
{
    dt_test_see("chapter 10, section 5");
    float dense, with_ef;
    lab_compress_config cc = {LAB_TOPK, 1, 0.01, 0, 0};
    cmp_expect_within_two_points(cc, &dense, &with_ef);
    cmp_digits_run run = {cc, CMP_DIGITS_RANKS, CMP_DIGITS_STEPS, 0, 0};
    run.cc.error_feedback = 0;
    EXPECT_OK(cmp_train_digits(&run));
    dt_log("top-k 1%%: %.4f with error feedback, %.4f without", (double)with_ef,
           (double)run.accuracy);
    EXPECT(run.accuracy <= with_ef - 0.05f, "top-k at 1%% without error feedback reaches "
           "%.2f%%, with it %.2f%%: expected at least 5 points less without",
           100.0 * run.accuracy, 100.0 * with_ef);
}

/* ------------------------------------------------------------ the modeled step */

/* mlp:64,512,512,10: 300 K parameters, 1.2 MB of gradient. On eth10 its
 * ring allreduce on 4 ranks takes about 6 x (30 us + 300 KB / 1.25 GB/s),
 * 1.6 ms, far above the latency the compressed exchanges add. */
#define STEP_SPEC "mlp:64,512,512,10"

typedef struct {
    lab_compress_config cc;
    double step_s[CMP_MAX_RANKS]; /* modeled time of the second step */
} step_run;

static dt_result step_rank(dt_comm *w, void *arg)
{
    step_run *run = arg;
    int rank = dt_comm_rank(w);
    dt_dataset d = {0};
    dt_model m = {0};
    lab_cdp c;
    DT_CHECK(dt_data_blobs(&d, 512, 64, 10, 2.0f, 5, 0));
    dt_result r = dt_model_create_spec(&m, STEP_SPEC, 2);
    if (r == DT_OK)
        r = lab_cdp_init(&c, w, &m, &run->cc, NULL);
    if (r == DT_OK) {
        r = lab_cdp_train(&c, &d, 16, 1, 1, NULL);
        double t0 = dt_clock(w);
        if (r == DT_OK)
            r = lab_cdp_train(&c, &d, 16, 1, 2, NULL);
        run->step_s[rank] = dt_clock(w) - t0;
        lab_cdp_free(&c);
    }
    dt_model_free(&m);
    dt_dataset_free(&d);
    return r;
}

static double modeled_step(lab_compress_config cc)
{
    step_run run;
    memset(&run, 0, sizeof run);
    run.cc = cc;
    EXPECT_OK(cmp_launch(4, "eth10", step_rank, &run));
    double worst = 0;
    for (int r = 0; r < 4; r++)
        worst = run.step_s[r] > worst ? run.step_s[r] : worst;
    return worst;
}

TEST_T(compression_shortens_the_step_on_eth10, 3, 60)
{
    dt_test_see("chapter 10, section 1");
    double dense = modeled_step((lab_compress_config){LAB_DENSE, 0, 0, 0, 0});
    EXPECT(dense > 1e-3, "the uncompressed step of %s on eth10 takes %.3f ms (modeled): "
           "expected the ring's 1.6 ms or more", STEP_SPEC, dense * 1e3);
    lab_compress_config cc[3] = {{LAB_SIGN, 1, 0, 0, 0}, {LAB_TOPK, 1, 0.01, 0, 0},
                                 {LAB_INT8, 1, 0, 0, 0}};
    for (int i = 0; i < 3; i++) {
        double t = modeled_step(cc[i]);
        dt_log("eth10, %s: %.3f ms modeled, uncompressed %.3f ms", lab_method_name(cc[i].method),
               t * 1e3, dense * 1e3);
        EXPECT(t < 0.6 * dense, "%s on eth10: a step of %.3f ms (modeled), the uncompressed "
               "one %.3f ms: expected well under (at most 60%% of it)",
               lab_method_name(cc[i].method), t * 1e3, dense * 1e3);
    }
}

/* ------------------------------------------------------------ checkpoints */

/* 12 steps straight, or 6, a checkpoint (its records checked against
 * compress.h's list), and in a NEW PROCESS the checkpoint loaded into a
 * model made from another seed and 6 more steps: the parameters must be
 * the same bits. SGD with momentum, so the optimizer's state matters too. */
TEST_T(checkpoint_resumes_bit_identical, 4, 60)
{
    dt_test_see("chapter 10, section 7");
    dt_optim_config sgd = dt_sgd_config(0.05f, 0.9f, 0);
    cmp_ckpt_run runs[3] = {{{LAB_TOPK, 1, 0.05, 0, 0}, sgd, 6, 12},
                            {{LAB_SIGN, 1, 0, 0, 0}, sgd, 6, 12},
                            {{LAB_INT8, 1, 0, 0, 0}, sgd, 6, 12}};
    cmp_ckpt_resume_test("checkpoint_resumes_bit_identical", runs, 3);
}
