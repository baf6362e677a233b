/* fit.c - lab 12, task (c): fit Amdahl's law to measured step times, and
 * predict the speedup on more ranks (chapter 12, sections 3 and 4).
 * dt/metrics.h has a fit of its own (dt_amdahl_fit_joint); you may call it,
 * or write the least squares yourself. */
#include "scaling.h"

#include <math.h>

dt_result lab_fit_amdahl(const int *n, const double *t, size_t count, lab_amdahl *out)
{
    /* BEGIN STUDENT CODE */
    /* Least squares of T on x = 1/N: T = a + b x; then t1 = a + b,
     * p = b / (a + b), and the root mean square residual. */
    (void)n, (void)t, (void)count, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_predict_speedup(const lab_amdahl *fit, int n, double *speedup)
{
    /* BEGIN STUDENT CODE */
    (void)fit, (void)n, (void)speedup;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
