/* zero.c - lab 08: ZeRO stages 1 to 3 (chapter 08). Your code goes
 * between the fences; the functions outside them are given. Tasks 1 to 6
 * are those of the chapter's section 9, which names the section that
 * derives each. */
#include "zero.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

static void probe(lab_zero *z, const char *event, int unit)
{
    if (z->cfg.probe)
        z->cfg.probe(z->cfg.probe_arg, event, unit);
}

/* The units runner's hooks (dt/train.h): what a stage does around each
 * unit's forward and backward. */
static dt_result pre_forward(dt_trainer *t, void *self, int u, float **params)
{
    lab_zero *z = self;
    (void)t;
    if (z->cfg.stage == LAB_ZERO_3)
        DT_CHECK(lab_zero_gather(z, u));
    *params = z->units[u].params;
    return DT_OK;
}

static dt_result post_forward(dt_trainer *t, void *self, int u)
{
    lab_zero *z = self;
    (void)t;
    if (z->cfg.stage == LAB_ZERO_3)
        DT_CHECK(lab_zero_release(z, u));
    probe(z, "f", u);
    return DT_OK;
}

/* Stages 0 and 1 keep the gradients between steps and zero them here;
 * stages 2 and 3 make them now (zeroed), for this backward only. */
static dt_result pre_backward(dt_trainer *t, void *self, int u, float **params, float **grads)
{
    lab_zero *z = self;
    lab_zero_unit *un = &z->units[u];
    size_t n = z->cfg.stage == LAB_ZERO_DDP ? un->unit.count : un->shard * (size_t)z->ranks;
    (void)t;
    if (z->cfg.stage == LAB_ZERO_3)
        DT_CHECK(lab_zero_gather(z, u));
    if (z->cfg.stage >= LAB_ZERO_2) {
        if (un->grads)
            return dt_fail(DT_ERR_STATE, "ZeRO-%d: unit %d's gradients of the last backward "
                           "were never freed (see chapter 08, section 4)", z->cfg.stage, u);
        if (!(un->grads = dt_mem_alloc(DT_MEM_GRAD, n * sizeof(float))))
            return dt_fail(DT_ERR_NOMEM, "ZeRO: unit %d's gradients", u);
    } else if (un->grads) {
        memset(un->grads, 0, n * sizeof(float));
    }
    *params = un->params, *grads = un->grads;
    return DT_OK;
}

static dt_result post_backward(dt_trainer *t, void *self, int u)
{
    lab_zero *z = self;
    (void)t;
    if (z->cfg.stage >= LAB_ZERO_2)
        DT_CHECK(lab_zero_reduce_unit(z, u));
    if (z->cfg.stage == LAB_ZERO_3)
        DT_CHECK(lab_zero_release(z, u));
    probe(z, "b", u);
    return DT_OK;
}

/* The loop's sync: data parallelism averages with one allreduce (chapter
 * 03), stage 1 reduce-scatters; stages 2 and 3 reduced in the backward. */
static dt_result sync(dt_trainer *t, void *self)
{
    lab_zero *z = self;
    (void)t;
    if (z->cfg.stage == LAB_ZERO_DDP) {
        lab_zero_unit *un = &z->units[0];
        DT_CHECK(dt_allreduce(un->grads, un->grads, un->unit.count, DT_F32, DT_AVG, z->comm));
    } else if (z->cfg.stage == LAB_ZERO_1) {
        DT_CHECK(lab_zero1_reduce_scatter(z));
    }
    probe(z, "sync", -1);
    return DT_OK;
}

static dt_result update(dt_trainer *t, void *self)
{
    lab_zero *z = self;
    (void)t;
    DT_CHECK(lab_zero_update(z));
    probe(z, "update", -1);
    return DT_OK;
}

/* The units of a stage: the whole model (stages 0, 1), buckets of layers
 * closed at bucket_bytes walking from the last layer (stage 2), one layer
 * each (stage 3). Returns the number of units written to out (room for
 * num_layers). */
static int make_units(const dt_model *m, const lab_zero_config *c, dt_unit *out)
{
    if (c->stage <= LAB_ZERO_1)
        return dt_unit_of(m, 0, m->num_layers, &out[0]) == DT_OK ? 1 : -1;
    int n = 0, last = m->num_layers;
    size_t bytes = 0;
    for (int i = m->num_layers - 1; i >= 0; i--) {
        bytes += m->layers[i].param_count * sizeof(float);
        if (c->stage == LAB_ZERO_3 || bytes >= c->bucket_bytes || i == 0) {
            if (dt_unit_of(m, i, last, &out[n++]) != DT_OK)
                return -1;
            last = i, bytes = 0;
        }
    }
    for (int i = 0; i < n / 2; i++) { /* made last to first; the runner wants first to last */
        dt_unit u = out[i];
        out[i] = out[n - 1 - i], out[n - 1 - i] = u;
    }
    return n;
}

void lab_zero_free(lab_zero *z)
{
    if (!z)
        return;
    dt_trainer_free(&z->trainer);
    for (int u = 0; z->units && u < z->num_units; u++) {
        lab_zero_unit *un = &z->units[u];
        dt_mem_free(un->params), dt_mem_free(un->grads);
        dt_mem_free(un->param_shard), dt_mem_free(un->grad_shard);
        dt_optim_free(&un->opt);
    }
    dt_mem_free(z->units);
    memset(z, 0, sizeof *z);
}

static const dt_unit_hooks zero_hooks = {"lab_zero", pre_forward, post_forward, pre_backward,
                                         post_backward, NULL};

dt_result lab_zero_init(lab_zero *z, dt_comm *comm, dt_model *m, const lab_zero_config *cfg)
{
    if (!z || !comm || !m || !m->params || !cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_zero_init: NULL argument or model without "
                       "parameters");
    if (cfg->stage < LAB_ZERO_DDP || cfg->stage > LAB_ZERO_3)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_zero_init: stage %d (0 to 3)", (int)cfg->stage);
    memset(z, 0, sizeof *z);
    z->comm = comm, z->model = m, z->cfg = *cfg;
    z->rank = dt_comm_rank(comm), z->ranks = dt_comm_size(comm);
    /* the lab's own tables are charged to the rank too (OTHER) */
    dt_unit *units = dt_mem_alloc(DT_MEM_OTHER, (size_t)m->num_layers * sizeof *units);
    z->units = dt_mem_alloc(DT_MEM_OTHER, (size_t)m->num_layers * sizeof *z->units);
    dt_result r = units && z->units ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_zero_init: units");
    if (r == DT_OK && (z->num_units = make_units(m, cfg, units)) < 1)
        r = DT_ERR_INTERNAL;
    for (int u = 0; r == DT_OK && u < z->num_units; u++) {
        z->units[u].unit = units[u];
        r = lab_zero_setup_unit(z, u, m->params);
    }
    dt_trainer_config tc = {0};
    tc.optim = cfg->optim;
    dt_unit_hooks h = zero_hooks;
    h.self = z;
    if (r == DT_OK)
        r = dt_trainer_init(&z->trainer, m, comm, &tc);
    if (r == DT_OK)
        r = dt_train_use_units(&z->trainer, units, z->num_units, &h);
    if (r == DT_OK) {
        dt_train_set_hook(&z->trainer.sync, (dt_hook){"lab_zero", sync, NULL, NULL, z});
        dt_train_set_hook(&z->trainer.update, (dt_hook){"lab_zero", update, NULL, NULL, z});
    }
    dt_mem_free(units);
    if (r != DT_OK) {
        lab_zero_free(z);
        return r;
    }
    /* the units hold the parameters now: the model's buffers would double them */
    dt_mem_free(m->params), dt_mem_free(m->grads);
    m->params = NULL, m->grads = NULL;
    return DT_OK;
}

dt_result lab_zero_step(lab_zero *z, const float *x, const int32_t *labels, size_t B,
                        float *loss)
{
    if (!z || !z->units || !x || !labels || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_zero_step: NULL argument or B = 0");
    dt_batch b = {x, NULL, labels, B, 1, 1};
    DT_CHECK(dt_train_step(&z->trainer, &b));
    if (loss)
        *loss = z->trainer.loss;
    return DT_OK;
}

dt_result lab_zero_params(lab_zero *z, float *out)
{
    if (!z || !z->units || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_zero_params: NULL argument");
    for (int u = 0; u < z->num_units; u++) {
        lab_zero_unit *un = &z->units[u];
        if (z->cfg.stage == LAB_ZERO_3)
            DT_CHECK(lab_zero_gather(z, u));
        if (!un->params)
            return dt_fail(DT_ERR_STATE, "lab_zero_params: unit %d holds no parameters", u);
        memcpy(out + un->unit.offset, un->params, un->unit.count * sizeof(float));
        if (z->cfg.stage == LAB_ZERO_3)
            DT_CHECK(lab_zero_release(z, u));
    }
    return DT_OK;
}

/* ================================================================ task 1 */

dt_result lab_zero_shard_size(size_t count, int ranks, size_t *shard)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *shard is the smallest number with ranks * shard >=
     * count (chapter 08, section 6); bad arguments are DT_ERR_INVALID_ARG. */
    (void)count, (void)ranks, (void)shard;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_zero_setup_unit(lab_zero *z, int u, const float *init)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: z->units[u] holds, each under its tag, exactly what
     * stage z->cfg.stage keeps between steps (chapter 08, section 2's
     * table; the padding of section 6), with the initial parameters from
     * init, and its optimizer over what this rank updates (zero.h). */
    (void)z, (void)u, (void)init;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_zero1_reduce_scatter(lab_zero *z)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: for every unit, this rank's shard of grads holds the
     * mean over the ranks of that shard (chapter 08, section 3). */
    (void)z;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_zero_update(lab_zero *z)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: each unit's optimizer has stepped once on what this
     * rank updates; stages 0-2 hold the whole updated parameters on every
     * rank, stage 3 the updated shard (chapter 08, sections 3 to 5). */
    (void)z;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_zero_reduce_unit(lab_zero *z, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u's grad_shard holds the mean over the ranks of
     * this rank's shard of its gradients, and its full gradients are freed
     * (chapter 08, section 4). */
    (void)z, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

dt_result lab_zero_gather(lab_zero *z, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u's params hold its whole parameters, gathered
     * from every rank's param_shard, under tag PARAM (chapter 08, section 5). */
    (void)z, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_zero_release(lab_zero *z, int u)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: unit u holds no gathered parameters (params NULL), and
     * their memory is returned (chapter 08, section 5). */
    (void)z, (void)u;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 6 */

dt_result lab_zero_predict(const dt_model *m, const lab_zero_config *cfg, int ranks,
                           const dt_net *link, lab_zero_cost *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out holds the bytes a rank sends and the modeled
     * seconds of the collectives of one step of cfg->stage on `ranks`
     * ranks over link, from the formulas of chapter 08, section 7, with
     * the units of section 9 and the padding of section 6 (zero.h). */
    (void)m, (void)cfg, (void)ranks, (void)link, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
