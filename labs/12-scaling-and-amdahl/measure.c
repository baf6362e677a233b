/* measure.c - lab 12, task (b): instrument the training step, and combine
 * the ranks' times into the job's (chapter 12, sections 2, 7 and 10). */
#include "scaling.h"

#include <math.h>
#include <stdlib.h>

dt_result lab_measure_step(dt_comm *comm, const lab_workload *w, int step, lab_step_time *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): the step ran its three parts once each, in
     * order, and *out holds the time of each part and of the step, as the
     * clock read between them (section 2, rule 3). Stuck?
     * chapters/hints/12.md, (b1). */
    (void)comm, (void)w, (void)step, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_measure_job(dt_comm *comm, const lab_workload *w, int steps, lab_job_time *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (scaling.h): every rank holds the same figures of the
     * job, measured by section 2's rules (the slowest rank, the warm-up
     * left out, the parts apart). Stuck? chapters/hints/12.md, (b2). */
    (void)comm, (void)w, (void)steps, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
