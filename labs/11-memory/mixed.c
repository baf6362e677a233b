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
    (void)mp, (void)x, (void)labels, (void)loss, (void)correct;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_mp_backward(lab_mp *mp, const int32_t *labels, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (memory.h): g16 = the gradients of scale x the loss,
     * the logits' gradient formed and scaled in fp32 and rounded; every
     * later gradient an fp32 sum of 16-bit operands rounded once into
     * g16 or dact. Sections 2 and 3. */
    (void)mp, (void)labels, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
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
