/* cost.c - lab 00, task (a): the alpha-beta cost model (chapter 00, sections
 * 5 and 6). Fill in the three functions between the fences. */
#include "setup.h"

#include <math.h>

dt_result lab_cost_send(double alpha, double beta, double nbytes, double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Check the arguments as setup.h says (return
     * dt_fail(DT_ERR_INVALID_ARG, "...") naming the bad one), then
     * *seconds = alpha + nbytes / beta. */
    (void)alpha, (void)beta, (void)nbytes, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_cost_ring_allreduce(double alpha, double beta, double nbytes, int nranks,
                                  double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Reduce-scatter then allgather: K-1 steps each, every step moves one
     * chunk of nbytes / K per rank. One rank communicates nothing. */
    (void)alpha, (void)beta, (void)nbytes, (void)nranks, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_bytes_per_rank(double nbytes, int nranks, double *bytes)
{
    /* BEGIN STUDENT CODE */
    (void)nbytes, (void)nranks, (void)bytes;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
