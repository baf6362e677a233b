/* hidden_tp.c - lab 07, hidden tests: the whole model on the proc backend,
 * training steps against one rank's training, clipping of a real gradient,
 * and the heads check reached through the model. */
#include "grader.h"
#include "tp_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST_HIDDEN_T(hidden_gpt_on_proc_backend, 3, 30)
{
    dt_test_see("chapter 07, sections 2 to 5");
    int how[2] = {2, 0}, sp_how[2] = {2, 1};
    EXPECT_OK(tpt_launch(2, DT_BACKEND_PROC, tpt_gpt_rank, how));
    EXPECT_OK(tpt_launch(2, DT_BACKEND_PROC, tpt_gpt_rank, sp_how));
}

/* ------------------------------------------------------------ training */

enum { STEPS = 4 };
#define MAX_NORM 0.5f /* below the gradient's norm (about 1.5): every step clips */

/* One rank with the whole model: STEPS steps of SGD with momentum, each
 * on the 2 B sequences of two micro-batches at once, the whole gradient
 * clipped to MAX_NORM as torch.nn.utils.clip_grad_norm_; losses[k] the
 * step's mean loss. */
static dt_result whole_training(dt_model *m, const dt_gpt_config *cfg, const int32_t *tokens,
                                const int32_t *labels, float *losses)
{
    dt_optim_config oc = dt_sgd_config(0.1f, 0.9f, 0);
    dt_optimizer opt = {0};
    dt_acts *a = NULL;
    size_t rows = 2 * TPT_B * TPT_T;
    DT_CHECK(tpt_gpt_create(m, cfg));
    DT_CHECK(dt_optim_init(&opt, &oc, 0, m->num_params));
    dt_result r = dt_acts_create(&a, m, 0, m->num_layers, 2 * TPT_B, TPT_T);
    for (int k = 0; r == DT_OK && k < STEPS; k++) {
        double sq;
        if (r == DT_OK)
            r = dt_model_zero_grads(m);
        if (r == DT_OK)
            r = dt_model_forward(m, a, NULL, tokens + k * rows);
        if (r == DT_OK)
            r = dt_model_loss(m, a, labels + k * rows, &losses[k], NULL);
        if (r == DT_OK)
            r = dt_model_backward(m, a, NULL, NULL, NULL, NULL);
        if (r == DT_OK)
            r = dt_vec_sumsq(m->grads, m->num_params, &sq);
        float coef = MAX_NORM / (sqrtf((float)sq) + 1e-6f);
        if (r == DT_OK && coef < 1)
            r = dt_vec_scale(m->grads, coef, m->num_params);
        if (r == DT_OK)
            r = dt_optim_step(&opt, m->params, m->grads);
    }
    dt_acts_free(a);
    dt_optim_free(&opt);
    return r;
}

/* STEPS steps of the library's loop with the lab's hooks, each of 2
 * micro-batches (the loop averages them: the whole reference batch is
 * the two micro-batches of the step, one after the other). */
static dt_result training_rank(dt_comm *world, void *arg)
{
    const int *sp = arg;
    dt_gpt_config cfg = tpt_config(2);
    size_t N = TPT_B * TPT_T;
    int32_t tokens[2 * STEPS * TPT_B * TPT_T], labels[2 * STEPS * TPT_B * TPT_T];
    float want_loss[2 * STEPS];
    dt_model whole = {0}, ref = {0};
    lab_tp tp = {0};
    lab_tp_model m = {0};
    lab_tp_acts a = {0};
    lab_tp_train s = {0};
    dt_optim_config oc = dt_sgd_config(0.1f, 0.9f, 0);
    float *want = NULL;
    for (int k = 0; k < 2 * STEPS; k++)
        tpt_batch(tokens + k * N, labels + k * N, N, cfg.vocab, TPT_DATA_SEED + (uint64_t)k);
    dt_result r = whole_training(&ref, &cfg, tokens, labels, want_loss);
    if (r == DT_OK)
        r = tpt_gpt_create(&whole, &cfg);
    if (r == DT_OK)
        r = lab_tp_init(&tp, world, &cfg, TPT_B, TPT_T, *sp);
    if (r == DT_OK)
        r = lab_tp_model_create(&m, &tp, &whole);
    if (r == DT_OK)
        r = lab_tp_acts_create(&a, &tp, m.layers);
    if (r == DT_OK)
        r = lab_tp_train_init(&s, &tp, &m, &a, &oc, MAX_NORM);
    for (int k = 0; r == DT_OK && k < STEPS; k++) {
        dt_batch b = {NULL, tokens + 2 * k * N, labels + 2 * k * N, TPT_B, TPT_T, 2};
        r = dt_train_step(&s.trainer, &b);
        if (r == DT_OK && !(s.norm > MAX_NORM))
            r = dt_fail(DT_ERR_INTERNAL, "step %d: norm %g: the test means to clip", k,
                        (double)s.norm);
        if (r == DT_OK && !(fabsf(s.trainer.loss - want_loss[k]) <= TPT_TOL * want_loss[k]))
            r = dt_fail(DT_ERR_MISMATCH, "step %d: loss %.9g, one rank gives %.9g", k,
                        (double)s.trainer.loss, (double)want_loss[k]);
    }
    if (r == DT_OK && !(want = malloc(m.num_params * sizeof *want)))
        r = dt_fail(DT_ERR_NOMEM, "training_rank");
    if (r == DT_OK)
        r = tpt_shard(&m, &ref, ref.params, tp.t, tp.rank, want);
    if (r == DT_OK)
        r = tpt_compare_shard(&m, &ref, m.params, want, tp.t, 1e-4,
                              "after 4 clipped steps, the parameter");
    free(want);
    lab_tp_train_free(&s);
    lab_tp_acts_free(&a);
    lab_tp_model_free(&m);
    lab_tp_free(&tp);
    dt_model_free(&whole);
    dt_model_free(&ref);
    return r;
}

TEST_HIDDEN_T(hidden_training_matches_one_rank, 4, 30)
{
    dt_test_see("chapter 07, sections 2 to 9");
    int sp = 0;
    EXPECT_OK(tpt_launch(2, DT_BACKEND_THREAD, training_rank, &sp));
    sp = 1;
    EXPECT_OK(tpt_launch(4, DT_BACKEND_THREAD, training_rank, &sp));
}

/* ------------------------------------------------------------ heads */

static dt_result six_heads_rank(dt_comm *world, void *arg)
{
    (void)arg;
    dt_gpt_config cfg = {32, 8, 1, 6, 48};
    dt_model whole = {0};
    lab_tp tp = {0};
    lab_tp_model m = {0};
    dt_result r = tpt_gpt_create(&whole, &cfg);
    if (r == DT_OK)
        r = lab_tp_init(&tp, world, &cfg, TPT_B, TPT_T, 0);
    if (r == DT_OK)
        r = lab_tp_model_create(&m, &tp, &whole);
    lab_tp_model_free(&m);
    lab_tp_free(&tp);
    dt_model_free(&whole);
    return r;
}

TEST_HIDDEN(hidden_six_heads_on_four_ranks_rejected, 1)
{
    dt_test_see("chapter 07, section 4");
    dt_result r = tpt_launch(4, DT_BACKEND_THREAD, six_heads_rank, NULL);
    EXPECT(r == DT_ERR_INVALID_ARG, "a model of 6 heads on 4 ranks: %s (%s), expected "
           "DT_ERR_INVALID_ARG", dt_strerror(r), dt_last_error());
    EXPECT(tpt_mentions(dt_last_error(), 6) && tpt_mentions(dt_last_error(), 4),
           "the message \"%s\" must name the 6 heads and the 4 ranks", dt_last_error());
}

/* ------------------------------------------------------------ predict: the formulas */

/* The bytes a rank sends in one training step of cfg (one micro-batch of
 * B x T, no clipping), counted here collective by collective from chapter
 * 07, sections 2 to 7, apart from the lab. */
static uint64_t formula_step_bytes(const dt_gpt_config *cfg, size_t B, size_t T, int t,
                                   int sp)
{
    size_t N = B * T, C = cfg->channels, L = cfg->layers;
    size_t rep = cfg->context * C + 2 * C + L * 6 * C; /* wpe, lnf, per block 6C */
    uint64_t act_ar = tpt_ring_allreduce_bytes(N * C, t);
    uint64_t act_half = tpt_ring_half_bytes(N * C, t);
    /* the loss's reductions: row maxima (N), then the sums (2N) */
    uint64_t loss = tpt_ring_allreduce_bytes(N, t) + tpt_ring_allreduce_bytes(2 * N, t);
    if (!sp) /* forward: the embedding's and each row layer's output (2 per
                block); backward: the head's and each block's column layers' dx */
        return (1 + 2 * L) * act_ar + (1 + 2 * L) * act_ar + loss;
    /* forward: the embedding's reduce-scatter, per block 2 allgathers and 2
     * reduce-scatters, the head's allgather; backward: the head's allgather
     * again and reduce-scatter, per block 2 reduce-scatters and 4
     * allgathers, the embedding's allgather; the sync's allreduce of the
     * replicated gradients */
    return (2 + 4 * L) * act_half + (3 + 6 * L) * act_half + loss +
           tpt_ring_allreduce_bytes(rep, t);
}

TEST_HIDDEN(hidden_predict_step_bytes_against_the_formulas, 2)
{
    dt_test_see("chapter 07, sections 2 to 7");
    static const dt_gpt_config cfgs[] = {
        {32, 8, 2, 4, 32}, {64, 16, 3, 8, 48}, {96, 12, 1, 4, 64}, {128, 32, 5, 8, 16}};
    static const size_t BT[][2] = {{2, 8}, {4, 12}, {1, 16}, {3, 8}};
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++)
        for (size_t k = 0; k < sizeof BT / sizeof *BT; k++)
            for (int t = 1; t <= 8; t *= 2)
                for (int sp = 0; sp <= 1; sp++) {
                    const dt_gpt_config *g = &cfgs[c];
                    size_t B = BT[k][0], T = BT[k][1];
                    if (g->vocab % (size_t)t || g->heads % (size_t)t || g->channels % (size_t)t ||
                        (B * T) % (size_t)t || T > g->context)
                        continue;
                    uint64_t got = 0, want = formula_step_bytes(g, B, T, t, sp);
                    EXPECT_OK(lab_tp_predict_step_bytes(g, B, T, t, sp, &got));
                    EXPECT(got == want, "%s, gpt:%zu,%zu,%zu,%zu,%zu, batch %zu x %zu, t = %d: "
                           "lab_tp_predict_step_bytes says %llu bytes per rank, the formulas "
                           "of sections 2 to 7 give %llu", sp ? "TP + SP" : "TP", g->vocab,
                           g->context, g->layers, g->heads, g->channels, B, T, t,
                           (unsigned long long)got, (unsigned long long)want);
                }
}
