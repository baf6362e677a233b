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
    if (!n || !t || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "fit_amdahl: NULL %s", !n ? "n" : !t ? "t" : "out");
    int distinct = 0;
    for (size_t i = 0; i < count; i++) {
        if (n[i] < 1) return dt_fail(DT_ERR_INVALID_ARG, "fit_amdahl: n[%zu] = %d < 1", i, n[i]);
        if (!(t[i] > 0) || !isfinite(t[i]))
            return dt_fail(DT_ERR_INVALID_ARG, "fit_amdahl: t[%zu] = %g is not a time > 0", i, t[i]);
        if (n[i] != n[0]) distinct = 1;
    }
    if (!distinct) return dt_fail(DT_ERR_INVALID_ARG, "fit_amdahl: needs two distinct N");
    /* Least squares of T = a + b x, x = 1/N:
     *   b = sum (x - mx)(T - mT) / sum (x - mx)^2,  a = mT - b mx. */
    double mx = 0, mt = 0;
    for (size_t i = 0; i < count; i++) mx += 1.0 / n[i], mt += t[i];
    mx /= (double)count, mt /= (double)count;
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < count; i++) {
        double dx = 1.0 / n[i] - mx;
        sxy += dx * (t[i] - mt), sxx += dx * dx;
    }
    double b = sxy / sxx, a = mt - b * mx;
    if (!(a + b > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "fit_amdahl: the fitted T_1 = %g is not > 0", a + b);
    double ss = 0;
    for (size_t i = 0; i < count; i++) {
        double e = t[i] - (a + b / n[i]);
        ss += e * e;
    }
    /* a = T_1 (1 - p), b = T_1 p */
    *out = (lab_amdahl){.p = b / (a + b), .t1 = a + b, .residual = sqrt(ss / (double)count)};
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_predict_speedup(const lab_amdahl *fit, int n, double *speedup)
{
    /* BEGIN STUDENT CODE */
    if (!fit || !speedup)
        return dt_fail(DT_ERR_INVALID_ARG, "predict_speedup: NULL %s", fit ? "speedup" : "fit");
    if (n < 1) return dt_fail(DT_ERR_INVALID_ARG, "predict_speedup: n = %d < 1", n);
    if (!isfinite(fit->p)) return dt_fail(DT_ERR_INVALID_ARG, "predict_speedup: p = %g", fit->p);
    *speedup = 1.0 / ((1.0 - fit->p) + fit->p / n); /* S(N) = 1 / ((1 - p) + p / N) */
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_predict_step_time(const lab_workload *w, const dt_net *link, int n, double *t_n)
{
    /* BEGIN STUDENT CODE */
    if (!w || !link || !t_n)
        return dt_fail(DT_ERR_INVALID_ARG, "predict_step_time: NULL %s",
                       !w ? "w" : !link ? "link" : "t_n");
    if (n < 1) return dt_fail(DT_ERR_INVALID_ARG, "predict_step_time: n = %d < 1", n);
    if (w->wall) return dt_fail(DT_ERR_INVALID_ARG, "predict_step_time: a wall-mode workload");
    /* Every rank does the serial part, then its share; the allreduce ends
     * for all when the slowest share is done and the ring has run
     * (sections 1 and 7): T_N = serial + the largest share + T_ring. */
    double slowest = 0;
    for (int r = 0; r < n; r++) {
        double s = lab_rank_samples(w, r, n) * w->sample_s;
        if (r == w->slow_rank) s *= w->slow_factor;
        slowest = fmax(slowest, s);
    }
    *t_n = w->serial_s + slowest + dt_net_ring_allreduce(link, 4.0 * (double)w->grad_count, n);
    return DT_OK;
    /* END STUDENT CODE */
}
