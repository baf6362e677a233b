/* trainer.c - the training loop (dt_train_step) and its default forward
 * and backward hooks: the model's, on activations kept per micro-batch in
 * flight.
 *
 * The loop owns the order; the hooks own the work. A step zeroes the
 * gradients, runs each micro-batch's forward and backward in the
 * schedule's order, then the sync and the update, timing each phase and
 * counting what this rank sent. */
#include "train_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- activations */

static void acts_release(dt_trainer *t)
{
    for (int i = 0; i < t->num_acts; i++)
        dt_acts_free(t->acts[i]);
    free(t->acts);
    free(t->acts_busy);
    t->acts = NULL, t->acts_busy = NULL, t->num_acts = 0;
}

dt_result dt_train_acts_take(dt_trainer *t, dt_acts **out)
{
    const dt_batch *b = t->batch;
    int free_slot = -1, busy = 0;
    for (int i = 0; i < t->num_acts; i++) {
        busy += t->acts_busy[i] != 0;
        if (!t->acts_busy[i] && free_slot < 0)
            free_slot = i;
    }
    if (b->B != t->acts_B || b->T != t->acts_T) { /* another shape: start over */
        if (busy)
            return dt_fail(DT_ERR_STATE, "train: a batch of %zu x %zu while micro-batches of "
                           "%zu x %zu are in flight", b->B, b->T, t->acts_B, t->acts_T);
        acts_release(t);
        t->acts_B = b->B, t->acts_T = b->T, free_slot = -1;
    }
    if (free_slot < 0) { /* one more micro-batch in flight than ever before */
        dt_acts **a = realloc(t->acts, (size_t)(t->num_acts + 1) * sizeof *a);
        int *bz = a ? realloc(t->acts_busy, (size_t)(t->num_acts + 1) * sizeof *bz) : NULL;
        if (a)
            t->acts = a;
        if (bz)
            t->acts_busy = bz;
        if (!a || !bz)
            return dt_fail(DT_ERR_NOMEM, "train: activations of %d micro-batches",
                           t->num_acts + 1);
        DT_CHECK(dt_acts_create_path(&t->acts[t->num_acts], t->model, 0, t->model->num_layers,
                                     b->B, b->T, t->cfg.path));
        t->acts_busy[t->num_acts] = 0;
        free_slot = t->num_acts++;
    }
    t->acts_busy[free_slot] = t->micro + 1;
    *out = t->acts[free_slot];
    return DT_OK;
}

static int acts_slot(const dt_trainer *t)
{
    for (int i = 0; i < t->num_acts; i++)
        if (t->acts_busy[i] == t->micro + 1)
            return i;
    return -1;
}

dt_acts *dt_train_acts_of(const dt_trainer *t)
{
    int i = acts_slot(t);
    return i < 0 ? NULL : t->acts[i];
}

void dt_train_acts_give(dt_trainer *t)
{
    int i = acts_slot(t);
    if (i >= 0)
        t->acts_busy[i] = 0;
}

/* ---------------------------------------------------------------- compute clock */

dt_result train_compute_begin_on(const dt_trainer *t, dt_comm *comm)
{
    if (comm && t->cfg.clock == DT_CLOCK_MEASURED)
        return dt_compute_begin(comm);
    return DT_OK;
}

dt_result train_compute_end_on(const dt_trainer *t, dt_comm *comm, double modeled_s)
{
    if (comm && t->cfg.clock == DT_CLOCK_MEASURED)
        return dt_compute_end(comm);
    if (comm && t->cfg.clock == DT_CLOCK_MODELED && modeled_s > 0)
        return dt_clock_advance(comm, modeled_s);
    return DT_OK;
}

dt_result dt_train_compute_begin(dt_trainer *t) { return train_compute_begin_on(t, t->comm); }

dt_result dt_train_compute_end(dt_trainer *t, double modeled_s)
{
    return train_compute_end_on(t, t->comm, modeled_s);
}

/* The modeled forward of layers [first, last): their entries of
 * forward_layer_s when given, else forward_s for the whole model. */
double train_forward_cost(const dt_trainer *t, int first, int last)
{
    if (!t->cfg.forward_layer_s)
        return first == 0 && last == t->model->num_layers ? t->cfg.forward_s : 0;
    double s = 0;
    for (int i = first; i < last; i++)
        s += t->cfg.forward_layer_s[i];
    return s;
}

/* ---------------------------------------------------------------- the model's hooks */

/* Micro-batch t->micro's forward and loss. */
static dt_result model_forward(dt_trainer *t, void *self)
{
    (void)self;
    const dt_batch *b = t->batch;
    dt_model *m = t->model;
    size_t rows = b->B * b->T, first = (size_t)t->micro * rows, correct = 0;
    float loss = 0;
    dt_acts *a;
    DT_CHECK(dt_train_acts_take(t, &a));
    DT_CHECK(dt_train_compute_begin(t));
    dt_result r = dt_model_forward(m, a, b->x ? b->x + first * m->in_width : NULL,
                                   b->tokens ? b->tokens + first : NULL);
    if (r == DT_OK)
        r = dt_model_loss(m, a, b->labels + first, &loss, &correct);
    /* close the region anyway */
    dt_result end = dt_train_compute_end(t, train_forward_cost(t, 0, m->num_layers));
    DT_CHECK(r);
    DT_CHECK(end);
    t->loss_sum += loss;
    t->correct += correct;
    return DT_OK;
}

/* As the backward finishes each layer: its modeled time, then the sync. */
static dt_result layer_done(void *arg, int layer, size_t offset, size_t count)
{
    dt_trainer *t = arg;
    if (t->comm && t->cfg.clock == DT_CLOCK_MODELED && t->cfg.backward_s)
        DT_CHECK(dt_clock_advance(t->comm, t->cfg.backward_s[layer]));
    return dt_train_layer_ready(t, layer, offset, count);
}

static dt_result model_backward(dt_trainer *t, void *self)
{
    (void)self;
    dt_acts *a = dt_train_acts_of(t);
    if (!a)
        return dt_fail(DT_ERR_STATE, "train: backward of micro-batch %d before its forward",
                       t->micro);
    DT_CHECK(dt_train_compute_begin(t));
    dt_result r = dt_model_backward(t->model, a, NULL, NULL, layer_done, t);
    dt_train_acts_give(t);
    dt_result end = dt_train_compute_end(t, 0); /* modeled: charged layer by layer above */
    return r != DT_OK ? r : end;
}

dt_result dt_train_layer_ready(dt_trainer *t, int layer, size_t offset, size_t count)
{
    if (!t->sync.layer)
        return DT_OK;
    return t->sync.layer(t, t->sync.self, layer, offset, count);
}

/* ---------------------------------------------------------------- set up */

void dt_train_set_hook(dt_hook *slot, dt_hook h)
{
    if (slot->release)
        slot->release(slot->self);
    *slot = h;
}

dt_result dt_trainer_init(dt_trainer *t, dt_model *m, dt_comm *comm, const dt_trainer_config *c)
{
    if (!t || !m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_trainer_init: NULL %s", t ? "model" : "trainer");
    memset(t, 0, sizeof *t);
    t->model = m, t->comm = comm;
    t->rank = comm ? dt_comm_rank(comm) : 0;
    t->ranks = comm ? dt_comm_size(comm) : 1;
    if (c) {
        t->cfg = *c;
    } else {
        t->cfg.optim = dt_sgd_config(0.1f, 0, 0);
    }
    if (t->cfg.clock < DT_CLOCK_NONE || t->cfg.clock > DT_CLOCK_MODELED)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_trainer_init: clock %d", (int)t->cfg.clock);
    if (t->cfg.clock == DT_CLOCK_MODELED && !(t->cfg.forward_s >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_trainer_init: modeled forward time %g s",
                       t->cfg.forward_s);
    dt_optimizer probe; /* the config is checked now, the state made at the first update */
    DT_CHECK(dt_optim_init(&probe, &t->cfg.optim, 0, 0));
    dt_optim_free(&probe);
    t->forward = (dt_hook){"model", model_forward, NULL, NULL, NULL};
    t->backward = (dt_hook){"model", model_backward, NULL, NULL, NULL};
    t->sync = comm ? train_sync_allreduce() : train_sync_local();
    t->zero_grads = 1;
    return train_update_optimizer(t, &t->update);
}

void dt_trainer_free(dt_trainer *t)
{
    if (!t)
        return;
    dt_hook none = {0};
    dt_train_set_hook(&t->forward, none);
    dt_train_set_hook(&t->backward, none);
    dt_train_set_hook(&t->sync, none);
    dt_train_set_hook(&t->update, none);
    dt_train_set_hook(&t->weight, none);
    acts_release(t);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- the step */

/* What an operation must come after, for its pair (chunk, micro-batch):
 * F first, B after it, W after B. seen[pair] counts what has run. */
static const char *const op_name[] = {"forward", "backward", "weight gradient"};

static dt_result schedule_op_error(int i, const dt_train_op *op, int chunks, int seen)
{
    char chunk[24] = "";
    if (chunks > 1)
        snprintf(chunk, sizeof chunk, " (chunk %d)", op->chunk);
    return dt_fail(DT_ERR_INVALID_ARG, "train: schedule step %d: %s of micro-batch %d%s %s", i,
                   op_name[op->kind], op->micro, chunk,
                   seen > (int)op->kind ? "twice"
                   : seen == 0          ? "before its forward"
                                        : "before its backward");
}

/* The schedule holds, for each chunk and micro-batch, F then B, and W after
 * B for every pair or for none, each once (dt_trainer.schedule). */
static dt_result check_schedule(const dt_trainer *t, int m)
{
    if (!t->schedule)
        return DT_OK;
    int chunks = 1, split = 0;
    for (int i = 0; i < t->schedule_len; i++) {
        const dt_train_op *op = &t->schedule[i];
        if (op->micro < 0 || op->micro >= m || op->chunk < 0 || op->chunk >= t->schedule_len ||
            op->kind < DT_TRAIN_FORWARD || op->kind > DT_TRAIN_WEIGHT)
            return dt_fail(DT_ERR_INVALID_ARG, "train: schedule step %d: micro-batch %d, kind "
                           "%d, chunk %d (of %d micro-batches)", i, op->micro, (int)op->kind,
                           op->chunk, m);
        chunks = op->chunk >= chunks ? op->chunk + 1 : chunks;
        split |= op->kind == DT_TRAIN_WEIGHT;
    }
    int need = (split ? 3 : 2) * chunks * m;
    if (t->schedule_len != need)
        return dt_fail(DT_ERR_INVALID_ARG, "train: a schedule of %d operations for %d "
                       "micro-batches x %d chunk%s (need %d)", t->schedule_len, m, chunks,
                       chunks > 1 ? "s" : "", need);
    if (split && !t->weight.run)
        return dt_fail(DT_ERR_INVALID_ARG, "train: the schedule has weight-gradient (W) "
                       "operations and the trainer no weight hook");
    char *seen = calloc((size_t)(chunks * m), 1);
    if (!seen)
        return dt_fail(DT_ERR_NOMEM, "train: schedule check");
    dt_result r = DT_OK;
    for (int i = 0; r == DT_OK && i < t->schedule_len; i++) {
        const dt_train_op *op = &t->schedule[i];
        char *pair = &seen[op->chunk * m + op->micro];
        if (*pair != (char)op->kind)
            r = schedule_op_error(i, op, chunks, *pair);
        else
            (*pair)++;
    }
    free(seen);
    return r;
}

static dt_result check_batch(const dt_trainer *t, const dt_batch *b)
{
    if (!b || !b->labels || b->B == 0 || b->T == 0 || b->micro_steps < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_step: %s", !b ? "NULL batch" :
                       !b->labels ? "no labels" : "a batch of 0 samples, rows or micro-batches");
    if (t->model->kind == DT_MODEL_GPT ? !b->tokens : !b->x)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_step: the model takes %s: NULL",
                       t->model->kind == DT_MODEL_GPT ? "tokens" : "x");
    return check_schedule(t, b->micro_steps);
}

/* Runs one phase hook, adding its wall time to *s. */
static dt_result timed(dt_trainer *t, const dt_hook *h, double *s)
{
    double t0 = dt_now();
    dt_result r = h->run ? h->run(t, h->self) : DT_OK;
    *s += dt_now() - t0;
    return r;
}

dt_result dt_train_step(dt_trainer *t, const dt_batch *b)
{
    if (!t || !t->model)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_step: no trainer");
    DT_CHECK(check_batch(t, b));
    dt_stats s0, s1;
    if (t->comm)
        DT_CHECK(dt_comm_stats(t->comm, &s0));
    double t0 = dt_now();
    memset(&t->times, 0, sizeof t->times);
    t->batch = b, t->loss_sum = 0, t->correct = 0;
    for (int i = 0; i < t->num_acts; i++) /* a failed step may have left some taken */
        t->acts_busy[i] = 0;
    if (t->zero_grads && t->model->grads)
        DT_CHECK(dt_model_zero_grads(t->model));
    int ops = t->schedule ? t->schedule_len : 2 * b->micro_steps;
    for (int i = 0; i < ops; i++) {
        /* default order: F0 B0 F1 B1 ... */
        dt_train_op op = t->schedule ? t->schedule[i] : (dt_train_op){i / 2, (dt_train_op_kind)(i % 2), 0};
        t->micro = op.micro, t->chunk = op.chunk;
        if (op.kind == DT_TRAIN_FORWARD)
            DT_CHECK(timed(t, &t->forward, &t->times.forward_s));
        else if (op.kind == DT_TRAIN_BACKWARD)
            DT_CHECK(timed(t, &t->backward, &t->times.backward_s));
        else /* the other half of a split backward */
            DT_CHECK(timed(t, &t->weight, &t->times.backward_s));
    }
    DT_CHECK(timed(t, &t->sync, &t->times.sync_s));
    DT_CHECK(timed(t, &t->update, &t->times.update_s));
    t->times.step_s = dt_now() - t0;
    if (t->comm) {
        DT_CHECK(dt_comm_stats(t->comm, &s1));
        t->times.bytes_sent = s1.bytes_sent - s0.bytes_sent;
    }
    t->loss = (float)(t->loss_sum / b->micro_steps);
    t->step++;
    t->batch = NULL;
    return DT_OK;
}
