/* ckpt.c - lab 11, task 3: the checkpointed forward and backward of the
 * deep MLP stack (chapter 11, section 6), and the executor's given parts:
 * its working set, one layer's forward and backward, the loss.
 *
 * A layer here is computed with the same calls, on the same buffers'
 * contents, as the library's reference stage (lib/nn/stage.c): a
 * recomputed output is then the forward's bit for bit, and so are the
 * gradients. */
#include "memory.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the working set */

static float *act_alloc(size_t floats)
{
    return dt_mem_alloc(DT_MEM_ACT, floats * sizeof(float));
}

dt_result lab_ckpt_create(lab_ckpt *c, dt_model *m, size_t rows)
{
    const char *fn = "lab_ckpt_create";
    if (!c || !m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, c ? "model" : "executor");
    memset(c, 0, sizeof *c);
    if (rows == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: rows 0", fn);
    if (!m->grads)
        return dt_fail(DT_ERR_STATE, "%s: the model has no gradient buffer", fn);
    size_t widest = m->in_width;
    for (int i = 0; i < m->num_layers; i++) {
        const dt_layer *l = &m->layers[i];
        if (l->kind != DT_LAYER_LINEAR && l->kind != DT_LAYER_LINEAR_RELU)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: layer %s is not a linear layer", fn, l->name);
        widest = l->out_width > widest ? l->out_width : widest;
    }
    c->model = m, c->rows = rows, c->num_layers = m->num_layers;
    c->out = calloc((size_t)m->num_layers, sizeof *c->out);
    dt_result r = c->out ? lab_chain_alloc(&c->chain, m->num_layers) : DT_ERR_NOMEM;
    if (r == DT_OK) {
        c->input = act_alloc(rows * m->in_width);
        c->dbuf[0] = act_alloc(rows * widest);
        c->dbuf[1] = act_alloc(rows * widest);
        c->probs = act_alloc(rows * m->num_classes);
        r = c->input && c->dbuf[0] && c->dbuf[1] && c->probs ? DT_OK : DT_ERR_NOMEM;
    }
    if (r != DT_OK) {
        lab_ckpt_free(c);
        return dt_fail(DT_ERR_NOMEM, "%s: the working set of %zu rows", fn, rows);
    }
    /* the planner's view: 4 rows x out_width bytes, 2 rows x in x out FLOPs */
    for (int i = 0; i < m->num_layers; i++) {
        const dt_layer *l = &m->layers[i];
        c->chain.out_bytes[i] = rows * l->out_width * sizeof(float);
        c->chain.flops[i] = 2.0 * (double)rows * (double)l->in_width * (double)l->out_width;
    }
    c->chain.fixed_bytes = (rows * (m->in_width + 2 * widest + m->num_classes)) * sizeof(float);
    return DT_OK;
}

void lab_ckpt_free(lab_ckpt *c)
{
    if (!c)
        return;
    for (int i = 0; c->out && i < c->num_layers; i++)
        dt_mem_free(c->out[i]);
    free(c->out);
    dt_mem_free(c->input);
    dt_mem_free(c->dbuf[0]), dt_mem_free(c->dbuf[1]);
    dt_mem_free(c->probs);
    lab_chain_free(&c->chain);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- one layer */

static const float *layer_input(const lab_ckpt *c, int i)
{
    return i == 0 ? c->input : c->out[i - 1];
}

dt_result lab_ckpt_layer_forward(lab_ckpt *c, int i)
{
    if (!c || !c->model || i < 0 || i >= c->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_layer_forward: layer %d of %d", i,
                       c ? c->num_layers : 0);
    const dt_model *m = c->model;
    const dt_layer *l = &m->layers[i];
    const float *x = layer_input(c, i);
    if (!x)
        return dt_fail(DT_ERR_STATE, "lab_ckpt_layer_forward: layer %d's input (the output of "
                       "layer %d) is not in memory", i, i - 1);
    if (!c->out[i] && !(c->out[i] = act_alloc(c->rows * l->out_width)))
        return dt_fail(DT_ERR_NOMEM, "lab_ckpt_layer_forward: output of layer %d", i);
    float *y = c->out[i];
    DT_CHECK(dt_linear_forward(y, x, dt_model_view(m, m->params, i, DT_LINEAR_WEIGHT),
                               dt_model_view(m, m->params, i, DT_LINEAR_BIAS), c->rows,
                               l->in_width, l->out_width));
    if (l->kind == DT_LAYER_LINEAR_RELU)
        DT_CHECK(dt_relu_forward(y, y, c->rows * l->out_width));
    c->layers_run++;
    return DT_OK;
}

void lab_ckpt_drop(lab_ckpt *c, int i)
{
    if (c && c->out && i >= 0 && i < c->num_layers) {
        dt_mem_free(c->out[i]);
        c->out[i] = NULL;
    }
}

dt_result lab_ckpt_layer_backward(lab_ckpt *c, int i)
{
    if (!c || !c->model || i < 0 || i >= c->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_layer_backward: layer %d of %d", i,
                       c ? c->num_layers : 0);
    dt_model *m = c->model;
    const dt_layer *l = &m->layers[i];
    const float *x = layer_input(c, i), *y = c->out[i];
    if (!x || !y)
        return dt_fail(DT_ERR_STATE, "lab_ckpt_layer_backward: layer %d needs %s %d, which is "
                       "not in memory (section 6)", i, !y ? "its output: the output of layer" :
                       "its input: the output of layer", !y ? i : i - 1);
    float *dy = c->dbuf[c->cur], *dx = i ? c->dbuf[1 - c->cur] : NULL;
    size_t n = c->rows * l->out_width;
    if (l->kind == DT_LAYER_LINEAR_RELU) /* through the ReLU, as stage.c does */
        for (size_t k = 0; k < n; k++)
            dy[k] = y[k] > 0 ? dy[k] : 0.0f;
    if (dx)
        memset(dx, 0, c->rows * l->in_width * sizeof(float));
    DT_CHECK(dt_linear_backward(dx, dt_model_view(m, m->grads, i, DT_LINEAR_WEIGHT),
                                dt_model_view(m, m->grads, i, DT_LINEAR_BIAS), dy, x,
                                dt_model_view(m, m->params, i, DT_LINEAR_WEIGHT), c->rows,
                                l->in_width, l->out_width));
    c->cur = 1 - c->cur;
    return DT_OK;
}

dt_result lab_ckpt_loss(lab_ckpt *c, const int32_t *labels, float *loss)
{
    if (!c || !labels || !loss)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_loss: NULL argument");
    const float *logits = c->out[c->num_layers - 1];
    if (!logits)
        return dt_fail(DT_ERR_STATE, "lab_ckpt_loss: the logits (layer %d's output) are not "
                       "in memory", c->num_layers - 1);
    size_t r = c->rows, V = c->model->num_classes;
    double mean;
    DT_CHECK(dt_softmax_xent_forward(c->probs, NULL, &mean, logits, labels, r, V));
    c->cur = 0;
    memset(c->dbuf[0], 0, r * V * sizeof(float));
    DT_CHECK(dt_softmax_xent_backward(c->dbuf[0], c->probs, labels, 1.0f / (float)r, r, V));
    *loss = (float)mean;
    return DT_OK;
}

dt_result lab_ckpt_step(lab_ckpt *c, const lab_plan *p, const float *x, const int32_t *labels,
                        float *loss)
{
    if (!c || !p || p->num_layers != c->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_step: a plan of %d layers for %d",
                       p ? p->num_layers : 0, c ? c->num_layers : 0);
    c->layers_run = 0;
    DT_CHECK(lab_ckpt_forward(c, p, x));
    DT_CHECK(lab_ckpt_loss(c, labels, loss));
    return lab_ckpt_backward(c, p);
}

/* ---------------------------------------------------------------- forward, backward */

dt_result lab_ckpt_forward(lab_ckpt *c, const lab_plan *p, const float *x)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (memory.h): the kept outputs in memory, and no more
     * than one dropped output alive besides the layer being computed.
     * Section 6. */
    if (!c || !p || !x || p->num_layers != c->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_forward: NULL argument or a plan of "
                       "another length");
    int L = c->num_layers;
    memcpy(c->input, x, c->rows * c->model->in_width * sizeof(float));
    for (int i = 0; i < L; i++) {
        DT_CHECK(lab_ckpt_layer_forward(c, i));
        if (i > 0 && !p->keep[i - 1]) /* read by layer i: no longer needed until recomputed */
            lab_ckpt_drop(c, i - 1);
    }
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_ckpt_backward(lab_ckpt *c, const lab_plan *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (memory.h): the gradients of the plain backward bit
     * for bit, each dropped layer recomputed once, when first needed, and
     * every output freed once its layer's backward is done. Section 6. */
    if (!c || !p || p->num_layers != c->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ckpt_backward: NULL argument or a plan of "
                       "another length");
    for (int i = c->num_layers - 1; i >= 0; i--) {
        if (i > 0 && !c->out[i - 1]) { /* the run of dropped layers ending at i - 1 */
            int first = i - 1;
            while (first > 0 && !c->out[first - 1])
                first--;
            for (int j = first; j < i; j++)
                DT_CHECK(lab_ckpt_layer_forward(c, j));
        }
        DT_CHECK(lab_ckpt_layer_backward(c, i));
        lab_ckpt_drop(c, i);
    }
    return DT_OK;
    /* END STUDENT CODE */
}
