/* work.c - lab 13: the small 3D run of task (d), given: its figures for
 * the prediction, and the run on the emulator that measures it. */
#include "threed.h"

#include <stdlib.h>
#include <string.h>

dt_result lab_step_work_gpt(lab_step_work *w, const dt_gpt_config *cfg, int t, size_t B, int m,
                            const double *forward_s, const double *backward_s)
{
    if (!w || !cfg || !forward_s || !backward_s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_step_work_gpt: NULL argument");
    int L = (int)cfg->layers + 2; /* the embedding, the blocks, the head */
    if (t < 1 || m < 1 || B < 1 || L > LAB_MAX_LAYERS || cfg->channels % (size_t)t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_step_work_gpt: t %d, m %d, B %zu, %d layers",
                       t, m, B, L);
    memset(w, 0, sizeof *w);
    double C = (double)cfg->channels, V = (double)cfg->vocab, T = (double)cfg->context;
    double N = (double)B * T; /* rows of a micro-batch */
    w->layers = L, w->micro = m, w->act_bytes = N * C * 4;
    for (int l = 0; l < L; l++)
        w->forward_s[l] = forward_s[l], w->backward_s[l] = backward_s[l];
    /* chapter 07's splits: the vocabulary over t, positions whole; a block's
       column and row weights over t, row biases and layernorms whole */
    w->params[0] = V * C / t + T * C;
    for (int l = 1; l < L - 1; l++)
        w->params[l] = (12 * C * C + 7 * C) / t + 6 * C;
    w->params[L - 1] = V * C / t + 2 * C;
    if (t > 1) {
        /* lib/nn/tp_*.c: the embedding's sum of rows; a block's f and g,
           forward and backward; the head's max, sums, argmax and dx */
        w->tp_calls[0] = 1, w->tp_bytes[0] = N * C * 4;
        for (int l = 1; l < L - 1; l++)
            w->tp_calls[l] = 4, w->tp_bytes[l] = 4 * N * C * 4;
        w->tp_calls[L - 1] = 4, w->tp_bytes[L - 1] = (N + 2 * N + N + N * C) * 4;
    }
    return DT_OK;
}

typedef struct {
    const dt_gpt_config *cfg;
    size_t B;
    int m, tp, pp;
    const double *fwd, *bwd;
} measure_arg;

typedef struct {
    double seconds, wall;
} measure_out;

static dt_result measure_rank(dt_comm *world, void *arg)
{
    const measure_arg *a = arg;
    dt_model whole = {0};
    lab_rank x;
    dt_schedule *s = NULL;
    memset(&x, 0, sizeof x);
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    tc.clock = DT_CLOCK_MODELED;
    tc.forward_layer_s = a->fwd, tc.backward_s = a->bwd;
    for (size_t l = 0; l < a->cfg->layers + 2; l++)
        tc.forward_s += a->fwd[l];
    int D = dt_comm_size(world) / (a->tp * a->pp);
    size_t rows = (size_t)a->m * a->B * a->cfg->context;
    int32_t *tok = malloc(rows * sizeof *tok), *y = malloc(rows * sizeof *y);
    dt_result r = tok && y ? dt_gpt_create(&whole, a->cfg, 1) : dt_fail(DT_ERR_NOMEM, "batch");
    if (r == DT_OK && a->pp > 1)
        r = dt_sched_named(&s, "1f1b", a->pp, 1, a->m);
    if (r == DT_OK)
        r = lab_rank_init(&x, world, &whole, a->tp, a->pp, s, &tc);
    measure_out o = {0, 0};
    for (int k = 0; r == DT_OK && k < 3; k++) {
        for (size_t i = 0; i < rows; i++) /* each replica its own tokens */
            tok[i] = (int32_t)((i * 7 + (size_t)k + (size_t)x.g.dp_rank * 3) % a->cfg->vocab),
            y[i] = (int32_t)((i * 5 + 1) % a->cfg->vocab);
        dt_batch b = {NULL, tok, y, a->B, a->cfg->context, a->m};
        r = dt_barrier(world);
        /* after the barrier every clock reads the same: the step's time is
           the largest, over the ranks, of each one's time in it */
        double t0 = dt_clock(world), w0 = dt_now();
        if (r == DT_OK)
            r = dt_train_step(&x.trainer, &b);
        o.seconds = dt_clock(world) - t0, o.wall = dt_now() - w0;
    }
    (void)D;
    measure_out *slot = dt_rank_out(world);
    if (r == DT_OK && slot)
        *slot = o;
    lab_rank_free(&x);
    dt_sched_free(s);
    dt_model_free(&whole);
    free(tok), free(y);
    return r;
}

dt_result lab_measure_step(const dt_gpt_config *cfg, size_t B, int m, const double *forward_s,
                           const double *backward_s, int tp, int pp, int dp, const char *net,
                           double *seconds, double *wall_s)
{
    if (!cfg || !forward_s || !backward_s || !seconds || !wall_s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_measure_step: NULL argument");
    if (tp < 1 || pp < 1 || dp < 1 || tp * pp * dp > 64)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_measure_step: tp %d pp %d dp %d", tp, pp, dp);
    measure_arg a = {cfg, B, m, tp, pp, forward_s, backward_s};
    measure_out out[64];
    dt_launch_opts o;
    DT_CHECK(dt_launch_opts_init(&o));
    o.nranks = tp * pp * dp;
    o.backend = DT_BACKEND_THREAD;
    o.net = net;
    o.algo = DT_ALGO_RING;
    o.timeout_s = 60;
    o.out = out, o.out_bytes = sizeof *out;
    DT_CHECK(dt_launch(&o, measure_rank, &a));
    *seconds = 0, *wall_s = 0;
    for (int r = 0; r < o.nranks; r++)
        *seconds = out[r].seconds > *seconds ? out[r].seconds : *seconds,
        *wall_s = out[r].wall > *wall_s ? out[r].wall : *wall_s;
    return DT_OK;
}
