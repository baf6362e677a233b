/* ranks.c - lab 00, task (b): a first program of ranks (chapter 00,
 * section 8). Every rank of a job runs lab_rank_report_fill with its own
 * world communicator. */
#include "setup.h"

dt_result lab_rank_report_fill(dt_comm *world, lab_rank_report *out)
{
    if (!world || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "world and out must not be NULL");
    /* BEGIN STUDENT CODE */
    out->rank = dt_comm_rank(world);
    out->size = dt_comm_size(world);
    out->value = (out->rank + 1) * (out->rank + 1);
    /* Every rank sends its value and receives the sum of all of them. */
    DT_CHECK(dt_allreduce(&out->value, &out->sum, 1, DT_I32, DT_SUM, world));
    dt_stats st;
    DT_CHECK(dt_comm_stats(world, &st));
    out->allreduce_calls = st.calls[DT_COLL_ALLREDUCE];
    out->bytes_sent = st.bytes_sent;
    return DT_OK;
    /* END STUDENT CODE */
}
