/* straggler.c - lab 14, task 6: a straggler detected from the ranks' step
 * times, and each rank's batch sized to its speed with the gradient
 * weighted to stay the batch's mean (chapter 14, section 9). */
#include "ft.h"

#include <math.h>

dt_result lab_straggler_batches(const double *t, const int *b_prev, int ranks, int B,
                                double threshold, int *b, double *imbalance)
{
    /* BEGIN STUDENT CODE */
    /* What: the seed's imbalance of the step times, and batches in
     * proportion to the ranks' speeds when it is over threshold (ft.h).
     * Postcondition: sum b = B, each b_i >= 1, b_i within one of
     * B speed_i / sum_j speed_j (section 9). */
    (void)t, (void)b_prev, (void)ranks, (void)B, (void)threshold, (void)b, (void)imbalance;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

double lab_straggler_weight(int b_i, int B, int ranks)
{
    /* BEGIN STUDENT CODE */
    /* What: rank i's weight in the step's gradient (ft.h).
     * Postcondition: sum_i w_i g_i is the mean over the B samples when
     * g_i is the mean over rank i's b_i (section 9). */
    (void)b_i, (void)B, (void)ranks;
    return dt_fail(DT_ERR_NOT_IMPLEMENTED, "lab_straggler_weight"), NAN;
    /* END STUDENT CODE */
}
