/* quorum.c - lab 14, task 5: a step of a replica group that trains on
 * through a failure and takes a healed replica back from a live peer
 * (chapter 14, section 8). */
#include "ft.h"

dt_result lab_quorum_step(lab_replica *q, const int *alive)
{
    /* BEGIN STUDENT CODE */
    int size = 0, source = -1, healed = 0;
    for (int k = 0; k < LAB_REPLICAS; k++) {
        size += alive[k] != 0;
        if (alive[k] && !q->member[k])
            healed = 1;
    }
    /* the state comes from a rank whose replica is up and was in the last quorum */
    for (int j = 0; j < q->ranks && source < 0; j++)
        if (alive[q->ids[j]] && q->member[q->ids[j]])
            source = j;
    if (size == 0 || source < 0)
        return dt_fail(DT_ERR_PEER_DIED, "lab_quorum_step: step %ld: %s", q->trainer.step,
                       size ? "no replica of the last quorum is alive to heal from"
                            : "no replica is alive");
    if (healed) {
        dt_optimizer *o;
        int n;
        long steps[2] = {q->trainer.step, 0};
        DT_CHECK(dt_train_optimizers(&q->trainer, &o, 1, &n));
        steps[1] = o->step;
        DT_CHECK(dt_broadcast(q->model.params, q->model.params, q->model.num_params, DT_F32,
                              source, q->comm));
        if (o->state)
            DT_CHECK(dt_broadcast(o->state, o->state, (size_t)o->slots * o->count, DT_F32,
                                  source, q->comm));
        DT_CHECK(dt_broadcast(steps, steps, sizeof steps, DT_U8, source, q->comm));
        q->trainer.step = steps[0], o->step = steps[1];
    }
    for (int k = 0; k < LAB_REPLICAS; k++)
        q->member[k] = alive[k] != 0;
    q->size = size;
    return lab_replica_train_step(q);
    /* END STUDENT CODE */
}
