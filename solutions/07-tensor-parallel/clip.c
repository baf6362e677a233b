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
    if (!tp || !m || !m->grads)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_clip_grad_norm: NULL argument");
    if (!(max_norm > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_clip_grad_norm: max_norm %g (need > 0)",
                       (double)max_norm);
    double split = 0, rep = 0;
    DT_CHECK(dt_vec_sumsq(m->grads + m->num_replicated, m->num_params - m->num_replicated,
                          &split));
    if (tp->rank == 0) /* the replicated tensors: the same on every rank, counted once */
        DT_CHECK(dt_vec_sumsq(m->grads, m->num_replicated, &rep));
    float part = (float)(split + rep), total;
    DT_CHECK(dt_allreduce(&part, &total, 1, DT_F32, DT_SUM, tp->comm));
    float n = sqrtf(total), coef = max_norm / (n + 1e-6f);
    if (coef < 1)
        DT_CHECK(dt_vec_scale(m->grads, coef, m->num_params));
    if (norm)
        *norm = n;
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_sp_allreduce_replicated_grads(lab_tp *tp, lab_tp_model *m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: grads[0, num_replicated) = the sum over the ranks of
     * their partial gradients, the same on every rank. Section 7. */
    if (!tp || !m || !m->grads)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sp_allreduce_replicated_grads: NULL argument");
    return dt_allreduce(m->grads, m->grads, m->num_replicated, DT_F32, DT_SUM, tp->comm);
    /* END STUDENT CODE */
}
