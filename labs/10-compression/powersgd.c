/* powersgd.c - lab 10, task 7 (going further, graded): PowerSGD, a
 * rank-r approximation of each weight matrix by one step of power
 * iteration, exchanged in two small allreduces (chapter 10, section 8).
 * Your code goes between the fences. */
#include "compress.h"

#include <math.h>
#include <string.h>

dt_result lab_orthonormalize(float *p, size_t rows, int r)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: the r columns of p are orthonormal, column j in the
     * span of the first j + 1 columns given (Gram-Schmidt, section 8). */
    (void)p, (void)rows, (void)r;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_sync_powersgd(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: compress.h, lab_sync_powersgd: two allreduces, of
     * c->lr_p then of c->lr_q; every rank the same approximation; Q kept
     * for the next step (section 8). */
    (void)c;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
