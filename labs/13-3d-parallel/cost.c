/* cost.c - lab 13, task (c): the cost model's core terms for a layout
 * (chapter 13, sections 1, 3 and 5). dt/sim.h's activation formulas
 * (Korthikanti et al. 2022) and ZeRO's bytes per parameter are yours to
 * call; its planner (dt_sim_plan) is what this task writes. */
#include "threed.h"

#include <math.h>

/* Given: the checks every function of this file makes (1: fine). */
static int layout_fine(const char *fn, const dt_sim_model *m, const dt_sim_layout *l)
{
    if (!m || !l)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, m ? "layout" : "model"), 0;
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->ffn < 1 || m->seq < 1 ||
        m->vocab < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a model size below 1", fn), 0;
    if (l->tp < 1 || l->pp < 1 || l->dp < 1 || l->vpp < 1 || l->micro_batch < 1 ||
        l->global_batch % (l->dp * l->micro_batch) || l->global_batch < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: tp %d pp %d dp %d vpp %d, global batch %d in "
                       "micro-batches of %d", fn, l->tp, l->pp, l->dp, l->vpp, l->global_batch,
                       l->micro_batch), 0;
    if (m->layers % (l->pp * l->vpp) || l->sp || l->schedule != DT_SIM_1F1B ||
        l->zero < 0 || l->zero > 3 || (unsigned)l->dtype >= DT_SIM_NUM_DTYPES ||
        (unsigned)l->recompute >= DT_SIM_NUM_RECOMPUTE)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %d layers over pp %d x vpp %d, sp %d, "
                       "schedule %d, ZeRO %d: outside this task", fn, m->layers, l->pp, l->vpp,
                       l->sp, (int)l->schedule, l->zero), 0;
    return 1;
}

double lab_bubble(int p, int v, int m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): the bubble's share of the ideal time with
     * interleaving, section 5. */
    (void)p, (void)v, (void)m;
    return dt_fail(DT_ERR_NOT_IMPLEMENTED, "lab_bubble"), NAN;
    /* END STUDENT CODE */
}

dt_result lab_memory_first_stage(const dt_sim_model *m, const dt_sim_layout *l, lab_memory *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): the first stage's bytes by kind at its peak,
     * section 3; layout_fine() checks the arguments. */
    (void)m, (void)l, (void)out, (void)layout_fine;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_group_bytes_per_step(const dt_sim_model *m, const dt_sim_layout *l,
                                   lab_group_bytes *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): the bytes one rank sends per step in each
     * group, section 1's table. */
    (void)m, (void)l, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
