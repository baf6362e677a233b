/* rank.c - lab 13, task (b): one rank of a 3D run (chapter 13, section 2):
 * the shard, the trainer and the pipeline, each on its group. */
#include "threed.h"

#include <stdio.h>
#include <string.h>

dt_result lab_rank_init(lab_rank *x, dt_comm *world, const dt_model *whole, int tp, int pp,
                        const dt_schedule *schedule, const dt_trainer_config *tc)
{
    /* BEGIN STUDENT CODE */
    if (!x || !whole)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_rank_init: NULL %s", x ? "model" : "rank");
    memset(x, 0, sizeof *x);
    if ((pp > 1) != (schedule != NULL))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_rank_init: pp = %d %s a schedule", pp,
                       schedule ? "with" : "without");
    dt_result r = lab_groups_create(&x->g, world, tp, pp);
    if (r == DT_OK)
        r = dt_tp_shard(&x->model, whole, x->g.tp);
    /* the same shard of the same stage lives in the other replicas: dp */
    if (r == DT_OK && (r = dt_trainer_init(&x->trainer, &x->model, x->g.dp, tc)) == DT_OK)
        x->have_trainer = 1;
    if (r == DT_OK && pp > 1) {
        dt_pipe_config pc = {x->g.pp, schedule, NULL, NULL};
        r = dt_train_use_pipeline(&x->trainer, &pc);
    }
    if (r != DT_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", dt_last_error());
        lab_rank_free(x);
        return dt_fail(r, "%s", why);
    }
    return DT_OK;
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
