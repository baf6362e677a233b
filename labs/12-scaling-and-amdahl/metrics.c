/* metrics.c - lab 12, task (a): speedup, efficiency and load imbalance
 * (chapter 12, sections 2, 5 and 7). dt/metrics.h has these formulas too;
 * you may call them or write your own. */
#include "scaling.h"

#include <math.h>

dt_result lab_strong_scaling(double t1, double tn, int n, double *speedup, double *efficiency)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): the speedup and efficiency of section 2,
     * or DT_ERR_INVALID_ARG with the outputs untouched. */
    (void)t1, (void)tn, (void)n, (void)speedup, (void)efficiency;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_weak_efficiency(double t1, double tn, double *efficiency)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): the weak-scaling efficiency of section 5
     * (mind which formula: the section says why it is not the strong one). */
    (void)t1, (void)tn, (void)efficiency;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_load_imbalance(const double *t, size_t count, double *imbalance)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): the imbalance of section 7. */
    (void)t, (void)count, (void)imbalance;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
