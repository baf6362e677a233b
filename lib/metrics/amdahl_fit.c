/* amdahl_fit.c - least-squares fits of Amdahl's law to measured times.
 *
 * The model T_N = T_1 ((1 - p) + p / N) is linear in its unknowns once the
 * right variables are chosen, so both fits are closed-form:
 *  - T_1 known:  T_1 - T_N = p * T_1 (1 - 1/N), a line through the origin
 *                in x = T_1 (1 - 1/N), slope p.
 *  - joint:      T_N = a + b * (1/N), an ordinary line in u = 1/N with
 *                a = T_1 (1 - p) (serial seconds), b = T_1 p (parallel seconds).
 * No iteration, so exact data gives p to rounding error. */
#include "dt/metrics.h"

#include <math.h>

static dt_result check_points(const int *n, const double *t, size_t count, dt_amdahl_fit *out)
{
    if (!n || !t || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: NULL %s", !n ? "rank counts" : !t ? "times" : "out");
    if (count == 0) return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: no measurements");
    for (size_t i = 0; i < count; i++) {
        if (n[i] < 1)
            return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: N[%zu] = %d, must be >= 1", i, n[i]);
        if (!isfinite(t[i]) || t[i] <= 0)
            return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: T[%zu] = %g, must be > 0", i, t[i]);
    }
    return DT_OK;
}

/* The root mean square of the time residuals T_i - T_1 ((1 - p) + p / N_i). */
static double rms_residual(const int *n, const double *t, size_t count, double t1, double p)
{
    double ss = 0;
    for (size_t i = 0; i < count; i++) {
        double r = t[i] - t1 * ((1.0 - p) + p / n[i]);
        ss += r * r;
    }
    return sqrt(ss / (double)count);
}

dt_result dt_amdahl_fit_known_t1(const int *n, const double *t, size_t count, double t1,
                                 dt_amdahl_fit *out)
{
    DT_CHECK(check_points(n, t, count, out));
    if (!isfinite(t1) || t1 <= 0)
        return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: T_1 = %g, must be > 0", t1);
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < count; i++) {
        double x = t1 * (1.0 - 1.0 / n[i]); /* 0 for N = 1: no information on p */
        double y = t1 - t[i];
        sxy += x * y;
        sxx += x * x;
    }
    if (sxx <= 0)
        return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: every N is 1, p cannot be seen");
    double p = sxy / sxx;
    out->p = p;
    out->t1 = t1;
    out->residual = rms_residual(n, t, count, t1, p);
    return DT_OK;
}

dt_result dt_amdahl_fit_joint(const int *n, const double *t, size_t count, dt_amdahl_fit *out)
{
    DT_CHECK(check_points(n, t, count, out));
    /* Centre the data first: the normal equations in centred form are better
     * conditioned than the textbook sums of squares. */
    double mu = 0, mt = 0;
    for (size_t i = 0; i < count; i++) {
        mu += 1.0 / n[i];
        mt += t[i];
    }
    mu /= (double)count;
    mt /= (double)count;
    double suu = 0, sut = 0;
    for (size_t i = 0; i < count; i++) {
        double du = 1.0 / n[i] - mu;
        suu += du * du;
        sut += du * (t[i] - mt);
    }
    if (!(suu > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: needs at least two distinct N");
    double b = sut / suu;    /* parallel seconds, T_1 p */
    double a = mt - b * mu;  /* serial seconds, T_1 (1 - p) */
    double t1 = a + b;
    if (!(t1 > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "Amdahl fit: fitted T_1 = %g is not positive "
                       "(times grow with N?)", t1);
    out->p = b / t1;
    out->t1 = t1;
    out->residual = rms_residual(n, t, count, t1, out->p);
    return DT_OK;
}
