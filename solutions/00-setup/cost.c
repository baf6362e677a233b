/* cost.c - lab 00, task (a): the alpha-beta cost model (chapter 00, sections
 * 5 and 6). Fill in the three functions between the fences. */
#include "setup.h"

#include <math.h>

dt_result lab_cost_send(double alpha, double beta, double nbytes, double *seconds)
{
    /* BEGIN STUDENT CODE */
    if (!seconds)
        return dt_fail(DT_ERR_INVALID_ARG, "seconds is NULL");
    if (!(alpha >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "alpha %g: a latency is >= 0", alpha);
    if (!(beta > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "beta %g: a bandwidth is > 0", beta);
    if (!(nbytes >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "nbytes %g: a size is >= 0", nbytes);
    *seconds = alpha + nbytes / beta; /* T = alpha + n / beta */
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_cost_ring_allreduce(double alpha, double beta, double nbytes, int nranks,
                                  double *seconds)
{
    /* BEGIN STUDENT CODE */
    if (!seconds)
        return dt_fail(DT_ERR_INVALID_ARG, "seconds is NULL");
    if (nranks < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "nranks %d: at least one rank", nranks);
    double step = 0;
    /* One step sends a chunk of n / K bytes: alpha + n / (K beta). */
    DT_CHECK(lab_cost_send(alpha, beta, nbytes / nranks, &step));
    *seconds = 2.0 * (nranks - 1) * step; /* T = 2 (K-1) (alpha + n / (K beta)) */
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_ring_bytes_per_rank(double nbytes, int nranks, double *bytes)
{
    /* BEGIN STUDENT CODE */
    if (!bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "bytes is NULL");
    if (nranks < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "nranks %d: at least one rank", nranks);
    if (!(nbytes >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "nbytes %g: a size is >= 0", nbytes);
    *bytes = 2.0 * (nranks - 1) / nranks * nbytes; /* 2 (K-1) chunks of n / K */
    return DT_OK;
    /* END STUDENT CODE */
}
