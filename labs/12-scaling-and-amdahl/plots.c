/* plots.c - lab 12, task (d): the speedup and efficiency plots (chapter 12,
 * section 11), drawn with the SVG writer of dt/metrics.h. */
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt/metrics.h"

/* BEGIN STUDENT CODE */
/* Your helpers, if any: e.g. the functions of N that dt_plot_add_function
 * draws (the Amdahl curve, the ideal line). */
/* END STUDENT CODE */

dt_result lab_write_plots(const lab_scaling_data *data, const lab_amdahl *fit,
                          const char *speedup_svg, const char *efficiency_svg)
{
    /* BEGIN STUDENT CODE */
    /* dt_plot_create, dt_plot_set_xscale / _yscale (DT_AXIS_LOG2),
     * dt_plot_add_series (DT_SERIES_POINTS), dt_plot_add_function,
     * dt_plot_write_svg, dt_plot_free: see dt/metrics.h. */
    (void)data, (void)fit, (void)speedup_svg, (void)efficiency_svg;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
