/* rank.c - lab 13, task (b): one rank of a 3D run (chapter 13, section 2):
 * the shard, the trainer and the pipeline, each on its group. */
#include "threed.h"

#include <stdio.h>
#include <string.h>

dt_result lab_rank_init(lab_rank *x, dt_comm *world, const dt_model *whole, int tp, int pp,
                        const dt_schedule *schedule, const dt_trainer_config *tc)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): x holds the groups, the shard over the
     * tensor-parallel group, a trainer whose sync averages each gradient
     * over the ranks holding the same parameters, and the pipeline runner
     * when pp > 1. Section 2. */
    (void)x, (void)world, (void)whole, (void)tp, (void)pp, (void)schedule, (void)tc;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

void lab_rank_free(lab_rank *x)
{
    if (!x)
        return;
    if (x->have_trainer)
        dt_trainer_free(&x->trainer);
    dt_model_free(&x->model);
    lab_groups_free(&x->g);
    memset(x, 0, sizeof *x);
}
