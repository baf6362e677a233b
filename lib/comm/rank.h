/* rank.h - the end of a rank's life, and the job's result (rank.c). Not a
 * public header. */
#ifndef DT_COMM_RANK_H
#define DT_COMM_RANK_H

#include "job.h"

/* Marks a rank ended (DT_RANK_DONE when r is DT_OK, else DT_RANK_FAILED)
 * with its result; the first end counts. */
void dt_rank_end(dt_job *job, int world_rank, dt_result r, const char *msg);

/* The launcher saw rank r's process die (or exit badly): marks it dead,
 * whatever its state, and wakes every rank. */
void dt_rank_died(dt_job *job, int r, const char *msg);

/* The first failure in time, as "rank R: message"; DT_OK when none. */
dt_result dt_job_result(dt_job *job);

#endif /* DT_COMM_RANK_H */
