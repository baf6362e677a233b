/* units.c - the model run unit by unit (dt_train_use_units): the forward
 * and backward hooks of ZeRO-2 and -3 and of FSDP (chapters 08, 09).
 *
 * A strategy that shards the parameters never holds the model's flat
 * buffer: a unit's parameters exist in full only between its pre and post
 * hooks, in a buffer of the unit's own. The layer code (lib/nn) finds a
 * parameter at params + view.offset, an offset in the model's flat
 * layout. So each unit runs on a copy of the model's tables (a sub-model)
 * in which the views and layers of that unit are rebased by -unit.offset:
 * with sub.params pointing at the unit's buffer, params + rebased offset
 * is the same parameter, and nothing else changes (the same layer calls,
 * the same sums in the same order as one forward over the whole model).
 *
 *   forward    unit u's input is unit u-1's output (the batch for u = 0)
 *   backward   unit u's output gradient is the input gradient unit u+1
 *              wrote (the loss's for the last unit); two buffers take
 *              turns, one written while the other is read */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    dt_unit *units;
    int n;
    dt_unit_hooks h;
    dt_model *sub;      /* per unit: the model's tables, that unit rebased */
    dt_acts **acts;     /* per unit, for the batch shape B x T */
    size_t B, T;
    float *dx[2];       /* gradients between units (tag ACT) */
    int acts_micro;     /* the micro-batch the activations hold, -1: none */
    dt_trainer *t;      /* for the layer hook */
    int unit;           /* the unit whose backward runs */
} units_run;

dt_result dt_unit_of(const dt_model *m, int first, int last, dt_unit *out)
{
    if (!m || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_unit_of: NULL %s", m ? "result" : "model");
    if (first < 0 || last > m->num_layers || first >= last)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_unit_of: layers [%d, %d) of a %d-layer model",
                       first, last, m->num_layers);
    out->first = first, out->last = last;
    out->offset = m->layers[first].param_offset;
    out->count = 0;
    for (int i = first; i < last; i++)
        out->count += m->layers[i].param_count;
    return DT_OK;
}

/* ---------------------------------------------------------------- sub-models */

/* s := m's tables with unit u's offsets rebased to its own buffer. The
 * other layers' entries are left as they are: a stage of unit u's layers
 * never reads them. */
static dt_result sub_model(dt_model *s, const dt_model *m, const dt_unit *u)
{
    *s = *m;
    s->layers = malloc((size_t)m->num_layers * sizeof *s->layers);
    s->views = malloc((size_t)m->num_views * sizeof *s->views);
    if (!s->layers || !s->views) {
        free(s->layers), free(s->views);
        s->layers = NULL, s->views = NULL;
        return dt_fail(DT_ERR_NOMEM, "units: the tables of a sub-model");
    }
    memcpy(s->layers, m->layers, (size_t)m->num_layers * sizeof *s->layers);
    memcpy(s->views, m->views, (size_t)m->num_views * sizeof *s->views);
    for (int i = u->first; i < u->last; i++) {
        dt_layer *l = &s->layers[i];
        l->param_offset -= u->offset;
        for (int k = 0; k < l->num_views; k++)
            s->views[l->first_view + k].offset -= u->offset;
    }
    s->num_params = u->count;
    s->params = NULL, s->grads = NULL; /* set by the hooks, unit by unit */
    return DT_OK;
}

static void free_acts(units_run *s)
{
    for (int u = 0; s->acts && u < s->n; u++) {
        dt_acts_free(s->acts[u]);
        s->acts[u] = NULL;
    }
    dt_mem_free(s->dx[0]), dt_mem_free(s->dx[1]);
    s->dx[0] = s->dx[1] = NULL;
    s->B = s->T = 0;
    s->acts_micro = -1;
}

static void units_release(void *self)
{
    units_run *s = self;
    free_acts(s);
    for (int u = 0; s->sub && u < s->n; u++)
        free(s->sub[u].layers), free(s->sub[u].views);
    free(s->sub);
    free(s->acts);
    free(s->units);
    free(s);
}

/* A new batch shape: every unit's activations are made again (lazily, by
 * the forward, once the unit's parameters are there), and the buffers
 * between units are sized for the widest unit input. */
static dt_result shape(units_run *s, const dt_model *m, size_t B, size_t T)
{
    if (B == s->B && T == s->T && s->dx[0])
        return DT_OK;
    free_acts(s);
    size_t w = 1;
    for (int u = 1; u < s->n; u++)
        if (m->layers[s->units[u].first].in_width > w)
            w = m->layers[s->units[u].first].in_width;
    for (int k = 0; k < 2; k++)
        if (!(s->dx[k] = dt_mem_alloc(DT_MEM_ACT, B * T * w * sizeof(float))))
            return dt_fail(DT_ERR_NOMEM, "units: gradients between units of %zu x %zu rows", B, T);
    s->B = B, s->T = T;
    return DT_OK;
}

/* ---------------------------------------------------------------- forward */

/* Unit u's layers on their input, and the loss after the last unit. */
static dt_result unit_forward(units_run *s, dt_trainer *t, int u, const float *x,
                              const int32_t *tokens, const int32_t *labels, float *loss,
                              size_t *correct)
{
    dt_model *sub = &s->sub[u];
    if (!s->acts[u])
        DT_CHECK(dt_acts_create_path(&s->acts[u], sub, s->units[u].first, s->units[u].last,
                                     s->B, s->T, t->cfg.path));
    DT_CHECK(dt_train_compute_begin(t));
    dt_result r = dt_model_forward(sub, s->acts[u], u ? dt_acts_output(s->acts[u - 1]) : x,
                                   tokens);
    if (r == DT_OK && u == s->n - 1)
        r = dt_model_loss(sub, s->acts[u], labels, loss, correct);
    dt_result end = dt_train_compute_end(
        t, train_forward_cost(t, s->units[u].first, s->units[u].last));
    return r != DT_OK ? r : end;
}

static dt_result units_forward(dt_trainer *t, void *self)
{
    units_run *s = self;
    const dt_batch *b = t->batch;
    dt_model *m = t->model;
    size_t rows = b->B * b->T, first = (size_t)t->micro * rows, correct = 0;
    const float *x = b->x ? b->x + first * m->in_width : NULL;
    const int32_t *tokens = b->tokens ? b->tokens + first : NULL;
    float loss = 0;
    s->acts_micro = -1;
    DT_CHECK(shape(s, m, b->B, b->T));
    for (int u = 0; u < s->n; u++) {
        float *p = NULL;
        DT_CHECK(s->h.pre_forward(t, s->h.self, u, &p));
        if (!p)
            return dt_fail(DT_ERR_STATE, "units (%s): no parameters for unit %d's forward",
                           s->h.name, u);
        s->sub[u].params = p;
        dt_result r = unit_forward(s, t, u, x, tokens, b->labels + first, &loss, &correct);
        s->sub[u].params = NULL; /* the post hook may free them */
        DT_CHECK(r);
        DT_CHECK(s->h.post_forward(t, s->h.self, u));
    }
    t->loss_sum += loss;
    t->correct += correct;
    s->acts_micro = t->micro;
    return DT_OK;
}

/* ---------------------------------------------------------------- backward */

/* As the backward completes a layer of the running unit: its modeled time,
 * then the sync's per-layer hook, with the offset in the model's layout. */
static dt_result unit_layer_done(void *arg, int layer, size_t offset, size_t count)
{
    units_run *s = arg;
    dt_trainer *t = s->t;
    if (t->comm && t->cfg.clock == DT_CLOCK_MODELED && t->cfg.backward_s)
        DT_CHECK(dt_clock_advance(t->comm, t->cfg.backward_s[layer]));
    return dt_train_layer_ready(t, layer, s->units[s->unit].offset + offset, count);
}

static dt_result unit_backward(units_run *s, dt_trainer *t, int u, const float *dout,
                               float *dinp)
{
    dt_model *sub = &s->sub[u];
    s->t = t, s->unit = u;
    DT_CHECK(dt_train_compute_begin(t));
    dt_result r = dt_model_backward_into(sub, s->acts[u], dout, dinp, unit_layer_done, s,
                                         sub->grads, 1);
    dt_result end = dt_train_compute_end(t, 0); /* modeled: charged layer by layer */
    return r != DT_OK ? r : end;
}

static dt_result units_backward(dt_trainer *t, void *self)
{
    units_run *s = self;
    if (s->acts_micro != t->micro)
        return dt_fail(DT_ERR_UNSUPPORTED, "units (%s): the backward of micro-batch %d, but the "
                       "activations hold %s: the units runner keeps one micro-batch in flight "
                       "(F0 B0 F1 B1 ...)", s->h.name, t->micro,
                       s->acts_micro < 0 ? "none" : "another micro-batch");
    s->acts_micro = -1;
    int w = 0; /* the buffer the next input gradient goes to */
    for (int u = s->n - 1; u >= 0; u--) {
        float *p = NULL, *g = NULL;
        DT_CHECK(s->h.pre_backward(t, s->h.self, u, &p, &g));
        if (!p || !g)
            return dt_fail(DT_ERR_STATE, "units (%s): no %s for unit %d's backward", s->h.name,
                           p ? "gradient buffer" : "parameters", u);
        s->sub[u].params = p, s->sub[u].grads = g;
        dt_result r = unit_backward(s, t, u, u == s->n - 1 ? NULL : s->dx[1 - w],
                                    u ? s->dx[w] : NULL);
        s->sub[u].params = NULL, s->sub[u].grads = NULL;
        DT_CHECK(r);
        DT_CHECK(s->h.post_backward(t, s->h.self, u));
        w = 1 - w;
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- set up */

static dt_result check_units(const dt_trainer *t, const dt_unit *units, int n,
                             const dt_unit_hooks *h)
{
    const dt_model *m = t->model;
    if (!units || n < 1 || !h)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units: %s", !h ? "NULL hooks" :
                       "no units");
    if (!h->pre_forward || !h->post_forward || !h->pre_backward || !h->post_backward)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units (%s): every hook must be set",
                       h->name ? h->name : "?");
    for (int u = 0; u < n; u++) {
        dt_unit want;
        int first = u ? units[u - 1].last : 0;
        if (units[u].first != first || dt_unit_of(m, first, units[u].last, &want) != DT_OK ||
            want.offset != units[u].offset || want.count != units[u].count)
            return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units: unit %d is layers [%d, %d) "
                           "at [%zu, +%zu); it must start at layer %d and be dt_unit_of its "
                           "layers", u, units[u].first, units[u].last, units[u].offset,
                           units[u].count, first);
    }
    if (units[n - 1].last != m->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units: the units end at layer %d of %d",
                       units[n - 1].last, m->num_layers);
    if (t->cfg.clock == DT_CLOCK_MODELED && t->cfg.forward_s > 0 && !t->cfg.forward_layer_s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units: a modeled forward needs each "
                       "layer's time (forward_layer_s); forward_s = %g s is the whole model's",
                       t->cfg.forward_s);
    return DT_OK;
}

dt_result dt_train_use_units(dt_trainer *t, const dt_unit *units, int n, const dt_unit_hooks *h)
{
    if (!t || !t->model)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_units: no trainer");
    DT_CHECK(check_units(t, units, n, h));
    units_run *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(DT_ERR_NOMEM, "units: state");
    s->n = n, s->h = *h, s->acts_micro = -1;
    s->units = malloc((size_t)n * sizeof *s->units);
    s->sub = calloc((size_t)n, sizeof *s->sub);
    s->acts = calloc((size_t)n, sizeof *s->acts);
    dt_result r = s->units && s->sub && s->acts ? DT_OK
                                                : dt_fail(DT_ERR_NOMEM, "units: %d units", n);
    if (r == DT_OK)
        memcpy(s->units, units, (size_t)n * sizeof *units);
    for (int u = 0; r == DT_OK && u < n; u++)
        r = sub_model(&s->sub[u], t->model, &units[u]);
    if (r != DT_OK) {
        units_release(s);
        return r;
    }
    /* one state for both hooks: the forward releases it */
    dt_train_set_hook(&t->forward, (dt_hook){"units", units_forward, NULL, units_release, s});
    dt_train_set_hook(&t->backward, (dt_hook){"units", units_backward, NULL, NULL, s});
    /* the runner's buffers are scratch: nothing kept between steps */
    dt_train_set_state(t, &t->forward, &(dt_hook_state){NULL, NULL});
    return DT_OK;
}
