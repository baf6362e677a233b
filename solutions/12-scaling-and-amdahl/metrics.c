/* metrics.c - lab 12, task (a): speedup, efficiency and load imbalance
 * (chapter 12, sections 2, 5 and 7). dt/metrics.h has these formulas too;
 * you may call them or write your own. */
#include "scaling.h"

#include <math.h>

dt_result lab_strong_scaling(double t1, double tn, int n, double *speedup, double *efficiency)
{
    /* BEGIN STUDENT CODE */
    if (!speedup || !efficiency)
        return dt_fail(DT_ERR_INVALID_ARG, "strong_scaling: NULL %s", speedup ? "efficiency" : "speedup");
    if (!(t1 > 0) || !(tn > 0) || !isfinite(t1) || !isfinite(tn))
        return dt_fail(DT_ERR_INVALID_ARG, "strong_scaling: times %g, %g must be > 0", t1, tn);
    if (n < 1) return dt_fail(DT_ERR_INVALID_ARG, "strong_scaling: n = %d < 1", n);
    *speedup = t1 / tn;            /* S = T_1 / T_N */
    *efficiency = t1 / (tn * n);   /* E = S / N */
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_weak_efficiency(double t1, double tn, double *efficiency)
{
    /* BEGIN STUDENT CODE */
    if (!efficiency) return dt_fail(DT_ERR_INVALID_ARG, "weak_efficiency: NULL efficiency");
    if (!(t1 > 0) || !(tn > 0) || !isfinite(t1) || !isfinite(tn))
        return dt_fail(DT_ERR_INVALID_ARG, "weak_efficiency: times %g, %g must be > 0", t1, tn);
    *efficiency = t1 / tn; /* N ranks do N times the work in T_N: ideal T_N = T_1 */
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_load_imbalance(const double *t, size_t count, double *imbalance)
{
    /* BEGIN STUDENT CODE */
    if (!t || !imbalance)
        return dt_fail(DT_ERR_INVALID_ARG, "load_imbalance: NULL %s", t ? "imbalance" : "t");
    if (count < 1) return dt_fail(DT_ERR_INVALID_ARG, "load_imbalance: no times");
    double lo = t[0], hi = t[0], sum = 0;
    for (size_t i = 0; i < count; i++) {
        if (!(t[i] >= 0) || !isfinite(t[i]))
            return dt_fail(DT_ERR_INVALID_ARG, "load_imbalance: t[%zu] = %g", i, t[i]);
        lo = fmin(lo, t[i]), hi = fmax(hi, t[i]), sum += t[i];
    }
    double mean = sum / (double)count;
    if (!(mean > 0)) return dt_fail(DT_ERR_INVALID_ARG, "load_imbalance: the mean time is 0");
    *imbalance = (hi - lo) / mean; /* (max - min) / mean */
    return DT_OK;
    /* END STUDENT CODE */
}
