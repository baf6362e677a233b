/* ddp.c - lab 03: data parallelism (chapter 03). Your code goes between the
 * fences; the functions outside them are given. Tasks 1 to 5 are those of
 * the chapter's section 9, which names the section that derives each. */
#include "ddp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

static void free_buckets(lab_ddp *d)
{
    if (d->buckets)
        for (int b = 0; b < d->num_buckets; b++)
            (void)dt_wait(d->buckets[b].req); /* NULL is ignored */
    free(d->buckets);
    free(d->bucket_of_layer);
    d->buckets = NULL;
    d->bucket_of_layer = NULL;
    d->num_buckets = 0;
}

void lab_ddp_free(lab_ddp *d)
{
    if (!d)
        return;
    free_buckets(d);
    dt_trainer_free(&d->trainer);
    memset(d, 0, sizeof *d);
}

/* The loop's sync hook: your synchronisation, once per step. */
static dt_result ddp_sync(dt_trainer *t, void *self)
{
    return lab_ddp_sync_grads(self, t->batch->micro_steps);
}

/* The loop's call as each layer's gradients are complete. Only the last
 * micro-batch's are final: before it, the gradients are still adding up
 * (chapter 03, section 8), so in OVERLAP mode only its backward starts the
 * buckets' allreduces. */
static dt_result ddp_layer(dt_trainer *t, void *self, int layer, size_t offset, size_t count)
{
    lab_ddp *d = self;
    (void)offset, (void)count;
    if (d->mode != LAB_DDP_OVERLAP || t->micro + 1 < t->batch->micro_steps)
        return DT_OK;
    return lab_ddp_grad_ready(d, layer);
}

dt_result lab_ddp_init(lab_ddp *d, dt_comm *comm, dt_model *m, lab_ddp_mode mode,
                       size_t bucket_bytes, const dt_optim_config *cfg,
                       const lab_ddp_cost *cost)
{
    if (!d || !comm || !m || !m->params || !m->grads || !cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_init: NULL argument or model without gradients");
    if (mode < LAB_DDP_FLAT || mode > LAB_DDP_OVERLAP)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_init: mode %d", (int)mode);
    memset(d, 0, sizeof *d);
    d->comm = comm;
    d->model = m;
    d->mode = mode;
    if (cost)
        d->cost = *cost;
    dt_trainer_config tc = {0};
    tc.optim = *cfg;
    tc.clock = cost ? DT_CLOCK_MODELED : DT_CLOCK_NONE;
    tc.forward_s = d->cost.forward_s;
    tc.backward_s = d->cost.backward_s;
    dt_result r = dt_trainer_init(&d->trainer, m, comm, &tc);
    if (r == DT_OK)
        dt_train_set_hook(&d->trainer.sync, (dt_hook){"lab_ddp", ddp_sync, ddp_layer, NULL, d});
    if (r == DT_OK)
        r = lab_ddp_broadcast_params(comm, m);
    if (r == DT_OK && mode != LAB_DDP_FLAT) { /* FLAT needs no buckets (task 2 before 3) */
        d->bucket_of_layer = calloc((size_t)m->num_layers, sizeof(int));
        r = d->bucket_of_layer ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_ddp_init: bucket table");
        if (r == DT_OK)
            r = lab_ddp_make_buckets(m, bucket_bytes, &d->buckets, &d->num_buckets,
                                     d->bucket_of_layer);
    }
    if (r != DT_OK)
        lab_ddp_free(d);
    return r;
}

dt_result lab_ddp_step(lab_ddp *d, const float *x, const int32_t *labels, size_t micro_B,
                       int micro_steps, float *loss)
{
    if (!d || !d->model || !x || !labels || micro_B == 0 || micro_steps < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_step: NULL argument, micro_B 0 or "
                       "micro_steps %d", micro_steps);
    dt_batch b = {x, NULL, labels, micro_B, 1, micro_steps};
    DT_CHECK(dt_train_step(&d->trainer, &b));
    if (loss)
        *loss = d->trainer.loss;
    return DT_OK;
}

/* ================================================================ task 1 */

dt_result lab_ddp_broadcast_params(dt_comm *comm, dt_model *m)
{
    /* BEGIN STUDENT CODE */
    if (!comm || !m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_broadcast_params: NULL argument");
    /* In place: rank 0 sends its buffer, the others overwrite theirs. */
    return dt_broadcast(m->params, m->params, m->num_params, DT_F32, 0, comm);
    /* END STUDENT CODE */
}

dt_result lab_ddp_local_batch(size_t n, uint64_t seed, int rank, int world, int epoch,
                              size_t step, size_t B, size_t *idx)
{
    /* BEGIN STUDENT CODE */
    if (!idx || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_local_batch: NULL idx or B = 0");
    dt_sampler s;
    DT_CHECK(dt_sampler_init(&s, n, world, rank, 1, 1, seed));
    if ((step + 1) * B > s.num_samples)
        return dt_fail(DT_ERR_INVALID_ARG,
                       "lab_ddp_local_batch: step %zu of batch %zu needs %zu samples, the shard "
                       "has %zu", step, B, (step + 1) * B, s.num_samples);
    size_t *shard = malloc((s.num_samples ? s.num_samples : 1) * sizeof *shard);
    if (!shard)
        return dt_fail(DT_ERR_NOMEM, "lab_ddp_local_batch: %zu indices", s.num_samples);
    dt_result r = dt_sampler_indices(&s, (uint64_t)epoch, shard);
    if (r == DT_OK)
        memcpy(idx, shard + step * B, B * sizeof *idx);
    free(shard);
    return r;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_ddp_allreduce_flat(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    dt_model *m = d->model;
    /* g = (1/K) sum_k g_k: one sum over the whole buffer, then the scale. */
    DT_CHECK(dt_allreduce(m->grads, m->grads, m->num_params, DT_F32, DT_SUM, d->comm));
    return dt_vec_scale(m->grads, scale, m->num_params);
    /* END STUDENT CODE */
}

dt_result lab_ddp_sync_grads(lab_ddp *d, int micro_steps)
{
    /* BEGIN STUDENT CODE */
    if (!d || micro_steps < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_sync_grads: NULL or micro_steps %d",
                       micro_steps);
    /* Each rank holds the sum of micro_steps micro-batch means; summed over
     * K ranks as well, the global mean needs 1 / (K m). */
    float scale = 1.0f / ((float)dt_comm_size(d->comm) * (float)micro_steps);
    switch (d->mode) {
    case LAB_DDP_FLAT: return lab_ddp_allreduce_flat(d, scale);
    case LAB_DDP_BUCKETS: return lab_ddp_allreduce_buckets(d, scale);
    case LAB_DDP_OVERLAP: return lab_ddp_wait_buckets(d, scale);
    }
    return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_sync_grads: mode %d", (int)d->mode);
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_ddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_bucket **out,
                               int *num, int *bucket_of_layer)
{
    /* BEGIN STUDENT CODE */
    if (!m || !out || !num || !bucket_of_layer || m->num_layers < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_make_buckets: NULL argument or empty model");
    if (bucket_bytes == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_make_buckets: bucket_bytes 0");
    lab_bucket *b = calloc((size_t)m->num_layers, sizeof *b); /* at most one per layer */
    if (!b)
        return dt_fail(DT_ERR_NOMEM, "lab_ddp_make_buckets: %d buckets", m->num_layers);
    int n = 0;
    size_t bytes = 0;
    for (int i = m->num_layers - 1; i >= 0; i--) {
        const dt_layer *l = &m->layers[i];
        if (bytes == 0) { /* open a bucket that ends after layer i */
            b[n].last_layer = i + 1;
        }
        /* layers are laid out in order, so the bucket grows downwards */
        b[n].first_layer = i;
        b[n].offset = l->param_offset;
        b[n].count += l->param_count;
        b[n].pending++;
        bucket_of_layer[i] = n;
        bytes += l->param_count * sizeof(float);
        if (bytes >= bucket_bytes || i == 0) {
            n++;
            bytes = 0;
        }
    }
    *out = b;
    *num = n;
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_ddp_allreduce_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    float *g = d->model->grads;
    for (int i = 0; i < d->num_buckets; i++) {
        const lab_bucket *b = &d->buckets[i];
        DT_CHECK(dt_allreduce(g + b->offset, g + b->offset, b->count, DT_F32, DT_SUM, d->comm));
    }
    return dt_vec_scale(g, scale, d->model->num_params);
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_ddp_grad_ready(lab_ddp *d, int layer)
{
    /* BEGIN STUDENT CODE */
    if (!d || layer < 0 || layer >= d->model->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_grad_ready: layer %d", layer);
    lab_bucket *b = &d->buckets[d->bucket_of_layer[layer]];
    if (b->pending <= 0 || b->req)
        return dt_fail(DT_ERR_STATE, "lab_ddp_grad_ready: layer %d's bucket already started",
                       layer);
    if (--b->pending > 0)
        return DT_OK;
    /* The whole bucket is ready: reduce it while the backward goes on. */
    float *g = d->model->grads + b->offset;
    return dt_iallreduce(g, g, b->count, DT_F32, DT_SUM, d->comm, &b->req);
    /* END STUDENT CODE */
}

dt_result lab_ddp_wait_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    dt_result first = DT_OK;
    for (int i = 0; i < d->num_buckets; i++) {
        lab_bucket *b = &d->buckets[i];
        if (!b->req && first == DT_OK)
            first = dt_fail(DT_ERR_STATE, "lab_ddp_wait_buckets: bucket %d was never started", i);
        dt_result r = dt_wait(b->req); /* NULL: DT_OK */
        b->req = NULL;
        b->pending = b->last_layer - b->first_layer;
        if (first == DT_OK)
            first = r;
    }
    DT_CHECK(first);
    return dt_vec_scale(d->model->grads, scale, d->model->num_params);
    /* END STUDENT CODE */
}

/* ================================================================ predict, then measure */

/* BEGIN STUDENT CODE */
/* Section 5: a ring allreduce of n bytes on K ranks, 2 (K-1) (alpha + n / (K beta)). */
static double ring_time(const dt_net *link, double n, int K)
{
    if (K == 1)
        return 0;
    return 2.0 * (K - 1) * (link->alpha + (link->beta == INFINITY ? 0 : n / (K * link->beta)));
}
/* END STUDENT CODE */

dt_result lab_ddp_predict_step(const dt_model *m, lab_ddp_mode mode, int K, size_t bucket_bytes,
                               const lab_ddp_cost *cost, const dt_net *link, double *step_s)
{
    /* BEGIN STUDENT CODE */
    if (!m || !cost || !link || !step_s || K < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_predict_step: NULL argument or K = %d", K);
    if (mode < LAB_DDP_FLAT || mode > LAB_DDP_OVERLAP)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_predict_step: mode %d", (int)mode);
    if (mode != LAB_DDP_FLAT && bucket_bytes == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_predict_step: bucket_bytes 0");
    double t_bwd = 0;
    for (int i = 0; i < m->num_layers; i++)
        t_bwd += cost->backward_s ? cost->backward_s[i] : 0;
    if (mode == LAB_DDP_FLAT) { /* section 5: one ring over the whole gradient */
        *step_s = cost->forward_s + t_bwd + ring_time(link, 4.0 * (double)m->num_params, K);
        return DT_OK;
    }
    lab_bucket *b = NULL;
    int nb = 0;
    int *of = malloc((size_t)m->num_layers * sizeof *of);
    if (!of)
        return dt_fail(DT_ERR_NOMEM, "lab_ddp_predict_step: %d layers", m->num_layers);
    dt_result r = lab_ddp_make_buckets(m, bucket_bytes, &b, &nb, of);
    free(of);
    DT_CHECK(r);
    /* Section 7: bucket j can start once the backward has produced it (at
     * t_bj from the backward's start) and the link is free; serially
     * (BUCKETS) only once the whole backward is done. */
    double produced = 0, link_free = 0;
    int next = m->num_layers - 1; /* the backward's next layer */
    for (int j = 0; j < nb; j++) {
        for (; next >= b[j].first_layer; next--)
            produced += cost->backward_s ? cost->backward_s[next] : 0;
        double start = mode == LAB_DDP_OVERLAP ? produced : t_bwd;
        if (start < link_free)
            start = link_free;
        link_free = start + ring_time(link, 4.0 * (double)b[j].count, K);
    }
    free(b);
    *step_s = cost->forward_s + (link_free > t_bwd ? link_free : t_bwd);
    return DT_OK;
    /* END STUDENT CODE */
}
