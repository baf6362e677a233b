/* test_tp_model.c - a tensor-parallel shard of the tiny GPT (dt_tp_shard,
 * chapter 07) is a model: its slices are chapter 07's, its forward, loss
 * and backward through the ordinary stage code equal one rank's with the
 * whole model on 1, 2 and 4 ranks, and the library's training loop trains
 * it like the whole model; what cannot split is refused, naming why. */
#include "grader.h"
#include "test_par_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, T = 8, NR = B * T };

/* One forward, loss and backward of the shard against the whole model. */
static dt_result shard_rank(dt_comm *w, void *arg)
{
    const int *layers = arg;
    dt_gpt_config cfg = par_gpt_config((size_t)*layers);
    dt_model whole = {0}, shard = {0};
    dt_acts *aw = NULL, *as = NULL;
    int32_t tokens[NR], labels[NR];
    float lw = 0, ls = 0;
    size_t cw = 0, cs = 0;
    par_batch(tokens, labels, NR, cfg.vocab, 41);
    dt_result r = par_gpt_create(&whole, &cfg);
    if (r == DT_OK)
        r = dt_tp_shard(&shard, &whole, w);
    if (r == DT_OK) /* the slices themselves, exactly */
        r = par_compare_shard(&shard, &whole, shard.params, whole.params, 0, "the shard's");
    if (r == DT_OK)
        r = dt_acts_create(&aw, &whole, 0, whole.num_layers, B, T);
    if (r == DT_OK)
        r = dt_acts_create(&as, &shard, 0, shard.num_layers, B, T);
    if (r == DT_OK)
        r = dt_model_forward(&whole, aw, NULL, tokens);
    if (r == DT_OK)
        r = dt_model_loss(&whole, aw, labels, &lw, &cw);
    if (r == DT_OK)
        r = dt_model_backward(&whole, aw, NULL, NULL, NULL, NULL);
    if (r == DT_OK)
        r = dt_model_forward(&shard, as, NULL, tokens);
    if (r == DT_OK)
        r = dt_model_loss(&shard, as, labels, &ls, &cs);
    if (r == DT_OK)
        r = dt_model_backward(&shard, as, NULL, NULL, NULL, NULL);
    if (r == DT_OK && !(fabsf(ls - lw) <= PAR_TOL * fabsf(lw)))
        r = dt_fail(DT_ERR_MISMATCH, "the shard's loss on rank %d of %d is %.9g, one rank %.9g",
                    shard.tp_rank, shard.tp_size, (double)ls, (double)lw);
    if (r == DT_OK && cs != cw)
        r = dt_fail(DT_ERR_MISMATCH, "%zu rows whose argmax over the whole vocabulary is the "
                    "label on rank %d, one rank counts %zu", cs, shard.tp_rank, cw);
    if (r == DT_OK) { /* the logits: this rank's V/t columns */
        size_t Vl = dt_acts_output_width(as), worst;
        const float *all = dt_acts_output(aw), *mine = dt_acts_output(as);
        double e = 0;
        for (size_t i = 0; i < NR; i++)
            e = fmax(e, par_rel_diff(mine + i * Vl, all + i * cfg.vocab + shard.tp_rank * Vl, Vl,
                                     &worst));
        if (!(e <= PAR_TOL))
            r = dt_fail(DT_ERR_MISMATCH, "the shard's logits differ from its columns of one "
                        "rank's by %.3g", e);
    }
    if (r == DT_OK)
        r = par_compare_shard(&shard, &whole, shard.grads, whole.grads, PAR_TOL, "gradient");
    dt_acts_free(aw), dt_acts_free(as);
    dt_model_free(&shard), dt_model_free(&whole);
    return r;
}

TEST(tp_gpt_shard_equals_one_rank, 3)
{
    dt_test_see("chapter 07, sections 2 to 5");
    for (int layers = 1; layers <= 2; layers++)
        for (int t = 1; t <= 4; t *= 2)
            EXPECT_OK(par_launch(t, shard_rank, &layers));
}

/* ---------------------------------------------------------------- training */

enum { STEPS = 4, MICRO = 2 };

static dt_result train_steps(dt_model *m, const int32_t *tokens, const int32_t *labels,
                             float *losses)
{
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    DT_CHECK(dt_trainer_init(&t, m, NULL, &tc));
    dt_result r = DT_OK;
    for (int k = 0; r == DT_OK && k < STEPS; k++) {
        size_t at = (size_t)k * MICRO * NR;
        dt_batch b = {NULL, tokens + at, labels + at, B, T, MICRO};
        r = dt_train_step(&t, &b);
        losses[k] = t.loss;
    }
    dt_trainer_free(&t);
    return r;
}

/* The loop's default hooks on the shard (no data parallelism: the group's
 * ranks take the same batch) train like one rank on the whole model. */
static dt_result train_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_gpt_config cfg = par_gpt_config(2);
    dt_model whole = {0}, shard = {0};
    int32_t tokens[STEPS * MICRO * NR], labels[STEPS * MICRO * NR];
    float lw[STEPS], ls[STEPS];
    par_batch(tokens, labels, STEPS * MICRO * NR, cfg.vocab, 43);
    dt_result r = par_gpt_create(&whole, &cfg);
    if (r == DT_OK)
        r = dt_tp_shard(&shard, &whole, w);
    if (r == DT_OK)
        r = train_steps(&whole, tokens, labels, lw);
    if (r == DT_OK)
        r = train_steps(&shard, tokens, labels, ls);
    for (int k = 0; r == DT_OK && k < STEPS; k++)
        if (!(fabsf(ls[k] - lw[k]) <= PAR_TOL * fabsf(lw[k])))
            r = dt_fail(DT_ERR_MISMATCH, "step %d: loss %.9g on %d tensor-parallel ranks, one "
                        "rank %.9g", k, (double)ls[k], shard.tp_size, (double)lw[k]);
    if (r == DT_OK)
        r = par_compare_shard(&shard, &whole, shard.params, whole.params, 1e-4,
                              "after 4 steps of SGD with momentum, the parameter");
    dt_model_free(&shard), dt_model_free(&whole);
    return r;
}

TEST(tp_training_equals_one_rank, 2)
{
    dt_test_see("chapter 07, section 10");
    for (int t = 1; t <= 4; t *= 2)
        EXPECT_OK(par_launch(t, train_rank, NULL));
}

/* ---------------------------------------------------------------- refusals */

static dt_result expect_refused(dt_result got, dt_result want, const char *what,
                                const char *says, const char *says2)
{
    const char *msg = dt_last_error();
    if (got != want || !strstr(msg, says) || (says2 && !strstr(msg, says2)))
        return dt_fail(DT_ERR_MISMATCH, "%s: %s \"%s\", expected %s saying \"%s\"%s%s%s", what,
                       dt_strerror(got), msg, dt_strerror(want), says, says2 ? " and \"" : "",
                       says2 ? says2 : "", says2 ? "\"" : "");
    return DT_OK;
}

static dt_result refuse_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_model mlp = {0}, six = {0}, odd = {0}, whole = {0}, shard = {0}, again = {0};
    dt_gpt_config c6 = {32, 8, 1, 6, 48}, c30 = {30, 8, 1, 4, 32}, ok = par_gpt_config(1);
    DT_CHECK(dt_model_create_spec(&mlp, "mlp:4,8,4", 1));
    DT_CHECK(dt_gpt_create(&six, &c6, 1));
    DT_CHECK(dt_gpt_create(&odd, &c30, 1));
    DT_CHECK(dt_gpt_create(&whole, &ok, 1));
    dt_result r = expect_refused(dt_tp_shard(&shard, &mlp, w), DT_ERR_UNSUPPORTED,
                                 "an MLP on 4 ranks", "splits a GPT", NULL);
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard(&shard, &six, w), DT_ERR_INVALID_ARG,
                           "6 heads on 4 ranks", "6 heads", "4 tensor-parallel ranks");
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard(&shard, &odd, w), DT_ERR_INVALID_ARG,
                           "a vocabulary of 30 on 4 ranks", "30 vocabulary", "4 tensor");
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard(NULL, &whole, w), DT_ERR_INVALID_ARG, "a NULL shard",
                           "NULL shard", NULL);
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard(&shard, &whole, NULL), DT_ERR_INVALID_ARG,
                           "no group", "NULL tensor-parallel group", NULL);
    if (r == DT_OK && (r = dt_tp_shard(&shard, &whole, w)) == DT_OK)
        r = expect_refused(dt_tp_shard(&again, &shard, w), DT_ERR_INVALID_ARG,
                           "a shard of a shard", "already a shard over 4", NULL);
    float x[4], y[4];
    if (r == DT_OK)
        r = expect_refused(dt_tp_attention_forward(w, y, y, y, y, x, x, x, x, x, 1, 1, 48, 6),
                           DT_ERR_INVALID_ARG, "attention of 6 heads", "6 heads", "4 tensor");
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard_qkv(x, NULL, x, NULL, 48, 6, 4, 1), DT_ERR_INVALID_ARG,
                           "qkv of 6 heads on 4", "6 heads", "4 tensor");
    if (r == DT_OK)
        r = expect_refused(dt_tp_shard_qkv(x, NULL, x, NULL, 32, 4, 4, 4), DT_ERR_INVALID_ARG,
                           "rank 4 of 4", "rank 4 of 4", NULL);
    int32_t labels[2] = {3, 32};
    if (r == DT_OK)
        r = expect_refused(dt_tp_xent_forward(w, y, NULL, NULL, NULL, x, labels, 2, 32),
                           DT_ERR_INVALID_ARG, "a label of 32 in a vocabulary of 32",
                           "label 32 of row 1", NULL);
    if (r == DT_OK)
        r = expect_refused(dt_tp_embedding_forward(w, y, labels, x, x, 1, 2, 1, 30),
                           DT_ERR_INVALID_ARG, "an embedding of 30 on 4", "30 does not split",
                           NULL);
    dt_model_free(&again), dt_model_free(&shard), dt_model_free(&whole);
    dt_model_free(&odd), dt_model_free(&six), dt_model_free(&mlp);
    return r;
}

TEST(tp_refuses_what_does_not_split, 2)
{
    dt_test_see("chapter 07, sections 4 and 5");
    EXPECT_OK(par_launch(4, refuse_rank, NULL));
}
