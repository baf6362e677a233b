/* scaling.c - the formulas of scaling: speedup, efficiency, Amdahl,
 * Gustafson, Karp-Flatt, imbalance, communication efficiency, throughput.
 *
 * A formula given an argument outside its domain returns NaN and records
 * why, so that a wrong input reads "nan" in a results table. */
#include "dt/metrics.h"

#include <math.h>

/* Records the reason and returns NaN. */
static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

static int positive(double x) { return isfinite(x) && x > 0; }
static int nonnegative(double x) { return isfinite(x) && x >= 0; }
static int fraction(double p) { return isfinite(p) && p >= 0 && p <= 1; }

double dt_speedup(double t1, double tn)
{
    if (!positive(t1)) return domain_error("T_1", t1);
    if (!positive(tn)) return domain_error("T_N", tn);
    return t1 / tn;
}

double dt_efficiency_strong(double t1, double tn, int n)
{
    if (n < 1) return domain_error("N", n);
    double s = dt_speedup(t1, tn);
    return s / n; /* E = T_1 / (N T_N); NaN passes through */
}

double dt_efficiency_weak(double t1, double tn)
{
    /* Work grows with N, so the ideal T_N equals T_1: E = T_1 / T_N. */
    return dt_speedup(t1, tn);
}

double dt_amdahl_speedup(double p, int n)
{
    if (!fraction(p)) return domain_error("p", p);
    if (n < 1) return domain_error("N", n);
    return 1.0 / ((1.0 - p) + p / n);
}

double dt_gustafson_speedup(double p, int n)
{
    if (!fraction(p)) return domain_error("p", p);
    if (n < 1) return domain_error("N", n);
    return (1.0 - p) + p * n;
}

double dt_karp_flatt(double speedup, int n)
{
    if (!positive(speedup)) return domain_error("speedup", speedup);
    if (n < 2) return domain_error("N (Karp-Flatt needs N > 1)", n);
    double inv_n = 1.0 / n;
    return (1.0 / speedup - inv_n) / (1.0 - inv_n);
}

double dt_comm_efficiency(double t_comp, double t_comm)
{
    if (!nonnegative(t_comp)) return domain_error("T_comp", t_comp);
    if (!nonnegative(t_comm)) return domain_error("T_comm", t_comm);
    if (t_comp + t_comm <= 0) return domain_error("T_comp + T_comm", 0);
    return t_comp / (t_comp + t_comm);
}

double dt_throughput(double items, double seconds)
{
    if (!nonnegative(items)) return domain_error("items", items);
    if (!positive(seconds)) return domain_error("seconds", seconds);
    return items / seconds;
}

dt_result dt_load_imbalance(const double *t, size_t count, double *out)
{
    if (!t || !out) return dt_fail(DT_ERR_INVALID_ARG, "load imbalance: NULL %s", t ? "out" : "times");
    if (count == 0) return dt_fail(DT_ERR_INVALID_ARG, "load imbalance: no times");
    double lo = t[0], hi = t[0], sum = 0;
    for (size_t i = 0; i < count; i++) {
        if (!nonnegative(t[i]))
            return dt_fail(DT_ERR_INVALID_ARG, "load imbalance: t[%zu] = %g is not a time", i, t[i]);
        lo = t[i] < lo ? t[i] : lo;
        hi = t[i] > hi ? t[i] : hi;
        sum += t[i];
    }
    double mean = sum / (double)count;
    if (mean <= 0) return dt_fail(DT_ERR_INVALID_ARG, "load imbalance: every time is 0");
    *out = (hi - lo) / mean; /* (max - min) / avg */
    return DT_OK;
}
