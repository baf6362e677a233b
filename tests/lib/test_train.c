/* test_train.c - the single-rank trainer: the MLP learns the real digits,
 * the fused SGD path learns too, a tiny GPT learns the sequence task. */
#include "grader.h"
#include "dt/data.h"

#include <string.h>

TEST_T(train_mlp_on_digits_reaches_95_percent, 3, 20)
{
    dt_dataset all, train, test;
    EXPECT_OK(dt_data_load_digits(&all, NULL));
    EXPECT_OK(dt_data_split(&all, 0.2, 1, &train, &test));
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:64,128,10", 1));
    dt_train_config c = dt_train_defaults();
    c.batch = 32;
    c.steps = 600; /* about 13 epochs */
    c.optim = dt_sgd_config(0.05f, 0.9f, 0);
    c.time_budget_s = 10;
    dt_train_result r;
    double t0 = dt_now();
    EXPECT_OK(dt_train(&m, &train, &test, &c, &r));
    double secs = dt_now() - t0;
    dt_log("digits: %ld steps in %.2f s, loss %.4f, test accuracy %.4f, %.3f ms/step", r.steps,
           secs, (double)r.final_loss, (double)r.accuracy, r.step_ms_median);
    EXPECT(r.accuracy >= 0.95f, "test accuracy %.4f < 0.95 after %ld steps", (double)r.accuracy,
           r.steps);
    EXPECT(secs < 10.5, "took %.1f s", secs);
    EXPECT(r.final_loss < 0.2f, "final loss %g", (double)r.final_loss);
    dt_model_free(&m);
    dt_dataset_free(&all), dt_dataset_free(&train), dt_dataset_free(&test);
}

TEST(train_fused_sgd_and_adamw_learn_blobs, 1)
{
    dt_dataset train, test;
    EXPECT_OK(dt_data_blobs(&train, 512, 8, 4, 3, 2, 0));
    EXPECT_OK(dt_data_blobs(&test, 256, 8, 4, 3, 2, 1)); /* same centres, other samples */
    for (int k = 0; k < 2; k++) {
        dt_model m;
        EXPECT_OK(dt_model_create_spec(&m, "mlp:8,32,4", 3));
        dt_train_config c = dt_train_defaults();
        c.steps = 150;
        if (k == 0) {
            c.optim = dt_sgd_config(0.1f, 0, 0);
            c.fused_sgd = 1;
            dt_model_free_grads(&m); /* the fused path needs no gradient buffer */
        } else {
            c.optim = dt_adamw_config(0.01f);
        }
        dt_train_result r;
        EXPECT_OK(dt_train(&m, &train, &test, &c, &r));
        EXPECT(r.accuracy > 0.9f, "%s: accuracy %g", k ? "AdamW" : "fused SGD",
               (double)r.accuracy);
        EXPECT(r.steps == 150 && r.step_ms_median > 0 && r.samples_per_s > 0, "timings");
        dt_model_free(&m);
    }
    dt_dataset_free(&train), dt_dataset_free(&test);
}

TEST(train_gpt_learns_sequences, 2)
{
    dt_dataset train, test;
    EXPECT_OK(dt_data_sequences(&train, 256, 8, 16, 1, 0));
    EXPECT_OK(dt_data_sequences(&test, 64, 8, 16, 1, 1));
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "gpt:16,8,1,2,16", 1));
    float acc0;
    EXPECT_OK(dt_evaluate(&m, &test, 64, &acc0, NULL));
    dt_train_config c = dt_train_defaults();
    c.batch = 8;
    c.steps = 150;
    c.optim = dt_adamw_config(2e-2f);
    c.optim.weight_decay = 0;
    dt_train_result r;
    EXPECT_OK(dt_train(&m, &train, &test, &c, &r));
    /* the first token of a sequence is random and the second needs the
     * stride: at best 6 of 8 targets are certain; learning shows well above
     * chance (1/16) */
    EXPECT(r.accuracy > 0.6f, "token accuracy %g (before training %g)", (double)r.accuracy,
           (double)acc0);
    dt_model_free(&m);
    dt_dataset_free(&train), dt_dataset_free(&test);
}

TEST(train_rejects_bad_input, 1)
{
    dt_dataset d;
    EXPECT_OK(dt_data_blobs(&d, 20, 3, 2, 1, 1, 0));
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:4,5,2", 1));
    dt_train_config c = dt_train_defaults();
    dt_train_result r;
    EXPECT_ERR(dt_train(&m, &d, NULL, &c, &r), DT_ERR_INVALID_ARG); /* 3 features, 4 inputs */
    EXPECT(strstr(dt_last_error(), "3 features"), "message: %s", dt_last_error());
    dt_model_free(&m);
    EXPECT_OK(dt_model_create_spec(&m, "mlp:3,5,2", 1));
    c.batch = 21;
    EXPECT_ERR(dt_train(&m, &d, NULL, &c, &r), DT_ERR_INVALID_ARG);
    c.batch = 4;
    c.fused_sgd = 1; /* with momentum: refused */
    EXPECT_ERR(dt_train(&m, &d, NULL, &c, &r), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "plain SGD"), "message: %s", dt_last_error());
    dt_model_free(&m);
    dt_dataset_free(&d);
}
