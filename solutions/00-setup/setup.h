/* setup.h - lab 00: the alpha-beta cost model, and a first program of ranks.
 * Read chapters/00-setup.md first. */
#ifndef LAB_SETUP_H
#define LAB_SETUP_H

#include "dt/comm.h"
#include "dt/core.h"

/* Task (a): the alpha-beta model of a link (chapter 00, section 5).
 * alpha is the latency of one message in seconds (>= 0), beta the bandwidth
 * in bytes per second (> 0, may be INFINITY), nbytes a message size (>= 0).
 * Each function writes its answer to *seconds and returns DT_OK; a bad
 * argument (NULL seconds, negative or NaN alpha or nbytes, beta <= 0 or NaN,
 * nranks < 1) returns DT_ERR_INVALID_ARG and leaves *seconds unchanged. */

/* The time to send one message of nbytes: T = alpha + nbytes / beta. */
dt_result lab_cost_send(double alpha, double beta, double nbytes, double *seconds);

/* The time of a ring allreduce of nbytes on nranks ranks (section 6):
 * 2 (K-1) steps, each sending a chunk of nbytes / K to the next rank,
 *     T = 2 (K-1) (alpha + nbytes / (K beta)),     K = nranks;
 * 0 for one rank. */
dt_result lab_cost_ring_allreduce(double alpha, double beta, double nbytes, int nranks,
                                  double *seconds);

/* The bytes each rank sends in that ring allreduce: 2 (K-1) / K * nbytes. */
dt_result lab_ring_bytes_per_rank(double nbytes, int nranks, double *bytes);

/* Task (b): what one rank of a job reports (chapter 00, section 8). */
typedef struct {
    int rank;                 /* this rank, 0 .. size-1 */
    int size;                 /* the number of ranks of the job */
    int value;                /* (rank + 1)^2 */
    int sum;                  /* the sum of value over every rank */
    uint64_t allreduce_calls; /* allreduce calls this rank made on world */
    uint64_t bytes_sent;      /* bytes this rank sent on world */
} lab_rank_report;

/* Runs on every rank: fills *out as above, with one allreduce for the sum
 * and the communicator's statistics for the last two fields. NULL world or
 * out: DT_ERR_INVALID_ARG. */
dt_result lab_rank_report_fill(dt_comm *world, lab_rank_report *out);

#endif /* LAB_SETUP_H */
