/* zero1.c - ZeRO stage 1 (chapter 08): each rank keeps the optimizer state
 * of only its shard of the parameters.
 *
 * With P parameters on K ranks, rank r owns the shard [r c, (r+1) c),
 * c = floor(P / K):
 *
 *   sync     reduce-scatter (average) of the flat gradient: rank r ends
 *            with the mean gradient of its shard (and only that is read)
 *   update   the optimizer on the shard (state: c floats per slot, not P),
 *            then an allgather of the shards: every rank has every updated
 *            parameter again
 *
 * The reduce-scatter and the allgather together send what one allreduce
 * sends, 2 (K-1)/K P floats per rank (an allreduce is a reduce-scatter
 * followed by an allgather), but each rank does 1/K of the optimizer's
 * work and holds 1/K of its state. The last P - K c parameters (fewer than
 * K) do not fill a shard: a small allreduce averages their gradient and
 * every rank updates them. Each parameter sees the same operations as with
 * the allreduce, so the parameters are the same, bit for bit
 * (tests/tools/check-dttrain.sh and tests/lib/test_train.c check it). */
#include "train_internal.h"

#include <stdlib.h>

typedef struct {
    size_t shard, tail;        /* c, and the P - K c parameters after the shards */
    dt_optimizer opt, tail_opt; /* [r c, +c) and [K c, +tail) */
} zero1;

static dt_result zero1_sync(dt_trainer *t, void *self)
{
    zero1 *z = self;
    float *g = t->model->grads;
    size_t mine = (size_t)t->rank * z->shard, tail = z->shard * (size_t)t->ranks;
    if (!g)
        return dt_fail(DT_ERR_STATE, "ZeRO-1: the sync needs the model's gradient buffer");
    DT_CHECK(dt_reduce_scatter(g, g + mine, z->shard, DT_F32, DT_AVG, t->comm));
    if (z->tail)
        DT_CHECK(dt_allreduce(g + tail, g + tail, z->tail, DT_F32, DT_AVG, t->comm));
    DT_CHECK(train_scale_micro(t, mine, z->shard));
    return train_scale_micro(t, tail, z->tail);
}

static dt_result zero1_update(dt_trainer *t, void *self)
{
    zero1 *z = self;
    float *p = t->model->params, *g = t->model->grads;
    DT_CHECK(dt_optim_step(&z->opt, p, g));
    if (z->tail)
        DT_CHECK(dt_optim_step(&z->tail_opt, p, g));
    return dt_allgather(p + (size_t)t->rank * z->shard, p, z->shard, DT_F32, t->comm);
}

/* The state: this rank's shard, and the tail every rank updates. */
static dt_result zero1_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    zero1 *z = self;
    (void)t;
    DT_CHECK(dt_optim_state(&z->opt, io, "shard"));
    return dt_optim_state(&z->tail_opt, io, "tail");
}

static dt_result zero1_list(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n)
{
    zero1 *z = self;
    (void)t;
    if (max > 0)
        o[0] = &z->opt;
    if (max > 1)
        o[1] = &z->tail_opt;
    *n = 2;
    return DT_OK;
}

static void zero1_release(void *self)
{
    zero1 *z = self;
    dt_optim_free(&z->opt);
    dt_optim_free(&z->tail_opt);
    free(z);
}

dt_result dt_train_use_zero1(dt_trainer *t)
{
    if (!t || !t->model || !t->comm)
        return dt_fail(DT_ERR_INVALID_ARG, "ZeRO-1: %s", t && t->model ? "needs a communicator"
                                                                         : "no trainer");
    size_t P = t->model->num_params, K = (size_t)t->ranks;
    zero1 *z = calloc(1, sizeof *z);
    if (!z)
        return dt_fail(DT_ERR_NOMEM, "ZeRO-1: state");
    z->shard = P / K, z->tail = P - z->shard * K;
    dt_result r = dt_optim_init(&z->opt, &t->cfg.optim, (size_t)t->rank * z->shard, z->shard);
    if (r == DT_OK)
        r = dt_optim_init(&z->tail_opt, &t->cfg.optim, z->shard * K, z->tail);
    if (r != DT_OK) {
        zero1_release(z);
        return r;
    }
    /* one state for both hooks: the update releases it */
    dt_train_set_hook(&t->sync, (dt_hook){"zero1", zero1_sync, NULL, NULL, z});
    dt_train_set_hook(&t->update, (dt_hook){"zero1", zero1_update, NULL, zero1_release, z});
    return dt_train_set_state(t, &t->update, &(dt_hook_state){zero1_state, zero1_list});
}
