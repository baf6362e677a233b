/* tp_model.c - a rank's shard of the tiny GPT under tensor parallelism
 * (chapter 07, sections 2 to 5 say which tensor is split how): a model of
 * its own, the same layers and named views with the shard's shapes in one
 * flat buffer, so that whatever works on a model's slices (a
 * data-parallel allreduce, a ZeRO shard, a pipeline stage's layers) works
 * on a shard unchanged.
 *
 *   view                     whole        shard on rank r of t
 *   embed.wte, head.lm_head  (V, C)       rows [r V/t, +V/t)         column-parallel
 *   attn.qkv.weight, .bias   (3C, C)      q, k, v rows of r's heads   column-parallel
 *   mlp.fc.weight, .bias     (4C, C)      rows [r 4C/t, +4C/t)       column-parallel
 *   attn.proj.weight         (C, C)       columns [r C/t, +C/t)      row-parallel
 *   mlp.proj.weight          (C, 4C)      columns [r 4C/t, +4C/t)    row-parallel
 *   the rest                               whole (replicated)
 */
#include "model_internal.h"
#include "tp_internal.h"

#include <stdlib.h>
#include <string.h>

dt_tp_split dt_tp_view_split(dt_layer_kind kind, int k)
{
    switch (kind) {
    case DT_LAYER_EMBED:
        return k == DT_EMBED_WTE ? DT_TP_ROWS : DT_TP_REPLICATED;
    case DT_LAYER_HEAD:
        return k == DT_HEAD_LM_WEIGHT ? DT_TP_ROWS : DT_TP_REPLICATED;
    case DT_LAYER_BLOCK:
        switch (k) {
        case DT_BLOCK_QKV_WEIGHT:
        case DT_BLOCK_QKV_BIAS: return DT_TP_HEADS;
        case DT_BLOCK_FC_WEIGHT:
        case DT_BLOCK_FC_BIAS: return DT_TP_ROWS;
        case DT_BLOCK_PROJ_WEIGHT:
        case DT_BLOCK_MPROJ_WEIGHT: return DT_TP_COLS;
        default: return DT_TP_REPLICATED;
        }
    default:
        return DT_TP_REPLICATED;
    }
}

/* dst (the shard's view) := rank r's slice of src (the whole's view w). */
static dt_result slice(float *dst, const float *src, const dt_param_view *w, dt_tp_split how,
                       const dt_model *whole, size_t t, size_t r)
{
    size_t rows = w->shape[0], cols = w->ndim == 2 ? w->shape[1] : 1;
    switch (how) {
    case DT_TP_REPLICATED:
        memcpy(dst, src, w->count * sizeof(float));
        return DT_OK;
    case DT_TP_ROWS: /* contiguous: rows [r rows/t, +rows/t) */
        memcpy(dst, src + r * (rows / t) * cols, rows / t * cols * sizeof(float));
        return DT_OK;
    case DT_TP_COLS:
        for (size_t i = 0; i < rows; i++)
            memcpy(dst + i * (cols / t), src + i * cols + r * (cols / t),
                   cols / t * sizeof(float));
        return DT_OK;
    case DT_TP_HEADS:
        return w->ndim == 2 ? dt_tp_shard_qkv(dst, NULL, src, NULL, whole->gpt.channels,
                                              whole->gpt.heads, (int)t, (int)r)
                            : dt_tp_shard_qkv(NULL, dst, NULL, src, whole->gpt.channels,
                                              whole->gpt.heads, (int)t, (int)r);
    }
    return dt_fail(DT_ERR_INTERNAL, "dt_tp_shard: split %d", (int)how);
}

/* t = 1: the same model, its own buffers. */
static dt_result copy_model(dt_model *m, const dt_model *whole)
{
    *m = *whole;
    m->layers = malloc((size_t)whole->num_layers * sizeof *m->layers);
    m->views = malloc((size_t)whole->num_views * sizeof *m->views);
    m->params = dt_mem_alloc(DT_MEM_PARAM, whole->num_params * sizeof(float));
    m->grads = dt_mem_alloc(DT_MEM_GRAD, whole->num_params * sizeof(float));
    if (!m->layers || !m->views || !m->params || !m->grads) {
        free(m->layers), free(m->views);
        dt_mem_free(m->params), dt_mem_free(m->grads);
        memset(m, 0, sizeof *m);
        return dt_fail(DT_ERR_NOMEM, "dt_tp_shard: a copy of %zu parameters", whole->num_params);
    }
    memcpy(m->layers, whole->layers, (size_t)whole->num_layers * sizeof *m->layers);
    memcpy(m->views, whole->views, (size_t)whole->num_views * sizeof *m->views);
    memcpy(m->params, whole->params, whole->num_params * sizeof(float));
    return DT_OK;
}

static dt_result check_split(const dt_model *whole, size_t t)
{
    const dt_gpt_config *g = &whole->gpt;
    if (whole->kind != DT_MODEL_GPT)
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_tp_shard: tensor parallelism splits a GPT's "
                       "heads, MLP and vocabulary; this model is an MLP");
    if (g->heads % t || g->vocab % t)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard: %zu %s do not split over %zu "
                       "tensor-parallel ranks", g->heads % t ? g->heads : g->vocab,
                       g->heads % t ? "heads" : "vocabulary entries", t);
    return DT_OK;
}

dt_result dt_tp_shard(dt_model *shard, const dt_model *whole, dt_comm *tp)
{
    size_t t, r;
    if (!shard || !whole || !whole->params || !tp)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard: NULL %s", !shard ? "shard" :
                       !whole || !whole->params ? "whole model" : "tensor-parallel group");
    DT_CHECK(nn_tp_group(tp, "dt_tp_shard", &t, &r));
    if (nn_tp_size(whole) > 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard: the model is already a shard over %d "
                       "ranks", whole->tp_size);
    if (t == 1) {
        DT_CHECK(copy_model(shard, whole));
    } else {
        DT_CHECK(check_split(whole, t));
        memset(shard, 0, sizeof *shard);
        DT_CHECK(nn_gpt_build(shard, &whole->gpt, t, whole->seed));
        if (shard->num_views != whole->num_views) { /* one description: cannot differ */
            dt_model_free(shard);
            return dt_fail(DT_ERR_INTERNAL, "dt_tp_shard: %d views, the whole has %d",
                           shard->num_views, whole->num_views);
        }
        for (int l = 0; l < whole->num_layers; l++) {
            const dt_layer *L = &whole->layers[l];
            for (int k = 0; k < L->num_views; k++) {
                const dt_param_view *w = &whole->views[L->first_view + k];
                dt_result e = slice(shard->params + shard->views[L->first_view + k].offset,
                                    whole->params + w->offset, w, dt_tp_view_split(L->kind, k),
                                    whole, t, r);
                if (e != DT_OK) {
                    dt_model_free(shard);
                    return e;
                }
            }
        }
    }
    shard->seed = whole->seed;
    shard->tp = tp, shard->tp_size = (int)t, shard->tp_rank = (int)r;
    return DT_OK;
}
