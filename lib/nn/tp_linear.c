/* tp_linear.c - column- and row-parallel linear layers (chapter 07,
 * section 2), and with them Megatron's two conjugate operators (section 3):
 *
 *   column-parallel   Y_r = X W_r^T + b_r       forward: nothing (f = identity)
 *                     dX  = sum_r dY_r W_r      backward: allreduce (f's)
 *   row-parallel      Y   = sum_r X_r W_r^T + b forward: allreduce (g's), bias once
 *                     dX_r = dY W_r             backward: nothing (g = identity)
 *
 * On one rank (tp NULL or of size 1) each is the plain layer of layers.c,
 * the same calls on the same operands, so a whole model runs these
 * functions and computes what it always did, bit for bit. */
#include "tp_internal.h"

#include <string.h>

dt_result dt_tp_column_forward(dt_comm *tp, float *y, const float *x, const float *w,
                               const float *b, size_t N, size_t C, size_t OCl)
{
    size_t t, r;
    DT_CHECK(nn_tp_group(tp, "dt_tp_column_forward", &t, &r));
    /* every rank has all of X: its columns of Y are complete */
    return dt_linear_forward(y, x, w, b, N, C, OCl);
}

dt_result dt_tp_column_backward(dt_comm *tp, float *dx, float *dw, float *db, const float *dy,
                                const float *x, const float *w, size_t N, size_t C, size_t OCl)
{
    size_t t, r;
    DT_CHECK(nn_tp_group(tp, "dt_tp_column_backward", &t, &r));
    if (dx)
        memset(dx, 0, N * C * sizeof(float));
    /* dx = dY_r W_r, this rank's share of X's gradient; dW_r, db_r local */
    DT_CHECK(dt_linear_backward(dx, dw, db, dy, x, w, N, C, OCl));
    /* X fed every rank's slice: its gradient is the sum of the t shares */
    if (dx && t > 1)
        DT_CHECK(dt_allreduce(dx, dx, N * C, DT_F32, DT_SUM, tp));
    return DT_OK;
}

dt_result dt_tp_row_forward(dt_comm *tp, float *y, const float *x, const float *w,
                            const float *b, size_t N, size_t Cl, size_t OC)
{
    size_t t, r;
    DT_CHECK(nn_tp_group(tp, "dt_tp_row_forward", &t, &r));
    if (t == 1)
        return dt_linear_forward(y, x, w, b, N, Cl, OC);
    /* a partial Y of full size from this rank's input columns ... */
    DT_CHECK(dt_linear_forward(y, x, w, NULL, N, Cl, OC));
    /* ... summed over the ranks; the replicated bias after the sum: added
     * before, it would be counted t times */
    DT_CHECK(dt_allreduce(y, y, N * OC, DT_F32, DT_SUM, tp));
    if (b)
        for (size_t i = 0; i < N; i++)
            for (size_t o = 0; o < OC; o++)
                y[i * OC + o] += b[o];
    return DT_OK;
}

dt_result dt_tp_row_backward(dt_comm *tp, float *dx, float *dw, float *db, const float *dy,
                             const float *x, const float *w, size_t N, size_t Cl, size_t OC)
{
    size_t t, r;
    DT_CHECK(nn_tp_group(tp, "dt_tp_row_backward", &t, &r));
    if (dx)
        memset(dx, 0, N * Cl * sizeof(float));
    /* dY is the same on every rank: everything is local, and db (a
     * replicated bias's gradient) comes out the same on every rank */
    return dt_linear_backward(dx, dw, db, dy, x, w, N, Cl, OC);
}
