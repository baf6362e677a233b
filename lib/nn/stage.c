/* stage.c - running layers [first, last) of a model: activations, forward,
 * loss, backward with a per-layer hook, and the backward with SGD folded in.
 *
 * Gradients flow between layers through two ping-pong buffers (dbuf): layer
 * i reads the gradient of its output from one and writes the gradient of its
 * input into the other, zeroed first because layer backwards accumulate.
 *
 * A stage of linear layers whose batch is thin (rows below its widest
 * layer, e.g. 64 rows through 1024-wide layers) runs feature-major: it keeps
 * every activation also as (width x rows), and its gradients flow that way
 * too. The reason is OpenBLAS's speed on a thin batch, which depends on the
 * orientation: for 64 rows and a 1024 x 1024 weight, one thread, best of
 * 150 calls,
 *   forward     y = x W^T   (NT, M = 64)   2.09 ms;  y^T = W x^T   (NN)  1.44 ms
 *   weight step W += d^T x  (TN, K = 64)   1.56 ms;  d^T (x^T)^T   (NT)  1.45 ms
 *   input grad  dx = d W    (NN, M = 64)   1.62 ms;  dx^T = W^T d^T (TN) 1.52 ms
 * The batch-major copies (input, out) stay filled, so callers see the same
 * activations either way; only the 64-row input and the narrow loss
 * gradient are transposed on the way in and out. */
#include "dt/nn.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- block layout */

/* Where a transformer block keeps its saved activations (offsets in floats
 * into saved[j]), and its backward temporaries (into scratch). r = rows. */
typedef struct {
    size_t ln1, mean1, rstd1, qkv, att, atty, res2, ln2, mean2, rstd2, fch, fchg, total;
} block_saved;

typedef struct {
    size_t dres2, dfchg, dfch, dln2, datty, dqkv, dln1, total;
} block_scratch;

static block_saved saved_layout(size_t r, size_t B, size_t T, size_t C, size_t NH)
{
    block_saved s;
    size_t o = 0;
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

/* The head keeps lnf (r, C), mean (r), rstd (r). */
static size_t head_saved(size_t r, size_t C) { return r * C + 2 * r; }

/* ---------------------------------------------------------------- acts */

static float *act_alloc(size_t floats)
{
    return floats ? dt_mem_alloc(DT_MEM_ACT, floats * sizeof(float)) : NULL;
}

/* Feature-major pays for a stage of linear layers on a thin batch. */
static int wants_feature_major(const dt_model *m, int first, int last, size_t rows)
{
    size_t widest = 0;
    for (int i = first; i < last; i++) {
        const dt_layer *l = &m->layers[i];
        if (l->kind != DT_LAYER_LINEAR && l->kind != DT_LAYER_LINEAR_RELU)
            return 0;
        widest = l->out_width > widest ? l->out_width : widest;
    }
    return rows < widest;
}

static dt_result acts_fill_fm(dt_acts *a, const dt_model *m)
{
    int n = a->last - a->first;
    if (!(a->out_fm = calloc((size_t)n, sizeof *a->out_fm)))
        return DT_ERR_NOMEM;
    if (!(a->input_fm = act_alloc(a->rows * m->layers[a->first].in_width)))
        return DT_ERR_NOMEM;
    for (int j = 0; j < n; j++)
        if (!(a->out_fm[j] = act_alloc(a->rows * m->layers[a->first + j].out_width)))
            return DT_ERR_NOMEM;
    return DT_OK;
}

static dt_result acts_fill(dt_acts *a, const dt_model *m)
{
    size_t r = a->rows, C = m->gpt.channels, maxw = 0, scratch = 0;
    int n = a->last - a->first;
    const dt_layer *lf = &m->layers[a->first];
    if (lf->kind == DT_LAYER_EMBED) {
        a->tokens = dt_mem_alloc(DT_MEM_ACT, r * sizeof(int32_t));
        if (!a->tokens)
            return DT_ERR_NOMEM;
    } else if (!(a->input = act_alloc(r * lf->in_width)))
        return DT_ERR_NOMEM;
    maxw = lf->in_width;
    for (int j = 0; j < n; j++) {
        const dt_layer *l = &m->layers[a->first + j];
        maxw = l->out_width > maxw ? l->out_width : maxw;
        if (!(a->out[j] = act_alloc(r * l->out_width)))
            return DT_ERR_NOMEM;
        size_t saved = 0;
        if (l->kind == DT_LAYER_BLOCK) {
            saved = saved_layout(r, a->B, a->T, C, m->gpt.heads).total;
            scratch = scratch_layout(r, C).total;
        } else if (l->kind == DT_LAYER_HEAD) {
            saved = head_saved(r, C);
            scratch = scratch > r * C ? scratch : r * C;
        }
        if (saved && !(a->saved[j] = act_alloc(saved)))
            return DT_ERR_NOMEM;
    }
    for (int k = 0; k < 2; k++)
        if (!(a->dbuf[k] = act_alloc(r * maxw)))
            return DT_ERR_NOMEM;
    if (scratch && !(a->scratch = act_alloc(scratch)))
        return DT_ERR_NOMEM;
    if (a->last == m->num_layers && !(a->probs = act_alloc(r * m->num_classes)))
        return DT_ERR_NOMEM;
    a->feature_major = wants_feature_major(m, a->first, a->last, r);
    return a->feature_major ? acts_fill_fm(a, m) : DT_OK;
}

dt_result dt_acts_create(dt_acts **out, const dt_model *m, int first, int last, size_t B,
                         size_t T)
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
    if (acts_fill(a, m) != DT_OK) {
        dt_acts_free(a);
        return dt_fail(DT_ERR_NOMEM, "dt_acts_create: activations of %zu rows: out of memory",
                       B * T);
    }
    *out = a;
    return DT_OK;
}

void dt_acts_free(dt_acts *a)
{
    if (!a)
        return;
    for (int j = 0; a->out && a->saved && j < a->last - a->first; j++) {
        dt_mem_free(a->out[j]);
        dt_mem_free(a->saved[j]);
    }
    for (int j = 0; a->out_fm && j < a->last - a->first; j++)
        dt_mem_free(a->out_fm[j]);
    free(a->out_fm);
    dt_mem_free(a->input_fm);
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

/* The pointer of view k of layer l in buf (params or grads). */
static float *view_of(const dt_model *m, float *buf, const dt_layer *l, int k)
{
    return buf + m->views[l->first_view + k].offset;
}

static dt_result block_forward(const dt_model *m, dt_acts *a, const dt_layer *l, float *sv,
                               const float *x, float *y)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s = saved_layout(r, a->B, a->T, C, NH);
    float *P = m->params;
    /* views: 0 ln1.w 1 ln1.b 2 qkv.w 3 qkv.b 4 proj.w 5 proj.b
     *        6 ln2.w 7 ln2.b 8 fc.w 9 fc.b 10 mproj.w 11 mproj.b */
    DT_CHECK(dt_layernorm_forward(sv + s.ln1, sv + s.mean1, sv + s.rstd1, x, view_of(m, P, l, 0),
                                  view_of(m, P, l, 1), r, C));
    DT_CHECK(dt_linear_forward(sv + s.qkv, sv + s.ln1, view_of(m, P, l, 2), view_of(m, P, l, 3),
                               r, C, 3 * C));
    DT_CHECK(dt_attention_forward(sv + s.atty, sv + s.att, sv + s.qkv, a->B, a->T, C, NH));
    DT_CHECK(dt_linear_forward(sv + s.res2, sv + s.atty, view_of(m, P, l, 4),
                               view_of(m, P, l, 5), r, C, C));
    DT_CHECK(dt_residual_forward(sv + s.res2, sv + s.res2, x, r * C));
    DT_CHECK(dt_layernorm_forward(sv + s.ln2, sv + s.mean2, sv + s.rstd2, sv + s.res2,
                                  view_of(m, P, l, 6), view_of(m, P, l, 7), r, C));
    DT_CHECK(dt_linear_forward(sv + s.fch, sv + s.ln2, view_of(m, P, l, 8), view_of(m, P, l, 9),
                               r, C, 4 * C));
    DT_CHECK(dt_gelu_forward(sv + s.fchg, sv + s.fch, r * 4 * C));
    DT_CHECK(dt_linear_forward(y, sv + s.fchg, view_of(m, P, l, 10), view_of(m, P, l, 11), r,
                               4 * C, C));
    return dt_residual_forward(y, y, sv + s.res2, r * C);
}

static dt_result layer_forward(const dt_model *m, dt_acts *a, int j, const float *x)
{
    const dt_layer *l = &m->layers[a->first + j];
    float *y = a->out[j], *sv = a->saved[j], *P = m->params;
    size_t r = a->rows, C = m->gpt.channels;
    switch (l->kind) {
    case DT_LAYER_LINEAR:
    case DT_LAYER_LINEAR_RELU: {
        int relu = l->kind == DT_LAYER_LINEAR_RELU;
        if (r < l->out_width) /* thin batch: the transposed product is faster; the
                                 gradient buffer is free during the forward */
            return dt_linear_forward_t(y, a->dbuf[1], x, view_of(m, P, l, 0),
                                       view_of(m, P, l, 1), relu, r, l->in_width, l->out_width);
        DT_CHECK(dt_linear_forward(y, x, view_of(m, P, l, 0), view_of(m, P, l, 1), r,
                                   l->in_width, l->out_width));
        return relu ? dt_relu_forward(y, y, r * l->out_width) : DT_OK;
    }
    case DT_LAYER_EMBED:
        return dt_embedding_forward(y, a->tokens, view_of(m, P, l, 0), view_of(m, P, l, 1), a->B,
                                    a->T, C, m->gpt.vocab);
    case DT_LAYER_BLOCK:
        return block_forward(m, a, l, sv, x, y);
    case DT_LAYER_HEAD:
        DT_CHECK(dt_layernorm_forward(sv, sv + r * C, sv + r * C + r, x, view_of(m, P, l, 0),
                                      view_of(m, P, l, 1), r, C));
        return dt_linear_forward(y, sv, view_of(m, P, l, 2), NULL, r, C, m->gpt.vocab);
    }
    return dt_fail(DT_ERR_INTERNAL, "layer %s: unknown kind %d", l->name, (int)l->kind);
}

/* dst (cols x rows) = src (rows x cols)^T, in 32 x 32 tiles so that both
 * the rows read and the rows written stay in cache. */
static void transpose(float *dst, const float *src, size_t rows, size_t cols)
{
    enum { TILE = 32 };
    for (size_t r0 = 0; r0 < rows; r0 += TILE)
        for (size_t c0 = 0; c0 < cols; c0 += TILE) {
            size_t r1 = r0 + TILE < rows ? r0 + TILE : rows;
            size_t c1 = c0 + TILE < cols ? c0 + TILE : cols;
            for (size_t c = c0; c < c1; c++)
                for (size_t r = r0; r < r1; r++)
                    dst[c * rows + r] = src[r * cols + c];
        }
}

/* The elementwise passes of the feature-major path are written in chunks of
 * 8 on restrict pointers so that -O2 turns them into branch-free vector
 * code: with a branch per element, the random sign pattern of the ReLU
 * mispredicts about half the time (that cost about 1 ms of the 8.4 ms step
 * of the MLP 784-1024-1024-10 at batch 64). */
enum { LANES = 8 };

/* y (OC, r): each row o gets + b[o], then ReLU (v < 0 -> 0, so that a nan
 * stays a nan and a diverging run shows it) when relu. */
static void bias_act_rows(float *restrict y, const float *restrict b, int relu, size_t OC,
                          size_t r)
{
    for (size_t o = 0; o < OC; o++) {
        float *row = y + o * r, bo = b[o];
        size_t i = 0;
        if (!relu) {
            for (; i < r; i++)
                row[i] += bo;
            continue;
        }
        for (; i + LANES <= r; i += LANES)
            for (size_t k = 0; k < LANES; k++) {
                float v = row[i + k] + bo;
                row[i + k] = v < 0 ? 0.0f : v;
            }
        for (; i < r; i++) {
            float v = row[i] + bo;
            row[i] = v < 0 ? 0.0f : v;
        }
    }
}

/* d[i] = d[i] where y[i] > 0, else 0: the gradient through a ReLU. */
static void relu_mask(float *restrict d, const float *restrict y, size_t n)
{
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (size_t k = 0; k < LANES; k++)
            d[i + k] = y[i + k] > 0 ? d[i + k] : 0.0f;
    for (; i < n; i++)
        d[i] = y[i] > 0 ? d[i] : 0.0f;
}

/* The sum of x[0 .. n), in LANES partial sums. */
static float row_sum(const float *restrict x, size_t n)
{
    float acc[LANES] = {0}, s = 0;
    size_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (size_t k = 0; k < LANES; k++)
            acc[k] += x[i + k];
    for (; i < n; i++)
        s += x[i];
    for (size_t k = 0; k < LANES; k++)
        s += acc[k];
    return s;
}

/* Feature-major linear layer j: y^T (OC, r) = W (OC, C) @ x^T (C, r) + b,
 * ReLU when the layer has one, then the batch-major copy out[j] = y. */
static dt_result layer_forward_fm(const dt_model *m, dt_acts *a, int j)
{
    const dt_layer *l = &m->layers[a->first + j];
    size_t r = a->rows, C = l->in_width, OC = l->out_width;
    const float *xT = j ? a->out_fm[j - 1] : a->input_fm;
    const float *W = view_of(m, m->params, l, 0), *b = view_of(m, m->params, l, 1);
    float *yT = a->out_fm[j];
    DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, OC, r, C, 1, W, C, xT, r, 0, yT, r));
    bias_act_rows(yT, b, l->kind == DT_LAYER_LINEAR_RELU, OC, r);
    transpose(a->out[j], yT, OC, r);
    return DT_OK;
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
    if (a->feature_major)
        transpose(a->input_fm, a->input, a->rows, lf->in_width);
    for (int j = 0; j < a->last - a->first; j++)
        DT_CHECK(a->feature_major ? layer_forward_fm(m, a, j)
                                  : layer_forward(m, a, j, j ? a->out[j - 1] : a->input));
    a->forward_done = 1;
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

static dt_result block_backward(const dt_model *m, dt_acts *a, const dt_layer *l, float *sv,
                                const float *x, const float *dy, float *dx)
{
    size_t r = a->rows, C = m->gpt.channels, NH = m->gpt.heads;
    block_saved s = saved_layout(r, a->B, a->T, C, NH);
    block_scratch t = scratch_layout(r, C);
    float *P = m->params, *G = m->grads, *w = a->scratch;
    memset(w, 0, t.total * sizeof(float));
    /* y = res2 + mlp(ln2(res2)): the residual passes dy on unchanged */
    memcpy(w + t.dres2, dy, r * C * sizeof(float));
    DT_CHECK(dt_linear_backward(w + t.dfchg, view_of(m, G, l, 10), view_of(m, G, l, 11), dy,
                                sv + s.fchg, view_of(m, P, l, 10), r, 4 * C, C));
    DT_CHECK(dt_gelu_backward(w + t.dfch, w + t.dfchg, sv + s.fch, r * 4 * C));
    DT_CHECK(dt_linear_backward(w + t.dln2, view_of(m, G, l, 8), view_of(m, G, l, 9), w + t.dfch,
                                sv + s.ln2, view_of(m, P, l, 8), r, C, 4 * C));
    DT_CHECK(dt_layernorm_backward(w + t.dres2, view_of(m, G, l, 6), view_of(m, G, l, 7),
                                   w + t.dln2, sv + s.res2, view_of(m, P, l, 6), sv + s.mean2,
                                   sv + s.rstd2, r, C));
    /* res2 = x + proj(attn(qkv(ln1(x)))) */
    DT_CHECK(dt_residual_backward(dx, NULL, w + t.dres2, r * C));
    DT_CHECK(dt_linear_backward(w + t.datty, view_of(m, G, l, 4), view_of(m, G, l, 5),
                                w + t.dres2, sv + s.atty, view_of(m, P, l, 4), r, C, C));
    DT_CHECK(dt_attention_backward(w + t.dqkv, w + t.datty, sv + s.qkv, sv + s.att, a->B, a->T,
                                   C, NH));
    DT_CHECK(dt_linear_backward(w + t.dln1, view_of(m, G, l, 2), view_of(m, G, l, 3), w + t.dqkv,
                                sv + s.ln1, view_of(m, P, l, 2), r, C, 3 * C));
    return dt_layernorm_backward(dx, view_of(m, G, l, 0), view_of(m, G, l, 1), w + t.dln1, x,
                                 view_of(m, P, l, 0), sv + s.mean1, sv + s.rstd1, r, C);
}

/* One layer's backward: dy (its output's gradient; may be modified) ->
 * dx (+=, NULL: skip), parameter gradients accumulated into m->grads, or,
 * with lr > 0, the SGD step applied at once. */
static dt_result layer_backward(const dt_model *m, dt_acts *a, int j, const float *x, float *dy,
                                float *dx, float lr)
{
    const dt_layer *l = &m->layers[a->first + j];
    float *y = a->out[j], *sv = a->saved[j], *P = m->params, *G = m->grads;
    size_t r = a->rows, C = m->gpt.channels;
    if (l->kind == DT_LAYER_LINEAR || l->kind == DT_LAYER_LINEAR_RELU) {
        if (l->kind == DT_LAYER_LINEAR_RELU) /* through relu: keep dy where y > 0 */
            relu_mask(dy, y, r * l->out_width);
        if (lr > 0)
            return dt_linear_backward_sgd(dx, view_of(m, P, l, 0), view_of(m, P, l, 1), dy, x, lr,
                                          r, l->in_width, l->out_width);
        return dt_linear_backward(dx, view_of(m, G, l, 0), view_of(m, G, l, 1), dy, x,
                                  view_of(m, P, l, 0), r, l->in_width, l->out_width);
    }
    /* the other kinds compute their gradient; with lr > 0 it is applied here */
    float *g = G + l->param_offset, *p = P + l->param_offset;
    if (lr > 0)
        memset(g, 0, l->param_count * sizeof(float));
    dt_result res = DT_OK;
    if (l->kind == DT_LAYER_EMBED)
        res = dt_embedding_backward(view_of(m, G, l, 0), view_of(m, G, l, 1), dy, a->tokens, a->B,
                                    a->T, C, m->gpt.vocab);
    else if (l->kind == DT_LAYER_BLOCK)
        res = block_backward(m, a, l, sv, x, dy, dx);
    else if (l->kind == DT_LAYER_HEAD) {
        float *dlnf = a->scratch;
        memset(dlnf, 0, r * C * sizeof(float));
        res = dt_linear_backward(dlnf, view_of(m, G, l, 2), NULL, dy, sv, view_of(m, P, l, 2), r,
                                 C, m->gpt.vocab);
        if (res == DT_OK)
            res = dt_layernorm_backward(dx, view_of(m, G, l, 0), view_of(m, G, l, 1), dlnf, x,
                                        view_of(m, P, l, 0), sv + r * C, sv + r * C + r, r, C);
    }
    if (res == DT_OK && lr > 0) {
        for (size_t i = 0; i < l->param_count; i++)
            p[i] -= lr * g[i];
        memset(g, 0, l->param_count * sizeof(float));
    }
    return res;
}

/* Feature-major backward of linear layer j, dyT (OC, r) the gradient of its
 * output (masked here through the ReLU), dxT (C, r) overwritten with the
 * gradient of its input (NULL: skipped). The input gradient is computed
 * first, with the weight before any SGD step:
 *   dx^T = W^T dy^T;   dW = dy^T (x^T)^T;   db = row sums of dy^T
 * With lr > 0 the step W -= lr dW, b -= lr db is applied at once (the
 * gradient is never stored), else dW and db are accumulated into m->grads. */
static dt_result layer_backward_fm(const dt_model *m, dt_acts *a, int j, float *dyT, float *dxT,
                                   float lr)
{
    const dt_layer *l = &m->layers[a->first + j];
    size_t r = a->rows, C = l->in_width, OC = l->out_width;
    const float *xT = j ? a->out_fm[j - 1] : a->input_fm, *yT = a->out_fm[j];
    float *W = view_of(m, m->params, l, 0), *b = view_of(m, m->params, l, 1);
    if (l->kind == DT_LAYER_LINEAR_RELU) /* through relu: keep dy where y > 0 */
        relu_mask(dyT, yT, OC * r);
    if (dxT) /* dx^T (C, r) = W^T (C, OC) @ dy^T (OC, r) */
        DT_CHECK(dt_sgemm(DT_TRANS, DT_NO_TRANS, C, r, OC, 1, W, C, dyT, r, 0, dxT, r));
    float *dW = lr > 0 ? W : view_of(m, m->grads, l, 0);
    float *db = lr > 0 ? b : view_of(m, m->grads, l, 1), alpha = lr > 0 ? -lr : 1;
    /* dW (OC, C) += alpha dy^T (OC, r) @ (x^T)^T (r, C) */
    DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_TRANS, OC, C, r, alpha, dyT, r, xT, r, 1, dW, C));
    for (size_t o = 0; o < OC; o++)
        db[o] += alpha * row_sum(dyT + o * r, r);
    return DT_OK;
}

/* The whole stage feature-major: dbuf[0] holds dy (rows x out_width,
 * batch-major) on entry; it is transposed once, flows back as (width x
 * rows), and the stage's input gradient is transposed back into dinp. */
static dt_result backward_fm(dt_model *m, dt_acts *a, float *dinp, dt_grad_hook hook,
                             void *hook_arg, float lr)
{
    size_t r = a->rows;
    int n = a->last - a->first, p = 1;
    transpose(a->dbuf[1], a->dbuf[0], r, dt_acts_output_width(a));
    for (int j = n - 1; j >= 0; j--) {
        const dt_layer *l = &m->layers[a->first + j];
        float *dxT = j || dinp ? a->dbuf[1 - p] : NULL;
        DT_CHECK(layer_backward_fm(m, a, j, a->dbuf[p], dxT, lr));
        if (hook)
            DT_CHECK(hook(hook_arg, a->first + j, l->param_offset, l->param_count));
        p = 1 - p;
    }
    if (dinp) /* the last dx^T went into dbuf[p] (p flipped after it) */
        transpose(dinp, a->dbuf[p], m->layers[a->first].in_width, r);
    return DT_OK;
}

static dt_result backward(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                          dt_grad_hook hook, void *hook_arg, float lr, const char *fn)
{
    DT_CHECK(check_stage(fn, m, a));
    if (!a->forward_done)
        return dt_fail(DT_ERR_STATE, "%s: no forward has run on these activations", fn);
    if (!dout && !a->has_loss_grad)
        return dt_fail(DT_ERR_STATE, "%s: dout is NULL and dt_model_loss has not run", fn);
    if (!m->grads && (lr <= 0 || m->kind == DT_MODEL_GPT))
        return dt_fail(DT_ERR_STATE, "%s: the model has no gradient buffer", fn);
    const dt_layer *lf = &m->layers[a->first];
    if (dinp && lf->kind == DT_LAYER_EMBED)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: layer %s takes tokens: no input gradient", fn,
                       lf->name);
    size_t r = a->rows;
    int n = a->last - a->first, p = 0;
    if (dout)
        memcpy(a->dbuf[0], dout, r * dt_acts_output_width(a) * sizeof(float));
    a->has_loss_grad = 0; /* the buffer is consumed below */
    if (a->feature_major)
        return backward_fm(m, a, dinp, hook, hook_arg, lr);
    for (int j = n - 1; j >= 0; j--) {
        const dt_layer *l = &m->layers[a->first + j];
        float *dx = j ? a->dbuf[1 - p] : dinp;
        if (dx)
            memset(dx, 0, r * l->in_width * sizeof(float));
        DT_CHECK(layer_backward(m, a, j, j ? a->out[j - 1] : a->input, a->dbuf[p], dx, lr));
        if (hook)
            DT_CHECK(hook(hook_arg, a->first + j, l->param_offset, l->param_count));
        p = 1 - p;
    }
    return DT_OK;
}

dt_result dt_model_backward(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                            dt_grad_hook hook, void *hook_arg)
{
    return backward(m, a, dout, dinp, hook, hook_arg, 0, "dt_model_backward");
}

dt_result dt_model_backward_sgd(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                                float lr)
{
    if (!(lr > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_backward_sgd: learning rate %g (need > 0)",
                       (double)lr);
    return backward(m, a, dout, dinp, NULL, NULL, lr, "dt_model_backward_sgd");
}
