/* measure.c - lab 12, task (b): instrument the training step, and combine
 * the ranks' times into the job's (chapter 12, sections 2, 7 and 10). */
#include "scaling.h"

#include <math.h>
#include <stdlib.h>

dt_result lab_measure_step(dt_comm *comm, const lab_workload *w, int step, lab_step_time *out)
{
    /* BEGIN STUDENT CODE */
    /* Read dt_clock(comm) before and after each of lab_work_serial,
     * lab_work_parallel and lab_work_allreduce (in that order, once each):
     * each part's time is a difference of two readings. */
    (void)comm, (void)w, (void)step, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_measure_job(dt_comm *comm, const lab_workload *w, int steps, lab_job_time *out)
{
    /* BEGIN STUDENT CODE */
    /* Step 0 is the warm-up; average steps 1 .. steps; then combine the
     * ranks: T_N is the maximum of the ranks' mean step times. */
    (void)comm, (void)w, (void)steps, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
