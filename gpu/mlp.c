/* mlp.c - an MLP's training step on the GPU (gpu.h): the CPU's step of
 * chapters 00-03 (dt_model_forward, dt_model_loss, dt_model_backward, then
 * plain SGD), layer for layer on device buffers: cuBLAS for the products,
 * gpu/kernels.cu for the rest. Buffers are made once; a step moves only the
 * batch up and the B losses down. */
#include "gpu.h"

#include <stdlib.h>
#include <string.h>

void dt_gpu_mlp_free(dt_gpu_mlp *g)
{
    if (!g)
        return;
    dt_gpu_free(g->params), dt_gpu_free(g->grads), dt_gpu_free(g->input);
    for (int i = 0; g->act && g->model && i < g->model->num_layers; i++)
        dt_gpu_free(g->act[i]);
    free(g->act);
    dt_gpu_free(g->dbuf[0]), dt_gpu_free(g->dbuf[1]);
    dt_gpu_free(g->probs), dt_gpu_free(g->losses), dt_gpu_free(g->labels);
    free(g->host_losses);
    memset(g, 0, sizeof *g);
}

dt_result dt_gpu_mlp_create(dt_gpu_mlp *g, const dt_model *m, size_t B)
{
    memset(g, 0, sizeof *g);
    if (!m || (m->kind != DT_MODEL_MLP && m->kind != DT_MODEL_DEEP_MLP) || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_mlp_create: an MLP (dt_mlp_create, "
                       "dt_deep_mlp_create) and B > 0");
    g->model = m;
    g->B = B;
    size_t wide = m->in_width;
    for (int i = 0; i < m->num_layers; i++)
        wide = m->layers[i].out_width > wide ? m->layers[i].out_width : wide;
    size_t P = m->num_params * sizeof(float);
    dt_result r = DT_OK;
    g->act = calloc((size_t)m->num_layers, sizeof *g->act);
    g->host_losses = malloc(B * sizeof(float));
    if (!g->act || !g->host_losses)
        r = DT_ERR_NOMEM;
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->params, P);
    if (r == DT_OK)
        r = dt_gpu_to_device(g->params, m->params, P);
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->grads, P);
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->input, B * m->in_width * sizeof(float));
    for (int i = 0; r == DT_OK && i < m->num_layers; i++)
        r = dt_gpu_alloc((void **)&g->act[i], B * m->layers[i].out_width * sizeof(float));
    for (int k = 0; r == DT_OK && k < 2; k++)
        r = dt_gpu_alloc((void **)&g->dbuf[k], B * wide * sizeof(float));
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->probs, B * m->num_classes * sizeof(float));
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->losses, B * sizeof(float));
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->labels, B * sizeof(int32_t));
    if (r != DT_OK)
        dt_gpu_mlp_free(g);
    return r;
}

static float *view(const dt_gpu_mlp *g, float *buf, int layer, int k)
{
    return dt_model_view(g->model, buf, layer, k);
}

dt_result dt_gpu_mlp_step(dt_gpu_mlp *g, const float *x, const int32_t *labels, float lr,
                          float *loss)
{
    const dt_model *m = g->model;
    size_t B = g->B, V = m->num_classes;
    int L = m->num_layers;
    DT_CHECK(dt_gpu_check_labels("dt_gpu_mlp_step", labels, B, V));
    DT_CHECK(dt_gpu_to_device(g->input, x, B * m->in_width * sizeof(float)));
    DT_CHECK(dt_gpu_to_device(g->labels, labels, B * sizeof(int32_t)));
    /* forward: out = W x + b, then ReLU but after the last layer */
    const float *cur = g->input;
    for (int i = 0; i < L; i++) {
        const dt_layer *ly = &m->layers[i];
        DT_CHECK(dt_gpu_linear_forward(g->act[i], cur, view(g, g->params, i, DT_LINEAR_WEIGHT),
                                  view(g, g->params, i, DT_LINEAR_BIAS), B, ly->in_width,
                                  ly->out_width));
        if (ly->kind == DT_LAYER_LINEAR_RELU)
            DT_CHECK(dt_gpu_relu_forward(g->act[i], g->act[i], B * ly->out_width));
        cur = g->act[i];
    }
    DT_CHECK(dt_gpu_softmax_xent_forward(g->probs, g->losses, g->act[L - 1], g->labels, B, V));
    if (loss)
        DT_CHECK(dt_gpu_mean_loss(loss, g->host_losses, g->losses, B));
    /* backward: dlogits = (probs - onehot) / B, then layer by layer */
    DT_CHECK(dt_gpu_zero(g->grads, m->num_params * sizeof(float)));
    DT_CHECK(dt_gpu_zero(g->dbuf[0], B * V * sizeof(float)));
    DT_CHECK(dt_gpu_softmax_xent_backward(g->dbuf[0], g->probs, g->labels, 1.0f / (float)B, B, V));
    int d = 0; /* dbuf[d] holds the gradient of layer i's output */
    for (int i = L - 1; i >= 0; i--) {
        const dt_layer *ly = &m->layers[i];
        if (ly->kind == DT_LAYER_LINEAR_RELU) { /* through the ReLU: where out > 0 */
            DT_CHECK(dt_gpu_zero(g->dbuf[1 - d], B * ly->out_width * sizeof(float)));
            DT_CHECK(dt_gpu_relu_backward(g->dbuf[1 - d], g->dbuf[d], g->act[i], B * ly->out_width));
            d = 1 - d;
        }
        DT_CHECK(dt_gpu_linear_backward(i > 0 ? g->dbuf[1 - d] : NULL,
                                   view(g, g->grads, i, DT_LINEAR_WEIGHT),
                                   view(g, g->grads, i, DT_LINEAR_BIAS), g->dbuf[d],
                                   i > 0 ? g->act[i - 1] : g->input,
                                   view(g, g->params, i, DT_LINEAR_WEIGHT), B, ly->in_width,
                                   ly->out_width));
        d = 1 - d;
    }
    dt_optim_config sgd = dt_sgd_config(lr, 0.0f, 0.0f);
    return dt_gpu_sgd_update(&sgd, g->params, g->grads, NULL, m->num_params);
}

dt_result dt_gpu_mlp_params(const dt_gpu_mlp *g, float *params)
{
    return dt_gpu_to_host(params, g->params, g->model->num_params * sizeof(float));
}
