/* run_figures.c - lab 04's program, --figures DIR: the test accuracy of
 * the three server runs against modeled time, and the staleness histogram
 * of the asynchronous run (chapter 04, section 11). */
#include "run.h"

#include "dt/metrics.h"

#include <stdio.h>
#include <stdlib.h>

/* Accuracy along a run's trace, as a series of the plot. */
static dt_result add_trace(dt_plot *plot, const char *name, const lab_ps_result *res,
                           const dt_dataset *test)
{
    double x[256], y[256];
    size_t n = 0;
    for (int k = 0; k < res->trace_len && n < 256; k++) {
        if (!(res->trace_clock[k] > 0))
            continue; /* the log axis starts after time 0 */
        float acc = 0;
        DT_CHECK(lab_accuracy(res->trace_params + (size_t)k * res->num_params, res->num_params,
                              test, &acc));
        x[n] = res->trace_clock[k];
        y[n++] = acc;
    }
    if (n == 0)
        return dt_fail(DT_ERR_STATE, "%s: no trace point after time 0", name);
    /* What the chapter reads off the figure: when the run first passed 90%. */
    size_t k90 = 0;
    while (k90 < n && y[k90] < 0.9)
        k90++;
    if (k90 < n)
        printf("%-16s test accuracy first >= 0.90 at %.3f s of modeled time\n", name, x[k90]);
    else
        printf("%-16s test accuracy never >= 0.90 (%.4f at the end, %.3f s)\n", name, y[n - 1],
               x[n - 1]);
    return dt_plot_add_series(plot, name, x, y, n, DT_SERIES_POINTS_AND_LINE);
}

dt_result figures(const options *o, const lab_ps_result *runs, const char **names,
                         int nruns, const dt_dataset *test)
{
    char path[1024], title[160];
    dt_plot *plot = NULL;
    if (o->slow_ms > 0)
        snprintf(title, sizeof title, "Digits MLP, %d workers: %g ms per gradient, %g ms on worker 0",
                 o->workers, o->compute_ms, o->slow_ms);
    else
        snprintf(title, sizeof title, "Digits MLP, %d workers: %g ms per gradient", o->workers,
                 o->compute_ms);
    DT_CHECK(dt_plot_create(&plot, title, "modeled time (s, log scale)", "test accuracy"));
    dt_result r = dt_plot_set_xscale(plot, DT_AXIS_LOG10);
    for (int i = 0; i < nruns && r == DT_OK; i++)
        r = add_trace(plot, names[i], &runs[i], test);
    snprintf(path, sizeof path, "%s/04-accuracy-time.svg", o->figures);
    if (r == DT_OK)
        r = dt_plot_write_svg(plot, path);
    dt_plot_free(plot);
    if (r != DT_OK)
        return r;
    printf("wrote %s\n", path);

    /* staleness histogram of the asynchronous run (runs[1]) */
    const lab_ps_result *a = &runs[1];
    int mx = 0;
    for (int k = 0; k < a->applied[0]; k++)
        if (a->staleness[k] > mx)
            mx = a->staleness[k];
    double *x = calloc((size_t)mx + 1, sizeof *x), *y = calloc((size_t)mx + 1, sizeof *y);
    if (!x || !y) {
        free(x), free(y);
        return dt_fail(DT_ERR_NOMEM, "histogram");
    }
    for (int t = 0; t <= mx; t++)
        x[t] = t;
    for (int k = 0; k < a->applied[0]; k++)
        y[a->staleness[k]] += 1;
    snprintf(title, sizeof title, "Staleness of the %d gradients of the asynchronous run",
             a->applied[0]);
    r = dt_plot_create(&plot, title, "staleness tau (versions)", "gradients");
    if (r == DT_OK)
        r = dt_plot_add_series(plot, "asynchronous", x, y, (size_t)mx + 1, DT_SERIES_BARS);
    snprintf(path, sizeof path, "%s/04-staleness.svg", o->figures);
    if (r == DT_OK)
        r = dt_plot_write_svg(plot, path);
    dt_plot_free(plot);
    free(x), free(y);
    if (r == DT_OK)
        printf("wrote %s\n", path);
    return r;
}
