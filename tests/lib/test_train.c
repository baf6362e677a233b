/* test_train.c - the training loop on one rank: the MLP learns the real
 * digits, the fused SGD path and AdamW learn, a tiny GPT learns the
 * sequence task; the step runs its hooks in the order the loop promises;
 * micro-batches add up to one large batch; the fused update equals the
 * reference; bad input is refused. (Several ranks: test_train_dp.c.) */
#include "grader.h"
#include "dt/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A trainer for m on one rank with optimizer cfg on the given path. */
static void trainer_for(dt_trainer *t, dt_model *m, dt_optim_config cfg, dt_nn_path path)
{
    dt_trainer_config tc = {0};
    tc.optim = cfg;
    tc.path = path;
    EXPECT_OK(dt_trainer_init(t, m, NULL, &tc));
}

TEST_T(train_mlp_on_digits_reaches_95_percent, 3, 20)
{
    dt_dataset all, train, test;
    EXPECT_OK(dt_data_load_digits(&all, NULL));
    EXPECT_OK(dt_data_split(&all, 0.2, 1, &train, &test));
    dt_model m;
    dt_trainer t;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:64,128,10", 1));
    trainer_for(&t, &m, dt_sgd_config(0.05f, 0.9f, 0), DT_NN_REFERENCE);
    dt_train_config c = dt_train_defaults();
    c.batch = 32;
    c.steps = 600; /* about 13 epochs */
    c.time_budget_s = 10;
    c.test = &test;
    dt_train_result r;
    double t0 = dt_now();
    EXPECT_OK(dt_train(&t, &train, &c, &r));
    double secs = dt_now() - t0;
    dt_log("digits: %ld steps in %.2f s, loss %.4f, test accuracy %.4f, %.3f ms/step", r.steps,
           secs, (double)r.final_loss, (double)r.accuracy, r.step_ms_median);
    EXPECT(r.accuracy >= 0.95f, "test accuracy %.4f < 0.95 after %ld steps", (double)r.accuracy,
           r.steps);
    EXPECT(secs < 10.5, "took %.1f s", secs);
    EXPECT(r.final_loss < 0.2f, "final loss %g", (double)r.final_loss);
    EXPECT(r.steps == t.step, "%ld steps reported, the trainer counted %ld", r.steps, t.step);
    dt_trainer_free(&t);
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
        dt_trainer t;
        EXPECT_OK(dt_model_create_spec(&m, "mlp:8,32,4", 3));
        if (k == 0) {
            trainer_for(&t, &m, dt_sgd_config(0.1f, 0, 0), DT_NN_FAST);
            EXPECT_OK(dt_train_use_fused_sgd(&t));
            dt_model_free_grads(&m); /* the fused path needs no gradient buffer */
        } else {
            trainer_for(&t, &m, dt_adamw_config(0.01f), DT_NN_REFERENCE);
        }
        dt_train_config c = dt_train_defaults();
        c.steps = 150;
        c.test = &test;
        dt_train_result r;
        EXPECT_OK(dt_train(&t, &train, &c, &r));
        EXPECT(r.accuracy > 0.9f, "%s: accuracy %g", k ? "AdamW" : "fused SGD",
               (double)r.accuracy);
        EXPECT(r.steps == 150 && r.step_ms_median > 0 && r.samples_per_s > 0, "timings");
        EXPECT(!strcmp(t.update.name, k ? "adamw" : "fused_sgd"), "update %s", t.update.name);
        dt_trainer_free(&t);
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
    dt_trainer t;
    EXPECT_OK(dt_model_create_spec(&m, "gpt:16,8,1,2,16", 1));
    float acc0;
    EXPECT_OK(dt_evaluate(&m, &test, 64, &acc0, NULL));
    dt_optim_config adam = dt_adamw_config(2e-2f);
    adam.weight_decay = 0;
    trainer_for(&t, &m, adam, DT_NN_FAST); /* a GPT runs the reference path either way */
    EXPECT_ERR(dt_train_use_fused_sgd(&t), DT_ERR_UNSUPPORTED);
    dt_train_config c = dt_train_defaults();
    c.batch = 8;
    c.steps = 150;
    c.test = &test;
    dt_train_result r;
    EXPECT_OK(dt_train(&t, &train, &c, &r));
    /* the first token of a sequence is random and the second needs the
     * stride: at best 6 of 8 targets are certain; learning shows well above
     * chance (1/16) */
    EXPECT(r.accuracy > 0.6f, "token accuracy %g (before training %g)", (double)r.accuracy,
           (double)acc0);
    dt_trainer_free(&t);
    dt_model_free(&m);
    dt_dataset_free(&train), dt_dataset_free(&test);
}

/* ---------------------------------------------------------------- the loop's order */

typedef struct {
    char log[256];
    int n;
} hook_log;

static void note(hook_log *h, const char *what, int i)
{
    h->n += snprintf(h->log + h->n, sizeof h->log - (size_t)h->n, "%s%d ", what, i);
}

/* The model's own forward and backward, wrapped to note each call. */
static dt_hook model_forward, model_backward;

static dt_result noting_forward(dt_trainer *t, void *self)
{
    note(self, "F", t->micro);
    return model_forward.run(t, model_forward.self);
}

static dt_result noting_backward(dt_trainer *t, void *self)
{
    note(self, "B", t->micro);
    return model_backward.run(t, model_backward.self);
}

static dt_result noting_layer(dt_trainer *t, void *self, int layer, size_t off, size_t count)
{
    const dt_layer *l = &t->model->layers[layer];
    EXPECT(off == l->param_offset && count == l->param_count, "layer %d's range", layer);
    note(self, "L", layer);
    return DT_OK;
}

static dt_result noting_sync(dt_trainer *t, void *self)
{
    (void)t;
    note(self, "S", 0);
    return DT_OK;
}

static dt_result noting_update(dt_trainer *t, void *self)
{
    note(self, "U", (int)t->step);
    return DT_OK;
}

static const char *run_logged(dt_trainer *t, hook_log *h, int micro_steps)
{
    float x[3 * 4 * 5] = {0};
    int32_t y[3 * 4] = {0};
    dt_batch b = {x, NULL, y, 4, 1, micro_steps};
    h->n = 0, h->log[0] = 0;
    EXPECT_OK(dt_train_step(t, &b));
    return h->log;
}

TEST(train_step_runs_its_hooks_in_order, 2)
{
    dt_model m;
    dt_trainer t;
    hook_log h;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:5,6,3", 1));
    trainer_for(&t, &m, dt_sgd_config(0.1f, 0, 0), DT_NN_REFERENCE);
    model_forward = t.forward, model_backward = t.backward;
    t.forward = (dt_hook){"log", noting_forward, NULL, NULL, &h};
    t.backward = (dt_hook){"log", noting_backward, NULL, NULL, &h};
    dt_train_set_hook(&t.sync, (dt_hook){"log", noting_sync, noting_layer, NULL, &h});
    dt_train_set_hook(&t.update, (dt_hook){"log", noting_update, NULL, NULL, &h});
    /* each layer's gradients, last to first, in every micro-batch's backward */
    const char *want = "F0 B0 L1 L0 F1 B1 L1 L0 F2 B2 L1 L0 S0 U0 ";
    EXPECT(!strcmp(run_logged(&t, &h, 3), want), "the step ran %s, expected %s", h.log, want);
    EXPECT(t.num_acts == 1, "F0 B0 F1 ... keeps %d activations, expected 1", t.num_acts);
    /* a schedule: GPipe's order, all forwards then all backwards */
    static const dt_train_op gpipe[6] = {{0, DT_TRAIN_FORWARD, 0}, {1, DT_TRAIN_FORWARD, 0},
                                         {2, DT_TRAIN_FORWARD, 0}, {2, DT_TRAIN_BACKWARD, 0},
                                         {1, DT_TRAIN_BACKWARD, 0}, {0, DT_TRAIN_BACKWARD, 0}};
    t.schedule = gpipe, t.schedule_len = 6;
    want = "F0 F1 F2 B2 L1 L0 B1 L1 L0 B0 L1 L0 S0 U1 ";
    EXPECT(!strcmp(run_logged(&t, &h, 3), want), "GPipe ran %s, expected %s", h.log, want);
    EXPECT(t.num_acts == 3, "3 micro-batches in flight keep %d activations", t.num_acts);
    /* a schedule that runs a backward before its forward is refused, named */
    static const dt_train_op bad[4] = {{0, DT_TRAIN_FORWARD, 0}, {1, DT_TRAIN_BACKWARD, 0},
                                       {1, DT_TRAIN_FORWARD, 0}, {0, DT_TRAIN_BACKWARD, 0}};
    t.schedule = bad, t.schedule_len = 4;
    float x[40] = {0};
    int32_t y[8] = {0};
    dt_batch b = {x, NULL, y, 4, 1, 2};
    EXPECT_ERR(dt_train_step(&t, &b), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "step 1: backward of micro-batch 1 before its forward"),
           "message: %s", dt_last_error());
    static const dt_train_op twice[4] = {{0, DT_TRAIN_FORWARD, 0}, {0, DT_TRAIN_BACKWARD, 0},
                                         {0, DT_TRAIN_BACKWARD, 0}, {1, DT_TRAIN_FORWARD, 0}};
    t.schedule = twice;
    EXPECT_ERR(dt_train_step(&t, &b), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "step 2: backward of micro-batch 0 twice"), "message: %s",
           dt_last_error());
    b.micro_steps = 3; /* 4 operations for 3 micro-batches */
    EXPECT_ERR(dt_train_step(&t, &b), DT_ERR_INVALID_ARG);
    t.schedule = NULL;
    dt_trainer_free(&t);
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- equivalences */

/* Trains a copy of spec for `steps` steps on blobs, batch B as m
 * micro-batches, and returns its parameters. */
static float *train_copy(const char *spec, dt_optim_config cfg, dt_nn_path path, int fused,
                         size_t B, int m, int steps, size_t *n)
{
    dt_dataset d;
    dt_model mod;
    dt_trainer t;
    EXPECT_OK(dt_data_blobs(&d, 96, 6, 3, 2, 4, 0));
    EXPECT_OK(dt_model_create_spec(&mod, spec, 8));
    trainer_for(&t, &mod, cfg, path);
    if (fused)
        EXPECT_OK(dt_train_use_fused_sgd(&t));
    dt_train_config c = dt_train_defaults();
    c.batch = B, c.micro_steps = m, c.steps = steps, c.report_every = 0;
    dt_train_result r;
    EXPECT_OK(dt_train(&t, &d, &c, &r));
    float *p = malloc(mod.num_params * sizeof(float));
    memcpy(p, mod.params, mod.num_params * sizeof(float));
    *n = mod.num_params;
    dt_trainer_free(&t);
    dt_model_free(&mod);
    dt_dataset_free(&d);
    return p;
}

/* max |a - b| / max |b| */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)b[i]));
    return d / (mx > 0 ? mx : 1);
}

/* m micro-batches of B/m are one batch of B: the backward sums m means,
 * the sync divides by m. The same sums in another order: 1e-5. */
TEST(train_micro_batches_equal_one_large_batch, 2)
{
    const char *spec = "deep:6,10,2,3";
    size_t n;
    dt_optim_config cfgs[2] = {dt_sgd_config(0.1f, 0.9f, 1e-3f), dt_adamw_config(0.01f)};
    for (int k = 0; k < 2; k++) {
        float *one = train_copy(spec, cfgs[k], DT_NN_REFERENCE, 0, 12, 1, 5, &n);
        for (int m = 2; m <= 4; m++) {
            float *acc = train_copy(spec, cfgs[k], DT_NN_REFERENCE, 0, 12, m, 5, &n);
            double e = rel_diff(acc, one, n);
            EXPECT(e < 1e-5, "%s: %d micro-batches of %d vs one batch of 12: relative "
                   "difference %.3g", k ? "AdamW" : "SGD", m, 12 / m, e);
            free(acc);
        }
        free(one);
    }
}

/* The fused update against the reference (gradients, then dt_sgd_update),
 * on both paths: the same step up to the rounding of W + (-lr) dW versus
 * W - lr dW and of the sums inside the products: 1e-5 after 5 steps. */
TEST(train_fused_sgd_equals_backward_then_sgd, 2)
{
    const char *spec = "mlp:6,12,8,3";
    size_t n;
    dt_optim_config sgd = dt_sgd_config(0.2f, 0, 0);
    float *ref = train_copy(spec, sgd, DT_NN_REFERENCE, 0, 8, 1, 5, &n);
    dt_model init;
    EXPECT_OK(dt_model_create_spec(&init, spec, 8));
    EXPECT(rel_diff(init.params, ref, n) > 1e-3, "5 steps moved the parameters (%.3g): the "
           "comparison below means something", rel_diff(init.params, ref, n));
    dt_model_free(&init);
    for (int p = 0; p < 2; p++) {
        dt_nn_path path = p ? DT_NN_FAST : DT_NN_REFERENCE;
        float *fused = train_copy(spec, sgd, path, 1, 8, 1, 5, &n);
        double e = rel_diff(fused, ref, n);
        EXPECT(e < 1e-5, "fused SGD (%s path) vs gradients then SGD: relative difference %.3g",
               p ? "fast" : "reference", e);
        free(fused);
    }
    free(ref);
}

/* ---------------------------------------------------------------- bad input */

TEST(train_rejects_bad_input, 1)
{
    dt_dataset d;
    EXPECT_OK(dt_data_blobs(&d, 20, 3, 2, 1, 1, 0));
    dt_model m;
    dt_trainer t;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:4,5,2", 1));
    trainer_for(&t, &m, dt_sgd_config(0.1f, 0.9f, 0), DT_NN_REFERENCE);
    dt_train_config c = dt_train_defaults();
    dt_train_result r;
    EXPECT_ERR(dt_train(&t, &d, &c, &r), DT_ERR_INVALID_ARG); /* 3 features, 4 inputs */
    EXPECT(strstr(dt_last_error(), "3 features"), "message: %s", dt_last_error());
    dt_trainer_free(&t);
    dt_model_free(&m);
    EXPECT_OK(dt_model_create_spec(&m, "mlp:3,5,2", 1));
    trainer_for(&t, &m, dt_sgd_config(0.1f, 0.9f, 0), DT_NN_REFERENCE);
    c.batch = 21; /* more than the 20 samples */
    EXPECT_ERR(dt_train(&t, &d, &c, &r), DT_ERR_INVALID_ARG);
    c.batch = 4, c.micro_steps = 3; /* 4 samples in 3 micro-batches */
    EXPECT_ERR(dt_train(&t, &d, &c, &r), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "batch 4 in 3 micro-batches"), "message: %s",
           dt_last_error());
    c.micro_steps = 1;
    EXPECT_ERR(dt_train_use_fused_sgd(&t), DT_ERR_UNSUPPORTED); /* momentum */
    EXPECT(strstr(dt_last_error(), "momentum 0.9"), "message: %s", dt_last_error());
    EXPECT(!strcmp(t.update.name, "sgd"), "a refused strategy leaves the trainer as it was");
    EXPECT_ERR(dt_train_use_zero1(&t), DT_ERR_INVALID_ARG); /* no communicator */
    dt_model_free_grads(&m);
    EXPECT_ERR(dt_train(&t, &d, &c, &r), DT_ERR_STATE); /* the optimizer needs gradients */
    dt_trainer_free(&t);
    dt_trainer_config bad = {0};
    bad.optim = dt_sgd_config(-1, 0, 0);
    EXPECT_ERR(dt_trainer_init(&t, &m, NULL, &bad), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
    dt_dataset_free(&d);
}
