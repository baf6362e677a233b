/* cost.c - lab 00, task (a): the alpha-beta cost model (chapter 00, sections
 * 5 and 6). Fill in the three functions between the fences. */
#include "setup.h"

#include <math.h>

dt_result lab_cost_send(double alpha, double beta, double nbytes, double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (setup.h): DT_OK with *seconds = the alpha-beta time of
     * one message (chapter 00, section 5), or DT_ERR_INVALID_ARG naming the
     * bad argument with *seconds untouched (section 7 lists what is bad).
     * Stuck? chapters/hints/00.md, hints (a). */
    (void)alpha, (void)beta, (void)nbytes, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_cost_ring_allreduce(double alpha, double beta, double nbytes, int nranks,
                                  double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (setup.h): DT_OK with *seconds = the time of a ring
     * allreduce of nbytes on nranks ranks, derived in section 6 (0 for one
     * rank), or DT_ERR_INVALID_ARG with *seconds untouched. Stuck?
     * chapters/hints/00.md, hints (a). */
    (void)alpha, (void)beta, (void)nbytes, (void)nranks, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_bytes_per_rank(double nbytes, int nranks, double *bytes)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (setup.h): DT_OK with *bytes = what each rank of that
     * ring allreduce sends (section 6), or DT_ERR_INVALID_ARG with *bytes
     * untouched. */
    (void)nbytes, (void)nranks, (void)bytes;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
