/* own_layers.c - the sync and update of a rank that holds only some of the
 * model's layers: model parallelism and pipelines (chapters 05 and 06).
 *
 * Every rank builds the whole model (the same seed gives the same initial
 * parameters) but runs, and so has gradients for, only the layers it owns.
 * Each maximal run of owned layers is one contiguous range of the flat
 * buffers, so the rank's part of the model is a few ranges:
 *
 *   sync     grads *= 1/m on each range (the backward summed m micro-batch
 *            means); no communication: no other rank holds these layers
 *   update   one optimizer per range, its state sized to the range, so a
 *            rank holds the optimizer state of its own layers only
 *
 * A pipeline replicated by data parallelism replaces the sync by one that
 * also averages each range over the stage's replicas (lab 06). */
#include "train_internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    int n;                    /* ranges */
    size_t *offset, *count;   /* of each, in floats */
    dt_optimizer *opt;        /* one per range */
} own_layers;

static dt_result own_sync(dt_trainer *t, void *self)
{
    own_layers *o = self;
    if (!t->model->grads)
        return dt_fail(DT_ERR_STATE, "train: the own-layers sync needs the model's gradient buffer");
    for (int i = 0; i < o->n; i++)
        DT_CHECK(train_scale_micro(t, o->offset[i], o->count[i]));
    return DT_OK;
}

static dt_result own_update(dt_trainer *t, void *self)
{
    own_layers *o = self;
    if (!t->model->grads)
        return dt_fail(DT_ERR_STATE, "train: the optimizer needs the model's gradient buffer");
    for (int i = 0; i < o->n; i++)
        DT_CHECK(dt_optim_step(&o->opt[i], t->model->params, t->model->grads));
    return DT_OK;
}

/* The state: one optimizer per run of owned layers. */
static dt_result own_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    own_layers *o = self;
    char name[32];
    (void)t;
    for (int i = 0; i < o->n; i++) {
        snprintf(name, sizeof name, "run%d", i);
        DT_CHECK(dt_optim_state(&o->opt[i], io, name));
    }
    return DT_OK;
}

static dt_result own_list(dt_trainer *t, void *self, dt_optimizer **opt, int max, int *n)
{
    own_layers *o = self;
    (void)t;
    for (int i = 0; i < o->n && i < max; i++)
        opt[i] = &o->opt[i];
    *n = o->n;
    return DT_OK;
}

static void own_release(void *self)
{
    own_layers *o = self;
    for (int i = 0; o->opt && i < o->n; i++)
        dt_optim_free(&o->opt[i]);
    free(o->opt);
    free(o->offset);
    free(o->count);
    free(o);
}

/* The ranges of the runs of owned layers, and an optimizer for each. */
static dt_result own_build(own_layers *o, const dt_trainer *t, const unsigned char *own)
{
    const dt_model *m = t->model;
    int L = m->num_layers;
    o->offset = calloc((size_t)L, sizeof *o->offset);
    o->count = calloc((size_t)L, sizeof *o->count);
    o->opt = calloc((size_t)L, sizeof *o->opt);
    if (!o->offset || !o->count || !o->opt)
        return dt_fail(DT_ERR_NOMEM, "train: own layers of a %d-layer model", L);
    for (int l = 0; l < L; l++) {
        if (!own[l])
            continue;
        int last = l;
        while (last + 1 < L && own[last + 1])
            last++;
        DT_CHECK(dt_model_layer_range(m, l, last + 1, &o->offset[o->n], &o->count[o->n]));
        DT_CHECK(dt_optim_init(&o->opt[o->n], &t->cfg.optim, o->offset[o->n], o->count[o->n]));
        o->n++;
        l = last;
    }
    return DT_OK;
}

dt_result dt_train_use_own_layers(dt_trainer *t, const unsigned char *own)
{
    if (!t || !t->model || !own)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_own_layers: NULL %s",
                       t && t->model ? "own" : "trainer");
    own_layers *o = calloc(1, sizeof *o);
    if (!o)
        return dt_fail(DT_ERR_NOMEM, "train: own layers");
    dt_result r = own_build(o, t, own);
    if (r != DT_OK) {
        own_release(o);
        return r;
    }
    /* one state for both hooks: the update releases it */
    dt_train_set_hook(&t->sync, (dt_hook){"own_layers", own_sync, NULL, NULL, o});
    dt_train_set_hook(&t->update, (dt_hook){"own_layers", own_update, NULL, own_release, o});
    return dt_train_set_state(t, &t->update, &(dt_hook_state){own_state, own_list});
}
