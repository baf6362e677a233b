/* ranks.c - lab 00, task (b): a first program of ranks (chapter 00,
 * section 8). Every rank of a job runs lab_rank_report_fill with its own
 * world communicator. */
#include "setup.h"

dt_result lab_rank_report_fill(dt_comm *world, lab_rank_report *out)
{
    if (!world || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "world and out must not be NULL");
    /* BEGIN STUDENT CODE */
    /* Postcondition (setup.h, lab_rank_report): every field of *out holds
     * this rank's figures; sum is the same on every rank, computed with one
     * collective call; the last two fields are read from the communicator's
     * statistics after it. Section 8 walks through each field. Stuck?
     * chapters/hints/00.md, hints (b). */
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
