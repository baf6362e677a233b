/* cost.c - lab 13, task (c): the cost model's core terms for a layout
 * (chapter 13, sections 1, 3 and 5). dt/sim.h's activation formulas
 * (Korthikanti et al. 2022) and ZeRO's bytes per parameter are yours to
 * call; its planner (dt_sim_plan) is what this task writes. */
#include "threed.h"

#include <math.h>

/* Given: the checks every function of this file makes (1: fine). */
static int layout_fine(const char *fn, const dt_sim_model *m, const dt_sim_layout *l)
{
    if (!m || !l)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, m ? "layout" : "model"), 0;
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 ||
        m->vocab < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a model size below 1", fn), 0;
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->vpp < 1 || l->micro_batch < 1 ||
        l->global_batch % (l->dp * l->micro_batch) || l->global_batch < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: tp %d pp %d dp %d vpp %d, global batch %d in "
                       "micro-batches of %d", fn, l->tp, l->pp, l->dp, l->vpp, l->global_batch,
                       l->micro_batch), 0;
    if (m->layers % (l->pp * l->vpp) || l->sp || l->schedule != DT_SIM_1F1B ||
        l->zero < 0 || l->zero > 3 || (unsigned)l->dtype >= DT_SIM_NUM_DTYPES ||
        (unsigned)l->recompute >= DT_SIM_NUM_RECOMPUTE)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %d layers over pp %d x vpp %d, sp %d, "
                       "schedule %d, ZeRO %d: outside this task", fn, m->layers, l->pp, l->vpp,
                       l->sp, (int)l->schedule, l->zero), 0;
    return 1;
}

double lab_bubble(int p, int v, int m)
{
    /* BEGIN STUDENT CODE */
    if (p < 1 || v < 1 || m < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_bubble: p %d, v %d, m %d", p, v, m), NAN;
    /* interleaving shrinks the fill and the drain v-fold: (p - 1) / (v m) */
    return (double)(p - 1) / ((double)v * m);
    /* END STUDENT CODE */
}

dt_result lab_memory_first_stage(const dt_sim_model *m, const dt_sim_layout *l, lab_memory *out)
{
    /* BEGIN STUDENT CODE */
    if (!layout_fine("lab_memory_first_stage", m, l))
        return DT_ERR_INVALID_ARG;
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_memory_first_stage: NULL out");
    double h = m->hidden, f = m->ffn, s = m->seq, V = m->vocab, t = l->tp, b = l->micro_batch;
    double ls = (double)m->layers / l->pp, mb = (double)l->global_batch / (l->dp * b);
    int fp32 = l->dtype == DT_SIM_FP32;
    double e = fp32 ? 4 : 2;
    dt_sim_state_bytes by = fp32 ? dt_sim_fp32_adam() : dt_sim_mixed_precision_adam();
    /* parameters: the stage's layers' shard, the embedding and positions */
    double psi = ls * ((4 * h * h + 2 * h * f + 3 * h + f) / t + 6 * h) + V * h / t + s * h;
    if (l->pp == 1)
        psi += 2 * h; /* the last layernorm; the output layer is the embedding */
    double zd = l->dp;
    out->optim = by.k * psi / (l->zero >= 1 ? zd : 1);
    out->grads = by.g * psi / (l->zero >= 2 ? zd : 1);
    out->params = by.p * psi / (l->zero >= 3 ? zd : 1);
    /* layer-micro-batches held: 1F1B min(p, m) of l/p; interleaved
       2(p-1) + (v-1)p + 1 chunks of l/(pv) */
    double held = l->vpp == 1
                      ? fmin(l->pp, mb) * ls
                      : fmin(2.0 * (l->pp - 1) + (l->vpp - 1.0) * l->pp + 1, mb * l->vpp) * ls /
                            l->vpp;
    double whole = dt_sim_act_bytes_layer_ffn(s, b, h, m->heads, f, l->tp, 0, e, m->dropout);
    double kept = whole, rebuilt = 0, sbh = s * b * h;
    if (l->recompute == DT_SIM_RECOMPUTE_SELECTIVE)
        kept -= dt_sim_act_bytes_scores(s, b, m->heads, l->tp, e, m->dropout);
    else if (l->recompute == DT_SIM_RECOMPUTE_FULL)
        kept = e * sbh, rebuilt = whole;
    double acts = held * kept + rebuilt + held / ls * m->dropout * sbh;
    if (l->pp == 1)
        acts += 2 * e * sbh + 4 * s * b * V / t;
    out->acts = acts;
    out->total = out->params + out->grads + out->optim + out->acts;
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_group_bytes_per_step(const dt_sim_model *m, const dt_sim_layout *l,
                                   lab_group_bytes *out)
{
    /* BEGIN STUDENT CODE */
    if (!layout_fine("lab_group_bytes_per_step", m, l))
        return DT_ERR_INVALID_ARG;
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_group_bytes_per_step: NULL out");
    if (l->zero > 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_group_bytes_per_step: ZeRO %d: 0 and 1 only",
                       l->zero);
    double h = m->hidden, f = m->ffn, s = m->seq, V = m->vocab, t = l->tp, d = l->dp;
    double ls = (double)m->layers / l->pp, mb = (double)l->global_batch / (l->dp * l->micro_batch);
    int fp32 = l->dtype == DT_SIM_FP32;
    double e = fp32 ? 4 : 2, n = s * l->micro_batch * h * e;
    dt_sim_state_bytes by = fp32 ? dt_sim_fp32_adam() : dt_sim_mixed_precision_adam();
    double calls = 4 + (l->recompute == DT_SIM_RECOMPUTE_FULL ? 2 : 0);
    /* a ring allreduce of n sends 2 (k-1)/k n from each rank */
    out->tp = mb * ls * calls * 2 * (t - 1) / t * n;
    out->pp = l->pp > 1 ? mb * 2 * l->vpp * n / t : 0;
    double psi = ls * ((4 * h * h + 2 * h * f + 3 * h + f) / t + 6 * h) + V * h / t + s * h +
                 (l->pp == 1 ? 2 * h : 0);
    /* ZeRO 0: allreduce; ZeRO 1: reduce-scatter + allgather, (k-1)/k each */
    out->dp = l->zero == 0 ? 2 * (d - 1) / d * psi * by.g
                           : (d - 1) / d * psi * (by.g + by.p);
    return DT_OK;
    /* END STUDENT CODE */
}
