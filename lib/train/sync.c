/* sync.c - the gradient synchronisation of one rank and of data
 * parallelism (chapter 03).
 *
 * Before the sync, each rank's model->grads holds the sum over its m
 * micro-batches of each micro-batch's mean gradient; after it, every
 * rank's holds the mean gradient of the global batch of K ranks x m
 * micro-batches:
 *     g = 1/(K m) sum over ranks k, micro-batches j of grad L_kj
 * One rank divides by m; DDP averages over the K ranks with one allreduce
 * of the whole flat buffer (the parameters of every layer are one
 * contiguous buffer, so the whole gradient is one call), then divides by m. */
#include "train_internal.h"

dt_result train_scale_micro(dt_trainer *t, size_t offset, size_t count)
{
    int m = t->batch->micro_steps;
    if (m == 1 || count == 0)
        return DT_OK;
    return dt_vec_scale(t->model->grads + offset, 1.0f / (float)m, count);
}

static dt_result need_grads(const dt_trainer *t, const char *who)
{
    if (!t->model->grads)
        return dt_fail(DT_ERR_STATE, "train: the %s sync needs the model's gradient buffer", who);
    return DT_OK;
}

static dt_result local_sync(dt_trainer *t, void *self)
{
    (void)self;
    DT_CHECK(need_grads(t, "local"));
    return train_scale_micro(t, 0, t->model->num_params);
}

dt_hook train_sync_local(void)
{
    return (dt_hook){"local", local_sync, NULL, NULL, NULL};
}

static dt_result allreduce_sync(dt_trainer *t, void *self)
{
    (void)self;
    dt_model *m = t->model;
    DT_CHECK(need_grads(t, "allreduce"));
    /* g = (1/K) sum_k g_k over the whole flat buffer, then the micro-batches' 1/m */
    DT_CHECK(dt_allreduce(m->grads, m->grads, m->num_params, DT_F32, DT_AVG, t->comm));
    return train_scale_micro(t, 0, m->num_params);
}

dt_hook train_sync_allreduce(void)
{
    return (dt_hook){"allreduce", allreduce_sync, NULL, NULL, NULL};
}
