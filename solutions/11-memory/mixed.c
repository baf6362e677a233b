/* mixed.c - lab 11, task 2: the MLP's forward and backward in a 16-bit
 * format with fp32 master weights (chapter 11, sections 1 to 3); and the
 * given code around them: the 16-bit buffers, and the hooks that make the
 * library's training loop run the mixed-precision step. */
#include "memory.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- buffers */

static uint16_t *alloc16(dt_mem_tag tag, size_t n)
{
    return dt_mem_alloc(tag, n * sizeof(uint16_t));
}

static float *alloc32(dt_mem_tag tag, size_t n)
{
    return n ? dt_mem_alloc(tag, n * sizeof(float)) : NULL;
}

static dt_result check_mlp(const dt_model *m, const char *fn)
{
    if (!m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL model", fn);
    for (int i = 0; i < m->num_layers; i++)
        if (m->layers[i].kind != DT_LAYER_LINEAR && m->layers[i].kind != DT_LAYER_LINEAR_RELU)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: layer %s is not a linear layer (an MLP is "
                           "needed)", fn, m->layers[i].name);
    return DT_OK;
}

static dt_result mp_alloc(lab_mp *mp, dt_model *m, size_t r)
{
    size_t widest = m->in_width, lp = 0;
    for (int i = 0; i < m->num_layers; i++) {
        const dt_layer *l = &m->layers[i];
        widest = l->out_width > widest ? l->out_width : widest;
        lp = l->param_count > lp ? l->param_count : lp;
    }
    mp->widest = widest, mp->layer_params = lp;
    mp->act = calloc((size_t)m->num_layers + 1, sizeof *mp->act);
    if (!mp->act)
        return DT_ERR_NOMEM;
    mp->w16 = alloc16(DT_MEM_PARAM, m->num_params);
    mp->g16 = alloc16(DT_MEM_GRAD, m->num_params);
    mp->act[0] = alloc16(DT_MEM_ACT, r * m->in_width);
    for (int i = 0; i < m->num_layers; i++)
        if (!(mp->act[i + 1] = alloc16(DT_MEM_ACT, r * m->layers[i].out_width)))
            return DT_ERR_NOMEM;
    mp->dact[0] = alloc16(DT_MEM_ACT, r * widest);
    mp->dact[1] = alloc16(DT_MEM_ACT, r * widest);
    mp->probs = alloc32(DT_MEM_ACT, r * m->num_classes);
    mp->wa = alloc32(DT_MEM_OTHER, r * widest);
    mp->wb = alloc32(DT_MEM_OTHER, r * widest);
    mp->wc = alloc32(DT_MEM_OTHER, r * widest);
    mp->ww = alloc32(DT_MEM_OTHER, lp);
    mp->wg = alloc32(DT_MEM_OTHER, lp > LAB_MP_CHUNK ? lp : LAB_MP_CHUNK);
    if (mp->optim.momentum > 0)
        mp->momentum = alloc32(DT_MEM_OPTIM, m->num_params);
    int ok = mp->w16 && mp->g16 && mp->act[0] && mp->dact[0] && mp->dact[1] && mp->probs &&
             mp->wa && mp->wb && mp->wc && mp->ww && mp->wg &&
             (mp->momentum || !(mp->optim.momentum > 0));
    return ok ? DT_OK : DT_ERR_NOMEM;
}

dt_result lab_mp_create(lab_mp *mp, dt_model *m, dt_dtype dtype, size_t rows,
                        const dt_optim_config *optim)
{
    const char *fn = "lab_mp_create";
    if (!mp || !optim)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, mp ? "optimizer config" : "step");
    memset(mp, 0, sizeof *mp);
    DT_CHECK(check_mlp(m, fn));
    if (dtype != DT_F16 && dtype != DT_BF16)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: dtype %s (need f16 or bf16)", fn,
                       dt_dtype_name(dtype));
    if (rows == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: rows 0", fn);
    dt_optimizer probe; /* checks the config */
    DT_CHECK(dt_optim_init(&probe, optim, 0, 0));
    dt_optim_free(&probe);
    if (optim->kind != DT_OPTIM_SGD)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: the update is SGD (with momentum): optimizer "
                       "kind %d", fn, (int)optim->kind);
    mp->model = m, mp->dtype = dtype, mp->rows = rows, mp->optim = *optim;
    if (mp_alloc(mp, m, rows) != DT_OK) {
        lab_mp_free(mp);
        return dt_fail(DT_ERR_NOMEM, "%s: 16-bit buffers for %zu rows", fn, rows);
    }
    dt_model_free_grads(m); /* the gradients live in g16 */
    return DT_OK;
}

void lab_mp_free(lab_mp *mp)
{
    if (!mp)
        return;
    for (int i = 0; mp->act && mp->model && i <= mp->model->num_layers; i++)
        dt_mem_free(mp->act[i]);
    free(mp->act);
    float *f32[] = {mp->momentum, mp->probs, mp->wa, mp->wb, mp->wc, mp->ww, mp->wg};
    for (size_t i = 0; i < sizeof f32 / sizeof *f32; i++)
        dt_mem_free(f32[i]);
    dt_mem_free(mp->w16), dt_mem_free(mp->g16);
    dt_mem_free(mp->dact[0]), dt_mem_free(mp->dact[1]);
    memset(mp, 0, sizeof *mp);
}

/* ---------------------------------------------------------------- forward, backward */

dt_result lab_mp_forward(lab_mp *mp, const float *x, const int32_t *labels, float *loss,
                         size_t *correct)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (memory.h): w16, act[0 .. L] and probs as a real
     * mixed-precision forward stores them, every product of 16-bit
     * operands summed in fp32 and rounded once; loss and correct from
     * the logits in fp32. Sections 1 and 2. */
    if (!mp || !mp->w16 || !x || !labels || !loss)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_forward: NULL argument");
    dt_model *m = mp->model;
    dt_dtype t = mp->dtype;
    size_t r = mp->rows, V = m->num_classes;
    DT_CHECK(dt_convert(mp->w16, t, m->params, DT_F32, m->num_params));
    DT_CHECK(dt_convert(mp->act[0], t, x, DT_F32, r * m->in_width));
    for (int i = 0; i < m->num_layers; i++) {
        const dt_layer *l = &m->layers[i];
        size_t in = l->in_width, out = l->out_width;
        /* the layer's weight then its bias, widened: exact */
        DT_CHECK(dt_convert(mp->ww, DT_F32, mp->w16 + l->param_offset, t, l->param_count));
        DT_CHECK(dt_convert(mp->wa, DT_F32, mp->act[i], t, r * in));
        DT_CHECK(dt_linear_forward(mp->wb, mp->wa, mp->ww, mp->ww + out * in, r, in, out));
        if (l->kind == DT_LAYER_LINEAR_RELU)
            DT_CHECK(dt_relu_forward(mp->wb, mp->wb, r * out));
        DT_CHECK(dt_convert(mp->act[i + 1], t, mp->wb, DT_F32, r * out));
    }
    double mean;
    DT_CHECK(dt_convert(mp->wa, DT_F32, mp->act[m->num_layers], t, r * V));
    DT_CHECK(dt_softmax_xent_forward(mp->probs, NULL, &mean, mp->wa, labels, r, V));
    if (correct) {
        size_t ok = 0, best;
        for (size_t n = 0; n < r; n++) {
            DT_CHECK(dt_vec_argmax(mp->wa + n * V, V, &best));
            ok += best == (size_t)labels[n];
        }
        *correct = ok;
    }
    *loss = (float)mean;
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_mp_backward(lab_mp *mp, const int32_t *labels, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (memory.h): g16 = the gradients of scale x the loss,
     * the logits' gradient formed and scaled in fp32 and rounded; every
     * later gradient an fp32 sum of 16-bit operands rounded once into
     * g16 or dact. Sections 2 and 3. */
    if (!mp || !mp->g16 || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_backward: NULL argument");
    if (!(scale > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_backward: scale %g (need > 0)", (double)scale);
    dt_model *m = mp->model;
    dt_dtype t = mp->dtype;
    size_t r = mp->rows, V = m->num_classes;
    int p = 0;
    /* dL/dlogits = (probs - onehot) / rows, times S, in fp32, then rounded */
    memset(mp->wa, 0, r * V * sizeof(float));
    DT_CHECK(dt_softmax_xent_backward(mp->wa, mp->probs, labels, scale / (float)r, r, V));
    DT_CHECK(dt_convert(mp->dact[p], t, mp->wa, DT_F32, r * V));
    for (int i = m->num_layers - 1; i >= 0; i--) {
        const dt_layer *l = &m->layers[i];
        size_t in = l->in_width, out = l->out_width;
        DT_CHECK(dt_convert(mp->wa, DT_F32, mp->dact[p], t, r * out));
        if (l->kind == DT_LAYER_LINEAR_RELU) { /* through the ReLU: where the output is > 0 */
            DT_CHECK(dt_convert(mp->wc, DT_F32, mp->act[i + 1], t, r * out));
            for (size_t k = 0; k < r * out; k++)
                mp->wa[k] = mp->wc[k] > 0 ? mp->wa[k] : 0.0f;
        }
        DT_CHECK(dt_convert(mp->wb, DT_F32, mp->act[i], t, r * in));
        DT_CHECK(dt_convert(mp->ww, DT_F32, mp->w16 + l->param_offset, t, l->param_count));
        memset(mp->wg, 0, l->param_count * sizeof(float));
        if (i > 0)
            memset(mp->wc, 0, r * in * sizeof(float));
        DT_CHECK(dt_linear_backward(i > 0 ? mp->wc : NULL, mp->wg, mp->wg + out * in, mp->wa,
                                    mp->wb, mp->ww, r, in, out));
        DT_CHECK(dt_convert(mp->g16 + l->param_offset, t, mp->wg, DT_F32, l->param_count));
        if (i > 0) {
            DT_CHECK(dt_convert(mp->dact[1 - p], t, mp->wc, DT_F32, r * in));
            p = 1 - p;
        }
    }
    return DT_OK;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- in the training loop */

typedef struct {
    lab_mp *mp;
    lab_scaler *s;
} mp_hooks;

static dt_result mp_hook_forward(dt_trainer *t, void *self)
{
    mp_hooks *h = self;
    const dt_batch *b = t->batch;
    size_t rows = b->B * b->T, first = (size_t)t->micro * rows, correct = 0;
    float loss;
    if (rows != h->mp->rows || b->micro_steps != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab 11: a mixed-precision step takes one micro-batch "
                       "of %zu rows (this batch: %d of %zu)", h->mp->rows, b->micro_steps, rows);
    DT_CHECK(lab_mp_forward(h->mp, b->x + first * t->model->in_width, b->labels + first, &loss,
                            &correct));
    t->loss_sum += loss;
    t->correct += correct;
    return DT_OK;
}

static dt_result mp_hook_backward(dt_trainer *t, void *self)
{
    mp_hooks *h = self;
    size_t rows = t->batch->B * t->batch->T;
    return lab_mp_backward(h->mp, t->batch->labels + (size_t)t->micro * rows, h->s->scale);
}

static dt_result mp_hook_update(dt_trainer *t, void *self)
{
    (void)t;
    mp_hooks *h = self;
    return lab_mp_step(h->mp, h->s, NULL);
}

/* What the step keeps between steps, for a checkpoint (dt_train_state,
 * chapter 14): the loss scaler's scale and counters, and the momentum.
 * The master weights are the model's parameters, which the trainer saves
 * itself; w16, g16 and the activations are remade by every step. */
static dt_result mp_hook_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    mp_hooks *h = self;
    lab_scaler *s = h->s;
    DT_CHECK(dt_ckpt_io_record(io, "scaler.scale", DT_CKPT_F32, 0, NULL, &s->scale));
    DT_CHECK(dt_ckpt_io_long(io, "scaler.growth_tracker", &s->growth_tracker));
    DT_CHECK(dt_ckpt_io_record(io, "scaler.hysteresis_left", DT_CKPT_I32, 0, NULL,
                               &s->hysteresis_left));
    DT_CHECK(dt_ckpt_io_long(io, "scaler.steps", &s->steps));
    DT_CHECK(dt_ckpt_io_long(io, "scaler.skipped", &s->skipped));
    if (h->mp->momentum)
        DT_CHECK(dt_ckpt_io_f32(io, "momentum", h->mp->momentum, t->model->num_params));
    return DT_OK;
}

dt_result lab_mp_use_in_trainer(dt_trainer *t, lab_mp *mp, lab_scaler *s)
{
    if (!t || !mp || !s || t->model != mp->model || t->comm)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_use_in_trainer: a trainer of the step's "
                       "model on one rank, the step and its scaler are needed");
    mp_hooks *h = calloc(1, sizeof *h);
    if (!h)
        return dt_fail(DT_ERR_NOMEM, "lab_mp_use_in_trainer");
    h->mp = mp, h->s = s;
    dt_train_set_hook(&t->forward, (dt_hook){"mixed", mp_hook_forward, NULL, free, h});
    dt_train_set_hook(&t->backward, (dt_hook){"mixed", mp_hook_backward, NULL, NULL, h});
    dt_train_set_hook(&t->sync, (dt_hook){"none", NULL, NULL, NULL, NULL});
    dt_train_set_hook(&t->update, (dt_hook){"unscale_sgd", mp_hook_update, NULL, NULL, h});
    t->zero_grads = 0;
    /* the forward and backward share h: this one state covers all three */
    return dt_train_set_state(t, &t->update, &(dt_hook_state){mp_hook_state, NULL});
}
