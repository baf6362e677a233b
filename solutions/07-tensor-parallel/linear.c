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
    if (!tp || !y || !x || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_column_forward: NULL buffer");
    const float *xin = x;
    if (tp->sp) {
        float *xall = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * C);
        if (!xall)
            return DT_ERR_NOMEM;
        DT_CHECK(dt_allgather(x, xall, N / (size_t)tp->t * C, DT_F32, tp->comm));
        xin = xall;
    }
    return dt_linear_forward(y, xin, w, b, N, C, OCl);
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
    if (!tp || !dx || !dy || !x || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_column_backward: NULL buffer");
    const float *xin = x;
    float *dxall = dx;
    if (tp->sp) {
        float *xall = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * C);
        dxall = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR1, N * C);
        if (!xall || !dxall)
            return DT_ERR_NOMEM;
        DT_CHECK(dt_allgather(x, xall, N / (size_t)tp->t * C, DT_F32, tp->comm));
        xin = xall;
    }
    memset(dxall, 0, N * C * sizeof(float));
    DT_CHECK(dt_linear_backward(dxall, dw, db, dy, xin, w, N, C, OCl));
    if (tp->sp)
        return dt_reduce_scatter(dxall, dx, N / (size_t)tp->t * C, DT_F32, DT_SUM, tp->comm);
    return dt_allreduce(dx, dx, N * C, DT_F32, DT_SUM, tp->comm);
    /* END STUDENT CODE */
}

dt_result lab_row_forward(lab_tp *tp, float *y, const float *x, const float *w, const float *b,
                          size_t N, size_t Cl, size_t OC)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y = X W^T + b, the whole layer's output (with tp->sp,
     * this rank's N/t rows of it), the same on every rank, with b added
     * exactly once. Section 2 (section 7 with sp). */
    if (!tp || !y || !x || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_row_forward: NULL buffer");
    size_t rows = tp->sp ? N / (size_t)tp->t : N;
    float *yall = tp->sp ? lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * OC) : y;
    if (!yall)
        return DT_ERR_NOMEM;
    DT_CHECK(dt_linear_forward(yall, x, w, NULL, N, Cl, OC));
    if (tp->sp)
        DT_CHECK(dt_reduce_scatter(yall, y, rows * OC, DT_F32, DT_SUM, tp->comm));
    else
        DT_CHECK(dt_allreduce(y, y, N * OC, DT_F32, DT_SUM, tp->comm));
    if (b) /* after the sum: added once, not t times */
        for (size_t i = 0; i < rows; i++)
            for (size_t o = 0; o < OC; o++)
                y[i * OC + o] += b[o];
    return DT_OK;
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
    if (!tp || !dx || !dy || !x || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_row_backward: NULL buffer");
    size_t rows = tp->sp ? N / (size_t)tp->t : N;
    const float *dyall = dy;
    if (tp->sp) {
        float *buf = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * OC);
        if (!buf)
            return DT_ERR_NOMEM;
        DT_CHECK(dt_allgather(dy, buf, rows * OC, DT_F32, tp->comm));
        dyall = buf;
    }
    memset(dx, 0, N * Cl * sizeof(float));
    DT_CHECK(dt_linear_backward(dx, dw, NULL, dyall, x, w, N, Cl, OC));
    if (db)
        for (size_t i = 0; i < rows; i++)
            for (size_t o = 0; o < OC; o++)
                db[o] += dy[i * OC + o];
    return DT_OK;
    /* END STUDENT CODE */
}
