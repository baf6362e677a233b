/* sync.c - lab 10, tasks 3 to 5: exchanging compressed gradients
 * (chapter 10, section 6). Each function is the trainer's gradient sync
 * for its method; compress.h states what each must leave. And task 8:
 * when top-k's exchange beats the dense one. Your code goes between the
 * fences. */
#include "compress.h"

#include <math.h>
#include <string.h>

/* ================================================================ task 3: top-k */

dt_result lab_sync_topk(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: compress.h, "tasks 3-5" and lab_sync_topk: one
     * allgather of every rank's k pairs; every rank the same mean; this
     * rank's C(v) in c->sent and, with feedback, its residual in
     * c->error (sections 5 and 6). */
    (void)c;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4: int8 */

dt_result lab_sync_int8(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: compress.h, lab_sync_int8: one scale agreed by all
     * ranks, one int8 allreduce whose sums never wrap, every rank the same
     * mean; c->sent and c->error as for every method (sections 4 to 6). */
    (void)c;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 5: 1-bit */

dt_result lab_sync_sign(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: compress.h, lab_sync_sign: the five steps of the
     * 1-bit compressed allreduce, one alltoall and one allgather of
     * block_bytes per rank; error feedback on both compressions
     * (sections 2, 5 and 6). */
    (void)c;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 8: predict, then measure */

dt_result lab_topk_crossover(const dt_net *link, size_t n, int ranks, double *density)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *density is the density at which lab_sync_topk's
     * exchange takes as long on link's modeled clock as the dense ring
     * allreduce, from the formulas of sections 1 and 6 (compress.h,
     * task 8). */
    (void)link, (void)n, (void)ranks, (void)density;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
