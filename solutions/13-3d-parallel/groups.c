/* groups.c - lab 13, task (a): the DP, TP and PP groups of a layout, from
 * dt_comm_split (chapter 13, section 1). */
#include "threed.h"

#include <string.h>

dt_result lab_groups_create(lab_groups *g, dt_comm *world, int tp, int pp)
{
    /* BEGIN STUDENT CODE */
    if (!g || !world)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_groups_create: NULL %s", g ? "world" : "groups");
    memset(g, 0, sizeof *g);
    int n = dt_comm_size(world), w = dt_comm_rank(world);
    if (tp < 1 || pp < 1 || n % (tp * pp))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_groups_create: tp = %d, pp = %d on %d ranks "
                       "(need tp, pp >= 1 and tp x pp dividing the world)", tp, pp, n);
    /* w = (d P + p) T + t */
    int t = w % tp, p = (w / tp) % pp, d = w / (tp * pp);
    dt_result r = dt_comm_split(world, d * pp + p, t, &g->tp);
    if (r == DT_OK)
        r = dt_comm_split(world, d * tp + t, p, &g->pp);
    if (r == DT_OK)
        r = dt_comm_split(world, p * tp + t, d, &g->dp);
    if (r != DT_OK) {
        lab_groups_free(g);
        return r;
    }
    g->T = tp, g->P = pp, g->D = n / (tp * pp);
    g->tp_rank = t, g->pp_rank = p, g->dp_rank = d;
    return DT_OK;
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
