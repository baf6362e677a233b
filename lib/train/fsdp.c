/* fsdp.c - fully sharded data parallelism (chapter 09; ZeRO-3 of chapter
 * 08 organised by units): the library's reference, for dttrain --fsdp and
 * the labs' programs. Lab 09 asks for the same from the student.
 *
 * The model's layers are wrapped into units (a unit closes once it holds
 * min_unit_params parameters). Between steps each rank holds only its
 * shard of each unit (its parameters padded to K shards of c = ceil(count
 * / K)), the mean gradient of that shard and the optimizer's state of it.
 * Around each unit of the units runner (units.c):
 *
 *   pre forward     gather the unit (an all-gather of the K shards); with
 *                   prefetch, start gathering the next unit first
 *   post forward    with reshard_after_forward, free the unit
 *   pre backward    gather it (again); with prefetch, start the unit before
 *                   it; a zeroed gradient buffer for it
 *   post backward   start the reduce-scatter (average) of its gradients into
 *                   the shard, free the unit, and wait for the previous
 *                   unit's reduce-scatter, freeing its gradients
 *
 * The all-gathers and reduce-scatters are asynchronous: with prefetch the
 * network works while the unit before computes. At most two units are
 * gathered, and two units' gradients held, at any time. */
#include "train_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    dt_unit unit;
    size_t shard;                  /* c */
    float *param_shard, *grad_shard; /* c floats each: between steps, all this rank holds */
    float *params, *grads;         /* K c floats each, while gathered / until reduced */
    dt_request *gather, *reduce;   /* in flight, or NULL */
    dt_optimizer opt;              /* over the shard */
} fsdp_unit;

typedef struct {
    dt_fsdp_config cfg;
    dt_comm *comm;
    int rank, ranks, n;
    fsdp_unit *u;
} fsdp;

/* ---------------------------------------------------------------- gather, reduce */

static dt_result unshard_start(fsdp *f, int i)
{
    fsdp_unit *u = &f->u[i];
    if (u->params) /* gathered, or on its way */
        return DT_OK;
    size_t full = u->shard * (size_t)f->ranks;
    if (!(u->params = dt_mem_alloc(DT_MEM_PARAM, full * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "FSDP: unit %d's %zu parameters", i, full);
    return dt_iallgather(u->param_shard, u->params, u->shard, DT_F32, f->comm, &u->gather);
}

static dt_result unshard(fsdp *f, int i)
{
    DT_CHECK(unshard_start(f, i));
    dt_result r = dt_wait(f->u[i].gather);
    f->u[i].gather = NULL;
    return r;
}

static void reshard(fsdp *f, int i)
{
    dt_mem_free(f->u[i].params); /* never while gathering: every caller waited first */
    f->u[i].params = NULL;
}

static dt_result reduce_wait(fsdp *f, int i)
{
    dt_result r = dt_wait(f->u[i].reduce);
    f->u[i].reduce = NULL;
    dt_mem_free(f->u[i].grads);
    f->u[i].grads = NULL;
    return r;
}

static void probe(const fsdp *f, const char *event, int unit)
{
    if (f->cfg.probe)
        f->cfg.probe(f->cfg.probe_arg, event, unit);
}

/* ---------------------------------------------------------------- the units' hooks */

static dt_result pre_forward(dt_trainer *t, void *self, int i, float **params)
{
    fsdp *f = self;
    if (t->batch->micro_steps != 1) /* each backward reduces into the shard, overwriting it */
        return dt_fail(DT_ERR_UNSUPPORTED, "FSDP: %d micro-batches a step; this FSDP reduces "
                       "the gradients of every backward (one micro-batch a step)",
                       t->batch->micro_steps);
    DT_CHECK(unshard_start(f, i));
    if (f->cfg.prefetch && i + 1 < f->n)
        DT_CHECK(unshard_start(f, i + 1));
    DT_CHECK(unshard(f, i));
    *params = f->u[i].params;
    return DT_OK;
}

static dt_result post_forward(dt_trainer *t, void *self, int i)
{
    fsdp *f = self;
    (void)t;
    if (f->cfg.reshard_after_forward)
        reshard(f, i);
    probe(f, "f", i);
    return DT_OK;
}

static dt_result pre_backward(dt_trainer *t, void *self, int i, float **params, float **grads)
{
    fsdp *f = self;
    fsdp_unit *u = &f->u[i];
    (void)t;
    DT_CHECK(unshard_start(f, i));
    if (f->cfg.prefetch && i > 0) /* the backward runs the units last to first */
        DT_CHECK(unshard_start(f, i - 1));
    DT_CHECK(unshard(f, i));
    if (u->grads) /* a micro-batch's backward before the last one's reduction */
        return dt_fail(DT_ERR_STATE, "FSDP: unit %d's gradients are still held", i);
    if (!(u->grads = dt_mem_alloc(DT_MEM_GRAD, u->shard * (size_t)f->ranks * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "FSDP: unit %d's gradients", i);
    *params = u->params, *grads = u->grads;
    return DT_OK;
}

static dt_result post_backward(dt_trainer *t, void *self, int i)
{
    fsdp *f = self;
    fsdp_unit *u = &f->u[i];
    (void)t;
    DT_CHECK(dt_ireduce_scatter(u->grads, u->grad_shard, u->shard, DT_F32, DT_AVG, f->comm,
                                &u->reduce));
    reshard(f, i);
    if (i + 1 < f->n) /* reduced under unit i's compute */
        DT_CHECK(reduce_wait(f, i + 1));
    probe(f, "b", i);
    return DT_OK;
}

/* ---------------------------------------------------------------- sync, update */

static dt_result sync(dt_trainer *t, void *self)
{
    fsdp *f = self;
    dt_result first = DT_OK;
    for (int i = 0; i < f->n; i++) { /* every one waited for, the first failure kept */
        dt_result r = reduce_wait(f, i);
        first = first != DT_OK ? first : r;
    }
    (void)t;
    probe(f, "sync", -1);
    return first;
}

static dt_result update(dt_trainer *t, void *self)
{
    fsdp *f = self;
    (void)t;
    for (int i = 0; i < f->n; i++)
        DT_CHECK(dt_optim_step_shard(&f->u[i].opt, f->u[i].param_shard, f->u[i].grad_shard));
    probe(f, "update", -1);
    return DT_OK;
}

/* The state: each unit's layout (checked), this rank's shard of its
 * parameters and the optimizer over the shard. The gradient shards are
 * overwritten by every step's reduce-scatter: not state. */
static dt_result fsdp_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    fsdp *f = self;
    size_t shape[2] = {(size_t)f->n, 2};
    uint64_t *layout = malloc((size_t)f->n * 2 * sizeof *layout);
    (void)t;
    if (!layout)
        return dt_fail(DT_ERR_NOMEM, "FSDP: the units' layout");
    for (int i = 0; i < f->n; i++)
        layout[2 * i] = f->u[i].unit.offset, layout[2 * i + 1] = f->u[i].unit.count;
    dt_result r = dt_ckpt_io_expect(io, "units", DT_CKPT_U64, 2, shape, layout);
    free(layout);
    for (int i = 0; r == DT_OK && i < f->n; i++) {
        char name[32];
        fsdp_unit *u = &f->u[i];
        snprintf(name, sizeof name, "unit%d", i);
        if ((r = dt_ckpt_io_push(io, name)) == DT_OK)
            r = dt_ckpt_io_f32(io, "params", u->param_shard, u->shard);
        if (r == DT_OK)
            r = dt_optim_state(&u->opt, io, "optimizer");
        dt_ckpt_io_pop(io);
    }
    return r;
}

static dt_result fsdp_list(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n)
{
    fsdp *f = self;
    (void)t;
    for (int i = 0; i < f->n && i < max; i++)
        o[i] = &f->u[i].opt;
    *n = f->n;
    return DT_OK;
}

static void fsdp_release(void *self)
{
    fsdp *f = self;
    for (int i = 0; f->u && i < f->n; i++) {
        fsdp_unit *u = &f->u[i];
        (void)dt_wait(u->gather), (void)dt_wait(u->reduce);
        dt_mem_free(u->param_shard), dt_mem_free(u->grad_shard);
        dt_mem_free(u->params), dt_mem_free(u->grads);
        dt_optim_free(&u->opt);
    }
    free(f->u);
    free(f);
}

/* ---------------------------------------------------------------- set up */

/* The wrap policy: a unit closes once it holds min_params parameters. */
static int wrap(const dt_model *m, size_t min_params, dt_unit *out)
{
    int n = 0, first = 0;
    size_t held = 0;
    for (int i = 0; i < m->num_layers; i++) {
        held += m->layers[i].param_count;
        if (held >= min_params || i == m->num_layers - 1) {
            dt_unit_of(m, first, i + 1, &out[n++]); /* valid layers: cannot fail */
            first = i + 1, held = 0;
        }
    }
    return n;
}

static dt_result setup_unit(fsdp *f, fsdp_unit *u, const dt_optim_config *cfg, const float *init)
{
    size_t K = (size_t)f->ranks, n = u->unit.count, begin;
    u->shard = n / K + (n % K != 0);
    begin = (size_t)f->rank * u->shard;
    u->param_shard = dt_mem_alloc(DT_MEM_PARAM, u->shard * sizeof(float));
    u->grad_shard = dt_mem_alloc(DT_MEM_GRAD, u->shard * sizeof(float));
    if (!u->param_shard || !u->grad_shard)
        return dt_fail(DT_ERR_NOMEM, "FSDP: shards of %zu parameters", u->shard);
    if (begin < n) /* the rest is padding, zero */
        memcpy(u->param_shard, init + u->unit.offset + begin,
               (n - begin < u->shard ? n - begin : u->shard) * sizeof(float));
    return dt_optim_init(&u->opt, cfg, 0, u->shard);
}

dt_result dt_train_use_fsdp(dt_trainer *t, const dt_fsdp_config *c)
{
    if (!t || !t->model || !t->model->params || !t->comm || !c)
        return dt_fail(DT_ERR_INVALID_ARG, "FSDP: %s", !t || !t->model ? "no trainer" :
                       !t->comm ? "needs a communicator" : !c ? "NULL config" :
                       "the model's parameters are gone (FSDP already?)");
    dt_model *m = t->model;
    fsdp *f = calloc(1, sizeof *f);
    dt_unit *units = calloc((size_t)m->num_layers, sizeof *units);
    if (f)
        f->u = calloc((size_t)m->num_layers, sizeof *f->u);
    if (!f || !units || !f->u) {
        free(units);
        if (f)
            free(f->u), free(f);
        return dt_fail(DT_ERR_NOMEM, "FSDP: state");
    }
    f->cfg = *c, f->comm = t->comm, f->rank = t->rank, f->ranks = t->ranks;
    f->n = wrap(m, c->min_unit_params, units);
    dt_result r = DT_OK;
    for (int i = 0; r == DT_OK && i < f->n; i++) {
        f->u[i].unit = units[i];
        r = setup_unit(f, &f->u[i], &t->cfg.optim, m->params);
    }
    dt_unit_hooks h = {"fsdp", pre_forward, post_forward, pre_backward, post_backward, f};
    if (r == DT_OK)
        r = dt_train_use_units(t, units, f->n, &h);
    free(units);
    if (r != DT_OK) {
        fsdp_release(f);
        return r;
    }
    /* the sync releases the state (the units' hooks do not own it) */
    dt_train_set_hook(&t->sync, (dt_hook){"fsdp", sync, NULL, fsdp_release, f});
    dt_train_set_hook(&t->update, (dt_hook){"fsdp", update, NULL, NULL, f});
    dt_train_set_state(t, &t->update, &(dt_hook_state){fsdp_state, fsdp_list}); /* a valid slot */
    dt_mem_free(m->params), dt_mem_free(m->grads); /* the shards hold the parameters now */
    m->params = NULL, m->grads = NULL;
    return DT_OK;
}

dt_result dt_train_fsdp_params(dt_trainer *t, float *out)
{
    if (!t || !out || !t->sync.name || strcmp(t->sync.name, "fsdp"))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_fsdp_params: %s", !t || !out ?
                       "NULL argument" : "the trainer does not run FSDP");
    fsdp *f = t->sync.self;
    for (int i = 0; i < f->n; i++) {
        fsdp_unit *u = &f->u[i];
        DT_CHECK(unshard(f, i));
        memcpy(out + u->unit.offset, u->params, u->unit.count * sizeof(float));
        reshard(f, i);
    }
    return DT_OK;
}
