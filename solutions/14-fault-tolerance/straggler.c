/* straggler.c - lab 14, task 6: a straggler detected from the ranks' step
 * times, and each rank's batch sized to its speed with the gradient
 * weighted to stay the batch's mean (chapter 14, section 9). */
#include "ft.h"

#include <math.h>

dt_result lab_straggler_batches(const double *t, const int *b_prev, int ranks, int B,
                                double threshold, int *b, double *imbalance)
{
    /* BEGIN STUDENT CODE */
    enum { MAX = 64 };
    double lo = INFINITY, hi = 0, mean = 0, total = 0, share[MAX];
    if (ranks < 1 || ranks > MAX || B < ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_straggler_batches: %d samples over %d ranks",
                       B, ranks);
    for (int i = 0; i < ranks; i++) {
        if (!(t[i] > 0) || b_prev[i] < 1)
            return dt_fail(DT_ERR_INVALID_ARG, "lab_straggler_batches: rank %d: time %g, "
                           "batch %d", i, t[i], b_prev[i]);
        lo = fmin(lo, t[i]), hi = fmax(hi, t[i]), mean += t[i] / ranks;
        total += b_prev[i] / t[i];
    }
    *imbalance = (hi - lo) / mean;
    if (*imbalance <= threshold) {
        for (int i = 0; i < ranks; i++)
            b[i] = b_prev[i];
        return DT_OK;
    }
    /* b_i = B speed_i / sum_j speed_j: the floors, then the largest
       remainders up; a rank rounded to 0 gets 1, from the largest */
    int left = B;
    for (int i = 0; i < ranks; i++) {
        share[i] = B * (b_prev[i] / t[i]) / total;
        b[i] = (int)floor(share[i]);
        share[i] -= b[i], left -= b[i];
    }
    for (; left > 0; left--) {
        int best = 0;
        for (int i = 1; i < ranks; i++)
            if (share[i] > share[best])
                best = i;
        b[best]++, share[best] = -1;
    }
    for (int i = 0; i < ranks; i++)
        while (b[i] < 1) {
            int top = 0;
            for (int k = 1; k < ranks; k++)
                top = b[k] > b[top] ? k : top;
            b[top]--, b[i]++;
        }
    return DT_OK;
    /* END STUDENT CODE */
}

double lab_straggler_weight(int b_i, int B, int ranks)
{
    /* BEGIN STUDENT CODE */
    (void)ranks;
    /* mean over B = sum_i (b_i / B) x (mean over rank i's b_i) */
    return (double)b_i / B;
    /* END STUDENT CODE */
}
