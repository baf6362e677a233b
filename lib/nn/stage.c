/* stage.c - running layers [first, last) of a model: activations, forward,
 * loss, and backward with a per-layer hook. This is the reference path:
 * batch-major (rows x features) buffers, one layer function after another.
 *
 * Forward: layer i reads the output of layer i-1 (the stage's input copy
 * for the first) and writes out[i - first]; a layer that needs more for its
 * backward (a transformer block: its normalised inputs, attention weights,
 * ...) keeps it in saved[i - first].
 *
 * Backward: gradients flow between layers through two ping-pong buffers
 * (dbuf): layer i reads the gradient of its output from one and writes the
 * gradient of its input into the other, zeroed first because layer
 * backwards accumulate. Parameter gradients accumulate into a buffer of the
 * parameters' layout; as each layer's are complete, the hook is called.
 *
 * The transformer layers live in gpt_block.c; the feature-major layout, a
 * faster path for linear layers on a thin batch, in feature_major.c (one
 * switch: dt_acts_create_path's DT_NN_FAST). */
#include "stage_internal.h"
#include "dt/tp.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- acts */

float *nn_act_alloc(size_t floats)
{
    return floats ? dt_mem_alloc(DT_MEM_ACT, floats * sizeof(float)) : NULL;
}

static int is_linear(const dt_layer *l)
{
    return l->kind == DT_LAYER_LINEAR || l->kind == DT_LAYER_LINEAR_RELU;
}

/* The buffers of the reference path. */
static dt_result acts_fill(dt_acts *a, const dt_model *m)
{
    size_t r = a->rows, C = m->gpt.channels, maxw = 0, scratch = 0;
    const dt_layer *lf = &m->layers[a->first];
    if (lf->kind == DT_LAYER_EMBED) {
        if (!(a->tokens = dt_mem_alloc(DT_MEM_ACT, r * sizeof(int32_t))))
            return DT_ERR_NOMEM;
    } else if (!(a->input = nn_act_alloc(r * lf->in_width))) {
        return DT_ERR_NOMEM;
    }
    maxw = lf->in_width;
    for (int j = 0; j < a->last - a->first; j++) {
        const dt_layer *l = &m->layers[a->first + j];
        size_t saved = 0;
        maxw = l->out_width > maxw ? l->out_width : maxw;
        if (!(a->out[j] = nn_act_alloc(r * l->out_width)))
            return DT_ERR_NOMEM;
        if (l->kind == DT_LAYER_BLOCK) {
            saved = nn_block_saved_floats(m, a->B, a->T);
            scratch = nn_block_scratch_floats(m, r);
        } else if (l->kind == DT_LAYER_HEAD) {
            saved = nn_head_saved_floats(r, C);
            scratch = scratch > r * C ? scratch : r * C;
        }
        if (saved && !(a->saved[j] = nn_act_alloc(saved)))
            return DT_ERR_NOMEM;
    }
    for (int k = 0; k < 2; k++)
        if (!(a->dbuf[k] = nn_act_alloc(r * maxw)))
            return DT_ERR_NOMEM;
    if (scratch && !(a->scratch = nn_act_alloc(scratch)))
        return DT_ERR_NOMEM;
    if (a->last == m->num_layers &&
        !(a->probs = nn_act_alloc(r * m->layers[m->num_layers - 1].out_width)))
        return DT_ERR_NOMEM;
    return DT_OK;
}

dt_result dt_acts_create_path(dt_acts **out, const dt_model *m, int first, int last, size_t B,
                              size_t T, dt_nn_path path)
{
    if (!out || !m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_acts_create: NULL %s", out ? "model" : "result");
    *out = NULL;
    if (first < 0 || last > m->num_layers || first >= last)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_acts_create: layers [%d, %d) of a %d-layer model",
                       first, last, m->num_layers);
    if (B == 0 || T == 0 || T > m->max_seq)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_acts_create: batch %zu x %zu rows (need B > 0, "
                       "1 <= T <= %zu)", B, T, m->max_seq);
    if (path != DT_NN_REFERENCE && path != DT_NN_FAST)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_acts_create: path %d", (int)path);
    dt_acts *a = calloc(1, sizeof *a);
    int n = last - first;
    if (a) {
        a->out = calloc((size_t)n, sizeof *a->out);
        a->saved = calloc((size_t)n, sizeof *a->saved);
    }
    if (!a || !a->out || !a->saved) {
        dt_acts_free(a);
        return dt_fail(DT_ERR_NOMEM, "dt_acts_create: out of memory");
    }
    a->model = m, a->first = first, a->last = last;
    a->B = B, a->T = T, a->rows = B * T;
    dt_result r = acts_fill(a, m);
    if (r == DT_OK && path == DT_NN_FAST && nn_fm_applies(m, first, last, a->rows))
        r = nn_fm_create(a);
    if (r != DT_OK) {
        dt_acts_free(a);
        return dt_fail(DT_ERR_NOMEM, "dt_acts_create: activations of %zu rows: out of memory",
                       B * T);
    }
    *out = a;
    return DT_OK;
}

dt_result dt_acts_create(dt_acts **out, const dt_model *m, int first, int last, size_t B,
                         size_t T)
{
    return dt_acts_create_path(out, m, first, last, B, T, DT_NN_REFERENCE);
}

void dt_acts_free(dt_acts *a)
{
    if (!a)
        return;
    nn_fm_free(a);
    for (int j = 0; a->out && a->saved && j < a->last - a->first; j++) {
        dt_mem_free(a->out[j]);
        dt_mem_free(a->saved[j]);
    }
    free(a->out);
    free(a->saved);
    dt_mem_free(a->input);
    dt_mem_free(a->tokens);
    dt_mem_free(a->dbuf[0]);
    dt_mem_free(a->dbuf[1]);
    dt_mem_free(a->scratch);
    dt_mem_free(a->probs);
    free(a);
}

const float *dt_acts_output(const dt_acts *a)
{
    return a && a->forward_done ? a->out[a->last - a->first - 1] : NULL;
}

size_t dt_acts_output_width(const dt_acts *a)
{
    return a ? a->model->layers[a->last - 1].out_width : 0;
}

/* ---------------------------------------------------------------- forward */

/* Layer first+j: x (its input) -> a->out[j]. */
static dt_result layer_forward(const dt_model *m, dt_acts *a, int j, const float *x)
{
    int layer = a->first + j;
    const dt_layer *l = &m->layers[layer];
    float *y = a->out[j], *P = m->params;
    switch (l->kind) {
    case DT_LAYER_LINEAR:
    case DT_LAYER_LINEAR_RELU:
        DT_CHECK(dt_linear_forward(y, x, dt_model_view(m, P, layer, DT_LINEAR_WEIGHT),
                                   dt_model_view(m, P, layer, DT_LINEAR_BIAS), a->rows,
                                   l->in_width, l->out_width));
        if (l->kind == DT_LAYER_LINEAR_RELU)
            return dt_relu_forward(y, y, a->rows * l->out_width);
        return DT_OK;
    case DT_LAYER_EMBED: /* split over the vocabulary on a tensor-parallel shard */
        return dt_tp_embedding_forward(m->tp, y, a->tokens,
                                       dt_model_view(m, P, layer, DT_EMBED_WTE),
                                       dt_model_view(m, P, layer, DT_EMBED_WPE), a->B, a->T,
                                       m->gpt.channels, m->gpt.vocab);
    case DT_LAYER_BLOCK:
        return nn_block_forward(m, a, layer, a->saved[j], x, y);
    case DT_LAYER_HEAD:
        return nn_head_forward(m, a, layer, a->saved[j], x, y);
    }
    return dt_fail(DT_ERR_INTERNAL, "layer %s: unknown kind %d", l->name, (int)l->kind);
}

static dt_result check_stage(const char *fn, const dt_model *m, const dt_acts *a)
{
    if (!m || !a)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, m ? "activations" : "model");
    if (a->model != m)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: activations were made for another model", fn);
    return DT_OK;
}

dt_result dt_model_forward(dt_model *m, dt_acts *a, const float *x, const int32_t *tokens)
{
    DT_CHECK(check_stage("dt_model_forward", m, a));
    const dt_layer *lf = &m->layers[a->first];
    if (lf->kind == DT_LAYER_EMBED) {
        if (!tokens)
            return dt_fail(DT_ERR_INVALID_ARG, "dt_model_forward: layer %s takes tokens: NULL",
                           lf->name);
        memcpy(a->tokens, tokens, a->rows * sizeof(int32_t));
    } else {
        if (!x)
            return dt_fail(DT_ERR_INVALID_ARG, "dt_model_forward: layer %s takes x: NULL",
                           lf->name);
        memcpy(a->input, x, a->rows * lf->in_width * sizeof(float));
    }
    a->forward_done = 0;
    a->has_loss_grad = 0;
    if (a->fm) /* the fast path (feature_major.c) */
        DT_CHECK(nn_fm_forward(m, a));
    else
        for (int j = 0; j < a->last - a->first; j++)
            DT_CHECK(layer_forward(m, a, j, j ? a->out[j - 1] : a->input));
    a->forward_done = 1;
    return DT_OK;
}

/* The loss of a tensor-parallel shard (dt/tp.h): the vocabulary-parallel
 * cross-entropy, collective on m->tp; the argmax of each row over the
 * whole vocabulary only when correct is asked for (one allreduce more).
 * dbuf[1] (at least rows floats) holds the argmax meanwhile. */
static dt_result tp_loss(dt_model *m, dt_acts *a, const int32_t *labels, float *loss,
                         size_t *correct)
{
    size_t r = a->rows, Vl = dt_acts_output_width(a);
    int32_t *argmax = correct ? (int32_t *)(void *)a->dbuf[1] : NULL;
    double mean;
    DT_CHECK(dt_tp_xent_forward(m->tp, a->probs, NULL, &mean, argmax, dt_acts_output(a), labels,
                                r, m->num_classes));
    memset(a->dbuf[0], 0, r * Vl * sizeof(float));
    DT_CHECK(dt_tp_xent_backward(m->tp, a->dbuf[0], a->probs, labels, 1.0f / (float)r, r,
                                 m->num_classes));
    if (correct) {
        size_t ok = 0;
        for (size_t i = 0; i < r; i++)
            ok += argmax[i] == labels[i];
        *correct = ok;
    }
    *loss = (float)mean;
    a->has_loss_grad = 1;
    return DT_OK;
}

dt_result dt_model_loss(dt_model *m, dt_acts *a, const int32_t *labels, float *loss,
                        size_t *correct)
{
    DT_CHECK(check_stage("dt_model_loss", m, a));
    if (!labels || !loss)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_loss: NULL %s", labels ? "loss" : "labels");
    if (a->last != m->num_layers)
        return dt_fail(DT_ERR_STATE, "dt_model_loss: the stage ends at layer %d, not the last (%d)",
                       a->last, m->num_layers);
    if (!a->forward_done)
        return dt_fail(DT_ERR_STATE, "dt_model_loss: no forward has run on these activations");
    size_t r = a->rows, V = m->num_classes;
    const float *logits = dt_acts_output(a);
    double mean;
    if (m->tp && m->tp_size > 1) /* this rank's V/t columns of the logits */
        return tp_loss(m, a, labels, loss, correct);
    DT_CHECK(dt_softmax_xent_forward(a->probs, NULL, &mean, logits, labels, r, V));
    memset(a->dbuf[0], 0, r * V * sizeof(float));
    DT_CHECK(dt_softmax_xent_backward(a->dbuf[0], a->probs, labels, 1.0f / (float)r, r, V));
    if (correct) {
        size_t ok = 0, best;
        for (size_t i = 0; i < r; i++) {
            dt_vec_argmax(logits + i * V, V, &best);
            ok += best == (size_t)labels[i];
        }
        *correct = ok;
    }
    *loss = (float)mean;
    a->has_loss_grad = 1;
    return DT_OK;
}

/* ---------------------------------------------------------------- backward */

/* Layer first+j: dy (its output's gradient; may be modified) -> dx (+=,
 * NULL: skip), parameter gradients G += scale * dL/dp. */
static dt_result layer_backward(const dt_model *m, dt_acts *a, int j, const float *x, float *dy,
                                float *dx, float *G, float scale)
{
    int layer = a->first + j;
    const dt_layer *l = &m->layers[layer];
    const float *y = a->out[j];
    size_t n = a->rows * l->out_width;
    switch (l->kind) {
    case DT_LAYER_LINEAR_RELU: /* through relu: keep dy where y > 0 */
        for (size_t i = 0; i < n; i++)
            dy[i] = y[i] > 0 ? dy[i] : 0.0f;
        /* fall through */
    case DT_LAYER_LINEAR:
        return dt_linear_backward_scaled(dx, dt_model_view(m, G, layer, DT_LINEAR_WEIGHT),
                                         dt_model_view(m, G, layer, DT_LINEAR_BIAS), dy, x,
                                         dt_model_view(m, m->params, layer, DT_LINEAR_WEIGHT),
                                         scale, a->rows, l->in_width, l->out_width);
    case DT_LAYER_EMBED:
        return dt_tp_embedding_backward(m->tp, dt_model_view(m, G, layer, DT_EMBED_WTE),
                                        dt_model_view(m, G, layer, DT_EMBED_WPE), dy, a->tokens,
                                        a->B, a->T, m->gpt.channels, m->gpt.vocab);
    case DT_LAYER_BLOCK:
        return nn_block_backward(m, a, layer, a->saved[j], x, dy, dx, G);
    case DT_LAYER_HEAD:
        return nn_head_backward(m, a, layer, a->saved[j], x, dy, dx, G);
    }
    return dt_fail(DT_ERR_INTERNAL, "layer %s: unknown kind %d", l->name, (int)l->kind);
}

/* Refuses what the backward cannot do, before it changes anything. */
static dt_result check_backward(const char *fn, const dt_model *m, const dt_acts *a,
                                const float *dout, const float *dinp, const float *grads,
                                float scale)
{
    DT_CHECK(check_stage(fn, m, a));
    if (!a->forward_done)
        return dt_fail(DT_ERR_STATE, "%s: no forward has run on these activations", fn);
    if (!dout && !a->has_loss_grad)
        return dt_fail(DT_ERR_STATE, "%s: dout is NULL and dt_model_loss has not run", fn);
    if (!grads)
        return dt_fail(DT_ERR_STATE, "%s: no gradient buffer (the model's is NULL)", fn);
    const dt_layer *lf = &m->layers[a->first];
    if (dinp && lf->kind == DT_LAYER_EMBED)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: layer %s takes tokens: no input gradient", fn,
                       lf->name);
    for (int i = a->first; (grads == m->params || scale != 1) && i < a->last; i++)
        if (!is_linear(&m->layers[i]))
            return dt_fail(DT_ERR_UNSUPPORTED, "%s: layer %s accumulates its gradient with "
                           "scale 1 into a buffer apart from the parameters (asked: scale %g%s)",
                           fn, m->layers[i].name, (double)scale,
                           grads == m->params ? ", into the parameters" : "");
    return DT_OK;
}

dt_result dt_model_backward_into(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                                 dt_grad_hook hook, void *hook_arg, float *grads, float scale)
{
    const char *fn = "dt_model_backward";
    DT_CHECK(check_backward(fn, m, a, dout, dinp, grads, scale));
    size_t r = a->rows;
    int p = 0;
    if (dout)
        memcpy(a->dbuf[0], dout, r * dt_acts_output_width(a) * sizeof(float));
    a->has_loss_grad = 0; /* the buffer is consumed below */
    if (a->fm) /* the fast path (feature_major.c) */
        return nn_fm_backward(m, a, dinp, hook, hook_arg, grads, scale);
    for (int j = a->last - a->first - 1; j >= 0; j--) {
        const dt_layer *l = &m->layers[a->first + j];
        float *dx = j ? a->dbuf[1 - p] : dinp;
        if (dx)
            memset(dx, 0, r * l->in_width * sizeof(float));
        DT_CHECK(layer_backward(m, a, j, j ? a->out[j - 1] : a->input, a->dbuf[p], dx, grads,
                                scale));
        if (hook)
            DT_CHECK(hook(hook_arg, a->first + j, l->param_offset, l->param_count));
        p = 1 - p;
    }
    return DT_OK;
}

dt_result dt_model_backward(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                            dt_grad_hook hook, void *hook_arg)
{
    return dt_model_backward_into(m, a, dout, dinp, hook, hook_arg, m ? m->grads : NULL, 1);
}
