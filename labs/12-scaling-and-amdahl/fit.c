/* fit.c - lab 12, task (c): fit Amdahl's law to measured step times, and
 * predict the speedup on more ranks (chapter 12, sections 3 and 4).
 * dt/metrics.h has a fit of its own (dt_amdahl_fit_joint); you may call it,
 * or write the least squares yourself. */
#include "scaling.h"

#include <math.h>

dt_result lab_fit_amdahl(const int *n, const double *t, size_t count, lab_amdahl *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): p, T_1 and the residual of the least-squares
     * line of section 4, every point weighted alike (T_1 fitted, not taken
     * from the first point). Stuck? Chapter 12, section 14, hints (c). */
    (void)n, (void)t, (void)count, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_predict_speedup(const lab_amdahl *fit, int n, double *speedup)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): Amdahl's speedup (section 3) with the
     * fitted p. */
    (void)fit, (void)n, (void)speedup;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
