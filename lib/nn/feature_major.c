/* feature_major.c - the fast path of a stage of linear layers on a thin
 * batch: every activation is also kept as (width x rows), and gradients
 * flow back that way.
 *
 * The computation is the reference's (stage.c): the same products, biases
 * and ReLUs, so the results are the same up to the order of float sums
 * inside the products (bit for bit when every sum is exact). What changes
 * is the orientation of each product. With a thin batch (rows below the
 * widest layer, e.g. 64 rows through 1024-wide layers) OpenBLAS's speed
 * depends on it, and the feature-major one is faster for all three
 * products of a layer (BENCHMARKS.md, "Compute", measures them):
 *
 *   product          batch-major (reference)      feature-major (here)
 *   forward          y = x W^T        (M = rows)  y^T = W x^T
 *   weight gradient  dW += d^T x      (K = rows)  dW += d^T (x^T)^T
 *   input gradient   dx = d W         (M = rows)  dx^T = W^T d^T
 *
 * The batch-major copies (a->input, a->out) stay filled, so callers see
 * the same activations either way; only the input on the way in, the
 * narrow loss gradient on the way back and each layer's output once are
 * transposed.
 *
 * It runs when asked for (dt_acts_create_path with DT_NN_FAST) and when it
 * applies (nn_fm_applies); stage.c's dt_model_forward and
 * dt_model_backward_into hand the stage over here. */
#include "stage_internal.h"

#include <stdlib.h>

struct dt_acts_fm {
    float *input;  /* in_width of layer first x rows */
    float **out;   /* out[i - first]: out_width of layer i x rows */
};

int nn_fm_applies(const dt_model *m, int first, int last, size_t rows)
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

dt_result nn_fm_create(dt_acts *a)
{
    const dt_model *m = a->model;
    int n = a->last - a->first;
    struct dt_acts_fm *fm = calloc(1, sizeof *fm);
    if (!fm || !(fm->out = calloc((size_t)n, sizeof *fm->out))) {
        free(fm);
        return DT_ERR_NOMEM;
    }
    a->fm = fm;
    if (!(fm->input = nn_act_alloc(a->rows * m->layers[a->first].in_width)))
        return DT_ERR_NOMEM;
    for (int j = 0; j < n; j++)
        if (!(fm->out[j] = nn_act_alloc(a->rows * m->layers[a->first + j].out_width)))
            return DT_ERR_NOMEM;
    return DT_OK;
}

void nn_fm_free(dt_acts *a)
{
    struct dt_acts_fm *fm = a->fm;
    if (!fm)
        return;
    for (int j = 0; fm->out && j < a->last - a->first; j++)
        dt_mem_free(fm->out[j]);
    free(fm->out);
    dt_mem_free(fm->input);
    free(fm);
    a->fm = NULL;
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

/* The elementwise passes are written in chunks of LANES on restrict
 * pointers so that -O2 turns them into branch-free vector code: with a
 * branch per element, the random sign pattern of a ReLU mispredicts about
 * half the time (BENCHMARKS.md, "Compute", measures what that cost). */
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

/* Layer j: y^T (OC, r) = W (OC, C) @ x^T (C, r) + b, ReLU when the layer
 * has one, then the batch-major copy out[j] = y. */
static dt_result layer_forward(const dt_model *m, dt_acts *a, int j)
{
    const dt_layer *l = &m->layers[a->first + j];
    size_t r = a->rows, C = l->in_width, OC = l->out_width;
    const float *xT = j ? a->fm->out[j - 1] : a->fm->input;
    const float *W = dt_model_view(m, m->params, a->first + j, DT_LINEAR_WEIGHT);
    const float *b = dt_model_view(m, m->params, a->first + j, DT_LINEAR_BIAS);
    float *yT = a->fm->out[j];
    DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, OC, r, C, 1, W, C, xT, r, 0, yT, r));
    bias_act_rows(yT, b, l->kind == DT_LAYER_LINEAR_RELU, OC, r);
    transpose(a->out[j], yT, OC, r);
    return DT_OK;
}

dt_result nn_fm_forward(const dt_model *m, dt_acts *a)
{
    transpose(a->fm->input, a->input, a->rows, m->layers[a->first].in_width);
    for (int j = 0; j < a->last - a->first; j++)
        DT_CHECK(layer_forward(m, a, j));
    return DT_OK;
}

/* Layer j's backward, dyT (OC, r) the gradient of its output (masked here
 * through the ReLU), dxT (C, r) overwritten with the gradient of its input
 * (NULL: skipped). The input gradient comes first, from the weight before
 * anything is written into grads (which may be the parameters):
 *   dx^T = W^T dy^T;   grads.W += scale dy^T (x^T)^T;   grads.b += scale (row sums of dy^T) */
static dt_result layer_backward(const dt_model *m, dt_acts *a, int j, float *dyT, float *dxT,
                                float *grads, float scale)
{
    int layer = a->first + j;
    const dt_layer *l = &m->layers[layer];
    size_t r = a->rows, C = l->in_width, OC = l->out_width;
    const float *xT = j ? a->fm->out[j - 1] : a->fm->input, *yT = a->fm->out[j];
    const float *W = dt_model_view(m, m->params, layer, DT_LINEAR_WEIGHT);
    float *dW = dt_model_view(m, grads, layer, DT_LINEAR_WEIGHT);
    float *db = dt_model_view(m, grads, layer, DT_LINEAR_BIAS);
    if (l->kind == DT_LAYER_LINEAR_RELU) /* through relu: keep dy where y > 0 */
        relu_mask(dyT, yT, OC * r);
    if (dxT) /* dx^T (C, r) = W^T (C, OC) @ dy^T (OC, r) */
        DT_CHECK(dt_sgemm(DT_TRANS, DT_NO_TRANS, C, r, OC, 1, W, C, dyT, r, 0, dxT, r));
    /* dW (OC, C) += scale dy^T (OC, r) @ (x^T)^T (r, C) */
    DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_TRANS, OC, C, r, scale, dyT, r, xT, r, 1, dW, C));
    for (size_t o = 0; o < OC; o++)
        db[o] += scale * row_sum(dyT + o * r, r);
    return DT_OK;
}

/* dbuf[0] holds dy (rows x out_width, batch-major) on entry; it is
 * transposed once, flows back as (width x rows), and the stage's input
 * gradient is transposed back into dinp. */
dt_result nn_fm_backward(dt_model *m, dt_acts *a, float *dinp, dt_grad_hook hook, void *hook_arg,
                         float *grads, float scale)
{
    size_t r = a->rows;
    int n = a->last - a->first, p = 1;
    transpose(a->dbuf[1], a->dbuf[0], r, dt_acts_output_width(a));
    for (int j = n - 1; j >= 0; j--) {
        const dt_layer *l = &m->layers[a->first + j];
        float *dxT = j || dinp ? a->dbuf[1 - p] : NULL;
        DT_CHECK(layer_backward(m, a, j, a->dbuf[p], dxT, grads, scale));
        if (hook)
            DT_CHECK(hook(hook_arg, a->first + j, l->param_offset, l->param_count));
        p = 1 - p;
    }
    if (dinp) /* the last dx^T went into dbuf[p] (p flipped after it) */
        transpose(dinp, a->dbuf[p], m->layers[a->first].in_width, r);
    return DT_OK;
}
