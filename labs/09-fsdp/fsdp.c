/* fsdp.c - lab 09: FSDP (chapter 09). Your code goes between the fences;
 * the functions outside them are given. Tasks 1 to 5 are those of the
 * chapter's section 8, which names the section that derives each. */
#include "fsdp.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

/* The units runner's hooks (dt/train.h): task 4's schedule around each
 * unit, and the buffers the runner needs. */
static dt_result pre_forward(dt_trainer *t, void *self, int u, float **params)
{
    lab_fsdp *f = self;
    (void)t;
    DT_CHECK(lab_fsdp_pre_forward(f, u));
    *params = f->units[u].gather ? NULL : f->units[u].params; /* not before it has arrived */
    return DT_OK;
}

static dt_result post_forward(dt_trainer *t, void *self, int u)
{
    (void)t;
    return lab_fsdp_post_forward(self, u);
}

static dt_result pre_backward(dt_trainer *t, void *self, int u, float **params, float **grads)
{
    lab_fsdp *f = self;
    (void)t;
    DT_CHECK(lab_fsdp_pre_backward(f, u));
    *params = f->units[u].gather ? NULL : f->units[u].params;
    *grads = f->units[u].grads;
    return DT_OK;
}

static dt_result post_backward(dt_trainer *t, void *self, int u)
{
    (void)t;
    return lab_fsdp_post_backward(self, u);
}

/* The loop's sync: every reduce-scatter done (all of them waited for,
 * the first failure kept), the gradients' shards final. */
static dt_result sync(dt_trainer *t, void *self)
{
    lab_fsdp *f = self;
    dt_result first = DT_OK;
    (void)t;
    for (int u = 0; u < f->num_units; u++) {
        dt_result r = lab_fsdp_reduce_wait(f, u);
        if (first == DT_OK)
            first = r;
    }
    return first;
}

/* The update: each shard's optimizer on its mean gradient. The next
 * forward gathers the updated shards. */
static dt_result update(dt_trainer *t, void *self)
{
    lab_fsdp *f = self;
    (void)t;
    for (int u = 0; u < f->num_units; u++) {
        lab_fsdp_unit *un = &f->units[u];
        if (un->params || un->grads)
            return dt_fail(DT_ERR_STATE, "FSDP: unit %d still holds its %s after the backward "
                           "(see chapter 09, section 2)", u, un->params ? "parameters"
                                                                      : "gradients");
        DT_CHECK(dt_optim_step_shard(&un->opt, un->param_shard, un->grad_shard));
    }
    return DT_OK;
}

/* Waits for what is in flight, then frees every buffer of the units. */
static void free_units(lab_fsdp *f)
{
    for (int u = 0; f->units && u < f->num_units; u++) {
        lab_fsdp_unit *un = &f->units[u];
        (void)dt_wait(un->gather), (void)dt_wait(un->reduce);
        dt_mem_free(un->param_shard), dt_mem_free(un->grad_shard);
        dt_mem_free(un->params), dt_mem_free(un->grads);
        dt_optim_free(&un->opt);
    }
    dt_mem_free(f->units);
    f->units = NULL;
}

void lab_fsdp_free(lab_fsdp *f)
{
    if (!f)
        return;
    dt_trainer_free(&f->trainer);
    free_units(f);
    memset(f, 0, sizeof *f);
}

/* Unit u's shards: this rank's padded part of the parameters (from init,
 * the model's flat buffer), of the gradient, and its optimizer. */
static dt_result setup_unit(lab_fsdp *f, int u, const float *init)
{
    lab_fsdp_unit *un = &f->units[u];
    size_t K = (size_t)f->ranks, n = un->unit.count, begin;
    un->shard = n / K + (n % K != 0);
    begin = (size_t)f->rank * un->shard;
    un->param_shard = dt_mem_alloc(DT_MEM_PARAM, un->shard * sizeof(float));
    un->grad_shard = dt_mem_alloc(DT_MEM_GRAD, un->shard * sizeof(float));
    if (!un->param_shard || !un->grad_shard)
        return dt_fail(DT_ERR_NOMEM, "FSDP: unit %d's shards of %zu", u, un->shard);
    if (begin < n) /* the rest is padding, zero */
        memcpy(un->param_shard, init + un->unit.offset + begin,
               (n - begin < un->shard ? n - begin : un->shard) * sizeof(float));
    return dt_optim_init(&un->opt, &f->cfg.optim, 0, un->shard);
}

static dt_result setup_loop(lab_fsdp *f, dt_model *m, const dt_unit *units)
{
    dt_trainer_config tc = {0};
    tc.optim = f->cfg.optim;
    if (f->cfg.forward_layer_s || f->cfg.backward_s) {
        tc.clock = DT_CLOCK_MODELED;
        tc.forward_layer_s = f->cfg.forward_layer_s;
        tc.backward_s = f->cfg.backward_s;
    }
    dt_unit_hooks h = {"lab_fsdp", pre_forward, post_forward, pre_backward, post_backward, f};
    DT_CHECK(dt_trainer_init(&f->trainer, m, f->comm, &tc));
    DT_CHECK(dt_train_use_units(&f->trainer, units, f->num_units, &h));
    dt_train_set_hook(&f->trainer.sync, (dt_hook){"lab_fsdp", sync, NULL, NULL, f});
    dt_train_set_hook(&f->trainer.update, (dt_hook){"lab_fsdp", update, NULL, NULL, f});
    return DT_OK;
}

dt_result lab_fsdp_init(lab_fsdp *f, dt_comm *comm, dt_model *m, const lab_fsdp_config *cfg)
{
    if (!f || !comm || !m || !m->params || !cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_fsdp_init: NULL argument or model without "
                       "parameters");
    memset(f, 0, sizeof *f);
    f->comm = comm, f->model = m, f->cfg = *cfg;
    f->rank = dt_comm_rank(comm), f->ranks = dt_comm_size(comm);
    /* the lab's own tables are charged to the rank too (OTHER) */
    dt_unit *units = dt_mem_alloc(DT_MEM_OTHER, (size_t)m->num_layers * sizeof *units);
    f->units = dt_mem_alloc(DT_MEM_OTHER, (size_t)m->num_layers * sizeof *f->units);
    dt_result r = units && f->units ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_fsdp_init: units");
    if (r == DT_OK)
        r = lab_fsdp_wrap(m, cfg->min_unit_params, units, &f->num_units);
    if (r == DT_OK && (f->num_units < 1 || f->num_units > m->num_layers))
        r = dt_fail(DT_ERR_STATE, "lab_fsdp_init: the wrap made %d units of %d layers",
                    f->num_units, m->num_layers);
    for (int u = 0; r == DT_OK && u < f->num_units; u++) {
        f->units[u].unit = units[u];
        r = setup_unit(f, u, m->params);
    }
    if (r == DT_OK)
        r = setup_loop(f, m, units);
    dt_mem_free(units);
    if (r != DT_OK) {
        lab_fsdp_free(f);
        return r;
    }
    dt_mem_free(m->params), dt_mem_free(m->grads); /* the shards hold the parameters now */
    m->params = NULL, m->grads = NULL;
    return DT_OK;
}

dt_result lab_fsdp_step(lab_fsdp *f, const dt_batch *b, float *loss)
{
    if (!f || !f->units || !b)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_fsdp_step: NULL argument");
    if (b->micro_steps != 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_fsdp_step: %d micro-batches; this FSDP "
                       "reduces every backward (one micro-batch a step)", b->micro_steps);
    DT_CHECK(dt_train_step(&f->trainer, b));
    if (loss)
        *loss = f->trainer.loss;
    return DT_OK;
}

dt_result lab_fsdp_params(lab_fsdp *f, float *out)
{
    if (!f || !f->units || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_fsdp_params: NULL argument");
    for (int u = 0; u < f->num_units; u++) {
        lab_fsdp_unit *un = &f->units[u];
        size_t full = un->shard * (size_t)f->ranks;
        float *all = dt_mem_alloc(DT_MEM_OTHER, full * sizeof(float));
        dt_result r = all ? dt_allgather(un->param_shard, all, un->shard, DT_F32, f->comm)
                          : dt_fail(DT_ERR_NOMEM, "lab_fsdp_params: unit %d", u);
        if (r == DT_OK)
            memcpy(out + un->unit.offset, all, un->unit.count * sizeof(float));
        dt_mem_free(all);
        DT_CHECK(r);
    }
    return DT_OK;
}

/* ================================================================ task 1 */

dt_result lab_fsdp_wrap(const dt_model *m, size_t min_params, dt_unit *units, int *n)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: units[0 .. *n) are m's layers in order, each unit
     * closed as soon as it holds min_params parameters, the last one
     * taking the rest (chapter 09, section 1). */
    (void)m, (void)min_params, (void)units, (void)n;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_fsdp_unshard_start(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u's params are allocated (tag PARAM) and an
     * all-gather of the ranks' shards into them is in flight, unless they
     * were gathered or on their way already (chapter 09, section 2). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_unshard_wait(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u's params hold its whole parameters, and no
     * all-gather into them is in flight (chapter 09, section 2). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_reshard(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u holds no gathered parameters (params NULL, the
     * memory returned) (chapter 09, section 2). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_fsdp_reduce_start(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: a reduce-scatter is in flight that leaves in unit u's
     * grad_shard the mean over the ranks of this rank's shard of its
     * gradients (chapter 09, section 2). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_reduce_wait(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: no reduce-scatter of unit u is in flight, and its full
     * gradients are freed (grads NULL) (chapter 09, section 2). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_fsdp_pre_forward(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: see fsdp.h, task 4 (chapter 09, sections 2, 4, 5). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_post_forward(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: see fsdp.h, task 4 (chapter 09, sections 2, 5). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_pre_backward(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: see fsdp.h, task 4 (chapter 09, sections 2, 3, 4). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_fsdp_post_backward(lab_fsdp *f, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: see fsdp.h, task 4 (chapter 09, sections 2, 3). */
    (void)f, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

dt_result lab_fsdp_predict_peak(const dt_model *m, const lab_fsdp_config *cfg, int ranks,
                                size_t *param, size_t *grad)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *param and *grad are the peak bytes of PARAM and of
     * GRAD a rank holds over one step of task 4's schedule, shards
     * included, for cfg's units, prefetch and resharding on `ranks` ranks:
     * worked out, not measured (fsdp.h, task 5; chapter 09, sections 1, 3
     * and 5). */
    (void)m, (void)cfg, (void)ranks, (void)param, (void)grad;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
