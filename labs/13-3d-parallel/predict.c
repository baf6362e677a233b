/* predict.c - lab 13, task (d): the modeled step time of a small 3D run
 * on a two-level topology (chapter 13, section 9). */
#include "threed.h"

#include <math.h>

dt_result lab_predict_step(const lab_step_work *w, int tp, int pp, int dp,
                           const dt_net_topo *topo, double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (threed.h): the modeled step time of w on the layout,
     * section 9's formula, each collective on its group's link. */
    (void)w, (void)tp, (void)pp, (void)dp, (void)topo, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
