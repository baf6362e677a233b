/* ranks.c - lab 00, task (b): a first program of ranks (chapter 00,
 * section 8). Every rank of a job runs lab_rank_report_fill with its own
 * world communicator. */
#include "setup.h"

dt_result lab_rank_report_fill(dt_comm *world, lab_rank_report *out)
{
    if (!world || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "world and out must not be NULL");
    /* BEGIN STUDENT CODE */
    /* 1. out->rank and out->size: this rank and the number of ranks.
     * 2. out->value = (rank + 1) * (rank + 1).
     * 3. out->sum: the sum of every rank's value, with one dt_allreduce of
     *    one DT_I32 element and DT_SUM (every rank gets the sum).
     * 4. From dt_comm_stats after the allreduce: out->allreduce_calls (the
     *    entry DT_COLL_ALLREDUCE of calls) and out->bytes_sent. */
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
