/* groups.c - lab 13, task (a): the DP, TP and PP groups of a layout, from
 * dt_comm_split (chapter 13, section 1). */
#include "threed.h"

#include <string.h>

dt_result lab_groups_create(lab_groups *g, dt_comm *world, int tp, int pp)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): this rank's tp, pp and dp groups of the
     * layout w = (d P + p) T + t, each from dt_comm_split of world, ranked
     * by t, p and d; sizes and ranks filled. Section 1. */
    (void)g, (void)world, (void)tp, (void)pp;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

void lab_groups_free(lab_groups *g)
{
    if (!g)
        return;
    dt_comm_free(g->tp);
    dt_comm_free(g->pp);
    dt_comm_free(g->dp);
    memset(g, 0, sizeof *g);
}
