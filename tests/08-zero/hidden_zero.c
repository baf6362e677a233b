/* hidden_zero.c - lab 08's hidden tests: ranks as processes, other bucket
 * caps, another model, five ranks, another optimizer. */
#include "grader.h"
#include "zero_test.h"

/* The same on the proc backend: nothing a rank does may rely on the
 * others' memory being its own. */
TEST_HIDDEN_T(zero_on_proc_backend, 2, 30)
{
    dt_test_see("chapter 08, sections 3 to 5");
    for (lab_zero_stage s = LAB_ZERO_1; s <= LAB_ZERO_3; s++) {
        zero_run run = {ZT_SPEC, s, 0, 6, 2, ZT_PARAMS | ZT_MEAN | ZT_CALLS | ZT_MEMORY, 0};
        EXPECT_OK(zt_launch(3, DT_BACKEND_PROC, &run));
    }
}

/* Buckets of several layers, and one bucket of the whole model: the
 * transient gradients are those of the largest bucket. */
TEST_HIDDEN_T(zero2_bucket_caps, 1, 30)
{
    dt_test_see("chapter 08, section 4");
    static const size_t caps[] = {2000, 3000, (size_t)1 << 30};
    for (int i = 0; i < 3; i++) {
        zero_run run = {ZT_SPEC, LAB_ZERO_2, caps[i], 6, 2,
                        ZT_PARAMS | ZT_MEAN | ZT_CALLS | ZT_MEMORY | ZT_BYTES, 0};
        EXPECT_OK(zt_launch(4, DT_BACKEND_THREAD, &run));
    }
}

/* A deep MLP over more steps: 9 x 14 + 14 = 140, three blocks of 210,
 * 14 x 4 + 4 = 60, 830 in all. */
TEST_HIDDEN_T(zero_deep_mlp_six_steps, 1, 30)
{
    dt_test_see("chapter 08, sections 3 to 5");
    for (lab_zero_stage s = LAB_ZERO_DDP; s <= LAB_ZERO_3; s++) {
        zero_run run = {"deep:9,14,3,4", s, 0, 5, 6, ZT_PARAMS | ZT_MEAN | ZT_CALLS | ZT_BYTES,
                        0};
        EXPECT_OK(zt_launch(4, DT_BACKEND_THREAD, &run));
    }
}

/* Five ranks: 1285 = 5 x 257, but the layers (651, 544, 90) are not
 * multiples of 5 and stage 3 pads each. */
TEST_HIDDEN_T(zero_five_ranks, 1, 30)
{
    dt_test_see("chapter 08, section 6");
    for (lab_zero_stage s = LAB_ZERO_1; s <= LAB_ZERO_3; s++) {
        zero_run run = {ZT_SPEC, s, 0, 4, 2, ZT_PARAMS | ZT_MEAN | ZT_CALLS | ZT_MEMORY | ZT_BYTES,
                        0};
        EXPECT_OK(zt_launch(5, DT_BACKEND_THREAD, &run));
    }
}

/* SGD with momentum and weight decay instead of AdamW: each shard's
 * optimizer is the config's, its state a quarter of the parameters' bytes
 * (one float a parameter), and a gradient K times the mean moves the
 * parameters K times as far. */
TEST_HIDDEN_T(zero_with_sgd_momentum, 2, 30)
{
    dt_test_see("chapter 08, sections 2 to 5");
    for (lab_zero_stage s = LAB_ZERO_DDP; s <= LAB_ZERO_3; s++)
        for (int K = 2; K <= 3; K++) {
            zero_run run = {ZT_SPEC, s, 0, 6, 3,
                            ZT_PARAMS | ZT_MEAN | ZT_CALLS | ZT_MEMORY | ZT_BYTES, 1};
            EXPECT_OK(zt_launch(K, DT_BACKEND_THREAD, &run));
        }
}

/* Predict, then measure, in every stage: ZeRO-1 on 3 ranks over eth10,
 * ZeRO-2 in two buckets on 4 over ib100, ZeRO-3 of the deep MLP on 6 over
 * nvlink. */
TEST_HIDDEN_T(predict_every_stage_then_measure, 2, 30)
{
    dt_test_see("chapter 08, sections 6, 7 and 9");
    zt_expect_prediction(ZT_SPEC, LAB_ZERO_1, 0, 3, "eth10");
    zt_expect_prediction(ZT_SPEC, LAB_ZERO_2, 2000, 4, "ib100");
    zt_expect_prediction("deep:9,14,3,4", LAB_ZERO_3, 0, 6, "nvlink");
    dt_model m;
    dt_net link;
    lab_zero_cost c;
    lab_zero_config cfg = {LAB_ZERO_DDP, dt_adamw_config(0.01f), 0, NULL, NULL};
    EXPECT_OK(dt_model_create_spec(&m, ZT_SPEC, ZT_SEED));
    EXPECT_OK(dt_net_link("ib100", &link));
    EXPECT_ERR(lab_zero_predict(&m, &cfg, 2, &link, &c), DT_ERR_INVALID_ARG);
    cfg.stage = LAB_ZERO_2;
    EXPECT_ERR(lab_zero_predict(&m, &cfg, 0, &link, &c), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
}
