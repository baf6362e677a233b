/* run.c - training over a data set (dt_train): each epoch this rank's
 * shard from the distributed sampler, batches gathered and stepped
 * (dt_train_step), reports, and the timing of every step.
 *
 * With K ranks each takes its own batch of every global step: together
 * they are the global batch of K x batch samples that one rank with that
 * batch would take (chapter 03, section 3). */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { EVAL_BATCH = 256 }; /* samples per forward when the test set is evaluated */

dt_train_config dt_train_defaults(void)
{
    dt_train_config c;
    memset(&c, 0, sizeof c);
    c.batch = 32;
    c.micro_steps = 1;
    c.steps = 100;
    c.seed = 1;
    c.report_every = 100;
    return c;
}

/* Does the set fit the model? Rows per sample: seq for GPT, 1 otherwise. */
static dt_result check_fit(const dt_model *m, const dt_dataset *d, const char *what)
{
    if (!d || !d->y || d->n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s set: empty or NULL", what);
    if (m->kind == DT_MODEL_GPT) {
        if (!d->seq || d->seq > m->max_seq || d->classes > m->num_classes)
            return dt_fail(DT_ERR_INVALID_ARG, "%s set: a GPT of context %zu and vocab %zu needs "
                           "sequences (this set: seq %zu, %zu classes)", what, m->max_seq,
                           m->num_classes, d->seq, d->classes);
    } else if (d->seq || d->features != m->in_width || d->classes > m->num_classes) {
        return dt_fail(DT_ERR_INVALID_ARG, "%s set: %zu features, %zu classes; the model takes "
                       "%zu inputs and has %zu outputs", what, d->features, d->classes,
                       m->in_width, m->num_classes);
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- evaluation */

dt_result dt_evaluate(dt_model *m, const dt_dataset *d, size_t batch, float *accuracy,
                      float *loss)
{
    if (!m || !d)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_evaluate: NULL %s", m ? "data set" : "model");
    DT_CHECK(check_fit(m, d, "evaluation"));
    if (batch == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_evaluate: batch 0");
    batch = batch < d->n ? batch : d->n;
    size_t T = d->seq ? d->seq : 1, correct = 0, rows = 0;
    size_t *idx = malloc(batch * sizeof *idx);
    float *x = d->features ? malloc(batch * d->features * sizeof *x) : NULL;
    int32_t *tok = d->seq ? malloc(batch * T * sizeof *tok) : NULL;
    int32_t *y = malloc(batch * T * sizeof *y);
    double loss_sum = 0;
    dt_result r = idx && y && (x || !d->features) && (tok || !d->seq)
                      ? DT_OK : dt_fail(DT_ERR_NOMEM, "dt_evaluate: batch buffers");
    for (size_t i0 = 0; r == DT_OK && i0 < d->n; i0 += batch) {
        size_t B = d->n - i0 < batch ? d->n - i0 : batch, ok = 0;
        dt_acts *a = NULL;
        float l = 0;
        for (size_t k = 0; k < B; k++)
            idx[k] = i0 + k;
        r = dt_data_gather(d, idx, B, x, tok, y);
        if (r == DT_OK)
            r = dt_acts_create(&a, m, 0, m->num_layers, B, T);
        if (r == DT_OK)
            r = dt_model_forward(m, a, x, tok);
        if (r == DT_OK)
            r = dt_model_loss(m, a, y, &l, &ok);
        dt_acts_free(a);
        correct += ok;
        rows += B * T;
        loss_sum += (double)l * (double)(B * T);
    }
    free(idx), free(x), free(tok), free(y);
    DT_CHECK(r);
    if (accuracy)
        *accuracy = (float)correct / (float)rows;
    if (loss)
        *loss = (float)(loss_sum / (double)rows);
    return DT_OK;
}

/* ---------------------------------------------------------------- timing */

/* Per-step records: wall and CPU milliseconds of the step, of each phase. */
enum { REC_STEP, REC_CPU, REC_FORWARD, REC_BACKWARD, REC_SYNC, REC_UPDATE, REC_KINDS };

/* ---------------------------------------------------------------- the run */

typedef struct {
    dt_sampler sampler;
    size_t *order;              /* this rank's shard of the epoch */
    float *x;
    int32_t *tok, *y;
    double *rec[REC_KINDS];     /* steps entries each */
    long per_epoch;             /* steps in an epoch */
} run_state;

static void run_free(run_state *s)
{
    free(s->order), free(s->x), free(s->tok), free(s->y);
    for (int k = 0; k < REC_KINDS; k++)
        free(s->rec[k]);
}

static dt_result check_config(const dt_trainer *t, const dt_dataset *train,
                              const dt_train_config *c)
{
    DT_CHECK(check_fit(t->model, train, "training"));
    if (c->test)
        DT_CHECK(check_fit(t->model, c->test, "test"));
    int m = c->micro_steps > 1 ? c->micro_steps : 1;
    if (c->batch == 0 || c->batch % (size_t)m)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: batch %zu in %d micro-batches", c->batch,
                       m);
    if (c->epochs < 0 || (c->epochs == 0 && c->steps < 1))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: %ld steps, %ld epochs", c->steps,
                       c->epochs);
    if (c->time_budget_s < 0 || (c->time_budget_s > 0 && t->ranks > 1))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: a time budget of %g s %s", c->time_budget_s,
                       c->time_budget_s < 0 ? "" : "on several ranks (they must stop together)");
    if (c->report_every < 0 && c->report_every != DT_TRAIN_EVERY_EPOCH)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: report every %ld steps", c->report_every);
    return DT_OK;
}

static dt_result run_init(run_state *s, const dt_trainer *t, const dt_dataset *d,
                          const dt_train_config *c, long *steps)
{
    size_t T = d->seq ? d->seq : 1, B = c->batch;
    memset(s, 0, sizeof *s);
    DT_CHECK(dt_sampler_init(&s->sampler, d->n, t->ranks, t->rank, 1, 1, c->seed));
    s->per_epoch = (long)(s->sampler.num_samples / B);
    if (s->per_epoch == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: batch %zu, but a rank's shard of the "
                       "%zu samples holds %zu", B, d->n, s->sampler.num_samples);
    *steps = c->epochs > 0 ? c->epochs * s->per_epoch : c->steps;
    s->order = malloc(s->sampler.num_samples * sizeof *s->order);
    s->x = d->features ? malloc(B * d->features * sizeof *s->x) : NULL;
    s->tok = d->seq ? malloc(B * T * sizeof *s->tok) : NULL;
    s->y = malloc(B * T * sizeof *s->y);
    int ok = s->order && s->y && (s->x || !d->features) && (s->tok || !d->seq);
    for (int k = 0; k < REC_KINDS; k++)
        ok = (s->rec[k] = malloc((size_t)*steps * sizeof(double))) && ok;
    if (!ok) {
        run_free(s);
        return dt_fail(DT_ERR_NOMEM, "dt_train: buffers for %ld steps of batch %zu", *steps, B);
    }
    return DT_OK;
}

/* Step `step`'s batch, starting a new epoch's order when one begins. */
static dt_result next_batch(run_state *s, const dt_dataset *d, const dt_train_config *c,
                            long step, dt_batch *b)
{
    if (step % s->per_epoch == 0)
        DT_CHECK(dt_sampler_indices(&s->sampler, (uint64_t)(step / s->per_epoch), s->order));
    const size_t *idx = s->order + (size_t)(step % s->per_epoch) * c->batch;
    DT_CHECK(dt_data_gather(d, idx, c->batch, s->x, s->tok, s->y));
    int m = c->micro_steps > 1 ? c->micro_steps : 1;
    *b = (dt_batch){s->x, s->tok, s->y, c->batch / (size_t)m, d->seq ? d->seq : 1, m};
    return DT_OK;
}

/* A report after `step` steps: the loss since the last one averaged over
 * the ranks (collective), rank 0 evaluates and calls progress. */
static dt_result report(dt_trainer *t, const dt_train_config *c, const run_state *s, long step,
                        long steps, double loss_sum, long n, double seconds, uint64_t bytes,
                        float *acc)
{
    float l = (float)(loss_sum / (double)n);
    if (t->comm)
        DT_CHECK(dt_allreduce(&l, &l, 1, DT_F32, DT_AVG, t->comm));
    *acc = -1;
    if (t->rank != 0)
        return DT_OK;
    if (c->test)
        DT_CHECK(dt_evaluate(t->model, c->test, EVAL_BATCH, acc, NULL));
    if (c->progress) {
        dt_train_progress p = {step, steps, step / s->per_epoch, l, *acc,
                               (double)n * (double)c->batch * t->ranks / seconds,
                               (double)bytes / (double)n};
        c->progress(c->progress_arg, &p);
    }
    return DT_OK;
}

static int report_due(const dt_train_config *c, const run_state *s, long done, long steps)
{
    long every = c->report_every == DT_TRAIN_EVERY_EPOCH ? s->per_epoch : c->report_every;
    return every > 0 && (done % every == 0 || done == steps);
}

static void summarize(const dt_trainer *t, const dt_train_config *c, run_state *s, long steps,
                      const float *recent, dt_train_result *res)
{
    double *med[REC_KINDS] = {&res->step_ms_median, &res->step_cpu_ms_median,
                              &res->forward_ms_median, &res->backward_ms_median,
                              &res->sync_ms_median, &res->update_ms_median};
    for (int k = 0; k < REC_KINDS; k++)
        *med[k] = dt_median(s->rec[k], (size_t)steps);
    res->steps = steps;
    res->samples_per_s = (double)c->batch * t->ranks / (res->step_ms_median / 1e3);
    long k = steps < 10 ? steps : 10;
    double sum = 0;
    for (long i = 0; i < k; i++)
        sum += recent[i];
    res->final_loss = (float)(sum / (double)k);
}

/* Runs the steps; the caller summarizes. *evaluated: the last step's
 * report evaluated the test set already. */
static dt_result run_steps(dt_trainer *t, const dt_dataset *train, const dt_train_config *c,
                           run_state *s, long *steps, float *recent, dt_train_result *res,
                           int *evaluated)
{
    double t_start = dt_now(), m_start = t->comm ? dt_clock(t->comm) : 0, t_mark = t_start;
    double loss_sum = 0;
    uint64_t bytes = 0, bytes_mark = 0;
    long step = 0, mark = 0;
    for (; step < *steps; step++) {
        dt_batch b;
        DT_CHECK(next_batch(s, train, c, step, &b));
        double w0 = dt_now(), c0 = dt_thread_cpu(); /* with one BLAS thread, all of a step */
        DT_CHECK(dt_train_step(t, &b));
        const dt_train_times *tt = &t->times;
        s->rec[REC_STEP][step] = 1e3 * (dt_now() - w0);
        s->rec[REC_CPU][step] = 1e3 * (dt_thread_cpu() - c0);
        s->rec[REC_FORWARD][step] = 1e3 * tt->forward_s;
        s->rec[REC_BACKWARD][step] = 1e3 * tt->backward_s;
        s->rec[REC_SYNC][step] = 1e3 * tt->sync_s;
        s->rec[REC_UPDATE][step] = 1e3 * tt->update_s;
        bytes += tt->bytes_sent;
        loss_sum += t->loss;
        recent[step % 10] = t->loss;
        if (report_due(c, s, step + 1, *steps)) {
            double r0 = dt_now();
            DT_CHECK(report(t, c, s, step + 1, *steps, loss_sum, step + 1 - mark,
                            r0 - t_mark, bytes - bytes_mark, &res->accuracy));
            loss_sum = 0, mark = step + 1, bytes_mark = bytes, t_mark = dt_now();
            res->report_s += t_mark - r0;
        }
        *evaluated = report_due(c, s, step + 1, *steps);
        if (c->time_budget_s > 0 && dt_now() - t_start > c->time_budget_s) {
            step++;
            break;
        }
    }
    *steps = step;
    res->seconds = dt_now() - t_start;
    res->modeled_s = t->comm ? dt_clock(t->comm) - m_start : 0;
    res->bytes_per_step = (double)bytes / (double)step;
    return DT_OK;
}

dt_result dt_train(dt_trainer *t, const dt_dataset *train, const dt_train_config *c,
                   dt_train_result *res)
{
    if (!t || !t->model || !c || !res)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: NULL %s", !t || !t->model ? "trainer" :
                       !c ? "config" : "result");
    DT_CHECK(check_config(t, train, c));
    memset(res, 0, sizeof *res);
    res->accuracy = -1;
    run_state s;
    long steps = 0;
    float recent[10] = {0};
    int evaluated = 0;
    DT_CHECK(run_init(&s, t, train, c, &steps));
    dt_result r = t->comm ? dt_barrier(t->comm) : DT_OK; /* time the training only */
    if (r == DT_OK)
        r = run_steps(t, train, c, &s, &steps, recent, res, &evaluated);
    if (r == DT_OK)
        summarize(t, c, &s, steps, recent, res);
    if (r == DT_OK && c->test && t->rank == 0 && !evaluated)
        r = dt_evaluate(t->model, c->test, EVAL_BATCH, &res->accuracy, NULL);
    if (r == DT_OK && t->rank != 0)
        res->accuracy = -1;
    run_free(&s);
    return r;
}
