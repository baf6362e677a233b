/* predict.c - lab 07, task 7: predict, then measure (chapter 07, sections
 * 6 and 7): the bytes a rank sends in a training step, from the formulas
 * alone. */
#include "tp.h"

dt_result lab_tp_predict_step_bytes(const dt_gpt_config *cfg, size_t B, size_t T, int t, int sp,
                                    uint64_t *bytes)
{
    /* BEGIN STUDENT CODE */
    if (!cfg || !bytes || t < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_predict_step_bytes: NULL argument or t = %d",
                       t);
    size_t u = (size_t)t, C = cfg->channels, N = B * T, L = cfg->layers;
    if (cfg->vocab % u || cfg->heads % u || C % u || N % u)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_predict_step_bytes: V %zu, %zu heads, C %zu "
                       "or N %zu does not split over %d ranks", cfg->vocab, cfg->heads, C, N, t);
    /* In units of (t-1)/t of a buffer's bytes: a half (reduce-scatter or
     * allgather) is 1, an allreduce 2. The activations are (N, C). */
    uint64_t halves_of_act, halves_of_small;
    if (!sp) /* the embedding, 2 per block each way, the head's input gradient */
        halves_of_act = 2 * (1 + 4 * L + 1);
    else     /* the same borders as halves, plus the column layers' gathers
                again in the backward: the head, and qkv and fc of each block */
        halves_of_act = (1 + 4 * L + 1) * 2 + 1 + 2 * L;
    /* the loss: the row maxima (N) and two sums per row (2N), allreduced;
     * with sp, the replicated tensors' gradients, allreduced in the sync */
    halves_of_small = 2 * 3 * N;
    if (sp)
        halves_of_small += 2 * (L * 6 * C + cfg->context * C + 2 * C);
    *bytes = (halves_of_act * N * C + halves_of_small) * 4 / u * (u - 1);
    return DT_OK;
    /* END STUDENT CODE */
}
