/* common.c - lab 04's given code: the data, the worker's model and
 * gradient, the records the tests read, and the server's set-up and
 * teardown (the launchers are in launch.c). Nothing to write here. */
#include "async.h"

#include <string.h>

static const size_t lab_widths[3] = {LAB_IN, LAB_HIDDEN, LAB_CLASSES};

size_t lab_num_params(void)
{
    return LAB_IN * LAB_HIDDEN + LAB_HIDDEN + LAB_HIDDEN * LAB_CLASSES + LAB_CLASSES;
}

lab_ps_config lab_ps_defaults(const dt_dataset *train)
{
    lab_ps_config c;
    memset(&c, 0, sizeof c);
    c.servers = 1;
    c.updates = 300;
    c.sync = 0;
    c.bound = -1;
    c.batch = 16;
    c.lr = 0.1f;
    c.compute_s = 0;
    c.slow_worker = -1;
    c.slow_compute_s = 0;
    c.seed = 1;
    c.train = train;
    return c;
}

dt_result lab_load_digits(dt_dataset *train, dt_dataset *test)
{
    dt_dataset all;
    DT_CHECK(dt_data_load_digits(&all, NULL));
    dt_result r = dt_data_split(&all, 0.2, 7, train, test);
    dt_dataset_free(&all);
    return r;
}

/* ---------------------------------------------------------------- the trainer */

void lab_trainer_free(lab_trainer *t)
{
    if (!t)
        return;
    dt_acts_free(t->acts);
    dt_model_free(&t->model);
    dt_mem_free(t->idx);
    dt_mem_free(t->x);
    dt_mem_free(t->y);
    memset(t, 0, sizeof *t);
}

dt_result lab_trainer_init(lab_trainer *t, const dt_dataset *train, int batch, uint64_t seed,
                           double compute_s)
{
    memset(t, 0, sizeof *t);
    if (!train || train->features != LAB_IN || train->classes != LAB_CLASSES || train->n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab 04: the training set must be the digits "
                       "(%d features, %d classes)", LAB_IN, LAB_CLASSES);
    if (batch < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab 04: batch %d (at least 1)", batch);
    t->train = train;
    t->batch = batch;
    t->seed = seed;
    t->compute_s = compute_s > 0 ? compute_s : 0;
    dt_result r = dt_mlp_create(&t->model, lab_widths, 3, seed);
    if (r == DT_OK)
        r = dt_acts_create(&t->acts, &t->model, 0, t->model.num_layers, (size_t)batch, 1);
    if (r == DT_OK) {
        t->idx = dt_mem_alloc(DT_MEM_OTHER, (size_t)batch * sizeof *t->idx);
        t->x = dt_mem_alloc(DT_MEM_OTHER, (size_t)batch * LAB_IN * sizeof *t->x);
        t->y = dt_mem_alloc(DT_MEM_OTHER, (size_t)batch * sizeof *t->y);
        if (!t->idx || !t->x || !t->y)
            r = dt_fail(DT_ERR_NOMEM, "lab 04: batch buffers of %d samples", batch);
    }
    if (r != DT_OK)
        lab_trainer_free(t);
    return r;
}

dt_result lab_trainer_gradient(lab_trainer *t, int worker, int step, dt_comm *comm,
                               float *loss)
{
    const double t0 = dt_now();
    uint64_t stream = (uint64_t)(uint32_t)worker << 32 | (uint32_t)step;
    for (int k = 0; k < t->batch; k++)
        t->idx[k] = (size_t)(dt_hash64(t->seed, stream, (uint64_t)k) % t->train->n);
    DT_CHECK(dt_data_gather(t->train, t->idx, (size_t)t->batch, t->x, NULL, t->y));
    DT_CHECK(dt_model_zero_grads(&t->model));
    DT_CHECK(dt_model_forward(&t->model, t->acts, t->x, NULL));
    float l = 0;
    DT_CHECK(dt_model_loss(&t->model, t->acts, t->y, &l, NULL));
    DT_CHECK(dt_model_backward(&t->model, t->acts, NULL, NULL, NULL, NULL));
    if (loss)
        *loss = l;
    if (comm && t->compute_s > 0) {
        /* The modeled clock pays compute_s whatever this machine does. The
         * sleep keeps wall time in step with the modeled clock (measured
         * from the first gradient, so that small oversleeps do not add
         * up): the servers then see messages in about the order of their
         * modeled times, as on a real cluster. */
        if (!t->paced) {
            t->paced = 1;
            t->wall0 = t0;
            t->clock0 = dt_clock(comm);
        }
        DT_CHECK(dt_clock_advance(comm, t->compute_s));
        double left = t->wall0 + (dt_clock(comm) - t->clock0) - dt_now();
        if (left > 0)
            dt_sleep(left);
    }
    return DT_OK;
}

dt_result lab_accuracy(const float *params, size_t num_params, const dt_dataset *d,
                       float *accuracy)
{
    if (!params || !d || !accuracy || num_params != lab_num_params())
        return dt_fail(DT_ERR_INVALID_ARG, "lab_accuracy: NULL argument or %zu parameters "
                       "(the lab's MLP has %zu)", num_params, lab_num_params());
    if (d->features != LAB_IN || d->classes != LAB_CLASSES || d->n == 0 || !d->x || !d->y)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_accuracy: not a digits set");
    dt_model m;
    DT_CHECK(dt_mlp_create(&m, lab_widths, 3, 1));
    memcpy(m.params, params, num_params * sizeof *params);
    dt_acts *a = NULL;
    size_t correct = 0;
    float loss = 0;
    /* the whole set as one batch: at most a few hundred rows of 64 */
    dt_result r = dt_acts_create(&a, &m, 0, m.num_layers, d->n, 1);
    if (r == DT_OK)
        r = dt_model_forward(&m, a, d->x, NULL);
    if (r == DT_OK)
        r = dt_model_loss(&m, a, d->y, &loss, &correct);
    if (r == DT_OK)
        *accuracy = (float)correct / (float)d->n;
    dt_acts_free(a);
    dt_model_free(&m);
    return r;
}

/* ---------------------------------------------------------------- server records */

dt_result lab_ps_record(lab_server *s, int tau)
{
    lab_ps_result *res = s->res;
    int k = res->applied[s->server];
    if (k >= s->cfg->updates)
        return dt_fail(DT_ERR_STATE, "server %d: more than %d gradients applied", s->server,
                       s->cfg->updates);
    res->staleness[(size_t)s->server * (size_t)s->cfg->updates + (size_t)k] = tau;
    res->applied[s->server] = k + 1;
    return DT_OK;
}

/* A trace point (server 0 of a one-server run): the version, the clock and
 * the parameters, each time the version has passed the next multiple of
 * trace_every, and once at the end (force). */
static void trace_point(lab_server *s, int force)
{
    lab_ps_result *res = s->res;
    if (!res->trace_every || s->server != 0 || s->cfg->servers != 1)
        return;
    int cap = s->cfg->updates / res->trace_every + 2;
    if (res->trace_len >= cap)
        return;
    if (!force && s->version < res->trace_len * res->trace_every)
        return;
    res->trace_version[res->trace_len] = s->version;
    res->trace_clock[res->trace_len] = dt_clock(s->comm);
    memcpy(res->trace_params + (size_t)res->trace_len * res->num_params, s->params,
           s->count * sizeof *s->params);
    res->trace_len++;
}

dt_result lab_ps_reply(lab_server *s, int w, int stop)
{
    if (w < 0 || w >= s->workers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ps_reply: worker %d of %d", w, s->workers);
    int32_t hdr[LAB_HDR] = {s->version, stop ? 1 : 0, 0, 0};
    int rank = s->cfg->servers + w;
    DT_CHECK(dt_send(hdr, LAB_HDR, DT_I32, rank, s->comm));
    if (stop)
        return DT_OK;
    trace_point(s, 0);
    return dt_send(s->params, s->count, DT_F32, rank, s->comm);
}

/* ---------------------------------------------------------------- the server's given parts */

/* The given part of lab_ps_server: the shard and the state, before the loop. */
dt_result lab_server_setup(lab_server *s, dt_comm *comm, const lab_ps_config *cfg,
                           lab_ps_result *res)
{
    memset(s, 0, sizeof *s);
    s->comm = comm, s->cfg = cfg, s->res = res;
    s->server = dt_comm_rank(comm);
    s->workers = dt_comm_size(comm) - cfg->servers;
    s->open = s->workers;
    DT_CHECK(lab_shard_range(lab_num_params(), cfg->servers, s->server, &s->offset, &s->count));
    dt_model m;
    DT_CHECK(dt_mlp_create(&m, lab_widths, 3, cfg->seed));
    s->params = dt_mem_alloc(DT_MEM_PARAM, s->count * sizeof *s->params);
    s->grad = dt_mem_alloc(DT_MEM_GRAD, s->count * sizeof *s->grad);
    s->sum = dt_mem_alloc(DT_MEM_GRAD, s->count * sizeof *s->sum);
    if (s->params)
        memcpy(s->params, m.params + s->offset, s->count * sizeof *s->params);
    dt_model_free(&m);
    if (!s->params || !s->grad || !s->sum) {
        lab_server_teardown(s, DT_ERR_NOMEM);
        return dt_fail(DT_ERR_NOMEM, "server %d: shard of %zu floats", s->server, s->count);
    }
    return DT_OK;
}

/* The given part after the loop: the final shard goes to res->params. */
void lab_server_teardown(lab_server *s, dt_result loop_result)
{
    if (loop_result == DT_OK && s->params) {
        trace_point(s, 1);
        memcpy(s->res->params + s->offset, s->params, s->count * sizeof *s->params);
    }
    dt_mem_free(s->params);
    dt_mem_free(s->grad);
    dt_mem_free(s->sum);
    s->params = s->grad = s->sum = NULL;
}
