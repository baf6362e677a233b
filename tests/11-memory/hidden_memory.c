/* hidden_memory.c - lab 11, hidden tests: training the digits MLP in fp16
 * with the scaler and in bf16 without one, against fp32 (chapter 11,
 * sections 3 and 4); the selector's plan run on a real deep MLP, measured
 * within its budget (section 7). */
#include "grader.h"
#include "memory_test.h"

#include "dt/data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The digits MLP 64-128-10, SGD (lr 0.05, momentum 0.9), batch 32, 600
 * steps (13 epochs) from the same initial model and the same batches:
 * fp32 through the library's loop; 16-bit through the same loop with the
 * lab's hooks. Accuracy of the master weights on the test fifth. */
static float train_digits(const dt_dataset *train, const dt_dataset *test, dt_dtype t,
                          const lab_scaler_config *sc, lab_scaler *s)
{
    dt_model m;
    dt_trainer tr;
    lab_mp mp;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.05f, 0.9f, 0);
    EXPECT_OK(dt_model_create_spec(&m, "mlp:64,128,10", 1));
    EXPECT_OK(dt_trainer_init(&tr, &m, NULL, &tc));
    if (t != DT_F32) {
        EXPECT_OK(lab_scaler_init(s, sc));
        EXPECT_OK(lab_mp_create(&mp, &m, t, 32, &tc.optim));
        EXPECT_OK(lab_mp_use_in_trainer(&tr, &mp, s));
    }
    dt_train_config c = dt_train_defaults();
    c.batch = 32;
    c.steps = 600;
    c.report_every = 0;
    c.test = test;
    dt_train_result r;
    EXPECT_OK(dt_train(&tr, train, &c, &r));
    dt_trainer_free(&tr);
    if (t != DT_F32)
        lab_mp_free(&mp);
    dt_model_free(&m);
    return r.accuracy;
}

TEST_HIDDEN_T(hidden_fp16_and_bf16_train_digits_within_a_point, 3, 60)
{
    dt_test_see("chapter 11, sections 3 and 4");
    dt_dataset all, train, test;
    EXPECT_OK(dt_data_load_digits(&all, NULL));
    EXPECT_OK(dt_data_split(&all, 0.2, 1, &train, &test));
    lab_scaler s16, sb16;
    lab_scaler_config grad = lab_gradscaler_config(), one = lab_constant_config(1);
    float a32 = train_digits(&train, &test, DT_F32, NULL, NULL);
    float a16 = train_digits(&train, &test, DT_F16, &grad, &s16);
    float ab16 = train_digits(&train, &test, DT_BF16, &one, &sb16);
    EXPECT(a32 >= 0.95f, "fp32 (the baseline of the 16-bit runs): test accuracy %.4f after "
           "600 steps, expected at least 0.95", (double)a32);
    EXPECT(fabsf(a16 - a32) <= 0.01f, "fp16 with GradScaler: test accuracy %.4f, fp32 %.4f "
           "(more than a point apart)", (double)a16, (double)a32);
    EXPECT(fabsf(ab16 - a32) <= 0.01f, "bf16 without scaling: test accuracy %.4f, fp32 %.4f "
           "(more than a point apart)", (double)ab16, (double)a32);
    EXPECT(s16.steps == 600 && sb16.steps == 600 && sb16.scale == 1, "scalers: %ld and %ld "
           "updates, bf16's S = %g", s16.steps, sb16.steps, (double)sb16.scale);
    dt_dataset_free(&all), dt_dataset_free(&train), dt_dataset_free(&test);
}

/* The selector's plans on a deep MLP of 18 layers of width 32: run, the
 * measured peak of ACT within each budget, the recomputed FLOPs the
 * fewest of every plan, the gradients the plain ones. */
TEST_HIDDEN_T(hidden_selected_plans_run_within_budget, 2, 60)
{
    dt_test_see("chapter 11, section 7");
    enum { L = 18, W = 32, ROWS = 16 };
    dt_model m;
    lab_ckpt c;
    lab_plan p;
    float x[ROWS * W];
    int32_t y[ROWS];
    EXPECT_OK(mt_deep(&m, L, W));
    mt_batch(x, y, ROWS, W, W, MT_DATA_SEED);
    float *plain = malloc(m.num_params * sizeof(float));
    EXPECT(plain != NULL, "out of memory");
    EXPECT_OK(mt_fp32_grads(&m, x, y, ROWS, plain));
    EXPECT_OK(lab_ckpt_create(&c, &m, ROWS));
    EXPECT_OK(lab_plan_init(&p, L));
    size_t A = ROWS * W * sizeof(float), F = c.chain.fixed_bytes;
    for (int M = 6; M <= L; M += 2) { /* the least peak of 18 layers is 6 outputs */
        size_t budget = F + (size_t)M * A + A / 2, peak;
        long rec;
        EXPECT_OK(lab_plan_select(&c.chain, budget, &p));
        EXPECT_OK(mt_ckpt_measure(&c, &p, x, y, &peak, &rec));
        EXPECT(peak <= budget, "budget %zu bytes (%d outputs): measured peak %zu", budget, M, peak);
        EXPECT(rec == (M >= L ? 0 : L - M), "budget of %d outputs: %ld layers recomputed; the "
               "fewest any plan recomputes is %d", M, rec, M >= L ? 0 : L - M);
        for (size_t i = 0; i < m.num_params; i++)
            EXPECT(!memcmp(&m.grads[i], &plain[i], sizeof(float)), "budget of %d outputs: "
                   "gradient %zu differs from the plain backward's", M, i);
    }
    lab_plan_free(&p);
    lab_ckpt_free(&c);
    dt_model_free(&m);
    free(plain);
}

/* Predict, then measure: other cuts, the two ends, bad arguments. */
TEST_HIDDEN(predict_segments_elsewhere, 1)
{
    dt_test_see("chapter 11, section 6");
    static const int cases[][2] = {{30, 7}, {10, 3}, {12, 1}, {12, 12}, {17, 2}};
    for (int i = 0; i < 5; i++)
        mt_expect_segments_prediction(cases[i][0], cases[i][1]);
    int peak, rec;
    EXPECT_ERR(lab_predict_segments(8, 9, &peak, &rec), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_predict_segments(8, 0, &peak, &rec), DT_ERR_INVALID_ARG);
}
