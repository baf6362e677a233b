/* test_train_pipe.c - what the training loop does for pipelines (chapters
 * 05 and 06): a schedule with model chunks and weight-gradient (W)
 * operations runs its hooks in its order with t->chunk and t->micro set,
 * a broken one is refused naming the operation, and a rank that owns only
 * some layers updates those alone, with optimizer state for those alone. */
#include "grader.h"
#include "dt/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char log[512];
    int n;
} op_log;

static void note(op_log *h, const char *what, const dt_trainer *t)
{
    h->n += snprintf(h->log + h->n, sizeof h->log - (size_t)h->n, "%s%d.%d ", what, t->micro,
                     t->chunk);
}

static dt_result log_f(dt_trainer *t, void *self) { note(self, "F", t); return DT_OK; }
static dt_result log_b(dt_trainer *t, void *self) { note(self, "B", t); return DT_OK; }
static dt_result log_w(dt_trainer *t, void *self) { note(self, "W", t); return DT_OK; }

static dt_result log_sync(dt_trainer *t, void *self)
{
    (void)t;
    op_log *h = self;
    h->n += snprintf(h->log + h->n, sizeof h->log - (size_t)h->n, "S");
    return DT_OK;
}

/* A trainer whose forward, backward and weight hooks only note the op. */
static void logging_trainer(dt_trainer *t, dt_model *m, op_log *h)
{
    EXPECT_OK(dt_model_create_spec(m, "mlp:5,6,3", 1));
    EXPECT_OK(dt_trainer_init(t, m, NULL, NULL));
    t->forward = (dt_hook){"log", log_f, NULL, NULL, h};
    t->backward = (dt_hook){"log", log_b, NULL, NULL, h};
    t->weight = (dt_hook){"log", log_w, NULL, NULL, h};
    dt_train_set_hook(&t->sync, (dt_hook){"log", log_sync, NULL, NULL, h});
    dt_train_set_hook(&t->update, (dt_hook){0});
}

static dt_result step_with(dt_trainer *t, op_log *h, const dt_train_op *ops, int n, int micro)
{
    static float x[4 * 5 * 4];
    static int32_t y[4 * 4];
    dt_batch b = {x, NULL, y, 4, 1, micro};
    h->n = 0, h->log[0] = 0;
    t->schedule = ops, t->schedule_len = n;
    return dt_train_step(t, &b);
}

#define F(j, c) {j, DT_TRAIN_FORWARD, c}
#define B(j, c) {j, DT_TRAIN_BACKWARD, c}
#define W(j, c) {j, DT_TRAIN_WEIGHT, c}

TEST(train_schedule_runs_chunks_and_weight_ops_in_order, 2)
{
    dt_model m;
    dt_trainer t;
    op_log h;
    logging_trainer(&t, &m, &h);
    /* two chunks, two micro-batches, the backward split (ZB-like order) */
    static const dt_train_op ops[12] = {F(0, 0), F(1, 0), F(0, 1), B(0, 1), F(1, 1), W(0, 1),
                                        B(1, 1), B(0, 0), W(1, 1), B(1, 0), W(0, 0), W(1, 0)};
    EXPECT_OK(step_with(&t, &h, ops, 12, 2));
    const char *want = "F0.0 F1.0 F0.1 B0.1 F1.1 W0.1 B1.1 B0.0 W1.1 B1.0 W0.0 W1.0 S";
    EXPECT(!strcmp(h.log, want), "the step ran %s, expected %s", h.log, want);
    /* chunks without W: 2 x 2 x 2 operations */
    static const dt_train_op two[8] = {F(0, 0), F(0, 1), F(1, 0), B(0, 1), F(1, 1), B(1, 1),
                                       B(0, 0), B(1, 0)};
    EXPECT_OK(step_with(&t, &h, two, 8, 2));
    want = "F0.0 F0.1 F1.0 B0.1 F1.1 B1.1 B0.0 B1.0 S";
    EXPECT(!strcmp(h.log, want), "the step ran %s, expected %s", h.log, want);
    dt_trainer_free(&t);
    dt_model_free(&m);
}

/* Runs ops, which must fail naming `what`. */
static void expect_refused(dt_trainer *t, op_log *h, const dt_train_op *ops, int n, int micro,
                           const char *what)
{
    EXPECT_ERR(step_with(t, h, ops, n, micro), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), what), "message \"%s\", expected it to say \"%s\"",
           dt_last_error(), what);
    EXPECT(h->n == 0, "a refused schedule ran %s", h->log);
}

TEST(train_schedule_with_chunks_and_weight_ops_refuses_broken_ones, 2)
{
    dt_model m;
    dt_trainer t;
    op_log h;
    logging_trainer(&t, &m, &h);
    static const dt_train_op w_first[6] = {F(0, 0), W(0, 0), B(0, 0), F(1, 0), B(1, 0), W(1, 0)};
    expect_refused(&t, &h, w_first, 6, 2,
                   "step 1: weight gradient of micro-batch 0 before its backward");
    static const dt_train_op b_first[8] = {F(0, 0), F(0, 1), B(1, 1), F(1, 1),
                                           B(0, 1), B(0, 0), F(1, 0), B(1, 0)};
    expect_refused(&t, &h, b_first, 8, 2,
                   "step 2: backward of micro-batch 1 (chunk 1) before its forward");
    static const dt_train_op w_twice[6] = {F(0, 0), B(0, 0), W(0, 0), W(0, 0), F(1, 0), B(1, 0)};
    expect_refused(&t, &h, w_twice, 6, 2, "step 3: weight gradient of micro-batch 0 twice");
    /* W for one micro-batch but not the other: 5 operations, need 6 */
    static const dt_train_op w_some[5] = {F(0, 0), B(0, 0), W(0, 0), F(1, 0), B(1, 0)};
    expect_refused(&t, &h, w_some, 5, 2, "a schedule of 5 operations for 2 micro-batches x 1 "
                   "chunk (need 6)");
    static const dt_train_op neg[4] = {F(0, 0), B(0, 0), F(1, -1), B(1, -1)};
    expect_refused(&t, &h, neg, 4, 2, "step 2: micro-batch 1, kind 0, chunk -1");
    t.weight = (dt_hook){0};
    static const dt_train_op ok[6] = {F(0, 0), B(0, 0), W(0, 0), F(1, 0), B(1, 0), W(1, 0)};
    expect_refused(&t, &h, ok, 6, 2, "weight-gradient (W) operations and the trainer no weight hook");
    t.schedule = NULL;
    dt_trainer_free(&t);
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- own layers */

/* One step of the model's own hooks on mlp:5,6,4,3 (three layers), with
 * dt_train_use_own_layers(own) when own is given; returns the parameters. */
static float *step_owning(const unsigned char *own, size_t *optim_bytes, size_t *n)
{
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    dt_mem_stats before, after;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:5,6,4,3", 3));
    dt_mem_stats_get(&before);
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, &tc));
    if (own)
        EXPECT_OK(dt_train_use_own_layers(&t, own));
    float x[8 * 5];
    int32_t y[8];
    for (int i = 0; i < 8 * 5; i++)
        x[i] = (float)(i % 7) - 3;
    for (int i = 0; i < 8; i++)
        y[i] = i % 3;
    dt_batch b = {x, NULL, y, 4, 1, 2};
    EXPECT_OK(dt_train_step(&t, &b));
    dt_mem_stats_get(&after);
    *optim_bytes = after.current[DT_MEM_OPTIM] - before.current[DT_MEM_OPTIM];
    float *p = malloc(m.num_params * sizeof *p);
    memcpy(p, m.params, m.num_params * sizeof *p);
    *n = m.num_params;
    dt_trainer_free(&t);
    dt_model_free(&m);
    return p;
}

TEST(train_own_layers_updates_only_them, 2)
{
    /* layers: fc1 5*6+6 = 36 at 0, fc2 6*4+4 = 28 at 36, fc3 4*3+3 = 15 at 64 */
    static const unsigned char own[3] = {1, 0, 1};
    size_t n, n0, bytes, bytes_all;
    float *all = step_owning(NULL, &bytes_all, &n);
    float *mine = step_owning(own, &bytes, &n0);
    dt_model init;
    EXPECT_OK(dt_model_create_spec(&init, "mlp:5,6,4,3", 3));
    for (size_t i = 0; i < n; i++) {
        int owned = i < 36 || i >= 64;
        float want = owned ? all[i] : init.params[i];
        EXPECT(mine[i] == want, "params[%zu] = %.9g after the step, expected %.9g (%s)", i,
               (double)mine[i], (double)want, owned ? "an owned layer: as the whole model's "
               "update" : "a layer this rank does not own: unchanged");
    }
    /* momentum: 4 bytes per owned parameter, 51 of 79 */
    EXPECT(bytes_all == 79 * 4 && bytes == 51 * 4, "optimizer state %zu bytes (whole model %zu), "
           "expected %d", bytes, bytes_all, 51 * 4);
    static const unsigned char none[3] = {0, 0, 0};
    free(mine);
    mine = step_owning(none, &bytes, &n0);
    EXPECT(!memcmp(mine, init.params, n * sizeof *mine) && bytes == 0,
           "a rank that owns no layer changed its parameters or holds %zu bytes of state", bytes);
    EXPECT_ERR(dt_train_use_own_layers(NULL, own), DT_ERR_INVALID_ARG);
    free(all), free(mine);
    dt_model_free(&init);
}
