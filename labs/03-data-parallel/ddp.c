/* ddp.c - lab 03: data parallelism (chapter 03). Your code goes between the
 * fences; the functions outside them are given. Tasks 1 to 5 follow the
 * chapter's sections 8.1 to 8.5. */
#include "ddp.h"

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
    dt_optim_free(&d->opt);
    memset(d, 0, sizeof *d);
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
    dt_result r = lab_ddp_broadcast_params(comm, m);
    if (r == DT_OK && mode != LAB_DDP_FLAT) { /* FLAT needs no buckets (task 2 before 3) */
        d->bucket_of_layer = calloc((size_t)m->num_layers, sizeof(int));
        r = d->bucket_of_layer ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_ddp_init: bucket table");
        if (r == DT_OK)
            r = lab_ddp_make_buckets(m, bucket_bytes, &d->buckets, &d->num_buckets,
                                     d->bucket_of_layer);
    }
    if (r == DT_OK)
        r = dt_optim_init(&d->opt, cfg, 0, m->num_params);
    if (r != DT_OK)
        lab_ddp_free(d);
    return r;
}

/* The backward's hook: charges the layer's modeled backward time, then
 * tells the bucket logic (task 4) that its gradients are complete. */
static dt_result ddp_hook(void *arg, int layer, size_t offset, size_t count)
{
    lab_ddp *d = arg;
    (void)offset, (void)count;
    if (d->cost.backward_s)
        DT_CHECK(dt_clock_advance(d->comm, d->cost.backward_s[layer]));
    if (d->launching)
        DT_CHECK(lab_ddp_grad_ready(d, layer));
    return DT_OK;
}

dt_result lab_ddp_forward_backward(lab_ddp *d, const float *x, const int32_t *labels, size_t B,
                                   float *loss, size_t *correct)
{
    if (!d || !d->model || !x || !labels || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_forward_backward: NULL argument or B = 0");
    dt_model *m = d->model;
    dt_acts *a = NULL;
    float l = 0;
    DT_CHECK(dt_acts_create(&a, m, 0, m->num_layers, B, 1));
    dt_result r = dt_model_forward(m, a, x, NULL);
    if (r == DT_OK && d->cost.forward_s > 0)
        r = dt_clock_advance(d->comm, d->cost.forward_s);
    if (r == DT_OK)
        r = dt_model_loss(m, a, labels, &l, correct);
    if (r == DT_OK)
        r = dt_model_backward(m, a, NULL, NULL, ddp_hook, d);
    dt_acts_free(a);
    if (r == DT_OK && loss)
        *loss = l;
    return r;
}

dt_result lab_ddp_sync_grads(lab_ddp *d, float scale)
{
    if (!d)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_sync_grads: NULL");
    switch (d->mode) {
    case LAB_DDP_FLAT: return lab_ddp_allreduce_flat(d, scale);
    case LAB_DDP_BUCKETS: return lab_ddp_allreduce_buckets(d, scale);
    case LAB_DDP_OVERLAP: return lab_ddp_wait_buckets(d, scale);
    }
    return dt_fail(DT_ERR_INVALID_ARG, "lab_ddp_sync_grads: mode %d", (int)d->mode);
}

/* ================================================================ task 1 */

dt_result lab_ddp_broadcast_params(dt_comm *comm, dt_model *m)
{
    /* BEGIN STUDENT CODE */
    /* Check the arguments (NULL comm, model or params: DT_ERR_INVALID_ARG),
     * then ONE dt_broadcast of the whole m->params (m->num_params floats)
     * from rank 0, in place. */
    (void)comm, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_local_batch(size_t n, uint64_t seed, int rank, int world, int epoch,
                              size_t step, size_t B, size_t *idx)
{
    /* BEGIN STUDENT CODE */
    /* dt_sampler_init(&s, n, world, rank, 1, 1, seed) gives this rank's
     * shard size s.num_samples; dt_sampler_indices(&s, epoch, buf) the
     * shard. Copy entries [step*B, (step+1)*B) to idx, after checking that
     * they exist. */
    (void)n, (void)seed, (void)rank, (void)world, (void)epoch, (void)step, (void)B, (void)idx;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_ddp_allreduce_flat(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* One dt_allreduce (DT_SUM, in place) of d->model->grads, all
     * d->model->num_params of them, on d->comm; then scale them
     * (dt_vec_scale). */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_step(lab_ddp *d, const float *x, const int32_t *labels, size_t micro_B,
                       int micro_steps, float *loss)
{
    /* BEGIN STUDENT CODE */
    /* 1. zero the gradients (dt_model_zero_grads);
     * 2. for each micro-batch j: lab_ddp_forward_backward on rows
     *    [j*micro_B, (j+1)*micro_B) of x and labels (set d->launching for
     *    the last one in LAB_DDP_OVERLAP mode, and clear it after);
     * 3. lab_ddp_sync_grads ONCE, with the scale that turns the sum over K
     *    ranks of micro_steps mean gradients into the global mean;
     * 4. dt_optim_step(&d->opt, params, grads). */
    (void)d, (void)x, (void)labels, (void)micro_B, (void)micro_steps, (void)loss;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_ddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_bucket **out,
                               int *num, int *bucket_of_layer)
{
    /* BEGIN STUDENT CODE */
    /* Walk i = num_layers-1 down to 0; layer i owns
     * [m->layers[i].param_offset, + param_count). Layers are laid out in
     * order, so a bucket of consecutive layers is one contiguous range.
     * Close the open bucket once it holds >= bucket_bytes bytes. */
    (void)m, (void)bucket_bytes, (void)out, (void)num, (void)bucket_of_layer;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_allreduce_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* For each bucket in order: dt_allreduce (DT_SUM, in place) of its
     * range of the gradients. Then scale the whole buffer. */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_ddp_grad_ready(lab_ddp *d, int layer)
{
    /* BEGIN STUDENT CODE */
    /* Find the layer's bucket (d->bucket_of_layer), count the layer done;
     * when none of its layers is pending, dt_iallreduce (DT_SUM, in place)
     * its range into b->req. */
    (void)d, (void)layer;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_wait_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* dt_wait every bucket's request (set it back to NULL, restore its
     * pending count), keep the first error, then scale the gradients. */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
