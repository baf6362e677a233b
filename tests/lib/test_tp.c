/* test_tp.c - libdt's tensor-parallel layers (dt/tp.h, chapter 07) on 1,
 * 2 and 4 ranks against one rank with the whole layer: the column- and
 * row-parallel linear layers exactly on integer data, with the one
 * allreduce each the chapter counts; the MLP and attention within the
 * labs' tolerance; the vocabulary-parallel embedding bit for bit and the
 * cross-entropy within 1e-6, logits near 1e4 included. */
#include "grader.h"
#include "test_par_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = 12, C = 8, OC = 16 }; /* the linear layers' test shape */

/* Fails unless comm saw exactly `allreduces` ring allreduces of `floats`
 * 4-byte elements in all since the last call (and no other collective);
 * resets. */
static dt_result expect_allreduces(dt_comm *comm, const char *what, long allreduces,
                                   size_t floats)
{
    dt_stats s;
    DT_CHECK(dt_comm_stats(comm, &s));
    DT_CHECK(dt_comm_stats_reset(comm));
    int t = dt_comm_size(comm);
    uint64_t bytes = t > 1 ? 2 * (uint64_t)(t - 1) * floats * 4 / (uint64_t)t : 0;
    long others = 0;
    for (int k = 0; k < DT_NUM_COLLS; k++)
        others += k == DT_COLL_ALLREDUCE ? 0 : (long)s.calls[k];
    long got = (long)s.calls[DT_COLL_ALLREDUCE];
    if (t > 1 && (got != allreduces || others || s.bytes_sent != bytes))
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: %ld allreduces, %ld other calls, %llu "
                       "bytes sent; expected %ld allreduce(s) of %zu floats in all (%llu bytes)", what,
                       t, got, others, (unsigned long long)s.bytes_sent, allreduces, floats,
                       (unsigned long long)bytes);
    return DT_OK;
}

static dt_result expect_equal(const char *what, const float *got, const float *want, size_t n,
                              double tol, int rank)
{
    size_t worst;
    double e = par_rel_diff(got, want, n, &worst);
    if (!(e <= tol))
        return dt_fail(DT_ERR_MISMATCH, "%s on rank %d: [%zu] = %.9g, one rank gives %.9g "
                       "(relative error %.3g > %.0e)", what, rank, worst, (double)got[worst],
                       (double)want[worst], e, tol);
    return DT_OK;
}

/* ---------------------------------------------------------------- linear layers */

/* Column (rows of W) then row (columns of W) parallel, each forward and
 * backward on integer data: exactly the whole layer's numbers. */
static dt_result linear_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int t = dt_comm_size(w), r = dt_comm_rank(w);
    float X[N * C], W[OC * C], b[OC], dY[N * OC], Y[N * OC], dX[N * C], dW[OC * C], db[OC];
    par_fill_int(X, N * C, 1, 3), par_fill_int(W, OC * C, 2, 3), par_fill_int(b, OC, 3, 3);
    par_fill_int(dY, N * OC, 4, 3);
    DT_CHECK(dt_linear_forward(Y, X, W, b, N, C, OC));
    memset(dX, 0, sizeof dX), memset(dW, 0, sizeof dW), memset(db, 0, sizeof db);
    DT_CHECK(dt_linear_backward(dX, dW, db, dY, X, W, N, C, OC));
    DT_CHECK(dt_comm_stats_reset(w));
    /* column-parallel: rows [r OC/t, +OC/t) of W and b, the same columns of Y */
    size_t OCl = OC / (size_t)t, Cl = C / (size_t)t;
    float y[N * OC], ycols[N * OC], dx[N * C], dw[OC * C], dbl[OC], dyc[N * OC];
    for (size_t i = 0; i < N; i++)
        memcpy(dyc + i * OCl, dY + i * OC + (size_t)r * OCl, OCl * sizeof(float));
    DT_CHECK(dt_tp_column_forward(w, y, X, W + (size_t)r * OCl * C, b + (size_t)r * OCl, N, C, OCl));
    DT_CHECK(expect_allreduces(w, "dt_tp_column_forward", 0, 0));
    for (size_t i = 0; i < N; i++)
        memcpy(ycols + i * OCl, Y + i * OC + (size_t)r * OCl, OCl * sizeof(float));
    DT_CHECK(expect_equal("column-parallel y", y, ycols, N * OCl, 0, r));
    memset(dw, 0, sizeof dw), memset(dbl, 0, sizeof dbl);
    for (size_t i = 0; i < N * C; i++)
        dx[i] = 99; /* overwritten, not added to */
    DT_CHECK(dt_tp_column_backward(w, dx, dw, dbl, dyc, X, W + (size_t)r * OCl * C, N, C, OCl));
    DT_CHECK(expect_allreduces(w, "dt_tp_column_backward", 1, N * C));
    DT_CHECK(expect_equal("column-parallel dx", dx, dX, N * C, 0, r));
    DT_CHECK(expect_equal("column-parallel dw", dw, dW + (size_t)r * OCl * C, OCl * C, 0, r));
    DT_CHECK(expect_equal("column-parallel db", dbl, db + (size_t)r * OCl, OCl, 0, r));
    /* row-parallel: columns [r C/t, +C/t) of W and of X; b replicated */
    float xr[N * C], wr[OC * C], dxr[N * C], dwr[OC * C], dwant[OC * C];
    for (size_t i = 0; i < N; i++)
        memcpy(xr + i * Cl, X + i * C + (size_t)r * Cl, Cl * sizeof(float));
    for (size_t o = 0; o < OC; o++)
        memcpy(wr + o * Cl, W + o * C + (size_t)r * Cl, Cl * sizeof(float));
    DT_CHECK(dt_tp_row_forward(w, y, xr, wr, b, N, Cl, OC));
    DT_CHECK(expect_allreduces(w, "dt_tp_row_forward", 1, N * OC));
    DT_CHECK(expect_equal("row-parallel y (the bias once)", y, Y, N * OC, 0, r));
    memset(dwr, 0, sizeof dwr), memset(dbl, 0, sizeof dbl);
    for (size_t i = 0; i < N * C; i++)
        dxr[i] = 99;
    DT_CHECK(dt_tp_row_backward(w, dxr, dwr, dbl, dY, xr, wr, N, Cl, OC));
    DT_CHECK(expect_allreduces(w, "dt_tp_row_backward", 0, 0));
    for (size_t i = 0; i < N; i++)
        memcpy(dx + i * Cl, dX + i * C + (size_t)r * Cl, Cl * sizeof(float));
    for (size_t o = 0; o < OC; o++)
        memcpy(dwant + o * Cl, dW + o * C + (size_t)r * Cl, Cl * sizeof(float));
    DT_CHECK(expect_equal("row-parallel dx", dxr, dx, N * Cl, 0, r));
    DT_CHECK(expect_equal("row-parallel dw", dwr, dwant, OC * Cl, 0, r));
    return expect_equal("row-parallel db", dbl, db, OC, 0, r);
}

TEST(tp_linear_layers_equal_one_rank_exactly, 2)
{
    dt_test_see("chapter 07, section 2");
    for (int t = 1; t <= 4; t *= 2)
        EXPECT_OK(par_launch(t, linear_rank, NULL));
}

/* ---------------------------------------------------------------- MLP and attention */

enum { B2 = 2, T2 = 8, NH = 4, C2 = 32, N2 = B2 * T2, H = 4 * C2 };

/* The whole MLP and attention of one block on one rank, from layers.c. */
typedef struct {
    float x[N2 * C2], dy[N2 * C2];
    float fc_w[H * C2], fc_b[H], mp_w[C2 * H], mp_b[C2];
    float qkv_w[3 * C2 * C2], qkv_b[3 * C2], pr_w[C2 * C2], pr_b[C2];
    float y_mlp[N2 * C2], dx_mlp[N2 * C2], dfc_w[H * C2], dfc_b[H], dmp_w[C2 * H], dmp_b[C2];
    float y_att[N2 * C2], dx_att[N2 * C2], dqkv_w[3 * C2 * C2], dqkv_b[3 * C2];
    float dpr_w[C2 * C2], dpr_b[C2];
    /* the reference's temporaries */
    float t_fch[N2 * H], t_fchg[N2 * H], t_dfchg[N2 * H], t_dfch[N2 * H];
    float t_qkv[N2 * 3 * C2], t_att[B2 * NH * T2 * T2], t_atty[N2 * C2], t_datty[N2 * C2];
    float t_dqkv[N2 * 3 * C2];
} block_ref;

/* What one rank's halves of the block use. */
typedef struct {
    float fc_w[H * C2], fc_b[H], mp_w[C2 * H], y[N2 * C2], dx[N2 * C2];
    float fch[N2 * H], fchg[N2 * H], work[2 * N2 * H];
    float dfc_w[H * C2], dfc_b[H], dmp_w[C2 * H], dmp_b[C2], want[3 * C2 * C2 + H * C2];
    float qkv_w[3 * C2 * C2], qkv_b[3 * C2], pr_w[C2 * C2];
    float qkv[N2 * 3 * C2], att[B2 * NH * T2 * T2], atty[N2 * C2];
    float dqkv_w[3 * C2 * C2], dqkv_b[3 * C2], dpr_w[C2 * C2], dpr_b[C2];
} block_work;

static dt_result block_reference(block_ref *b)
{
    par_fill_normal(b->x, N2 * C2, 10, 1), par_fill_normal(b->dy, N2 * C2, 11, 1);
    par_fill_normal(b->fc_w, H * C2, 12, 0.2f), par_fill_normal(b->fc_b, H, 13, 0.1f);
    par_fill_normal(b->mp_w, C2 * H, 14, 0.1f), par_fill_normal(b->mp_b, C2, 15, 0.1f);
    par_fill_normal(b->qkv_w, 3 * C2 * C2, 16, 0.2f), par_fill_normal(b->qkv_b, 3 * C2, 17, 0.1f);
    par_fill_normal(b->pr_w, C2 * C2, 18, 0.2f), par_fill_normal(b->pr_b, C2, 19, 0.1f);
    float *fch = b->t_fch, *fchg = b->t_fchg, *dfchg = b->t_dfchg, *dfch = b->t_dfch;
    float *qkv = b->t_qkv, *att = b->t_att, *atty = b->t_atty, *datty = b->t_datty;
    float *dqkv = b->t_dqkv;
    DT_CHECK(dt_linear_forward(fch, b->x, b->fc_w, b->fc_b, N2, C2, H));
    DT_CHECK(dt_gelu_forward(fchg, fch, N2 * H));
    DT_CHECK(dt_linear_forward(b->y_mlp, fchg, b->mp_w, b->mp_b, N2, H, C2));
    DT_CHECK(dt_linear_backward(dfchg, b->dmp_w, b->dmp_b, b->dy, fchg, b->mp_w, N2, H, C2));
    DT_CHECK(dt_gelu_backward(dfch, dfchg, fch, N2 * H));
    DT_CHECK(dt_linear_backward(b->dx_mlp, b->dfc_w, b->dfc_b, dfch, b->x, b->fc_w, N2, C2, H));
    DT_CHECK(dt_linear_forward(qkv, b->x, b->qkv_w, b->qkv_b, N2, C2, 3 * C2));
    DT_CHECK(dt_attention_forward(atty, att, qkv, B2, T2, C2, NH));
    DT_CHECK(dt_linear_forward(b->y_att, atty, b->pr_w, b->pr_b, N2, C2, C2));
    DT_CHECK(dt_linear_backward(datty, b->dpr_w, b->dpr_b, b->dy, atty, b->pr_w, N2, C2, C2));
    DT_CHECK(dt_attention_backward(dqkv, datty, qkv, att, B2, T2, C2, NH));
    return dt_linear_backward(b->dx_att, b->dqkv_w, b->dqkv_b, dqkv, b->x, b->qkv_w, N2, C2,
                              3 * C2);
}

/* Rows [r n/t, +n/t) of a (rows, cols) matrix; columns likewise. */
static void rows_of(float *dst, const float *src, size_t rows, size_t cols, int t, int r)
{
    memcpy(dst, src + (size_t)r * (rows / (size_t)t) * cols, rows / (size_t)t * cols * sizeof *dst);
}

static void cols_of(float *dst, const float *src, size_t rows, size_t cols, int t, int r)
{
    size_t cl = cols / (size_t)t;
    for (size_t i = 0; i < rows; i++)
        memcpy(dst + i * cl, src + i * cols + (size_t)r * cl, cl * sizeof *dst);
}

/* The q, k, v rows of rank r's heads (chapter 07, section 4), written here. */
static void heads_of(float *dst, const float *src, size_t cols, int t, int r)
{
    size_t cl = C2 / (size_t)t;
    for (size_t part = 0; part < 3; part++)
        memcpy(dst + part * cl * cols, src + (part * C2 + (size_t)r * cl) * cols,
               cl * cols * sizeof *dst);
}

#define SIZE(a) (sizeof(k->a))

static dt_result mlp_rank(dt_comm *w, const block_ref *b, block_work *k, int t, int r)
{
    size_t Hl = H / (size_t)t;
    float *fc_w = k->fc_w, *fc_b = k->fc_b, *mp_w = k->mp_w, *y = k->y, *dx = k->dx;
    float *fch = k->fch, *fchg = k->fchg, *work = k->work, *want = k->want;
    float *dfc_w = k->dfc_w, *dfc_b = k->dfc_b, *dmp_w = k->dmp_w, *dmp_b = k->dmp_b;
    rows_of(fc_w, b->fc_w, H, C2, t, r), rows_of(fc_b, b->fc_b, H, 1, t, r);
    cols_of(mp_w, b->mp_w, C2, H, t, r);
    DT_CHECK(dt_comm_stats_reset(w));
    DT_CHECK(dt_tp_mlp_forward(w, y, fch, fchg, b->x, fc_w, fc_b, mp_w, b->mp_b, N2, C2, Hl));
    DT_CHECK(expect_allreduces(w, "dt_tp_mlp_forward", 1, N2 * C2));
    DT_CHECK(expect_equal("MLP y", y, b->y_mlp, N2 * C2, PAR_TOL, r));
    memset(dfc_w, 0, SIZE(dfc_w)), memset(dfc_b, 0, SIZE(dfc_b));
    memset(dmp_w, 0, SIZE(dmp_w)), memset(dmp_b, 0, SIZE(dmp_b));
    DT_CHECK(dt_tp_mlp_backward(w, dx, dfc_w, dfc_b, dmp_w, dmp_b, work, b->dy, b->x, fch, fchg,
                                fc_w, mp_w, N2, C2, Hl));
    DT_CHECK(expect_allreduces(w, "dt_tp_mlp_backward", 1, N2 * C2));
    DT_CHECK(expect_equal("MLP dx", dx, b->dx_mlp, N2 * C2, PAR_TOL, r));
    rows_of(want, b->dfc_w, H, C2, t, r);
    DT_CHECK(expect_equal("MLP fc dw", dfc_w, want, Hl * C2, PAR_TOL, r));
    rows_of(want, b->dfc_b, H, 1, t, r);
    DT_CHECK(expect_equal("MLP fc db", dfc_b, want, Hl, PAR_TOL, r));
    cols_of(want, b->dmp_w, C2, H, t, r);
    DT_CHECK(expect_equal("MLP proj dw", dmp_w, want, C2 * Hl, PAR_TOL, r));
    return expect_equal("MLP proj db (replicated)", dmp_b, b->dmp_b, C2, PAR_TOL, r);
}

static dt_result attention_rank(dt_comm *w, const block_ref *b, block_work *k, int t, int r)
{
    size_t Cl = C2 / (size_t)t;
    float *qkv_w = k->qkv_w, *qkv_b = k->qkv_b, *pr_w = k->pr_w, *y = k->y, *dx = k->dx;
    float *qkv = k->qkv, *att = k->att, *atty = k->atty, *work = k->work, *want = k->want;
    float *dqkv_w = k->dqkv_w, *dqkv_b = k->dqkv_b, *dpr_w = k->dpr_w, *dpr_b = k->dpr_b;
    heads_of(qkv_w, b->qkv_w, C2, t, r), heads_of(qkv_b, b->qkv_b, 1, t, r);
    cols_of(pr_w, b->pr_w, C2, C2, t, r);
    DT_CHECK(dt_comm_stats_reset(w));
    DT_CHECK(dt_tp_attention_forward(w, y, qkv, att, atty, b->x, qkv_w, qkv_b, pr_w, b->pr_b,
                                     B2, T2, C2, NH));
    DT_CHECK(expect_allreduces(w, "dt_tp_attention_forward", 1, N2 * C2));
    DT_CHECK(expect_equal("attention y", y, b->y_att, N2 * C2, PAR_TOL, r));
    memset(dqkv_w, 0, SIZE(dqkv_w)), memset(dqkv_b, 0, SIZE(dqkv_b));
    memset(dpr_w, 0, SIZE(dpr_w)), memset(dpr_b, 0, SIZE(dpr_b));
    DT_CHECK(dt_tp_attention_backward(w, dx, dqkv_w, dqkv_b, dpr_w, dpr_b, work, b->dy, b->x,
                                      qkv, att, atty, qkv_w, pr_w, B2, T2, C2, NH));
    DT_CHECK(expect_allreduces(w, "dt_tp_attention_backward", 1, N2 * C2));
    DT_CHECK(expect_equal("attention dx", dx, b->dx_att, N2 * C2, PAR_TOL, r));
    heads_of(want, b->dqkv_w, C2, t, r);
    DT_CHECK(expect_equal("attention qkv dw (its heads)", dqkv_w, want, 3 * Cl * C2, PAR_TOL, r));
    heads_of(want, b->dqkv_b, 1, t, r);
    DT_CHECK(expect_equal("attention qkv db", dqkv_b, want, 3 * Cl, PAR_TOL, r));
    cols_of(want, b->dpr_w, C2, C2, t, r);
    DT_CHECK(expect_equal("attention proj dw", dpr_w, want, C2 * Cl, PAR_TOL, r));
    return expect_equal("attention proj db (replicated)", dpr_b, b->dpr_b, C2, PAR_TOL, r);
}

static dt_result sub_block_rank(dt_comm *w, void *arg)
{
    (void)arg;
    block_ref *b = calloc(1, sizeof *b);
    block_work *k = calloc(1, sizeof *k);
    dt_result r = b && k ? block_reference(b) : dt_fail(DT_ERR_NOMEM, "sub_block_rank");
    if (r == DT_OK)
        r = mlp_rank(w, b, k, dt_comm_size(w), dt_comm_rank(w));
    if (r == DT_OK)
        r = attention_rank(w, b, k, dt_comm_size(w), dt_comm_rank(w));
    free(b), free(k);
    return r;
}

TEST(tp_mlp_and_attention_equal_one_rank, 2)
{
    dt_test_see("chapter 07, sections 3 and 4");
    for (int t = 1; t <= 4; t *= 2)
        EXPECT_OK(par_launch(t, sub_block_rank, NULL));
}

/* ---------------------------------------------------------------- the vocabulary */

enum { V3 = 32, B3 = 2, T3 = 8, C3 = 8, N3 = B3 * T3 };

/* The embedding bit for bit (x + 0 = x), with one allreduce of N C; the
 * cross-entropy's loss, probabilities and argmax against one rank with the
 * whole logits, one row of them near 1e4 (no overflow), with the
 * chapter's three N-vectors; its backward, local. */
static dt_result vocab_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int t = dt_comm_size(w), r = dt_comm_rank(w);
    size_t Vl = V3 / (size_t)t;
    float wte[V3 * C3], wpe[T3 * C3], out[N3 * C3], want[N3 * C3];
    float dout[N3 * C3], dwte[V3 * C3], dwpe[T3 * C3], dwte_r[V3 * C3], dwpe_r[T3 * C3];
    int32_t tokens[N3], labels[N3];
    par_fill_normal(wte, V3 * C3, 30, 1), par_fill_normal(wpe, T3 * C3, 31, 1);
    par_fill_normal(dout, N3 * C3, 32, 1);
    par_batch(tokens, labels, N3, V3, 33);
    DT_CHECK(dt_embedding_forward(want, tokens, wte, wpe, B3, T3, C3, V3));
    memset(dwte, 0, sizeof dwte), memset(dwpe, 0, sizeof dwpe);
    DT_CHECK(dt_embedding_backward(dwte, dwpe, dout, tokens, B3, T3, C3, V3));
    DT_CHECK(dt_comm_stats_reset(w));
    DT_CHECK(dt_tp_embedding_forward(w, out, tokens, wte + (size_t)r * Vl * C3, wpe, B3, T3, C3,
                                     V3));
    DT_CHECK(expect_allreduces(w, "dt_tp_embedding_forward", 1, N3 * C3));
    DT_CHECK(expect_equal("embedding out", out, want, N3 * C3, 0, r));
    memset(dwte_r, 0, sizeof dwte_r), memset(dwpe_r, 0, sizeof dwpe_r);
    DT_CHECK(dt_tp_embedding_backward(w, dwte_r, dwpe_r, dout, tokens, B3, T3, C3, V3));
    DT_CHECK(expect_allreduces(w, "dt_tp_embedding_backward", 0, 0));
    DT_CHECK(expect_equal("embedding dwte (its rows)", dwte_r, dwte + (size_t)r * Vl * C3,
                          Vl * C3, 0, r));
    DT_CHECK(expect_equal("embedding dwpe (replicated)", dwpe_r, dwpe, T3 * C3, 0, r));
    /* the loss */
    float logits[N3 * V3], probs[N3 * V3], lr[N3 * V3], pr[N3 * V3], pw[N3 * V3];
    float dl[N3 * V3], dlr[N3 * V3], dlw[N3 * V3];
    par_fill_normal(logits, N3 * V3, 34, 3);
    for (size_t j = 0; j < V3; j++)
        logits[5 * V3 + j] = 1e4f + (float)((j * 7) % 5); /* row 5 near 1e4, ties at its max */
    double mean, mean_r;
    DT_CHECK(dt_softmax_xent_forward(probs, NULL, &mean, logits, labels, N3, V3));
    memset(dl, 0, sizeof dl);
    DT_CHECK(dt_softmax_xent_backward(dl, probs, labels, 1.0f / N3, N3, V3));
    for (size_t i = 0; i < N3; i++)
        memcpy(lr + i * Vl, logits + i * V3 + (size_t)r * Vl, Vl * sizeof(float));
    int32_t argmax[N3];
    DT_CHECK(dt_tp_xent_forward(w, pr, NULL, &mean_r, argmax, lr, labels, N3, V3));
    /* max (N), sum and target (2N), argmax (N int32): never the (N, V) logits */
    DT_CHECK(expect_allreduces(w, "dt_tp_xent_forward (with the argmax)", 3, 4 * N3));
    if (!(fabs(mean_r - mean) <= 1e-6 * fabs(mean)))
        return dt_fail(DT_ERR_MISMATCH, "vocabulary-parallel loss %.9g on rank %d, one rank "
                       "%.9g", mean_r, r, mean);
    for (size_t i = 0; i < N3; i++) {
        memcpy(pw + i * Vl, probs + i * V3 + (size_t)r * Vl, Vl * sizeof(float));
        memcpy(dlw + i * Vl, dl + i * V3 + (size_t)r * Vl, Vl * sizeof(float));
        size_t best;
        DT_CHECK(dt_vec_argmax(logits + i * V3, V3, &best));
        if ((size_t)argmax[i] != best)
            return dt_fail(DT_ERR_MISMATCH, "row %zu's argmax over the whole vocabulary: %d on "
                           "rank %d, one rank finds %zu", i, (int)argmax[i], r, best);
    }
    DT_CHECK(expect_equal("probabilities (its columns)", pr, pw, N3 * Vl, 1e-6, r));
    memset(dlr, 0, sizeof dlr);
    DT_CHECK(dt_tp_xent_backward(w, dlr, pr, labels, 1.0f / N3, N3, V3));
    DT_CHECK(expect_allreduces(w, "dt_tp_xent_backward", 0, 0));
    return expect_equal("dlogits (its columns)", dlr, dlw, N3 * Vl, 1e-6, r);
}

TEST(tp_vocabulary_embedding_and_cross_entropy_equal_one_rank, 2)
{
    dt_test_see("chapter 07, section 5");
    for (int t = 1; t <= 4; t *= 2)
        EXPECT_OK(par_launch(t, vocab_rank, NULL));
}
