/* stream_gpu.c - lab 15: the given task bodies on the GPU (stream_gpu.h),
 * compiled in make gpu's build only (DT_HAVE_NCCL); elsewhere this file is
 * empty and nothing needs it. Each body runs on its dt/stream.h stream's
 * thread: it makes the rank's GPU current there (a new thread starts on
 * device 0), then calls gpu/gpu.h, whose every call runs on that thread's
 * own CUDA stream and has finished when it returns. The layers are the
 * CPU's of chapters 00-03 (gpu/mlp.c has the same step whole): linear, then
 * ReLU but after the last layer, softmax cross-entropy on the last. */
#ifdef DT_HAVE_NCCL

#include "stream_ddp.h"
#include "stream_tp.h"

#include "gpu.h"

#include <stdlib.h>
#include <string.h>

struct lab_sddp_gpu {
    int device;          /* the rank's GPU (current on the thread of init) */
    float *x;            /* B x in_width */
    int32_t *labels;     /* B */
    float **act;         /* [layers] B x out_width: each layer's output */
    float **dpre;        /* [layers] B x out_width: the gradient before the ReLU */
    float *dlogits;      /* B x classes: the loss's gradient */
    float *probs, *losses;
    float *host_losses;  /* B, for the mean */
    float *momentum;     /* d->opt's range: SGD's momentum */
};

static float *alloc_floats(size_t n, dt_result *r)
{
    void *p = NULL;
    if (*r == DT_OK)
        *r = dt_gpu_alloc(&p, n * sizeof(float));
    if (*r == DT_OK)
        *r = dt_gpu_zero(p, n * sizeof(float));
    return p;
}

void lab_sddp_gpu_free(lab_sddp *d)
{
    struct lab_sddp_gpu *g = d->gpu;
    const dt_model *m = d->model;
    if (g) {
        for (int l = 0; l < m->num_layers; l++) {
            if (g->act)
                dt_gpu_free(g->act[l]);
            if (g->dpre)
                dt_gpu_free(g->dpre[l]);
        }
        free(g->act), free(g->dpre);
        dt_gpu_free(g->x), dt_gpu_free(g->labels), dt_gpu_free(g->dlogits);
        dt_gpu_free(g->probs), dt_gpu_free(g->losses), dt_gpu_free(g->momentum);
        free(g->host_losses);
        free(g);
    }
    for (int l = 0; d->dinp && l < m->num_layers; l++) {
        dt_gpu_free(d->dinp[l]);
        d->dinp[l] = NULL;
    }
    if (d->params != m->params)
        dt_gpu_free(d->params);
    if (d->grads != m->grads)
        dt_gpu_free(d->grads);
    d->params = m->params, d->grads = m->grads, d->gpu = NULL;
}

dt_result lab_sddp_gpu_init(lab_sddp *d)
{
    const dt_model *m = d->model;
    size_t B = d->B, P = m->num_params;
    int L = m->num_layers;
    struct lab_sddp_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return dt_fail(DT_ERR_NOMEM, "lab_sddp_init: no memory");
    d->gpu = g;
    dt_result r = dt_gpu_get_device(&g->device);
    g->act = calloc((size_t)L, sizeof *g->act);
    g->dpre = calloc((size_t)L, sizeof *g->dpre);
    g->host_losses = malloc(B * sizeof(float));
    if (r == DT_OK && (!g->act || !g->dpre || !g->host_losses))
        r = dt_fail(DT_ERR_NOMEM, "lab_sddp_init: no memory");
    float *params = alloc_floats(P, &r), *grads = alloc_floats(P, &r);
    if (r == DT_OK) /* rank 0's parameters, broadcast by the host's setup */
        r = dt_gpu_to_device(params, m->params, P * sizeof(float));
    d->params = params ? params : m->params, d->grads = grads ? grads : m->grads;
    g->x = alloc_floats(B * m->in_width, &r);
    if (r == DT_OK)
        r = dt_gpu_alloc((void **)&g->labels, B * sizeof(int32_t));
    for (int l = 0; l < L; l++) {
        g->act[l] = alloc_floats(B * m->layers[l].out_width, &r);
        g->dpre[l] = alloc_floats(B * m->layers[l].out_width, &r);
        if (l)
            d->dinp[l] = alloc_floats(B * m->layers[l].in_width, &r);
    }
    g->dlogits = alloc_floats(B * m->num_classes, &r);
    g->probs = alloc_floats(B * m->num_classes, &r);
    g->losses = alloc_floats(B, &r);
    g->momentum = alloc_floats(d->opt.count ? d->opt.count : 1, &r);
    return r; /* on failure the caller's lab_sddp_free frees what was made */
}

dt_result lab_sddp_gpu_forward(lab_sddp *d, const float *x, const int32_t *labels)
{
    struct lab_sddp_gpu *g = d->gpu;
    const dt_model *m = d->model;
    size_t B = d->B, V = m->num_classes;
    int L = m->num_layers;
    DT_CHECK(dt_gpu_check_labels("lab_sddp_step", labels, B, V));
    DT_CHECK(dt_gpu_set_device(g->device));
    DT_CHECK(dt_gpu_to_device(g->x, x, B * m->in_width * sizeof(float)));
    DT_CHECK(dt_gpu_to_device(g->labels, labels, B * sizeof(int32_t)));
    DT_CHECK(dt_gpu_zero(d->grads, m->num_params * sizeof(float)));
    const float *in = g->x;
    for (int l = 0; l < L; l++) {
        const dt_layer *ly = &m->layers[l];
        DT_CHECK(dt_gpu_linear_forward(g->act[l], in, dt_model_view(m, d->params, l, DT_LINEAR_WEIGHT),
                                  dt_model_view(m, d->params, l, DT_LINEAR_BIAS), B,
                                  ly->in_width, ly->out_width));
        if (ly->kind == DT_LAYER_LINEAR_RELU)
            DT_CHECK(dt_gpu_relu_forward(g->act[l], g->act[l], B * ly->out_width));
        in = g->act[l];
    }
    /* the loss, and its gradient (probs - onehot) / B for the last backward */
    DT_CHECK(dt_gpu_softmax_xent_forward(g->probs, g->losses, g->act[L - 1], g->labels, B, V));
    DT_CHECK(dt_gpu_zero(g->dlogits, B * V * sizeof(float)));
    DT_CHECK(dt_gpu_softmax_xent_backward(g->dlogits, g->probs, g->labels, 1.0f / (float)B, B, V));
    return dt_gpu_mean_loss(&d->loss, g->host_losses, g->losses, B);
}

/* grads of layer l += its part; dinp[l] (l > 0) = the gradient of its input */
dt_result lab_sddp_gpu_backward(lab_sddp *d, int l)
{
    struct lab_sddp_gpu *g = d->gpu;
    const dt_model *m = d->model;
    const dt_layer *ly = &m->layers[l];
    size_t B = d->B, n = B * ly->out_width;
    DT_CHECK(dt_gpu_set_device(g->device));
    const float *dout = l == m->num_layers - 1 ? g->dlogits : d->dinp[l + 1];
    if (ly->kind == DT_LAYER_LINEAR_RELU) { /* through the ReLU: where out > 0 */
        DT_CHECK(dt_gpu_zero(g->dpre[l], n * sizeof(float)));
        DT_CHECK(dt_gpu_relu_backward(g->dpre[l], dout, g->act[l], n));
        dout = g->dpre[l];
    }
    return dt_gpu_linear_backward(l ? d->dinp[l] : NULL,
                                  dt_model_view(m, d->grads, l, DT_LINEAR_WEIGHT),
                                  dt_model_view(m, d->grads, l, DT_LINEAR_BIAS), dout,
                                  l ? g->act[l - 1] : g->x,
                                  dt_model_view(m, d->params, l, DT_LINEAR_WEIGHT), B,
                                  ly->in_width, ly->out_width);
}

/* d->opt's rule (SGD with momentum) on its range, fused */
dt_result lab_sddp_gpu_update(lab_sddp *d)
{
    DT_CHECK(dt_gpu_set_device(d->gpu->device));
    size_t o = d->opt.offset;
    return dt_gpu_sgd_update(&d->opt.cfg, d->params + o, d->grads + o, d->gpu->momentum,
                             d->opt.count);
}

dt_result lab_sddp_gpu_download(lab_sddp *d)
{
    const dt_model *m = d->model;
    DT_CHECK(dt_gpu_set_device(d->gpu->device));
    DT_CHECK(dt_gpu_to_host(m->params, d->params, m->num_params * sizeof(float)));
    return dt_gpu_to_host(m->grads, d->grads, m->num_params * sizeof(float));
}

/* ---------------------------------------------------------------- the tensor-parallel MLP */

void lab_stp_gpu_free(lab_stp *p)
{
    float **bufs[4] = {&p->fch, &p->fchg, &p->dfchg, &p->dfch};
    for (int i = 0; i < 4; i++) {
        dt_gpu_free(*bufs[i]);
        *bufs[i] = NULL;
    }
}

dt_result lab_stp_gpu_alloc(lab_stp *p)
{
    dt_result r = dt_gpu_get_device(&p->gpu_device);
    float **bufs[4] = {&p->fch, &p->fchg, &p->dfchg, &p->dfch};
    for (int i = 0; i < 4; i++)
        *bufs[i] = alloc_floats(p->N * p->Hl, &r);
    return r; /* on failure the caller's lab_stp_free frees what was made */
}

/* fch = x fc_w^T + fc_b; fchg = gelu(fch) */
dt_result lab_stp_gpu_fc(lab_stp *p, const float *x)
{
    DT_CHECK(dt_gpu_set_device(p->gpu_device));
    DT_CHECK(dt_gpu_linear_forward(p->fch, x, p->fc_w, p->fc_b, p->N, p->C, p->Hl));
    return dt_gpu_gelu_forward(p->fchg, p->fch, p->N * p->Hl);
}

/* y = fchg mproj_w^T, + mproj_b on rank 0 only (the sum has it once) */
dt_result lab_stp_gpu_mproj(lab_stp *p, float *y)
{
    DT_CHECK(dt_gpu_set_device(p->gpu_device));
    const float *b = dt_comm_rank(p->tp) == 0 ? p->mproj_b : NULL;
    return dt_gpu_linear_forward(y, p->fchg, p->mproj_w, b, p->N, p->Hl, p->C);
}

/* dfchg = dy mproj_w; dmproj_w += dy^T fchg; dmproj_b += colsum(dy);
 * dfch = gelu'(fch) dfchg */
dt_result lab_stp_gpu_mproj_backward(lab_stp *p, const float *dy)
{
    size_t n = p->N * p->Hl;
    DT_CHECK(dt_gpu_set_device(p->gpu_device));
    DT_CHECK(dt_gpu_zero(p->dfch, n * sizeof(float)));
    DT_CHECK(dt_gpu_linear_backward(p->dfchg, p->dmproj_w, p->dmproj_b, dy, p->fchg, p->mproj_w, p->N,
                               p->Hl, p->C));
    return dt_gpu_gelu_backward(p->dfch, p->dfchg, p->fch, n);
}

/* dx (N, C) = dfch (N, Hl) fc_w (Hl, C): no weight gradient here */
dt_result lab_stp_gpu_fc_input_grad(lab_stp *p, float *dx)
{
    DT_CHECK(dt_gpu_set_device(p->gpu_device));
    return dt_gpu_sgemm(DT_NO_TRANS, DT_NO_TRANS, p->N, p->C, p->Hl, 1.0f, p->dfch, p->Hl,
                        p->fc_w, p->C, 0.0f, dx, p->C);
}

/* dfc_w += dfch^T x; dfc_b += colsum(dfch) */
dt_result lab_stp_gpu_fc_weight_grad(lab_stp *p, const float *x)
{
    DT_CHECK(dt_gpu_set_device(p->gpu_device));
    return dt_gpu_linear_backward(NULL, p->dfc_w, p->dfc_b, p->dfch, x, p->fc_w, p->N, p->C,
                                  p->Hl);
}

#endif /* DT_HAVE_NCCL */
