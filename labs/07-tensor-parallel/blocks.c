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
    (void)tp, (void)y, (void)a, (void)p;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_tp_mlp_backward(lab_tp *tp, float *dh, const lab_tp_block_w *g, const float *dy,
                              const lab_tp_block_acts *a, const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dh (Nl, C) = the gradient of the MLP's input, the same
     * on every rank; g's fc and mproj tensors += this rank's gradients.
     * Section 3: one collective in this backward. */
    (void)tp, (void)dh, (void)g, (void)dy, (void)a, (void)p;
    return DT_ERR_NOT_IMPLEMENTED;
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
    (void)w_r, (void)b_r, (void)w, (void)b, (void)C, (void)NH, (void)t, (void)r;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_tp_attention_forward(lab_tp *tp, float *y, lab_tp_block_acts *a,
                                   const lab_tp_block_w *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: y (Nl, C) = proj(attention(qkv(a->ln1))) + proj's
     * bias, on every rank; a->qkv, a->att, a->atty hold this rank's heads'
     * part. Section 4: one collective in this forward. */
    (void)tp, (void)y, (void)a, (void)p;
    return DT_ERR_NOT_IMPLEMENTED;
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
    (void)tp, (void)dh, (void)g, (void)dy, (void)a, (void)p;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
