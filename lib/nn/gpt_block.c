/* gpt_block.c - the tiny GPT's transformer block and head as stage layers:
 * where each keeps its saved activations, and its forward and backward
 * written as a chain of the layer functions of layers.c, attention.c and
 * the tensor-parallel halves of tp_blocks.c.
 *
 *   block:  res2 = x + proj(attn(qkv(ln1(x))))       dt_tp_attention_*
 *           y    = res2 + mproj(gelu(fc(ln2(res2)))) dt_tp_mlp_*
 *   head:   logits = lm_head(lnf(x))            (no bias; column-parallel)
 *
 * Shapes: r = B * T rows of C channels, NH heads; on a tensor-parallel
 * shard of t ranks (m->tp, dt/tp.h) this rank's NH/t heads and 4C/t
 * hidden units, and the layer norms and the residual stream whole on every
 * rank. A whole model has t = 1 and no group: the same calls as one rank
 * ever made, bit for bit. */
#include "stage_internal.h"
#include "tp_internal.h"

#include <string.h>

/* Where a block keeps its saved activations (offsets in floats into its
 * saved buffer) and its backward temporaries (into a->scratch). */
typedef struct {
    size_t ln1, mean1, rstd1, qkv, att, atty, res2, ln2, mean2, rstd2, fch, fchg, total;
} block_saved;

/* dfchg | dfch is the MLP's work, datty | dqkv the attention's */
typedef struct {
    size_t dres2, dfchg, dfch, dln2, datty, dqkv, dln1, total;
} block_scratch;

static block_saved saved_layout(size_t B, size_t T, size_t C, size_t NH, size_t t)
{
    size_t r = B * T, o = 0, Cl = C / t;
    block_saved s;
    s.ln1 = o, o += r * C;
    s.mean1 = o, o += r;
    s.rstd1 = o, o += r;
    s.qkv = o, o += 3 * r * Cl;
    s.att = o, o += B * (NH / t) * T * T;
    s.atty = o, o += r * Cl;
    s.res2 = o, o += r * C;
    s.ln2 = o, o += r * C;
    s.mean2 = o, o += r;
    s.rstd2 = o, o += r;
    s.fch = o, o += 4 * r * Cl;
    s.fchg = o, o += 4 * r * Cl;
    s.total = o;
    return s;
}

static block_scratch scratch_layout(size_t r, size_t C, size_t t)
{
    block_scratch s;
    size_t o = 0, Cl = C / t;
    s.dres2 = o, o += r * C;
    s.dfchg = o, o += 4 * r * Cl;
    s.dfch = o, o += 4 * r * Cl;
    s.dln2 = o, o += r * C;
    s.datty = o, o += r * Cl;
    s.dqkv = o, o += 3 * r * Cl;
    s.dln1 = o, o += r * C;
    s.total = o;
    return s;
}

size_t nn_block_saved_floats(const dt_model *m, size_t B, size_t T)
{
    return saved_layout(B, T, m->gpt.channels, m->gpt.heads, nn_tp_size(m)).total;
}

size_t nn_block_scratch_floats(const dt_model *m, size_t rows)
{
    return scratch_layout(rows, m->gpt.channels, nn_tp_size(m)).total;
}

/* lnf (r, C), then mean (r) and rstd (r) */
size_t nn_head_saved_floats(size_t rows, size_t C) { return rows * C + 2 * rows; }

dt_result nn_block_forward(const dt_model *m, dt_acts *a, int layer, float *sv, const float *x,
                           float *y)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads, t = nn_tp_size(m);
    block_saved s = saved_layout(a->B, a->T, C, NH, t);
#define P(k) dt_model_view(m, m->params, layer, DT_BLOCK_##k)
    DT_CHECK(dt_layernorm_forward(sv + s.ln1, sv + s.mean1, sv + s.rstd1, x, P(LN1_WEIGHT),
                                  P(LN1_BIAS), r, C));
    DT_CHECK(dt_tp_attention_forward(m->tp, sv + s.res2, sv + s.qkv, sv + s.att, sv + s.atty,
                                     sv + s.ln1, P(QKV_WEIGHT), P(QKV_BIAS), P(PROJ_WEIGHT),
                                     P(PROJ_BIAS), a->B, a->T, C, NH));
    DT_CHECK(dt_residual_forward(sv + s.res2, sv + s.res2, x, r * C));
    DT_CHECK(dt_layernorm_forward(sv + s.ln2, sv + s.mean2, sv + s.rstd2, sv + s.res2,
                                  P(LN2_WEIGHT), P(LN2_BIAS), r, C));
    DT_CHECK(dt_tp_mlp_forward(m->tp, y, sv + s.fch, sv + s.fchg, sv + s.ln2, P(FC_WEIGHT),
                               P(FC_BIAS), P(MPROJ_WEIGHT), P(MPROJ_BIAS), r, C, 4 * C / t));
#undef P
    return dt_residual_forward(y, y, sv + s.res2, r * C);
}

dt_result nn_block_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                            const float *x, const float *dy, float *dx, float *G)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads, t = nn_tp_size(m);
    block_saved s = saved_layout(a->B, a->T, C, NH, t);
    block_scratch k = scratch_layout(r, C, t);
    float *w = a->scratch;
#define P(k) dt_model_view(m, m->params, layer, DT_BLOCK_##k)
#define D(k) dt_model_view(m, G, layer, DT_BLOCK_##k)
    memset(w, 0, k.total * sizeof(float));
    /* y = res2 + mlp(ln2(res2)): the residual passes dy on unchanged */
    memcpy(w + k.dres2, dy, r * C * sizeof(float));
    DT_CHECK(dt_tp_mlp_backward(m->tp, w + k.dln2, D(FC_WEIGHT), D(FC_BIAS), D(MPROJ_WEIGHT),
                                D(MPROJ_BIAS), w + k.dfchg, dy, sv + s.ln2, sv + s.fch,
                                sv + s.fchg, P(FC_WEIGHT), P(MPROJ_WEIGHT), r, C, 4 * C / t));
    DT_CHECK(dt_layernorm_backward(w + k.dres2, D(LN2_WEIGHT), D(LN2_BIAS), w + k.dln2,
                                   sv + s.res2, P(LN2_WEIGHT), sv + s.mean2, sv + s.rstd2, r, C));
    /* res2 = x + proj(attn(qkv(ln1(x)))) */
    DT_CHECK(dt_residual_backward(dx, NULL, w + k.dres2, r * C));
    DT_CHECK(dt_tp_attention_backward(m->tp, w + k.dln1, D(QKV_WEIGHT), D(QKV_BIAS),
                                      D(PROJ_WEIGHT), D(PROJ_BIAS), w + k.datty, w + k.dres2,
                                      sv + s.ln1, sv + s.qkv, sv + s.att, sv + s.atty,
                                      P(QKV_WEIGHT), P(PROJ_WEIGHT), a->B, a->T, C, NH));
    return dt_layernorm_backward(dx, D(LN1_WEIGHT), D(LN1_BIAS), w + k.dln1, x, P(LN1_WEIGHT),
                                 sv + s.mean1, sv + s.rstd1, r, C);
#undef P
#undef D
}

dt_result nn_head_forward(const dt_model *m, dt_acts *a, int layer, float *sv, const float *x,
                          float *y)
{
    size_t r = a->rows, C = m->gpt.channels;
    float *lnf = sv, *mean = sv + r * C, *rstd = mean + r;
    DT_CHECK(dt_layernorm_forward(lnf, mean, rstd, x,
                                  dt_model_view(m, m->params, layer, DT_HEAD_LNF_WEIGHT),
                                  dt_model_view(m, m->params, layer, DT_HEAD_LNF_BIAS), r, C));
    /* this rank's V/t columns of the logits (the vocabulary's split) */
    return dt_tp_column_forward(m->tp, y, lnf,
                                dt_model_view(m, m->params, layer, DT_HEAD_LM_WEIGHT), NULL, r,
                                C, m->layers[layer].out_width);
}

dt_result nn_head_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                           const float *x, const float *dy, float *dx, float *G)
{
    size_t r = a->rows, C = m->gpt.channels;
    const float *lnf = sv, *mean = sv + r * C, *rstd = mean + r;
    float *dlnf = a->scratch;
    DT_CHECK(dt_tp_column_backward(m->tp, dlnf, dt_model_view(m, G, layer, DT_HEAD_LM_WEIGHT),
                                   NULL, dy, lnf,
                                   dt_model_view(m, m->params, layer, DT_HEAD_LM_WEIGHT), r, C,
                                   m->layers[layer].out_width));
    return dt_layernorm_backward(dx, dt_model_view(m, G, layer, DT_HEAD_LNF_WEIGHT),
                                 dt_model_view(m, G, layer, DT_HEAD_LNF_BIAS), dlnf, x,
                                 dt_model_view(m, m->params, layer, DT_HEAD_LNF_WEIGHT), mean, rstd,
                                 r, C);
}
