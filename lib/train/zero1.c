/* zero1.c - ZeRO stage 1 (chapter 08): each rank keeps the optimizer state
 * of only its shard of the parameters.
 *
 * With P parameters on K ranks, rank r owns block r of the cut of chapter
 * 02 (dt_block: [r q + min(r, m), +q + [r < m]), q = floor(P/K), m = P mod K),
 * the very block that DDP's allreduce reduces on rank r:
 *
 *   sync     the first half of that allreduce (average), dt_allreduce_scatter:
 *            rank r ends with the mean gradient of its shard (only that is
 *            read)
 *   update   the optimizer on the shard (state: about P/K floats per slot,
 *            not P), then the second half, dt_allreduce_gather, of the
 *            parameters: every rank has every updated parameter again
 *
 * With the ring (an allreduce is a reduce-scatter followed by an allgather)
 * the two halves send what one allreduce sends, 2 (K-1)/K P floats per rank,
 * but each rank does 1/K of the optimizer's work and holds 1/K of its state.
 *
 * The same parameters as DDP, bit for bit: each mean gradient is the
 * allreduce's own (dt_allreduce_scatter adds each element's K gradients in
 * the order dt_allreduce does, whatever the algorithm), and the optimizer is
 * elementwise. A reduce-scatter of equal shards plus an allreduce of the
 * P mod K left over would not be: the ring adds block c's gradients starting
 * at rank c + 1, so an element whose block differs between the two cuts is
 * added in another order, and whether the rounding then differs depends on
 * the gradients' values, i.e. on the BLAS kernels that computed them
 * (tests/lib/test_train_dp.c and tests/tools/check-dttrain.sh check it). */
#include "train_internal.h"

#include <stdlib.h>

typedef struct {
    size_t off, len;  /* this rank's block of the parameters */
    dt_optimizer opt; /* over [off, off + len) */
} zero1;

static dt_result zero1_sync(dt_trainer *t, void *self)
{
    zero1 *z = self;
    float *g = t->model->grads;
    if (!g)
        return dt_fail(DT_ERR_STATE, "ZeRO-1: the sync needs the model's gradient buffer");
    DT_CHECK(dt_allreduce_scatter(g, t->model->num_params, DT_F32, DT_AVG, t->comm));
    return train_scale_micro(t, z->off, z->len);
}

static dt_result zero1_update(dt_trainer *t, void *self)
{
    zero1 *z = self;
    float *p = t->model->params;
    DT_CHECK(dt_optim_step(&z->opt, p, t->model->grads));
    return dt_allreduce_gather(p, t->model->num_params, DT_F32, t->comm);
}

/* The state: the optimizer of this rank's block. */
static dt_result zero1_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    zero1 *z = self;
    (void)t;
    return dt_optim_state(&z->opt, io, "shard");
}

static dt_result zero1_list(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n)
{
    zero1 *z = self;
    (void)t;
    if (max > 0)
        o[0] = &z->opt;
    *n = 1;
    return DT_OK;
}

static void zero1_release(void *self)
{
    zero1 *z = self;
    dt_optim_free(&z->opt);
    free(z);
}

dt_result dt_train_use_zero1(dt_trainer *t)
{
    if (!t || !t->model || !t->comm)
        return dt_fail(DT_ERR_INVALID_ARG, "ZeRO-1: %s", t && t->model ? "needs a communicator"
                                                                         : "no trainer");
    zero1 *z = calloc(1, sizeof *z);
    if (!z)
        return dt_fail(DT_ERR_NOMEM, "ZeRO-1: state");
    dt_block(t->model->num_params, t->ranks, t->rank, &z->off, &z->len);
    dt_result r = dt_optim_init(&z->opt, &t->cfg.optim, z->off, z->len);
    if (r != DT_OK) {
        zero1_release(z);
        return r;
    }
    /* one state for both hooks: the update releases it */
    dt_train_set_hook(&t->sync, (dt_hook){"zero1", zero1_sync, NULL, NULL, z});
    dt_train_set_hook(&t->update, (dt_hook){"zero1", zero1_update, NULL, zero1_release, z});
    return dt_train_set_state(t, &t->update, &(dt_hook_state){zero1_state, zero1_list});
}
