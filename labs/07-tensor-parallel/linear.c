/* linear.c - lab 07, task 1: column- and row-parallel linear layers
 * (chapter 07, section 2), and their sequence-parallel forms (task 6,
 * section 7). */
#include "tp.h"

#include <string.h>

dt_result lab_column_forward(lab_tp *tp, float *y, const float *x, const float *w,
                             const float *b, size_t N, size_t C, size_t OCl)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y (N, OCl) = X w^T + b for all N rows of the layer's
     * whole input X, the same columns of Y that one rank with the whole
     * layer computes. With tp->sp, X is made of every rank's N/t rows.
     * Section 2 (section 7 with sp). */
    (void)tp, (void)y, (void)x, (void)w, (void)b, (void)N, (void)C, (void)OCl;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_column_backward(lab_tp *tp, float *dx, float *dw, float *db, const float *dy,
                              const float *x, const float *w, size_t N, size_t C, size_t OCl)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dx = the whole gradient of the layer's input (with
     * tp->sp, this rank's N/t rows of it), the same on every rank;
     * dw += dy^T X, db += the column sums of dy. Section 2 says what dx is
     * made of; section 7 what changes with sp (the forward kept only this
     * rank's rows of X). */
    (void)tp, (void)dx, (void)dw, (void)db, (void)dy, (void)x, (void)w, (void)N, (void)C, (void)OCl;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_row_forward(lab_tp *tp, float *y, const float *x, const float *w, const float *b,
                          size_t N, size_t Cl, size_t OC)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y = X W^T + b, the whole layer's output (with tp->sp,
     * this rank's N/t rows of it), the same on every rank, with b added
     * exactly once. Section 2 (section 7 with sp). */
    (void)tp, (void)y, (void)x, (void)w, (void)b, (void)N, (void)Cl, (void)OC;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_row_backward(lab_tp *tp, float *dx, float *dw, float *db, const float *dy,
                           const float *x, const float *w, size_t N, size_t Cl, size_t OC)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dx = dY w (the gradient of this rank's columns of
     * X), dw += dY^T x, db += the column sums of the rows of dY this rank
     * holds. Section 2 (section 7 with sp: the sums of db over the ranks
     * are task 6's). */
    (void)tp, (void)dx, (void)dw, (void)db, (void)dy, (void)x, (void)w, (void)N, (void)Cl, (void)OC;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
