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
    /* Postcondition (ddp.h): every rank's parameters are rank 0's, bit for
     * bit, after one broadcast (section 2); bad arguments:
     * DT_ERR_INVALID_ARG. Stuck? chapters/hints/03.md, hints (1). */
    (void)comm, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_local_batch(size_t n, uint64_t seed, int rank, int world, int epoch,
                              size_t step, size_t B, size_t *idx)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): idx holds this rank's B samples of global
     * step `step`, so that the K ranks' batches together are the one-rank
     * batch of K B (section 3); a shard too short for the step:
     * DT_ERR_INVALID_ARG, idx untouched. Stuck? chapters/hints/03.md,
     * hints (1). */
    (void)n, (void)seed, (void)rank, (void)world, (void)epoch, (void)step, (void)B, (void)idx;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_ddp_allreduce_flat(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): every rank's gradients are scale times the
     * sum over the ranks, after one allreduce of the whole buffer
     * (sections 2 and 5). Stuck? chapters/hints/03.md, hints (2). */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_sync_grads(lab_ddp *d, int micro_steps)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: every rank's model->grads holds the mean gradient of
     * the global batch, K ranks x micro_steps micro-batches (chapter 03,
     * sections 2 and 8), reduced the way d->mode says (see ddp.h). Stuck?
     * chapters/hints/03.md, hints (2). */
    (void)d, (void)micro_steps;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_ddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_bucket **out,
                               int *num, int *bucket_of_layer)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): the buckets of section 6, in the order the
     * backward completes them, each a contiguous range of the gradients,
     * and every layer's bucket recorded; bucket_bytes 0:
     * DT_ERR_INVALID_ARG. Stuck? chapters/hints/03.md, hints (3). */
    (void)m, (void)bucket_bytes, (void)out, (void)num, (void)bucket_of_layer;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_allreduce_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): as lab_ddp_allreduce_flat's, with one
     * allreduce per bucket, in bucket order (section 6). */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_ddp_grad_ready(lab_ddp *d, int layer)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): when `layer` completes its bucket, that
     * bucket's allreduce is in flight, its request kept in the bucket; the
     * call does not wait for it (section 7). Stuck? chapters/hints/03.md,
     * hints (4). */
    (void)d, (void)layer;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ddp_wait_buckets(lab_ddp *d, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): every bucket's allreduce is complete (each one
     * waited for, even after a failure: the first error is returned), the
     * buckets are ready for the next backward, and the gradients are scaled
     * (section 7). */
    (void)d, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ predict, then measure */

/* BEGIN STUDENT CODE */
/* helpers of your own, if you want them */
/* END STUDENT CODE */

dt_result lab_ddp_predict_step(const dt_model *m, lab_ddp_mode mode, int K, size_t bucket_bytes,
                               const lab_ddp_cost *cost, const dt_net *link, double *step_s)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ddp.h): *step_s = the modeled step that sections 5 to 7
     * predict for this configuration, from the formulas alone (no
     * communicator: nothing runs). */
    (void)m, (void)mode, (void)K, (void)bucket_bytes, (void)cost, (void)link, (void)step_s;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
