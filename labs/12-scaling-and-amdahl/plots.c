/* plots.c - lab 12, task (d): the speedup and efficiency plots (chapter 12,
 * section 11), drawn with the SVG writer of dt/metrics.h. */
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "dt/metrics.h"

/* BEGIN STUDENT CODE */
/* Your helpers, if any. */
/* END STUDENT CODE */

dt_result lab_write_plots(const lab_scaling_data *data, const lab_amdahl *fit,
                          const char *speedup_svg, const char *efficiency_svg)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): the two files hold exactly the series the
     * header names, each point where its value goes on its axis (section
     * 10, task (d)). Stuck? chapters/hints/12.md, (d). */
    (void)data, (void)fit, (void)speedup_svg, (void)efficiency_svg;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
