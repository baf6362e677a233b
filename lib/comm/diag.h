/* diag.h - diagnosis (diag.c): what each rank is doing, published on its
 * board, and the report a timeout gives. */
#ifndef DT_COMM_DIAG_H
#define DT_COMM_DIAG_H

#include "handle.h"

/* Publishes what lane does (for the timeout report); kind -1 clears. */
void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root);

/* The timeout report: what every rank of the job does, e.g. "rank 0 waits
 * in allreduce #3 (count 1000); rank 2 waits in broadcast #3 (count 1000,
 * root 1)". */
void dt_describe_job(dt_job *job, char *out, size_t n);

#endif /* DT_COMM_DIAG_H */
