/* fit.c - lab 12, task (c): fit Amdahl's law to measured step times, and
 * predict the speedup on more ranks (chapter 12, sections 3 and 4).
 * dt/metrics.h has a fit of its own (dt_amdahl_fit_joint); you may call it,
 * or write the least squares yourself. Task (e): predict a step's time on
 * a network, then let the tests measure it (sections 1, 7 and 9). */
#include "scaling.h"

#include <math.h>

dt_result lab_fit_amdahl(const int *n, const double *t, size_t count, lab_amdahl *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): p, T_1 and the residual of the least-squares
     * line of section 4, every point weighted alike (T_1 fitted, not taken
     * from the first point). Stuck? chapters/hints/12.md, (c). */
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

dt_result lab_predict_step_time(const lab_workload *w, const dt_net *link, int n, double *t_n)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): *t_n is the T_N lab_measure_job would
     * report for w on n ranks over link, worked out from sections 1, 7
     * and 9 without running a step. Stuck? chapters/hints/12.md, (e). */
    (void)w, (void)link, (void)n, (void)t_n;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
