/* tp_test_linear.c - the rank functions of the linear-layer tests (task 1,
 * and task 6 with sequence parallelism). Every tensor holds small
 * integers, so every product and sum is exact in float whatever its order:
 * the checks are exact. */
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>

enum { LN = 8, LC = 8, LOC = 12 }; /* rows, input and output features */

/* The whole layer, computed in double: Y = X W^T + b, dX = dY W,
 * dW = dY^T X, db = column sums of dY, rows [r0, r1) of dY for db. */
typedef struct {
    float x[LN * LC], w[LOC * LC], b[LOC], dy[LN * LOC];
    double y[LN * LOC], dx[LN * LC], dw[LOC * LC];
} whole_layer;

static void whole_make(whole_layer *L)
{
    tpt_fill_int(L->x, LN * LC, 11, 2);
    tpt_fill_int(L->w, LOC * LC, 12, 2);
    tpt_fill_int(L->b, LOC, 13, 3);
    tpt_fill_int(L->dy, LN * LOC, 14, 2);
    for (int i = 0; i < LN; i++)
        for (int o = 0; o < LOC; o++) {
            double s = L->b[o];
            for (int c = 0; c < LC; c++)
                s += (double)L->x[i * LC + c] * L->w[o * LC + c];
            L->y[i * LOC + o] = s;
        }
    for (int i = 0; i < LN; i++)
        for (int c = 0; c < LC; c++) {
            double s = 0;
            for (int o = 0; o < LOC; o++)
                s += (double)L->dy[i * LOC + o] * L->w[o * LC + c];
            L->dx[i * LC + c] = s;
        }
    for (int o = 0; o < LOC; o++)
        for (int c = 0; c < LC; c++) {
            double s = 0;
            for (int i = 0; i < LN; i++)
                s += (double)L->dy[i * LOC + o] * L->x[i * LC + c];
            L->dw[o * LC + c] = s;
        }
}

static double colsum(const whole_layer *L, int o, int r0, int r1)
{
    double s = 0;
    for (int i = r0; i < r1; i++)
        s += L->dy[i * LOC + o];
    return s;
}

/* a (rows, cols) = columns [c0, c0 + cols) of rows [r0, r0 + rows) of src (., ld) */
static void take(float *a, const float *src, int ld, int r0, int rows, int c0, int cols)
{
    for (int i = 0; i < rows; i++)
        memcpy(a + i * cols, src + (r0 + i) * ld + c0, (size_t)cols * sizeof(float));
}

#define CHECK_EQ(got, want, fmt, ...)                                                          \
    do {                                                                                       \
        if ((double)(got) != (want))                                                           \
            return dt_fail(DT_ERR_MISMATCH, fmt ": %g, expected %g", __VA_ARGS__,              \
                           (double)(got), (double)(want));                                     \
    } while (0)

static dt_result group(lab_tp *tp, dt_comm *world, int sp)
{
    dt_gpt_config cfg = {8, LN, 1, 4, LC}; /* only the sizes matter here */
    return lab_tp_init(tp, world, &cfg, 1, LN, sp);
}

/* The column-parallel layer on this rank, forward or backward, checked. */
static dt_result column_check(lab_tp *tp, const whole_layer *L, int backward)
{
    int t = tp->t, r = tp->rank, OCl = LOC / t, Nl = tp->sp ? LN / t : LN, r0 = tp->sp ? r * Nl : 0;
    float w[LOC * LC], b[LOC], x[LN * LC], dy[LN * LOC], out[LN * LOC], dw[LOC * LC], db[LOC];
    take(w, L->w, LC, r * OCl, OCl, 0, LC);
    take(b, L->b, LOC, 0, 1, r * OCl, OCl);
    take(x, L->x, LC, r0, Nl, 0, LC);
    take(dy, L->dy, LOC, 0, LN, r * OCl, OCl);
    tpt_calls want = {0, 0, 0, 0};
    if (!backward) {
        DT_CHECK(lab_column_forward(tp, out, x, w, b, LN, LC, (size_t)OCl));
        for (int i = 0; i < LN; i++)
            for (int o = 0; o < OCl; o++)
                CHECK_EQ(out[i * OCl + o], L->y[i * LOC + r * OCl + o], "y[%d][%d]", i, o);
        if (tp->sp)
            want.allgather = 1, want.bytes_sent = tpt_ring_half_bytes(LN * LC, t);
        return tpt_expect_calls(tp->comm, "column-parallel forward", want);
    }
    for (int k = 0; k < LOC * LC; k++)
        dw[k] = 1; /* the parameter gradients must accumulate */
    for (int k = 0; k < LOC; k++)
        db[k] = 1;
    for (int k = 0; k < LN * LC; k++)
        out[k] = 1e6f; /* and dx be overwritten */
    DT_CHECK(lab_column_backward(tp, out, dw, db, dy, x, w, LN, LC, (size_t)OCl));
    for (int i = 0; i < Nl; i++)
        for (int c = 0; c < LC; c++)
            CHECK_EQ(out[i * LC + c], L->dx[(r0 + i) * LC + c],
                     "dx[%d][%d], the sum over the ranks' slices", r0 + i, c);
    for (int o = 0; o < OCl; o++) {
        for (int c = 0; c < LC; c++)
            CHECK_EQ(dw[o * LC + c], 1 + L->dw[(r * OCl + o) * LC + c], "dw[%d][%d] (+=)", o, c);
        CHECK_EQ(db[o], 1 + colsum(L, r * OCl + o, 0, LN), "db[%d] (+=)", o);
    }
    if (tp->sp)
        want.allgather = want.reduce_scatter = 1,
        want.bytes_sent = 2 * tpt_ring_half_bytes(LN * LC, t);
    else
        want.allreduce = 1, want.bytes_sent = tpt_ring_allreduce_bytes(LN * LC, t);
    return tpt_expect_calls(tp->comm, "column-parallel backward", want);
}

/* The row-parallel layer on this rank, forward or backward, checked. */
static dt_result row_check(lab_tp *tp, const whole_layer *L, int backward)
{
    int t = tp->t, r = tp->rank, Cl = LC / t, Nl = tp->sp ? LN / t : LN, r0 = tp->sp ? r * Nl : 0;
    float w[LOC * LC], x[LN * LC], dy[LN * LOC], out[LN * LOC], dw[LOC * LC], db[LOC];
    take(w, L->w, LC, 0, LOC, r * Cl, Cl);
    take(x, L->x, LC, 0, LN, r * Cl, Cl);
    take(dy, L->dy, LOC, r0, Nl, 0, LOC);
    tpt_calls want = {0, 0, 0, 0};
    if (!backward) {
        DT_CHECK(lab_row_forward(tp, out, x, w, L->b, LN, (size_t)Cl, LOC));
        for (int i = 0; i < Nl; i++)
            for (int o = 0; o < LOC; o++)
                CHECK_EQ(out[i * LOC + o], L->y[(r0 + i) * LOC + o],
                         "y[%d][%d], the sum over the ranks plus the bias once", r0 + i, o);
        if (tp->sp)
            want.reduce_scatter = 1, want.bytes_sent = tpt_ring_half_bytes(LN * LOC, t);
        else
            want.allreduce = 1, want.bytes_sent = tpt_ring_allreduce_bytes(LN * LOC, t);
        return tpt_expect_calls(tp->comm, "row-parallel forward", want);
    }
    for (int k = 0; k < LOC * LC; k++)
        dw[k] = 1;
    for (int k = 0; k < LOC; k++)
        db[k] = 1;
    for (int k = 0; k < LN * LC; k++)
        out[k] = 1e6f;
    DT_CHECK(lab_row_backward(tp, out, dw, db, dy, x, w, LN, (size_t)Cl, LOC));
    for (int i = 0; i < LN; i++)
        for (int c = 0; c < Cl; c++)
            CHECK_EQ(out[i * Cl + c], L->dx[i * LC + r * Cl + c], "dx[%d][%d]", i, c);
    for (int o = 0; o < LOC; o++) {
        for (int c = 0; c < Cl; c++)
            CHECK_EQ(dw[o * Cl + c], 1 + L->dw[o * LC + r * Cl + c], "dw[%d][%d] (+=)", o, c);
        CHECK_EQ(db[o], 1 + colsum(L, o, r0, r0 + Nl), "db[%d] (+=, this rank's rows)", o);
    }
    if (tp->sp)
        want.allgather = 1, want.bytes_sent = tpt_ring_half_bytes(LN * LOC, t);
    return tpt_expect_calls(tp->comm, "row-parallel backward", want);
}

dt_result tpt_linear_rank(dt_comm *world, void *arg)
{
    const int *how = arg; /* {row, backward, sp} */
    whole_layer L;
    lab_tp tp;
    whole_make(&L);
    DT_CHECK(group(&tp, world, how[2]));
    DT_CHECK(dt_comm_stats_reset(world));
    dt_result res = how[0] ? row_check(&tp, &L, how[1]) : column_check(&tp, &L, how[1]);
    lab_tp_free(&tp);
    return res;
}
