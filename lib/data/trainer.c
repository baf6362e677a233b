/* trainer.c - the single-rank training loop: sample, forward, loss,
 * backward, update; evaluation on a test set; timing of each step.
 *
 * The chapters' distributed trainers are this loop with communication
 * added: the data-parallel one shards the sampler and reduces gradients
 * between backward and update. */
#include "dt/data.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

dt_train_config dt_train_defaults(void)
{
    dt_train_config c;
    memset(&c, 0, sizeof c);
    c.batch = 32;
    c.steps = 100;
    c.optim = dt_sgd_config(0.1f, 0.9f, 0);
    c.seed = 1;
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

/* Batch buffers of one shape, reused every step. */
typedef struct {
    size_t B, T;
    dt_acts *acts;
    size_t *idx;
    float *x;
    int32_t *tok, *y;
} batch_bufs;

static void bufs_free(batch_bufs *b)
{
    dt_acts_free(b->acts);
    free(b->idx), free(b->x), free(b->tok), free(b->y);
    memset(b, 0, sizeof *b);
}

static dt_result bufs_init(batch_bufs *b, dt_model *m, const dt_dataset *d, size_t B)
{
    memset(b, 0, sizeof *b);
    b->B = B;
    b->T = d->seq ? d->seq : 1;
    DT_CHECK(dt_acts_create_path(&b->acts, m, 0, m->num_layers, B, b->T, DT_NN_FAST));
    b->idx = malloc(B * sizeof *b->idx);
    b->x = d->features ? malloc(B * d->features * sizeof(float)) : NULL;
    b->tok = d->seq ? malloc(B * b->T * sizeof(int32_t)) : NULL;
    b->y = malloc(B * b->T * sizeof(int32_t));
    if (!b->idx || !b->y || (d->features && !b->x) || (d->seq && !b->tok)) {
        bufs_free(b);
        return dt_fail(DT_ERR_NOMEM, "trainer: batch buffers of %zu samples", B);
    }
    return DT_OK;
}

/* Forward and loss of samples idx[0..B) (already in b->idx). */
static dt_result run_batch(dt_model *m, const dt_dataset *d, batch_bufs *b, float *loss,
                           size_t *correct)
{
    DT_CHECK(dt_data_gather(d, b->idx, b->B, b->x, b->tok, b->y));
    DT_CHECK(dt_model_forward(m, b->acts, b->x, b->tok));
    return dt_model_loss(m, b->acts, b->y, loss, correct);
}

dt_result dt_evaluate(dt_model *m, const dt_dataset *d, size_t batch, float *accuracy,
                      float *loss)
{
    if (!m || !d)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_evaluate: NULL %s", m ? "data set" : "model");
    DT_CHECK(check_fit(m, d, "evaluation"));
    if (batch == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_evaluate: batch 0");
    batch = batch < d->n ? batch : d->n;
    batch_bufs full, tail;
    size_t rest = d->n % batch, correct = 0, rows = 0;
    double loss_sum = 0;
    DT_CHECK(bufs_init(&full, m, d, batch));
    dt_result r = rest ? bufs_init(&tail, m, d, rest) : DT_OK;
    for (size_t i0 = 0; r == DT_OK && i0 < d->n; i0 += batch) {
        batch_bufs *b = d->n - i0 >= batch ? &full : &tail;
        for (size_t k = 0; k < b->B; k++)
            b->idx[k] = i0 + k;
        float l;
        size_t ok;
        r = run_batch(m, d, b, &l, &ok);
        correct += ok;
        rows += b->B * b->T;
        loss_sum += (double)l * (double)(b->B * b->T);
    }
    bufs_free(&full);
    if (rest)
        bufs_free(&tail);
    if (r != DT_OK)
        return r;
    if (accuracy)
        *accuracy = (float)correct / (float)rows;
    if (loss)
        *loss = (float)(loss_sum / (double)rows);
    return DT_OK;
}

/* CPU seconds used by the calling thread (with one BLAS thread, all of a step). */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static dt_result check_config(const dt_model *m, const dt_dataset *train,
                              const dt_train_config *c)
{
    if (c->batch == 0 || c->batch > train->n)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: batch %zu for %zu training samples",
                       c->batch, train->n);
    if (c->steps < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: %ld steps", c->steps);
    if (c->fused_sgd && (c->optim.kind != DT_OPTIM_SGD || c->optim.momentum != 0 ||
                         c->optim.weight_decay != 0 || !(c->optim.lr > 0)))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: the fused backward does plain SGD only "
                       "(no momentum, no weight decay, lr > 0)");
    if (!c->fused_sgd && !m->grads)
        return dt_fail(DT_ERR_STATE, "dt_train: the model has no gradient buffer");
    return DT_OK;
}

/* One training step on the batch in b->idx; returns its loss. */
static dt_result train_step(dt_model *m, const dt_dataset *d, batch_bufs *b, dt_optimizer *opt,
                            const dt_train_config *c, float *loss)
{
    DT_CHECK(run_batch(m, d, b, loss, NULL));
    if (c->fused_sgd)
        return dt_model_backward_into(m, b->acts, NULL, NULL, NULL, NULL, m->params, -c->optim.lr);
    DT_CHECK(dt_model_zero_grads(m));
    DT_CHECK(dt_model_backward(m, b->acts, NULL, NULL, NULL, NULL));
    return dt_optim_step(opt, m->params, m->grads);
}

static double median_of(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const dt_train_config *c, long step, int epoch, float loss, float acc,
                   double samples_per_s)
{
    if (!c->progress)
        return;
    dt_train_progress p = {(int)step, epoch, loss, acc, samples_per_s};
    c->progress(c->progress_arg, &p);
}

dt_result dt_train(dt_model *m, const dt_dataset *train, const dt_dataset *test,
                   const dt_train_config *cfg, dt_train_result *res)
{
    if (!m || !cfg || !res)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train: NULL %s", !m ? "model" : !cfg ? "config"
                                                                           : "result");
    DT_CHECK(check_fit(m, train, "training"));
    if (test)
        DT_CHECK(check_fit(m, test, "test"));
    DT_CHECK(check_config(m, train, cfg));
    memset(res, 0, sizeof *res);
    dt_sampler sampler;
    dt_optimizer opt;
    batch_bufs b;
    DT_CHECK(dt_sampler_init(&sampler, train->n, 1, 0, 1, 0, cfg->seed));
    DT_CHECK(dt_optim_init(&opt, &cfg->optim, 0, cfg->fused_sgd ? 0 : m->num_params));
    size_t *order = malloc(sampler.num_samples * sizeof *order);
    double *ms = malloc(2 * (size_t)cfg->steps * sizeof *ms), *cpu_ms = ms + cfg->steps;
    dt_result r = order && ms ? bufs_init(&b, m, train, cfg->batch)
                              : dt_fail(DT_ERR_NOMEM, "dt_train: step buffers");
    size_t per_epoch = train->n / cfg->batch, pos = per_epoch;
    float recent[10] = {0};
    double t_start = dt_now();
    long step = 0;
    int epoch = -1;
    while (r == DT_OK && step < cfg->steps) {
        if (pos == per_epoch) { /* a new epoch: a new order, full batches only */
            r = dt_sampler_indices(&sampler, (uint64_t)++epoch, order);
            pos = 0;
            if (r != DT_OK)
                break;
        }
        memcpy(b.idx, order + pos++ * cfg->batch, cfg->batch * sizeof *order);
        double t0 = dt_now(), c0 = thread_cpu_s();
        float loss;
        r = train_step(m, train, &b, &opt, cfg, &loss);
        ms[step] = 1e3 * (dt_now() - t0);
        cpu_ms[step] = 1e3 * (thread_cpu_s() - c0);
        recent[step % 10] = loss;
        step++;
        if (r == DT_OK && cfg->eval_every && step % cfg->eval_every == 0) {
            float acc = -1;
            if (test)
                r = dt_evaluate(m, test, 256, &acc, NULL);
            report(cfg, step, epoch, loss, acc, (double)cfg->batch / (ms[step - 1] / 1e3));
        }
        if (cfg->time_budget_s > 0 && dt_now() - t_start > cfg->time_budget_s)
            break;
    }
    if (r == DT_OK) {
        res->steps = step;
        res->seconds = dt_now() - t_start;
        res->step_ms_median = median_of(ms, step);
        res->step_cpu_ms_median = median_of(cpu_ms, step);
        res->samples_per_s = (double)cfg->batch / (res->step_ms_median / 1e3);
        long k = step < 10 ? step : 10;
        double sum = 0;
        for (long i = 0; i < k; i++)
            sum += recent[i];
        res->final_loss = (float)(sum / (double)k);
        res->accuracy = -1;
        if (test)
            r = dt_evaluate(m, test, 256, &res->accuracy, NULL);
    }
    if (order && ms)
        bufs_free(&b);
    free(order), free(ms);
    dt_optim_free(&opt);
    return r;
}
