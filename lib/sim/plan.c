/* plan.c - the planner's sizes: the arguments it accepts, the parameters,
 * the FLOPs and the memory of one device (dt/sim.h, "the planner";
 * chapter 13). The times are plan_time.c's.
 *
 * The model (h hidden, a heads, f MLP width, s tokens, V words, l layers)
 * and one layer's parameters:
 *   attention   QKV 3h^2 + 3h, projection h^2 + h
 *   MLP         h f + f, f h + h
 *   layernorms  2 x 2h
 *   in all      4h^2 + 2hf + f + 9h     (12h^2 + 13h for f = 4h)
 * and the model's: l (4h^2 + 2hf + f + 9h) + V h (the embedding, tied to
 * the output layer) + s h (positions) + 2h (the last layernorm).
 * Under tensor parallelism a TP rank holds the column-parallel weights
 * and biases (QKV, the first MLP linear) and the row-parallel weights
 * (projection, second linear) split t ways; the row-parallel biases and
 * the layernorms whole:  (4h^2 + 2hf + 3h + f) / t + 6h.
 *
 * FLOPs (Narayanan et al. 2021, appendix): a token's forward multiplies
 * 2 x (its weights) = 2 (4h^2 + 2hf) a layer, and attention adds QK^T and
 * scores x V, 2 s h each: 8h^2 + 4hf + 4sh a layer, 2hV for the logits.
 * The backward is twice the forward, so the model's FLOPs per step are
 *   3 B s (l (8h^2 + 4hf + 4sh) + 2hV) = 72 B s l h^2 (1 + s/6h + V/12lh)   (f = 4h)
 * Full recomputation runs every layer's forward again:
 *   + B s l (8h^2 + 4hf + 4sh)  ->  96 B s l h^2 (1 + s/6h + V/16lh)          (f = 4h)
 * selective recomputation only the scores: + 4 B s^2 l h. model_flops
 * counts the first, hw_flops with the recomputation (MFU and HFU). */
#include "plan.h"

#include <math.h>

/* ---------------------------------------------------------------- checks */

static int refuse(dt_sim_bad *bad, const char *field, double value, const char *need,
                  const char *other, double other_value)
{
    if (bad) {
        bad->field = field;
        bad->value = value;
        bad->need = need;
        bad->other = other;
        bad->other_value = other_value;
    }
    return 0;
}

#define MAX_SIZE 1e8    /* any one size of the model or the layout */
#define MAX_DEVICES 1e7 /* tp x pp x dp */

static int count_ok(dt_sim_bad *bad, const char *field, int v)
{
    if (v < 1 || v > MAX_SIZE)
        return refuse(bad, field, v, "must be a whole number from 1 to 1e8", 0, 0);
    return 1;
}

static int link_ok(dt_sim_bad *bad, const char *alpha_field, const char *beta_field,
                   const dt_net *n)
{
    if (!(isfinite(n->alpha) && n->alpha >= 0))
        return refuse(bad, alpha_field, n->alpha, "must be >= 0 seconds", 0, 0);
    if (!(n->beta > 0))
        return refuse(bad, beta_field, n->beta, "must be > 0 bytes/s", 0, 0);
    return 1;
}

static int share_ok(dt_sim_bad *bad, const char *field, double v)
{
    if (!(v > 0 && v <= 1))
        return refuse(bad, field, v, "must be in (0, 1]", 0, 0);
    return 1;
}

static int positive_ok(dt_sim_bad *bad, const char *field, double v)
{
    if (!(isfinite(v) && v > 0))
        return refuse(bad, field, v, "must be > 0", 0, 0);
    return 1;
}

static int model_ok(const dt_sim_model *m, dt_sim_bad *bad)
{
    if (!count_ok(bad, "layers", m->layers) || !count_ok(bad, "hidden", m->hidden) ||
        !count_ok(bad, "heads", m->heads) || !count_ok(bad, "ffn", m->ffn) ||
        !count_ok(bad, "seq", m->seq) || !count_ok(bad, "vocab", m->vocab))
        return 0;
    if (m->hidden % m->heads)
        return refuse(bad, "heads", m->heads, "must divide hidden", "hidden", m->hidden);
    if (m->dropout != 0 && m->dropout != 1)
        return refuse(bad, "dropout", m->dropout, "must be 0 or 1", 0, 0);
    return 1;
}

static int layout_ok(const dt_sim_model *m, const dt_sim_layout *l, dt_sim_bad *bad)
{
    if (!count_ok(bad, "tp", l->tp) || !count_ok(bad, "pp", l->pp) || !count_ok(bad, "dp", l->dp) ||
        !count_ok(bad, "vpp", l->vpp) || !count_ok(bad, "micro_batch", l->micro_batch) ||
        !count_ok(bad, "global_batch", l->global_batch))
        return 0;
    if ((double)l->tp * l->pp * l->dp > MAX_DEVICES)
        return refuse(bad, "dp", l->dp, "makes tp x pp x dp more than 1e7 devices", 0, 0);
    if (m->heads % l->tp)
        return refuse(bad, "tp", l->tp, "must divide heads", "heads", m->heads);
    if (m->ffn % l->tp)
        return refuse(bad, "tp", l->tp, "must divide ffn", "ffn", m->ffn);
    if (m->layers % l->pp)
        return refuse(bad, "pp", l->pp, "must divide layers", "layers", m->layers);
    if (l->vpp > 1 && l->pp == 1)
        return refuse(bad, "vpp", l->vpp, "needs pp > 1 (interleaving splits pipeline stages)",
                      "pp", l->pp);
    if ((m->layers / l->pp) % l->vpp)
        return refuse(bad, "vpp", l->vpp, "must divide the layers of a stage (layers / pp)",
                      "layers", m->layers);
    if (l->sp != 0 && l->sp != 1)
        return refuse(bad, "sp", l->sp, "must be 0 or 1", 0, 0);
    if (l->global_batch % ((long)l->dp * l->micro_batch))
        return refuse(bad, "global_batch", l->global_batch,
                      "must be a multiple of dp x micro_batch", "micro_batch", l->micro_batch);
    long microbatches = l->global_batch / ((long)l->dp * l->micro_batch);
    if (l->vpp > 1 && microbatches % l->pp)
        return refuse(bad, "global_batch", l->global_batch,
                      "must give a multiple of pp micro-batches per pipeline when vpp > 1 "
                      "(global_batch / (dp x micro_batch))", "pp", l->pp);
    if ((unsigned)l->recompute >= DT_SIM_NUM_RECOMPUTE)
        return refuse(bad, "recompute", l->recompute, "must be none, selective or full", 0, 0);
    if (l->zero < 0 || l->zero > 3)
        return refuse(bad, "zero", l->zero, "must be a ZeRO stage from 0 to 3", 0, 0);
    if ((unsigned)l->dtype >= DT_SIM_NUM_DTYPES)
        return refuse(bad, "dtype", l->dtype, "must be bf16, fp16 or fp32", 0, 0);
    if ((unsigned)l->schedule >= DT_SIM_NUM_SCHEDULES)
        return refuse(bad, "schedule", l->schedule, "must be 1f1b or gpipe", 0, 0);
    if (l->schedule == DT_SIM_GPIPE && l->vpp > 1)
        return refuse(bad, "vpp", l->vpp, "must be 1 with the gpipe schedule", 0, 0);
    return 1;
}

static int cluster_ok(const dt_sim_cluster *c, dt_sim_bad *bad)
{
    return positive_ok(bad, "peak16", c->peak16) && positive_ok(bad, "peak32", c->peak32) &&
           positive_ok(bad, "hbm_bytes", c->hbm_bytes) && positive_ok(bad, "hbm_bw", c->hbm_bw) &&
           count_ok(bad, "per_node", c->per_node) &&
           link_ok(bad, "intra.alpha", "intra.beta", &c->intra) &&
           link_ok(bad, "inter.alpha", "inter.beta", &c->inter) &&
           share_ok(bad, "matmul_eff", c->matmul_eff) && share_ok(bad, "net_eff", c->net_eff);
}

int dt_sim_plan_check(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_bad *bad)
{
    if (!m || !l || !c)
        return refuse(bad, !m ? "model" : !l ? "layout" : "cluster", 0, "must not be NULL", 0, 0);
    return model_ok(m, bad) && layout_ok(m, l, bad) && cluster_ok(c, bad);
}

/* ---------------------------------------------------------------- dims */

/* Whether the groups of k ranks stride apart (ranks r, r + stride, ...)
 * each sit inside one node of n devices, on a job of D devices placed by
 * block. The ranks of one "block" of k groups, stride x k consecutive
 * ranks, share a node for every block exactly when stride x k divides n;
 * a job no bigger than a node is all on one. */
static int spans_nodes(int n, double stride, double k, double devices)
{
    if (k == 1 || devices <= n)
        return 0;
    return fmod((double)n, stride * k) != 0;
}

void dt_sim_plan_dims(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_dims *k)
{
    k->l = m->layers, k->h = m->hidden, k->a = m->heads, k->f = m->ffn;
    k->s = m->seq, k->V = m->vocab, k->dropout = m->dropout;
    k->t = l->tp, k->p = l->pp, k->d = l->dp, k->v = l->vpp;
    k->b = l->micro_batch, k->B = l->global_batch;
    k->m = k->B / (k->d * k->b);
    int fp32 = l->dtype == DT_SIM_FP32;
    k->e = fp32 ? 4 : 2;
    k->bytes = fp32 ? dt_sim_fp32_adam() : dt_sim_mixed_precision_adam();
    k->peak = fp32 ? c->peak32 : c->peak16;
    k->layers_stage = k->l / k->p;
    k->layer_params = (4 * k->h * k->h + 2 * k->h * k->f + 3 * k->h + k->f) / k->t + 6 * k->h;
    double devices = k->t * k->p * k->d;
    k->tp_inter = spans_nodes(c->per_node, 1, k->t, devices);
    k->pp_inter = spans_nodes(c->per_node, k->t, k->p, devices);
    k->dp_inter = spans_nodes(c->per_node, k->t * k->p, k->d, devices);
}

/* ---------------------------------------------------------------- memory */

/* Layer-micro-batches of activations that pipeline rank r holds at most
 * (Megatron's schedules): GPipe runs every forward first (m micro-batches
 * of its l/p layers); 1F1B lets rank r run p - r forwards before its
 * first backward (at most m); the interleaved schedule 2 (p - r - 1) +
 * (v - 1) p + 1 chunks of l/(p v) layers (Korthikanti et al. 2022, 4.2.3:
 * the first stage holds l (1 + (p - 1)/(p v)) layers' worth). */
static double held_layers(const dt_sim_layout *l, const dt_sim_dims *k, int r)
{
    if (l->schedule == DT_SIM_GPIPE)
        return k->m * k->layers_stage;
    if (l->vpp == 1)
        return fmin(k->p - r, k->m) * k->layers_stage;
    double chunks = 2 * (k->p - r - 1) + (k->v - 1) * k->p + 1;
    return fmin(chunks, k->m * k->v) * k->layers_stage / k->v;
}

/* Bytes of activations pipeline rank r keeps at its peak. Per layer and
 * micro-batch (activations.c, Korthikanti et al. 2022 section 4):
 *   none       the layer's whole activations
 *   selective  the same less the attention scores
 *   full       only the layer's input, e sbh (/ t with SP), plus one
 *              layer rebuilt whole while its backward runs
 * and the ends of the model: the first stage keeps the embedding's dropout
 * mask (d sbh) of each micro-batch in flight; the last keeps, for the one
 * micro-batch whose loss it computes, the last layernorm's and the output
 * layer's inputs (2 e sbh) and the fp32 logits (4 s b V / t). */
static double acts_bytes(const dt_sim_layout *l, const dt_sim_dims *k, int r)
{
    double sp_div = l->sp ? k->t : 1, sbh = k->s * k->b * k->h;
    double whole = dt_sim_act_bytes_layer_ffn(k->s, k->b, k->h, k->a, k->f, l->tp, l->sp, k->e,
                                              (int)k->dropout);
    double kept = whole, rebuilt = 0;
    if (l->recompute == DT_SIM_RECOMPUTE_SELECTIVE)
        kept = whole - dt_sim_act_bytes_scores(k->s, k->b, k->a, l->tp, k->e, (int)k->dropout);
    else if (l->recompute == DT_SIM_RECOMPUTE_FULL)
        kept = k->e * sbh / sp_div, rebuilt = whole;
    double held = held_layers(l, k, r);
    double bytes = held * kept + rebuilt;
    if (r == 0)
        bytes += held / k->layers_stage * k->dropout * sbh / sp_div;
    if (r == l->pp - 1)
        bytes += 2 * k->e * sbh / sp_div + 4 * k->s * k->b * k->V / k->t;
    return bytes;
}

/* Parameters of pipeline rank r: its layers, the embedding (V h / t, and
 * the positions s h) on the first, the tied output layer (a copy of the
 * embedding, V h / t) and the last layernorm on the last. */
static double stage_params(const dt_sim_dims *k, int r)
{
    double p = k->layers_stage * k->layer_params;
    if (r == 0)
        p += k->V * k->h / k->t + k->s * k->h;
    if (r == (int)k->p - 1) {
        p += 2 * k->h;
        if (r != 0)
            p += k->V * k->h / k->t;
    }
    return p;
}

static void fill_memory(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                        dt_sim_cost *plan)
{
    int stages[2] = {0, l->pp - 1};
    plan->mem_bytes = -1;
    for (int i = 0; i < (l->pp > 1 ? 2 : 1); i++) {
        double params = stage_params(k, stages[i]);
        /* ZeRO shards the model states over the DP group (memory.c) */
        dt_sim_memory st = dt_sim_zero_memory(l->zero, params, l->dp, k->bytes);
        double acts = acts_bytes(l, k, stages[i]);
        if (st.total + acts <= plan->mem_bytes)
            continue;
        plan->params_device = params;
        plan->mem_params = st.params, plan->mem_grads = st.grads, plan->mem_optim = st.optim;
        plan->mem_acts = acts;
        plan->mem_bytes = st.total + acts;
        plan->mem_stage = stages[i];
    }
    plan->inflight = held_layers(l, k, 0) / k->layers_stage;
    plan->fits = plan->mem_bytes <= c->hbm_bytes;
}

/* ---------------------------------------------------------------- the plan */

static void fill_flops(const dt_sim_layout *l, const dt_sim_dims *k, dt_sim_cost *plan)
{
    double layer = 8 * k->h * k->h + 4 * k->h * k->f + 4 * k->s * k->h;
    double tokens = k->B * k->s;
    plan->model_flops = 3 * tokens * (k->l * layer + 2 * k->h * k->V);
    double again = l->recompute == DT_SIM_RECOMPUTE_FULL        ? layer
                   : l->recompute == DT_SIM_RECOMPUTE_SELECTIVE ? 4 * k->s * k->h
                                                                : 0;
    plan->hw_flops = plan->model_flops + tokens * k->l * again;
}

dt_result dt_sim_plan_eval(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                           dt_sim_cost *plan, dt_sim_bad *bad)
{
    if (!plan)
        return refuse(bad, "plan", 0, "must not be NULL", 0, 0), DT_ERR_INVALID_ARG;
    if (!dt_sim_plan_check(m, l, c, bad))
        return DT_ERR_INVALID_ARG;
    dt_sim_dims k;
    dt_sim_plan_dims(m, l, c, &k);
    *plan = (dt_sim_cost){0};
    plan->params = k.l * (4 * k.h * k.h + 2 * k.h * k.f + k.f + 9 * k.h) + k.V * k.h +
                   k.s * k.h + 2 * k.h;
    plan->devices = l->tp * l->pp * l->dp;
    plan->microbatches = (int)k.m;
    fill_memory(l, c, &k, plan);
    fill_flops(l, &k, plan);
    dt_sim_plan_times(l, c, &k, plan);
    return DT_OK;
}
