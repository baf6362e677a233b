/* gpt_block.c - the tiny GPT's transformer block and head as stage layers:
 * where each keeps its saved activations, and its forward and backward
 * written as a chain of the layer functions of layers.c and attention.c.
 *
 *   block:  res2 = x + proj(attn(qkv(ln1(x))))
 *           y    = res2 + mproj(gelu(fc(ln2(res2))))
 *   head:   logits = lm_head(lnf(x))            (no bias)
 *
 * Shapes: r = B * T rows of C channels, NH heads. */
#include "stage_internal.h"

#include <string.h>

/* Where a block keeps its saved activations (offsets in floats into its
 * saved buffer) and its backward temporaries (into a->scratch). */
typedef struct {
    size_t ln1, mean1, rstd1, qkv, att, atty, res2, ln2, mean2, rstd2, fch, fchg, total;
} block_saved;

typedef struct {
    size_t dres2, dfchg, dfch, dln2, datty, dqkv, dln1, total;
} block_scratch;

static block_saved saved_layout(size_t B, size_t T, size_t C, size_t NH)
{
    size_t r = B * T, o = 0;
    block_saved s;
    s.ln1 = o, o += r * C;
    s.mean1 = o, o += r;
    s.rstd1 = o, o += r;
    s.qkv = o, o += 3 * r * C;
    s.att = o, o += B * NH * T * T;
    s.atty = o, o += r * C;
    s.res2 = o, o += r * C;
    s.ln2 = o, o += r * C;
    s.mean2 = o, o += r;
    s.rstd2 = o, o += r;
    s.fch = o, o += 4 * r * C;
    s.fchg = o, o += 4 * r * C;
    s.total = o;
    return s;
}

static block_scratch scratch_layout(size_t r, size_t C)
{
    block_scratch s;
    size_t o = 0;
    s.dres2 = o, o += r * C;
    s.dfchg = o, o += 4 * r * C;
    s.dfch = o, o += 4 * r * C;
    s.dln2 = o, o += r * C;
    s.datty = o, o += r * C;
    s.dqkv = o, o += 3 * r * C;
    s.dln1 = o, o += r * C;
    s.total = o;
    return s;
}

size_t nn_block_saved_floats(size_t B, size_t T, size_t C, size_t NH)
{
    return saved_layout(B, T, C, NH).total;
}

size_t nn_block_scratch_floats(size_t rows, size_t C) { return scratch_layout(rows, C).total; }

/* lnf (r, C), then mean (r) and rstd (r) */
size_t nn_head_saved_floats(size_t rows, size_t C) { return rows * C + 2 * rows; }

dt_result nn_block_forward(const dt_model *m, dt_acts *a, int layer, float *sv, const float *x,
                           float *y)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s = saved_layout(a->B, a->T, C, NH);
#define P(k) dt_model_view(m, m->params, layer, DT_BLOCK_##k)
    DT_CHECK(dt_layernorm_forward(sv + s.ln1, sv + s.mean1, sv + s.rstd1, x, P(LN1_WEIGHT),
                                  P(LN1_BIAS), r, C));
    DT_CHECK(dt_linear_forward(sv + s.qkv, sv + s.ln1, P(QKV_WEIGHT), P(QKV_BIAS), r, C, 3 * C));
    DT_CHECK(dt_attention_forward(sv + s.atty, sv + s.att, sv + s.qkv, a->B, a->T, C, NH));
    DT_CHECK(dt_linear_forward(sv + s.res2, sv + s.atty, P(PROJ_WEIGHT), P(PROJ_BIAS), r, C, C));
    DT_CHECK(dt_residual_forward(sv + s.res2, sv + s.res2, x, r * C));
    DT_CHECK(dt_layernorm_forward(sv + s.ln2, sv + s.mean2, sv + s.rstd2, sv + s.res2,
                                  P(LN2_WEIGHT), P(LN2_BIAS), r, C));
    DT_CHECK(dt_linear_forward(sv + s.fch, sv + s.ln2, P(FC_WEIGHT), P(FC_BIAS), r, C, 4 * C));
    DT_CHECK(dt_gelu_forward(sv + s.fchg, sv + s.fch, r * 4 * C));
    DT_CHECK(dt_linear_forward(y, sv + s.fchg, P(MPROJ_WEIGHT), P(MPROJ_BIAS), r, 4 * C, C));
#undef P
    return dt_residual_forward(y, y, sv + s.res2, r * C);
}

dt_result nn_block_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                            const float *x, const float *dy, float *dx, float *G)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s = saved_layout(a->B, a->T, C, NH);
    block_scratch t = scratch_layout(r, C);
    float *w = a->scratch;
#define P(k) dt_model_view(m, m->params, layer, DT_BLOCK_##k)
#define D(k) dt_model_view(m, G, layer, DT_BLOCK_##k)
    memset(w, 0, t.total * sizeof(float));
    /* y = res2 + mlp(ln2(res2)): the residual passes dy on unchanged */
    memcpy(w + t.dres2, dy, r * C * sizeof(float));
    DT_CHECK(dt_linear_backward(w + t.dfchg, D(MPROJ_WEIGHT), D(MPROJ_BIAS), dy, sv + s.fchg,
                                P(MPROJ_WEIGHT), r, 4 * C, C));
    DT_CHECK(dt_gelu_backward(w + t.dfch, w + t.dfchg, sv + s.fch, r * 4 * C));
    DT_CHECK(dt_linear_backward(w + t.dln2, D(FC_WEIGHT), D(FC_BIAS), w + t.dfch, sv + s.ln2,
                                P(FC_WEIGHT), r, C, 4 * C));
    DT_CHECK(dt_layernorm_backward(w + t.dres2, D(LN2_WEIGHT), D(LN2_BIAS), w + t.dln2,
                                   sv + s.res2, P(LN2_WEIGHT), sv + s.mean2, sv + s.rstd2, r, C));
    /* res2 = x + proj(attn(qkv(ln1(x)))) */
    DT_CHECK(dt_residual_backward(dx, NULL, w + t.dres2, r * C));
    DT_CHECK(dt_linear_backward(w + t.datty, D(PROJ_WEIGHT), D(PROJ_BIAS), w + t.dres2,
                                sv + s.atty, P(PROJ_WEIGHT), r, C, C));
    DT_CHECK(dt_attention_backward(w + t.dqkv, w + t.datty, sv + s.qkv, sv + s.att, a->B, a->T,
                                   C, NH));
    DT_CHECK(dt_linear_backward(w + t.dln1, D(QKV_WEIGHT), D(QKV_BIAS), w + t.dqkv, sv + s.ln1,
                                P(QKV_WEIGHT), r, C, 3 * C));
    return dt_layernorm_backward(dx, D(LN1_WEIGHT), D(LN1_BIAS), w + t.dln1, x, P(LN1_WEIGHT),
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
    return dt_linear_forward(y, lnf, dt_model_view(m, m->params, layer, DT_HEAD_LM_WEIGHT), NULL,
                             r, C, m->gpt.vocab);
}

dt_result nn_head_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                           const float *x, const float *dy, float *dx, float *G)
{
    size_t r = a->rows, C = m->gpt.channels;
    const float *lnf = sv, *mean = sv + r * C, *rstd = mean + r;
    float *dlnf = a->scratch;
    memset(dlnf, 0, r * C * sizeof(float));
    DT_CHECK(dt_linear_backward(dlnf, dt_model_view(m, G, layer, DT_HEAD_LM_WEIGHT), NULL, dy, lnf,
                                dt_model_view(m, m->params, layer, DT_HEAD_LM_WEIGHT), r, C,
                                m->gpt.vocab));
    return dt_layernorm_backward(dx, dt_model_view(m, G, layer, DT_HEAD_LNF_WEIGHT),
                                 dt_model_view(m, G, layer, DT_HEAD_LNF_BIAS), dlnf, x,
                                 dt_model_view(m, m->params, layer, DT_HEAD_LNF_WEIGHT), mean, rstd,
                                 r, C);
}
