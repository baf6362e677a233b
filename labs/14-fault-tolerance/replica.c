/* replica.c - lab 14's replica group, given (ft.h): replicas of a DDP
 * model whose batches depend on the replica only, and the sync hook that
 * averages the gradients over the step's quorum (chapter 14, section 8). */
#include "ft.h"

#include <stdlib.h>
#include <string.h>

/* g = (1 / size) sum over the members k, in the order of the ranks, of
 * g_k: the same floats added in the same order by every rank, and by any
 * world whose ranks play the same members in the same order. */
static dt_result quorum_sync(dt_trainer *t, void *self)
{
    lab_replica *q = self;
    size_t P = t->model->num_params;
    DT_CHECK(dt_allgather(t->model->grads, q->all, P, DT_F32, q->comm));
    if (q->size < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "quorum_sync: a quorum of %d replicas", q->size);
    for (size_t i = 0; i < P; i++) {
        float sum = 0;
        for (int j = 0; j < q->ranks; j++)
            if (q->member[q->ids[j]])
                sum += q->all[(size_t)j * P + i];
        t->model->grads[i] = sum / (float)q->size;
    }
    return DT_OK;
}

dt_result lab_replica_init(lab_replica *q, dt_comm *comm, const int *ids, uint64_t model_seed)
{
    memset(q, 0, sizeof *q);
    q->comm = comm, q->rank = dt_comm_rank(comm), q->ranks = dt_comm_size(comm);
    if (q->ranks < 1 || q->ranks > LAB_REPLICAS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_replica_init: %d ranks for %d replicas",
                       q->ranks, LAB_REPLICAS);
    for (int j = 0; j < q->ranks; j++) {
        if (ids[j] < 0 || ids[j] >= LAB_REPLICAS)
            return dt_fail(DT_ERR_INVALID_ARG, "lab_replica_init: rank %d plays replica %d "
                           "of %d", j, ids[j], LAB_REPLICAS);
        for (int i = 0; i < j; i++)
            if (ids[i] == ids[j])
                return dt_fail(DT_ERR_INVALID_ARG, "lab_replica_init: ranks %d and %d both "
                               "play replica %d", i, j, ids[j]);
        q->ids[j] = ids[j];
    }
    for (int k = 0; k < LAB_REPLICAS; k++)
        q->member[k] = 1;
    q->size = LAB_REPLICAS;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.05f, 0.9f, 0.01f);
    DT_CHECK(dt_data_blobs(&q->data, LAB_DATA_N, LAB_INPUTS, 3, 2.0f, 8, 0));
    DT_CHECK(dt_model_create_spec(&q->model, LAB_SPEC, model_seed));
    DT_CHECK(dt_trainer_init(&q->trainer, &q->model, comm, &tc));
    q->all = malloc((size_t)q->ranks * q->model.num_params * sizeof(float));
    if (!q->all)
        return dt_fail(DT_ERR_NOMEM, "lab_replica_init: the gathered gradients");
    dt_train_set_hook(&q->trainer.sync, (dt_hook){"quorum", quorum_sync, NULL, NULL, q});
    return dt_train_set_state(&q->trainer, &q->trainer.sync, &(dt_hook_state){NULL, NULL});
}

void lab_replica_free(lab_replica *q)
{
    dt_trainer_free(&q->trainer);
    dt_model_free(&q->model);
    dt_dataset_free(&q->data);
    free(q->all);
}

dt_result lab_replica_train_step(lab_replica *q)
{
    enum { B = LAB_REPLICA_BATCH };
    size_t idx[B];
    float x[B * LAB_INPUTS];
    int32_t y[B];
    long s = q->trainer.step;
    for (size_t i = 0; i < B; i++)
        idx[i] = (size_t)((s * LAB_REPLICAS + q->ids[q->rank]) * B + (long)i) % LAB_DATA_N;
    DT_CHECK(dt_data_gather(&q->data, idx, B, x, NULL, y));
    dt_batch b = {x, NULL, y, B, 1, 1};
    return dt_train_step(&q->trainer, &b);
}
