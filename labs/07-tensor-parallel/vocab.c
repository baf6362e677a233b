/* vocab.c - lab 07, task 4: the embedding and the cross-entropy with the
 * vocabulary split over the ranks (chapter 07, section 5), and their
 * sequence-parallel forms (task 6, section 7). */
#include "tp.h"

#include <math.h>
#include <string.h>

dt_result lab_vocab_embed_forward(lab_tp *tp, float *out, const float *wte_r, const float *wpe,
                                  const int32_t *tokens)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: out (Nl, C) = wte[token] + wpe[position] for this
     * rank's rows, equal to one rank's dt_embedding_forward with the whole
     * wte, on every rank. Section 5: each token's row lives on one rank
     * only. */
    (void)tp, (void)out, (void)wte_r, (void)wpe, (void)tokens;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_vocab_embed_backward(lab_tp *tp, float *dwte_r, float *dwpe, const float *dout,
                                   const int32_t *tokens)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dwte_r += rows [r V/t, (r+1) V/t) of the whole wte's
     * gradient; dwpe += the gradient from this rank's rows. Section 5: the
     * gradient of the embedding's output is the same on every rank. */
    (void)tp, (void)dwte_r, (void)dwpe, (void)dout, (void)tokens;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_vocab_xent_forward(lab_tp *tp, float *probs_r, float *loss, const float *logits_r,
                                 const int32_t *labels)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: probs_r = this rank's slice of the softmax of each
     * whole row, *loss = the mean of -log p[label], both what one rank with
     * the whole logits computes. Section 5: N numbers per reduction, never
     * the (N, V) logits. */
    (void)tp, (void)probs_r, (void)loss, (void)logits_r, (void)labels;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_vocab_xent_backward(lab_tp *tp, float *dlogits_r, const float *probs_r,
                                  const int32_t *labels, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dlogits_r += scale (probs_r - this rank's slice of
     * onehot(label)). Section 5: no communication. */
    (void)tp, (void)dlogits_r, (void)probs_r, (void)labels, (void)scale;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
