/* gpt.c - the tiny GPT's training step on the GPU (gpu.h): the CPU's
 * reference path (DT_NN_REFERENCE: lib/nn/stage.c, gpt_block.c), call for
 * call on device buffers, then plain SGD. cuBLAS for the products,
 * gpu/kernels.cu and gpu/attention.cu for the rest. A whole model only
 * (no tensor-parallel shard): the tp layers of the CPU are then the plain
 * linear layers called here. Buffers are made once; a step moves only the
 * tokens and labels up and the losses down. */
#include "gpu.h"

#include <stdlib.h>
#include <string.h>

/* A block's saved activations, as in gpt_block.c (r = B T rows): the
 * forward writes them, the backward reads them. */
typedef struct {
    float *ln1, *mean1, *rstd1, *qkv, *att, *atty, *res2, *ln2, *mean2, *rstd2, *fch, *fchg;
} block_saved;

/* Its backward's temporaries, carved from g->scratch (zeroed per block) */
typedef struct {
    float *dres2, *dfchg, *dfch, *dln2, *datty, *dqkv, *dln1;
} block_scratch;

/* Offsets into one buffer; the total when sv is NULL. */
static size_t saved_layout(block_saved *s, float *sv, size_t B, size_t T, size_t C, size_t NH)
{
    size_t r = B * T, sizes[12] = {r * C, r, r, 3 * r * C, B * NH * T * T, r * C,
                                   r * C, r * C, r, r, 4 * r * C, 4 * r * C};
    float **p[12] = {&s->ln1, &s->mean1, &s->rstd1, &s->qkv, &s->att, &s->atty,
                     &s->res2, &s->ln2, &s->mean2, &s->rstd2, &s->fch, &s->fchg};
    size_t o = 0;
    for (int i = 0; i < 12; i++) {
        if (sv)
            *p[i] = sv + o;
        o += sizes[i];
    }
    return o;
}

static size_t scratch_layout(block_scratch *s, float *w, size_t r, size_t C)
{
    size_t sizes[7] = {r * C, 4 * r * C, 4 * r * C, r * C, r * C, 3 * r * C, r * C};
    float **p[7] = {&s->dres2, &s->dfchg, &s->dfch, &s->dln2, &s->datty, &s->dqkv, &s->dln1};
    size_t o = 0;
    for (int i = 0; i < 7; i++) {
        if (w)
            *p[i] = w + o;
        o += sizes[i];
    }
    return o;
}

void dt_gpu_gpt_free(dt_gpu_gpt *g)
{
    if (!g)
        return;
    dt_gpu_free(g->params), dt_gpu_free(g->grads), dt_gpu_free(g->tokens),
        dt_gpu_free(g->labels);
    for (int i = 0; g->model && g->out && i < g->model->num_layers; i++)
        dt_gpu_free(g->out[i]), dt_gpu_free(g->saved[i]);
    free(g->out), free(g->saved);
    dt_gpu_free(g->dbuf[0]), dt_gpu_free(g->dbuf[1]), dt_gpu_free(g->scratch);
    dt_gpu_free(g->probs), dt_gpu_free(g->losses);
    free(g->host_losses);
    memset(g, 0, sizeof *g);
}

dt_result dt_gpu_gpt_create(dt_gpu_gpt *g, const dt_model *m, size_t B, size_t T)
{
    memset(g, 0, sizeof *g);
    if (!m || m->kind != DT_MODEL_GPT || (m->tp && m->tp_size > 1) || B == 0 || T == 0 ||
        T > m->max_seq)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_gpt_create: a whole dt_gpt_create model "
                       "(no tensor-parallel shard), B > 0 and 1 <= T <= %zu (B %zu, T %zu)",
                       m ? m->max_seq : 0, B, T);
    size_t r = B * T, C = m->gpt.channels, NH = m->gpt.heads, V = m->num_classes;
    int L = m->num_layers;
    g->model = m, g->B = B, g->T = T;
    size_t P = m->num_params * sizeof(float), wide = C > V ? C : V;
    dt_result res = DT_OK;
    g->out = calloc((size_t)L, sizeof *g->out);
    g->saved = calloc((size_t)L, sizeof *g->saved);
    g->host_losses = malloc(r * sizeof(float));
    if (!g->out || !g->saved || !g->host_losses)
        res = dt_fail(DT_ERR_NOMEM, "dt_gpu_gpt_create: host tables");
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->params, P);
    if (res == DT_OK)
        res = dt_gpu_to_device(g->params, m->params, P);
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->grads, P);
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->tokens, r * sizeof(int32_t));
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->labels, r * sizeof(int32_t));
    for (int i = 0; res == DT_OK && i < L; i++) {
        const dt_layer *ly = &m->layers[i];
        size_t sv = ly->kind == DT_LAYER_BLOCK  ? saved_layout(NULL, NULL, B, T, C, NH)
                    : ly->kind == DT_LAYER_HEAD ? r * C + 2 * r /* lnf, mean, rstd */
                                                : 0;
        res = dt_gpu_alloc((void **)&g->out[i], r * ly->out_width * sizeof(float));
        if (res == DT_OK && sv)
            res = dt_gpu_alloc((void **)&g->saved[i], sv * sizeof(float));
    }
    for (int k = 0; res == DT_OK && k < 2; k++)
        res = dt_gpu_alloc((void **)&g->dbuf[k], r * wide * sizeof(float));
    if (res == DT_OK) /* a block's temporaries; the head's dlnf (r C) fits */
        res = dt_gpu_alloc((void **)&g->scratch, scratch_layout(NULL, NULL, r, C) * sizeof(float));
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->probs, r * V * sizeof(float));
    if (res == DT_OK)
        res = dt_gpu_alloc((void **)&g->losses, r * sizeof(float));
    if (res != DT_OK)
        dt_gpu_gpt_free(g);
    return res;
}

#define PV(k) dt_model_view(m, g->params, layer, k)
#define GV(k) dt_model_view(m, g->grads, layer, k)

/* gpt_block.c's nn_block_forward:
 *   res2 = x + proj(attn(qkv(ln1(x)))),  y = res2 + mproj(gelu(fc(ln2(res2)))) */
static dt_result block_forward(dt_gpu_gpt *g, int layer, const float *x, float *y)
{
    const dt_model *m = g->model;
    size_t B = g->B, T = g->T, r = B * T, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s;
    saved_layout(&s, g->saved[layer], B, T, C, NH);
    DT_CHECK(dt_gpu_layernorm_forward(s.ln1, s.mean1, s.rstd1, x, PV(DT_BLOCK_LN1_WEIGHT),
                                 PV(DT_BLOCK_LN1_BIAS), r, C));
    DT_CHECK(dt_gpu_linear_forward(s.qkv, s.ln1, PV(DT_BLOCK_QKV_WEIGHT), PV(DT_BLOCK_QKV_BIAS), r, C,
                              3 * C));
    DT_CHECK(dt_gpu_attention_forward(s.atty, s.att, s.qkv, B, T, C, NH));
    DT_CHECK(dt_gpu_linear_forward(s.res2, s.atty, PV(DT_BLOCK_PROJ_WEIGHT), PV(DT_BLOCK_PROJ_BIAS), r,
                              C, C));
    DT_CHECK(dt_gpu_residual_forward(s.res2, s.res2, x, r * C));
    DT_CHECK(dt_gpu_layernorm_forward(s.ln2, s.mean2, s.rstd2, s.res2, PV(DT_BLOCK_LN2_WEIGHT),
                                 PV(DT_BLOCK_LN2_BIAS), r, C));
    DT_CHECK(dt_gpu_linear_forward(s.fch, s.ln2, PV(DT_BLOCK_FC_WEIGHT), PV(DT_BLOCK_FC_BIAS), r, C,
                              4 * C));
    DT_CHECK(dt_gpu_gelu_forward(s.fchg, s.fch, r * 4 * C));
    DT_CHECK(dt_gpu_linear_forward(y, s.fchg, PV(DT_BLOCK_MPROJ_WEIGHT), PV(DT_BLOCK_MPROJ_BIAS), r,
                              4 * C, C));
    return dt_gpu_residual_forward(y, y, s.res2, r * C);
}

/* nn_block_backward: dy (r, C) -> dx += (r, C), the block's gradients +=.
 * dt_gpu_linear_backward overwrites its dinp, as the CPU's tp layers do
 * (they zero it first). */
static dt_result block_backward(dt_gpu_gpt *g, int layer, const float *x, const float *dy,
                                float *dx)
{
    const dt_model *m = g->model;
    size_t B = g->B, T = g->T, r = B * T, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s;
    block_scratch k;
    saved_layout(&s, g->saved[layer], B, T, C, NH);
    DT_CHECK(dt_gpu_zero(g->scratch, scratch_layout(&k, g->scratch, r, C) * sizeof(float)));
    /* y = res2 + mlp(ln2(res2)): the residual passes dy on unchanged */
    DT_CHECK(dt_gpu_residual_backward(k.dres2, NULL, dy, r * C));
    DT_CHECK(dt_gpu_linear_backward(k.dfchg, GV(DT_BLOCK_MPROJ_WEIGHT), GV(DT_BLOCK_MPROJ_BIAS), dy,
                               s.fchg, PV(DT_BLOCK_MPROJ_WEIGHT), r, 4 * C, C));
    DT_CHECK(dt_gpu_gelu_backward(k.dfch, k.dfchg, s.fch, r * 4 * C));
    DT_CHECK(dt_gpu_linear_backward(k.dln2, GV(DT_BLOCK_FC_WEIGHT), GV(DT_BLOCK_FC_BIAS), k.dfch,
                               s.ln2, PV(DT_BLOCK_FC_WEIGHT), r, C, 4 * C));
    DT_CHECK(dt_gpu_layernorm_backward(k.dres2, GV(DT_BLOCK_LN2_WEIGHT), GV(DT_BLOCK_LN2_BIAS), k.dln2,
                                  s.res2, PV(DT_BLOCK_LN2_WEIGHT), s.mean2, s.rstd2, r, C));
    /* res2 = x + proj(attn(qkv(ln1(x)))) */
    DT_CHECK(dt_gpu_residual_backward(dx, NULL, k.dres2, r * C));
    DT_CHECK(dt_gpu_linear_backward(k.datty, GV(DT_BLOCK_PROJ_WEIGHT), GV(DT_BLOCK_PROJ_BIAS), k.dres2,
                               s.atty, PV(DT_BLOCK_PROJ_WEIGHT), r, C, C));
    DT_CHECK(dt_gpu_attention_backward(k.dqkv, k.datty, s.qkv, s.att, B, T, C, NH));
    DT_CHECK(dt_gpu_linear_backward(k.dln1, GV(DT_BLOCK_QKV_WEIGHT), GV(DT_BLOCK_QKV_BIAS), k.dqkv,
                               s.ln1, PV(DT_BLOCK_QKV_WEIGHT), r, C, 3 * C));
    return dt_gpu_layernorm_backward(dx, GV(DT_BLOCK_LN1_WEIGHT), GV(DT_BLOCK_LN1_BIAS), k.dln1,
                                     x, PV(DT_BLOCK_LN1_WEIGHT), s.mean1, s.rstd1, r, C);
}

dt_result dt_gpu_gpt_step(dt_gpu_gpt *g, const int32_t *tokens, const int32_t *labels, float lr,
                          float *loss)
{
    if (!g || !g->model || !tokens || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_gpt_step: NULL model, tokens or labels");
    const dt_model *m = g->model;
    size_t B = g->B, T = g->T, r = B * T, C = m->gpt.channels, V = m->num_classes;
    int L = m->num_layers, layer;
    DT_CHECK(dt_gpu_check_labels("dt_gpu_gpt_step", labels, r, V));
    DT_CHECK(dt_gpu_to_device(g->tokens, tokens, r * sizeof(int32_t)));
    DT_CHECK(dt_gpu_to_device(g->labels, labels, r * sizeof(int32_t)));
    /* forward: embed, blocks, head (lnf, then lm_head without a bias) */
    layer = 0;
    DT_CHECK(dt_gpu_embedding_forward(g->out[0], g->tokens, PV(DT_EMBED_WTE), PV(DT_EMBED_WPE), B, T, C,
                                 m->gpt.vocab));
    for (layer = 1; layer < L - 1; layer++)
        DT_CHECK(block_forward(g, layer, g->out[layer - 1], g->out[layer]));
    layer = L - 1;
    float *lnf = g->saved[layer], *mean = lnf + r * C, *rstd = mean + r;
    DT_CHECK(dt_gpu_layernorm_forward(lnf, mean, rstd, g->out[layer - 1], PV(DT_HEAD_LNF_WEIGHT),
                                 PV(DT_HEAD_LNF_BIAS), r, C));
    DT_CHECK(dt_gpu_linear_forward(g->out[layer], lnf, PV(DT_HEAD_LM_WEIGHT), NULL, r, C, V));
    DT_CHECK(dt_gpu_softmax_xent_forward(g->probs, g->losses, g->out[layer], g->labels, r, V));
    if (loss)
        DT_CHECK(dt_gpu_mean_loss(loss, g->host_losses, g->losses, r));
    /* backward (stage.c): dlogits = (probs - onehot) / r in dbuf[0]; layer
     * i reads its output's gradient from dbuf[d], adds its input's into
     * dbuf[1 - d], zeroed first */
    DT_CHECK(dt_gpu_zero(g->grads, m->num_params * sizeof(float)));
    DT_CHECK(dt_gpu_zero(g->dbuf[0], r * V * sizeof(float)));
    DT_CHECK(dt_gpu_softmax_xent_backward(g->dbuf[0], g->probs, g->labels, 1.0f / (float)r, r, V));
    float *dlnf = g->scratch; /* nn_head_backward's */
    DT_CHECK(dt_gpu_zero(g->dbuf[1], r * C * sizeof(float)));
    DT_CHECK(dt_gpu_linear_backward(dlnf, GV(DT_HEAD_LM_WEIGHT), NULL, g->dbuf[0], lnf,
                               PV(DT_HEAD_LM_WEIGHT), r, C, V));
    DT_CHECK(dt_gpu_layernorm_backward(g->dbuf[1], GV(DT_HEAD_LNF_WEIGHT), GV(DT_HEAD_LNF_BIAS), dlnf,
                                  g->out[layer - 1], PV(DT_HEAD_LNF_WEIGHT), mean, rstd, r, C));
    int d = 1;
    for (layer = L - 2; layer >= 1; layer--, d = 1 - d) {
        DT_CHECK(dt_gpu_zero(g->dbuf[1 - d], r * C * sizeof(float)));
        DT_CHECK(block_backward(g, layer, g->out[layer - 1], g->dbuf[d], g->dbuf[1 - d]));
    }
    layer = 0;
    DT_CHECK(dt_gpu_embedding_backward(GV(DT_EMBED_WTE), GV(DT_EMBED_WPE), g->dbuf[d], g->tokens, B, T,
                                  C, m->gpt.vocab));
    dt_optim_config sgd = dt_sgd_config(lr, 0.0f, 0.0f);
    return dt_gpu_sgd_update(&sgd, g->params, g->grads, NULL, m->num_params);
}

#undef PV
#undef GV

dt_result dt_gpu_gpt_params(const dt_gpu_gpt *g, float *params)
{
    return dt_gpu_to_host(params, g->params, g->model->num_params * sizeof(float));
}

dt_result dt_gpu_gpt_grads(const dt_gpu_gpt *g, float *grads)
{
    return dt_gpu_to_host(grads, g->grads, g->model->num_params * sizeof(float));
}
