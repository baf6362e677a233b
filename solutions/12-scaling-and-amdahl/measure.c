/* measure.c - lab 12, task (b): instrument the training step, and combine
 * the ranks' times into the job's (chapter 12, sections 2, 7 and 10). */
#include "scaling.h"

#include <math.h>
#include <stdlib.h>

dt_result lab_measure_step(dt_comm *comm, const lab_workload *w, int step, lab_step_time *out)
{
    /* BEGIN STUDENT CODE */
    if (!comm || !w || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "measure_step: NULL %s", !comm ? "comm" : !w ? "w" : "out");
    if (step < 0)
        return dt_fail(DT_ERR_INVALID_ARG, "measure_step: step %d < 0", step);
    /* Read the clock between the parts: each part's time is a difference. */
    double t0 = dt_clock(comm);
    DT_CHECK(lab_work_serial(comm, w, step));
    double t1 = dt_clock(comm);
    DT_CHECK(lab_work_parallel(comm, w, step));
    double t2 = dt_clock(comm);
    DT_CHECK(lab_work_allreduce(comm, w, step));
    double t3 = dt_clock(comm);
    *out = (lab_step_time){.serial = t1 - t0, .parallel = t2 - t1, .comm = t3 - t2, .total = t3 - t0};
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_measure_job(dt_comm *comm, const lab_workload *w, int steps, lab_job_time *out)
{
    /* BEGIN STUDENT CODE */
    if (!comm || !w || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "measure_job: NULL %s", !comm ? "comm" : !w ? "w" : "out");
    if (steps < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "measure_job: steps %d < 1", steps);
    int size = dt_comm_size(comm);
    lab_step_time st, mean = {0};
    DT_CHECK(lab_measure_step(comm, w, 0, &st)); /* warm-up: not counted */
    for (int s = 1; s <= steps; s++) {
        DT_CHECK(lab_measure_step(comm, w, s, &st));
        mean.serial += st.serial, mean.parallel += st.parallel;
        mean.comm += st.comm, mean.total += st.total;
    }
    mean.serial /= steps, mean.parallel /= steps, mean.comm /= steps, mean.total /= steps;
    /* Every rank gets every rank's means (as bytes: there is no f64 dtype),
     * then computes the same maximum and averages. */
    lab_step_time *all = malloc((size_t)size * sizeof *all);
    double *par = malloc((size_t)size * sizeof *par);
    dt_result r = all && par ? DT_OK : dt_fail(DT_ERR_NOMEM, "measure_job: %d ranks", size);
    if (r == DT_OK) r = dt_allgather(&mean, all, sizeof mean, DT_U8, comm);
    lab_job_time job = {.nranks = size};
    for (int i = 0; r == DT_OK && i < size; i++) {
        job.step = fmax(job.step, all[i].total); /* T_N = max over ranks */
        job.serial += all[i].serial / size;
        job.parallel += all[i].parallel / size;
        job.comm += all[i].comm / size;
        par[i] = all[i].parallel;
    }
    if (r == DT_OK) r = lab_load_imbalance(par, (size_t)size, &job.imbalance);
    free(all);
    free(par);
    DT_CHECK(r);
    *out = job;
    return DT_OK;
    /* END STUDENT CODE */
}
