/* tp_blocks.c - the transformer block's two halves with their weights
 * split over a tensor-parallel group: the Megatron MLP (chapter 07,
 * section 3) and attention split by heads (section 4). gpt_block.c builds
 * the block from them; with one rank they are the plain layers.
 *
 *   MLP        x (N, C) -f-> fc, column-parallel -> (N, 4C/t) -> GELU, local
 *              -> mproj, row-parallel -g-> y (N, C), + bias once
 *   attention  x (N, C) -f-> qkv, column-parallel by heads -> (N, 3C/t)
 *              -> causal attention of this rank's NH/t heads, local
 *              -> proj, row-parallel -g-> y (N, C), + bias once
 *
 * GELU is nonlinear, so it must see complete values: after a
 * column-parallel layer each rank holds complete columns, which are
 * exactly the input columns its row-parallel slice needs. One allreduce
 * forward (g) and one backward (f) per half. */
#include "tp_internal.h"

#include <string.h>

/* ================================================================ MLP */

dt_result dt_tp_mlp_forward(dt_comm *tp, float *y, float *fch, float *fchg, const float *x,
                            const float *fc_w, const float *fc_b, const float *mproj_w,
                            const float *mproj_b, size_t N, size_t C, size_t Hl)
{
    if (!fch || !fchg)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_mlp_forward: NULL %s", fch ? "fchg" : "fch");
    /* fch (N, Hl) = x fc_w^T + fc_b: this rank's columns, complete */
    DT_CHECK(dt_tp_column_forward(tp, fch, x, fc_w, fc_b, N, C, Hl));
    DT_CHECK(dt_gelu_forward(fchg, fch, N * Hl));
    /* y (N, C) = sum over ranks of fchg_r mproj_r^T, + mproj_b */
    return dt_tp_row_forward(tp, y, fchg, mproj_w, mproj_b, N, Hl, C);
}

dt_result dt_tp_mlp_backward(dt_comm *tp, float *dx, float *dfc_w, float *dfc_b,
                             float *dmproj_w, float *dmproj_b, float *work, const float *dy,
                             const float *x, const float *fch, const float *fchg,
                             const float *fc_w, const float *mproj_w, size_t N, size_t C,
                             size_t Hl)
{
    if (!work || !fch)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_mlp_backward: NULL %s", work ? "fch" : "work");
    float *dfchg = work, *dfch = work + N * Hl; /* (N, Hl) each */
    DT_CHECK(dt_tp_row_backward(tp, dfchg, dmproj_w, dmproj_b, dy, fchg, mproj_w, N, Hl, C));
    memset(dfch, 0, N * Hl * sizeof(float));
    DT_CHECK(dt_gelu_backward(dfch, dfchg, fch, N * Hl));
    return dt_tp_column_backward(tp, dx, dfc_w, dfc_b, dfch, x, fc_w, N, C, Hl);
}

/* ================================================================ attention */

/* This rank's heads: NH/t of them, C/t channels. */
static dt_result heads(dt_comm *tp, const char *fn, size_t C, size_t NH, size_t *Cl,
                       size_t *NHl)
{
    size_t t, r;
    DT_CHECK(nn_tp_group(tp, fn, &t, &r));
    if (NH == 0 || C % NH)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %zu channels in %zu heads", fn, C, NH);
    if (NH % t)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %zu heads do not split over %zu "
                       "tensor-parallel ranks (heads %% t = %zu)", fn, NH, t, NH % t);
    *Cl = C / t, *NHl = NH / t;
    return DT_OK;
}

dt_result dt_tp_attention_forward(dt_comm *tp, float *y, float *qkv, float *att, float *atty,
                                  const float *x, const float *qkv_w, const float *qkv_b,
                                  const float *proj_w, const float *proj_b, size_t B, size_t T,
                                  size_t C, size_t NH)
{
    size_t Cl, NHl, N = B * T;
    DT_CHECK(heads(tp, "dt_tp_attention_forward", C, NH, &Cl, &NHl));
    /* q | k | v of this rank's heads (N, 3C/t); the input is not split */
    DT_CHECK(dt_tp_column_forward(tp, qkv, x, qkv_w, qkv_b, N, C, 3 * Cl));
    /* the heads never interact until the projection: all local */
    DT_CHECK(dt_attention_forward(atty, att, qkv, B, T, Cl, NHl));
    return dt_tp_row_forward(tp, y, atty, proj_w, proj_b, N, Cl, C);
}

dt_result dt_tp_attention_backward(dt_comm *tp, float *dx, float *dqkv_w, float *dqkv_b,
                                   float *dproj_w, float *dproj_b, float *work, const float *dy,
                                   const float *x, const float *qkv, const float *att,
                                   const float *atty, const float *qkv_w, const float *proj_w,
                                   size_t B, size_t T, size_t C, size_t NH)
{
    size_t Cl, NHl, N = B * T;
    DT_CHECK(heads(tp, "dt_tp_attention_backward", C, NH, &Cl, &NHl));
    if (!work)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_attention_backward: NULL work");
    float *datty = work, *dqkv = work + N * Cl; /* (N, C/t), (N, 3C/t) */
    DT_CHECK(dt_tp_row_backward(tp, datty, dproj_w, dproj_b, dy, atty, proj_w, N, Cl, C));
    memset(dqkv, 0, N * 3 * Cl * sizeof(float));
    DT_CHECK(dt_attention_backward(dqkv, datty, qkv, att, B, T, Cl, NHl));
    return dt_tp_column_backward(tp, dx, dqkv_w, dqkv_b, dqkv, x, qkv_w, N, C, 3 * Cl);
}

dt_result dt_tp_shard_qkv(float *w_r, float *b_r, const float *w, const float *b, size_t C,
                          size_t NH, int t, int r)
{
    if (!(w_r && w) && !(b_r && b))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard_qkv: neither a weight nor a bias");
    if (t < 1 || r < 0 || r >= t || NH == 0 || C % NH)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard_qkv: rank %d of %d, %zu channels in %zu "
                       "heads", r, t, C, NH);
    if (NH % (size_t)t)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tp_shard_qkv: %zu heads do not split over %d "
                       "tensor-parallel ranks (heads %% t = %zu)", NH, t, NH % (size_t)t);
    /* rows [part C + r Cl, +Cl) of each third: this rank's heads' q, k, v
     * (not 3C/t contiguous rows, which would give one rank all the queries) */
    size_t Cl = C / (size_t)t;
    for (size_t part = 0; part < 3; part++) {
        size_t from = part * C + (size_t)r * Cl, to = part * Cl;
        if (w && w_r)
            memcpy(w_r + to * C, w + from * C, Cl * C * sizeof(float));
        if (b && b_r)
            memcpy(b_r + to, b + from, Cl * sizeof(float));
    }
    return DT_OK;
}
