/* update.c - the reference update: the optimizer over every parameter,
 * reading the gradients the sync left; and its optimizer for a checkpoint
 * (dt_train_optimizer, and its state for dt_train_state). */
#include "train_internal.h"

#include <stdlib.h>

typedef struct {
    dt_optimizer opt;
    int ready; /* the state is made at the first update */
} optimizer_update;

static dt_result optimizer_run(dt_trainer *t, void *self)
{
    optimizer_update *u = self;
    dt_model *m = t->model;
    if (!m->grads)
        return dt_fail(DT_ERR_STATE, "train: the optimizer needs the model's gradient buffer");
    if (!u->ready) {
        DT_CHECK(dt_optim_init(&u->opt, &t->cfg.optim, 0, m->num_params));
        u->ready = 1;
    }
    return dt_optim_step(&u->opt, m->params, m->grads);
}

/* What the first update would make: a zeroed state, step 0. */
static dt_result make_ready(dt_trainer *t, optimizer_update *u)
{
    if (!u->ready) {
        DT_CHECK(dt_optim_init(&u->opt, &t->cfg.optim, 0, t->model->num_params));
        u->ready = 1;
    }
    return DT_OK;
}

dt_result dt_train_optimizer(dt_trainer *t, dt_optimizer **out)
{
    if (!t || !t->model || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_optimizer: NULL %s", out ? "trainer" : "out");
    if (t->update.run != optimizer_run)
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_train_optimizer: the update is \"%s\", not the "
                       "optimizer over every parameter (dt_train_optimizers gives any update's)",
                       t->update.name ? t->update.name : "?");
    DT_CHECK(make_ready(t, t->update.self));
    *out = &((optimizer_update *)t->update.self)->opt;
    return DT_OK;
}

static dt_result optimizer_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    DT_CHECK(make_ready(t, self));
    return dt_optim_state(&((optimizer_update *)self)->opt, io, "optimizer");
}

static dt_result optimizer_list(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n)
{
    DT_CHECK(make_ready(t, self));
    if (max > 0)
        o[0] = &((optimizer_update *)self)->opt;
    *n = 1;
    return DT_OK;
}

static void optimizer_release(void *self)
{
    optimizer_update *u = self;
    dt_optim_free(&u->opt);
    free(u);
}

dt_result train_update_optimizer(dt_trainer *t, dt_hook *slot)
{
    optimizer_update *u = calloc(1, sizeof *u);
    if (!u)
        return dt_fail(DT_ERR_NOMEM, "train: the optimizer update");
    const char *name = t->cfg.optim.kind == DT_OPTIM_ADAMW ? "adamw" : "sgd";
    dt_train_set_hook(slot, (dt_hook){name, optimizer_run, NULL, optimizer_release, u});
    return dt_train_set_state(t, slot, &(dt_hook_state){optimizer_state, optimizer_list});
}

static dt_result nothing(dt_trainer *t, void *self)
{
    (void)t, (void)self;
    return DT_OK;
}

dt_hook train_update_none(const char *name)
{
    return (dt_hook){name, nothing, NULL, NULL, NULL};
}
