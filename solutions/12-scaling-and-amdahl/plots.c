/* plots.c - lab 12, task (d): the speedup and efficiency plots (chapter 12,
 * section 11), drawn with the SVG writer of dt/metrics.h. */
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt/metrics.h"

/* BEGIN STUDENT CODE */
/* Amdahl's speedup of the fit at x ranks, and its efficiency S / x. */
static double amdahl_curve(double x, void *ctx)
{
    const lab_amdahl *fit = ctx;
    return 1.0 / ((1.0 - fit->p) + fit->p / x);
}

static double amdahl_efficiency(double x, void *ctx)
{
    return amdahl_curve(x, ctx) / x;
}

static double ideal_curve(double x, void *ctx)
{
    (void)ctx;
    return x;
}

static dt_result check_data(const lab_scaling_data *d)
{
    if (d->count < 2 || !d->n || !d->strong)
        return dt_fail(DT_ERR_INVALID_ARG, "write_plots: needs n and strong, count %zu >= 2", d->count);
    if (d->n[0] != 1) return dt_fail(DT_ERR_INVALID_ARG, "write_plots: n[0] = %d, not 1", d->n[0]);
    for (size_t i = 0; i < d->count; i++) {
        if (i > 0 && d->n[i] <= d->n[i - 1])
            return dt_fail(DT_ERR_INVALID_ARG, "write_plots: n[%zu] = %d does not increase", i, d->n[i]);
        if (!(d->strong[i] > 0) || !isfinite(d->strong[i]) ||
            (d->weak && (!(d->weak[i] > 0) || !isfinite(d->weak[i]))))
            return dt_fail(DT_ERR_INVALID_ARG, "write_plots: time %zu is not > 0", i);
    }
    return DT_OK;
}

static dt_result speedup_plot(const lab_scaling_data *d, lab_amdahl *fit, const double *x,
                              double *y, const char *path)
{
    dt_plot *pl;
    char name[64];
    DT_CHECK(dt_plot_create(&pl, "Strong scaling: speedup", "ranks N", "speedup T_1 / T_N"));
    for (size_t i = 0; i < d->count; i++) y[i] = d->strong[0] / d->strong[i];
    double nmax = d->n[d->count - 1];
    snprintf(name, sizeof name, "Amdahl, p = %.3f", fit->p);
    dt_result r = dt_plot_set_xscale(pl, DT_AXIS_LOG2);
    if (r == DT_OK) r = dt_plot_set_yscale(pl, DT_AXIS_LOG2);
    if (r == DT_OK) r = dt_plot_add_function(pl, "ideal", ideal_curve, NULL, 1, nmax, 2);
    if (r == DT_OK) r = dt_plot_add_function(pl, name, amdahl_curve, fit, 1, nmax, 64);
    if (r == DT_OK) r = dt_plot_add_series(pl, "measured", x, y, d->count, DT_SERIES_POINTS);
    if (r == DT_OK) r = dt_plot_write_svg(pl, path);
    dt_plot_free(pl);
    return r;
}

static dt_result efficiency_plot(const lab_scaling_data *d, lab_amdahl *fit, const double *x,
                                 double *y, const char *path)
{
    dt_plot *pl;
    char name[64];
    DT_CHECK(dt_plot_create(&pl, "Efficiency: strong and weak scaling", "ranks N",
                            "efficiency"));
    double nmax = d->n[d->count - 1];
    snprintf(name, sizeof name, "Amdahl, p = %.3f", fit->p);
    dt_result r = dt_plot_set_xscale(pl, DT_AXIS_LOG2);
    if (r == DT_OK) r = dt_plot_add_function(pl, name, amdahl_efficiency, fit, 1, nmax, 64);
    for (size_t i = 0; i < d->count; i++) y[i] = d->strong[0] / (d->n[i] * d->strong[i]);
    if (r == DT_OK) r = dt_plot_add_series(pl, "strong scaling", x, y, d->count, DT_SERIES_POINTS);
    if (d->weak) {
        for (size_t i = 0; i < d->count; i++) y[i] = d->weak[0] / d->weak[i];
        if (r == DT_OK) r = dt_plot_add_series(pl, "weak scaling", x, y, d->count, DT_SERIES_POINTS);
    }
    if (r == DT_OK) r = dt_plot_write_svg(pl, path);
    dt_plot_free(pl);
    return r;
}
/* END STUDENT CODE */

dt_result lab_write_plots(const lab_scaling_data *data, const lab_amdahl *fit,
                          const char *speedup_svg, const char *efficiency_svg)
{
    /* BEGIN STUDENT CODE */
    if (!data || !fit || !speedup_svg || !efficiency_svg)
        return dt_fail(DT_ERR_INVALID_ARG, "write_plots: NULL argument");
    DT_CHECK(check_data(data));
    if (!isfinite(fit->p)) return dt_fail(DT_ERR_INVALID_ARG, "write_plots: p = %g", fit->p);
    lab_amdahl f = *fit;
    double *x = malloc(data->count * sizeof *x), *y = malloc(data->count * sizeof *y);
    dt_result r = x && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "write_plots: %zu points", data->count);
    for (size_t i = 0; r == DT_OK && i < data->count; i++) x[i] = data->n[i];
    if (r == DT_OK) r = speedup_plot(data, &f, x, y, speedup_svg);
    if (r == DT_OK) r = efficiency_plot(data, &f, x, y, efficiency_svg);
    free(x);
    free(y);
    return r;
    /* END STUDENT CODE */
}
