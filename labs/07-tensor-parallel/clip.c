/* clip.c - lab 07, task 5: gradient-norm clipping when the parameters are
 * sharded (chapter 07, section 9); task 6: the replicated gradients under
 * sequence parallelism (section 7). */
#include "tp.h"

#include <math.h>

dt_result lab_tp_clip_grad_norm(lab_tp *tp, lab_tp_model *m, float max_norm, float *norm)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: every rank holds the norm of the WHOLE model's
     * gradient, computed in the order tp.h states, and its gradients
     * scaled by coef when coef < 1. Section 9: each parameter counted
     * exactly once. */
    (void)tp, (void)m, (void)max_norm, (void)norm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_sp_allreduce_replicated_grads(lab_tp *tp, lab_tp_model *m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: grads[0, num_replicated) = the sum over the ranks of
     * their partial gradients, the same on every rank. Section 7. */
    (void)tp, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
