/* parallel.c - data, tensor and pipeline parallelism composed (chapter
 * 13): the process groups of a layout, and a rank's model and trainer.
 *
 * The order of the layout follows from what each dimension sends and how
 * often: tensor parallelism has collectives inside every layer, in the
 * forward and the backward of every micro-batch (the fastest links:
 * consecutive ranks); a pipeline sends one activation and one gradient
 * per micro-batch and cut (next); data parallelism one allreduce of the
 * gradients per step (outermost, across the slowest links). */
#include "train_internal.h"
#include "dt/tp.h"

#include <stdio.h>
#include <string.h>

void dt_groups_free(dt_groups *g)
{
    if (!g)
        return;
    dt_comm_free(g->tp), dt_comm_free(g->pp), dt_comm_free(g->dp);
    memset(g, 0, sizeof *g);
}

dt_result dt_groups_create(dt_groups *g, dt_comm *world, int tp, int pp)
{
    if (!g || !world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_groups_create: NULL %s", g ? "world" : "groups");
    memset(g, 0, sizeof *g);
    int n = dt_comm_size(world), w = dt_comm_rank(world);
    if (n < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_groups_create: the world is freed");
    if (tp < 1 || pp < 1 || n % (tp * pp))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_groups_create: %d ranks do not hold replicas of "
                       "%d tensor-parallel x %d pipeline ranks (need tp, pp >= 1 and tp x pp "
                       "dividing the world)", n, tp, pp);
    g->T = tp, g->P = pp, g->D = n / (tp * pp);
    int t = w % tp, p = (w / tp) % pp, d = w / (tp * pp);
    /* w = (d P + p) T + t: tp innermost, then pp, dp outermost */
    dt_result r = dt_comm_split(world, d * pp + p, t, &g->tp);
    if (r == DT_OK)
        r = dt_comm_split(world, d * tp + t, p, &g->pp);
    if (r == DT_OK)
        r = dt_comm_split(world, p * tp + t, d, &g->dp);
    if (r != DT_OK) {
        dt_groups_free(g);
        return r;
    }
    g->tp_rank = t, g->pp_rank = p, g->dp_rank = d;
    return DT_OK;
}

void dt_parallel_free(dt_parallel *x)
{
    if (!x)
        return;
    if (x->have_trainer)
        dt_trainer_free(&x->trainer);
    dt_model_free(&x->model);
    dt_groups_free(&x->groups);
    memset(x, 0, sizeof *x);
}

dt_result dt_parallel_init(dt_parallel *x, dt_comm *world, const dt_model *whole, int tp, int pp,
                           const dt_schedule *schedule, const dt_trainer_config *tc)
{
    if (!x || !whole)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_parallel_init: NULL %s", x ? "model" : "rank");
    memset(x, 0, sizeof *x);
    if (pp > 1 && !schedule)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_parallel_init: %d pipeline ranks and no schedule",
                       pp);
    if (pp == 1 && schedule)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_parallel_init: a schedule without a pipeline "
                       "(pp = 1)");
    dt_result r = dt_groups_create(&x->groups, world, tp, pp);
    if (r == DT_OK)
        r = dt_tp_shard(&x->model, whole, x->groups.tp);
    if (r == DT_OK && (r = dt_trainer_init(&x->trainer, &x->model, x->groups.dp, tc)) == DT_OK)
        x->have_trainer = 1;
    if (r == DT_OK && pp > 1) {
        dt_pipe_config pc = {x->groups.pp, schedule, NULL, NULL};
        r = dt_train_use_pipeline(&x->trainer, &pc);
    }
    if (r != DT_OK) {
        char why[512]; /* freeing the communicators may record messages of its own */
        snprintf(why, sizeof why, "%s", dt_last_error());
        dt_parallel_free(x);
        return dt_fail(r, "%s", why);
    }
    return DT_OK;
}
