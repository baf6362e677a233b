/* split_backward.c - a stage's backward in two halves, for zero-bubble
 * pipeline schedules (chapter 06, section 6; Qi et al. 2024):
 *
 *   B  the gradient w.r.t. the stage's input, which the previous stage is
 *      waiting for: for each layer, last to first, dx = dy W (after the
 *      ReLU's mask on dy);
 *   W  the parameter gradients, which nobody waits for until the update:
 *      for each layer, dW += dy^T x and db += the sum of dy's rows.
 *
 * W needs each layer's dy, which B computes on its way down, so B keeps
 * them (dt_wgrad: rows x out_width floats per layer, tag ACT: activation
 * memory held from B to W). Each half makes the same calls of layers.c as
 * stage.c's backward on the same operands, so B then W gives the reference
 * backward's gradients bit for bit (tests/lib/test_nn_split.c).
 *
 * Stages of linear layers only (the MLPs): a transformer block's backward
 * interleaves its input and weight gradients through layer norms and
 * attention, and is not split here. */
#include "stage_internal.h"

#include <stdlib.h>
#include <string.h>

struct dt_wgrad {
    const dt_acts *acts;  /* the activations it was made for */
    float **dy;           /* dy[j]: gradient of layer first+j's output (pre-ReLU), rows x out */
    int pending;          /* B has run, W has not */
};

void dt_wgrad_free(dt_wgrad *w)
{
    if (!w)
        return;
    for (int j = 0; w->dy && j < w->acts->last - w->acts->first; j++)
        dt_mem_free(w->dy[j]);
    free(w->dy);
    free(w);
}

dt_result dt_wgrad_create(dt_wgrad **out, const dt_acts *a)
{
    if (!out || !a)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_wgrad_create: NULL %s", out ? "activations" : "result");
    *out = NULL;
    const dt_model *m = a->model;
    for (int i = a->first; i < a->last; i++)
        if (m->layers[i].kind != DT_LAYER_LINEAR && m->layers[i].kind != DT_LAYER_LINEAR_RELU)
            return dt_fail(DT_ERR_UNSUPPORTED, "dt_wgrad_create: layer %s is not linear: its "
                           "backward is not split", m->layers[i].name);
    int n = a->last - a->first;
    dt_wgrad *w = calloc(1, sizeof *w);
    if (w && !(w->dy = calloc((size_t)n, sizeof *w->dy))) {
        free(w);
        w = NULL;
    }
    if (!w)
        return dt_fail(DT_ERR_NOMEM, "dt_wgrad_create: out of memory");
    w->acts = a;
    for (int j = 0; j < n; j++)
        if (!(w->dy[j] = nn_act_alloc(a->rows * m->layers[a->first + j].out_width))) {
            dt_wgrad_free(w);
            return dt_fail(DT_ERR_NOMEM, "dt_wgrad_create: gradients of %zu rows", a->rows);
        }
    *out = w;
    return DT_OK;
}

/* x_j, the input of layer first+j. */
static const float *layer_input(const dt_acts *a, int j)
{
    return j ? a->out[j - 1] : a->input;
}

/* m, a and w belong together (fn names the caller in the message). */
static dt_result check_split(const char *fn, const dt_model *m, const dt_acts *a,
                             const dt_wgrad *w)
{
    if (!m || !a || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, !m ? "model" : !a ? "activations"
                                                                          : "wgrad");
    if (a->model != m || w->acts != a)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: the %s made for another %s", fn,
                       a->model != m ? "activations were" : "wgrad was",
                       a->model != m ? "model" : "dt_acts");
    return DT_OK;
}

dt_result dt_model_backward_input(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                                  dt_wgrad *w)
{
    const char *fn = "dt_model_backward_input";
    DT_CHECK(check_split(fn, m, a, w));
    if (!a->forward_done)
        return dt_fail(DT_ERR_STATE, "%s: no forward has run on these activations", fn);
    if (!dout && !a->has_loss_grad)
        return dt_fail(DT_ERR_STATE, "%s: dout is NULL and dt_model_loss has not run", fn);
    if (w->pending)
        return dt_fail(DT_ERR_STATE, "%s: the weight half of the last backward has not run", fn);
    int n = a->last - a->first;
    size_t r = a->rows;
    memcpy(w->dy[n - 1], dout ? dout : a->dbuf[0], r * dt_acts_output_width(a) * sizeof(float));
    a->has_loss_grad = 0;
    for (int j = n - 1; j >= 0; j--) {
        const dt_layer *l = &m->layers[a->first + j];
        float *dy = w->dy[j], *dx = j ? w->dy[j - 1] : dinp;
        if (l->kind == DT_LAYER_LINEAR_RELU) /* through relu: keep dy where y > 0 */
            for (size_t i = 0; i < r * l->out_width; i++)
                dy[i] = a->out[j][i] > 0 ? dy[i] : 0.0f;
        if (!dx)
            continue; /* the stage's first layer, and no input gradient asked */
        memset(dx, 0, r * l->in_width * sizeof(float));
        DT_CHECK(dt_linear_backward(dx, NULL, NULL, dy, layer_input(a, j),
                                    dt_model_view(m, m->params, a->first + j, DT_LINEAR_WEIGHT),
                                    r, l->in_width, l->out_width));
    }
    w->pending = 1;
    return DT_OK;
}

dt_result dt_model_backward_weight(dt_model *m, dt_acts *a, dt_wgrad *w, dt_grad_hook hook,
                                   void *hook_arg)
{
    const char *fn = "dt_model_backward_weight";
    DT_CHECK(check_split(fn, m, a, w));
    if (!w->pending)
        return dt_fail(DT_ERR_STATE, "%s: the input half (dt_model_backward_input) has not run", fn);
    if (!m->grads)
        return dt_fail(DT_ERR_STATE, "%s: no gradient buffer (the model's is NULL)", fn);
    for (int j = a->last - a->first - 1; j >= 0; j--) {
        int layer = a->first + j;
        const dt_layer *l = &m->layers[layer];
        DT_CHECK(dt_linear_backward(NULL, dt_model_view(m, m->grads, layer, DT_LINEAR_WEIGHT),
                                    dt_model_view(m, m->grads, layer, DT_LINEAR_BIAS), w->dy[j],
                                    layer_input(a, j),
                                    dt_model_view(m, m->params, layer, DT_LINEAR_WEIGHT),
                                    a->rows, l->in_width, l->out_width));
        if (hook)
            DT_CHECK(hook(hook_arg, layer, l->param_offset, l->param_count));
    }
    w->pending = 0;
    return DT_OK;
}
