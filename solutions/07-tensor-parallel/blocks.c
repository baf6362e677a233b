/* blocks.c - lab 07, tasks 2 and 3: the Megatron MLP (chapter 07, section
 * 3) and attention split by heads (section 4), built from your linear
 * layers of task 1. */
#include "tp.h"

#include <string.h>

/* ================================================================ task 2 */

dt_result lab_tp_mlp_forward(lab_tp *tp, float *y, lab_tp_block_acts *a, const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y (Nl, C) = mproj(GELU(fc(a->ln2))) + mproj's bias,
     * what one rank with the whole MLP computes, on every rank; a->fch and
     * a->fchg (N, 4C/t) hold this rank's slice of fc's output before and
     * after GELU. Section 3: one collective in this forward. */
    if (!tp || !y || !a || !p)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_mlp_forward: NULL argument");
    size_t N = tp->N, C = tp->cfg.channels, H = 4 * C / (size_t)tp->t;
    DT_CHECK(lab_column_forward(tp, a->fch, a->ln2, p->fc_w, p->fc_b, N, C, H));
    DT_CHECK(dt_gelu_forward(a->fchg, a->fch, N * H));
    return lab_row_forward(tp, y, a->fchg, p->mproj_w, p->mproj_b, N, H, C);
    /* END STUDENT CODE */
}

dt_result lab_tp_mlp_backward(lab_tp *tp, float *dh, const lab_tp_block_w *g, const float *dy,
                              const lab_tp_block_acts *a, const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dh (Nl, C) = the gradient of the MLP's input, the same
     * on every rank; g's fc and mproj tensors += this rank's gradients.
     * Section 3: one collective in this backward. */
    if (!tp || !dh || !g || !dy || !a || !p)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_mlp_backward: NULL argument");
    size_t N = tp->N, C = tp->cfg.channels, H = 4 * C / (size_t)tp->t;
    float *dfchg = lab_tp_scratch(tp, LAB_TP_SLOT_BLOCK0, N * H);
    float *dfch = lab_tp_scratch(tp, LAB_TP_SLOT_BLOCK1, N * H);
    if (!dfchg || !dfch)
        return DT_ERR_NOMEM;
    DT_CHECK(lab_row_backward(tp, dfchg, g->mproj_w, g->mproj_b, dy, a->fchg, p->mproj_w, N, H,
                              C));
    memset(dfch, 0, N * H * sizeof(float));
    DT_CHECK(dt_gelu_backward(dfch, dfchg, a->fch, N * H));
    return lab_column_backward(tp, dh, g->fc_w, g->fc_b, dfch, a->ln2, p->fc_w, N, C, H);
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_tp_shard_qkv(float *w_r, float *b_r, const float *w, const float *b, size_t C,
                           size_t NH, int t, int r)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: w_r (3C/t, C) = the q, k and v rows of heads
     * [r NH/t, (r+1) NH/t) of w (3C, C), q | k | v; b_r likewise. Section 4:
     * what is split is the heads, hence the weights; the input is not. */
    if (!w_r || !w)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_shard_qkv: NULL weight");
    if (t < 1 || r < 0 || r >= t || NH == 0 || C % NH)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_shard_qkv: rank %d of %d, %zu channels, %zu "
                       "heads", r, t, C, NH);
    if (NH % (size_t)t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_shard_qkv: %zu heads do not split over %d "
                       "tensor-parallel ranks (heads %% t = %zu)", NH, t, NH % (size_t)t);
    size_t Cl = C / (size_t)t; /* NH/t heads of C/NH channels */
    for (size_t part = 0; part < 3; part++) { /* q, k, v */
        size_t from = part * C + (size_t)r * Cl, to = part * Cl;
        memcpy(w_r + to * C, w + from * C, Cl * C * sizeof(float));
        if (b && b_r)
            memcpy(b_r + to, b + from, Cl * sizeof(float));
    }
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_tp_attention_forward(lab_tp *tp, float *y, lab_tp_block_acts *a,
                                   const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y (Nl, C) = proj(attention(qkv(a->ln1))) + proj's
     * bias, on every rank; a->qkv, a->att, a->atty hold this rank's heads'
     * part. Section 4: one collective in this forward. */
    if (!tp || !y || !a || !p)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_attention_forward: NULL argument");
    size_t N = tp->N, C = tp->cfg.channels, t = (size_t)tp->t, NH = tp->cfg.heads;
    if (NH % t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_attention_forward: %zu heads do not split "
                       "over %zu ranks", NH, t);
    DT_CHECK(lab_column_forward(tp, a->qkv, a->ln1, p->qkv_w, p->qkv_b, N, C, 3 * C / t));
    DT_CHECK(dt_attention_forward(a->atty, a->att, a->qkv, tp->B, tp->T, C / t, NH / t));
    return lab_row_forward(tp, y, a->atty, p->proj_w, p->proj_b, N, C / t, C);
    /* END STUDENT CODE */
}

dt_result lab_tp_attention_backward(lab_tp *tp, float *dh, const lab_tp_block_w *g,
                                    const float *dy, const lab_tp_block_acts *a,
                                    const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dh (Nl, C) = the gradient of the attention's input, the
     * same on every rank; g's qkv and proj tensors += this rank's
     * gradients. Section 4: one collective in this backward. */
    if (!tp || !dh || !g || !dy || !a || !p)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_attention_backward: NULL argument");
    size_t N = tp->N, C = tp->cfg.channels, t = (size_t)tp->t, Cl = C / t;
    float *datty = lab_tp_scratch(tp, LAB_TP_SLOT_BLOCK0, N * Cl);
    float *dqkv = lab_tp_scratch(tp, LAB_TP_SLOT_BLOCK1, N * 3 * Cl);
    if (!datty || !dqkv)
        return DT_ERR_NOMEM;
    DT_CHECK(lab_row_backward(tp, datty, g->proj_w, g->proj_b, dy, a->atty, p->proj_w, N, Cl,
                              C));
    memset(dqkv, 0, N * 3 * Cl * sizeof(float));
    DT_CHECK(dt_attention_backward(dqkv, datty, a->qkv, a->att, tp->B, tp->T, Cl,
                                   tp->cfg.heads / t));
    return lab_column_backward(tp, dh, g->qkv_w, g->qkv_b, dqkv, a->ln1, p->qkv_w, N, C, 3 * Cl);
    /* END STUDENT CODE */
}
