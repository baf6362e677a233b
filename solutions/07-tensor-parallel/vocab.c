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
    if (!tp || !out || !wte_r || !wpe || !tokens)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_vocab_embed_forward: NULL argument");
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, T = tp->T;
    size_t Vl = tp->cfg.vocab / (size_t)tp->t, start = (size_t)tp->rank * Vl;
    float *all = tp->sp ? lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * C) : out;
    if (!all)
        return DT_ERR_NOMEM;
    for (size_t i = 0; i < N; i++) { /* this rank's rows of wte, zeros elsewhere */
        size_t tok = (size_t)tokens[i];
        if (tok >= start && tok < start + Vl)
            memcpy(all + i * C, wte_r + (tok - start) * C, C * sizeof(float));
        else
            memset(all + i * C, 0, C * sizeof(float));
    }
    if (tp->sp)
        DT_CHECK(dt_reduce_scatter(all, out, Nl * C, DT_F32, DT_SUM, tp->comm));
    else
        DT_CHECK(dt_allreduce(out, out, N * C, DT_F32, DT_SUM, tp->comm));
    size_t row0 = tp->sp ? (size_t)tp->rank * Nl : 0;
    for (size_t i = 0; i < Nl; i++) /* replicated: added after the sum, once */
        for (size_t c = 0; c < C; c++)
            out[i * C + c] += wpe[((row0 + i) % T) * C + c];
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_vocab_embed_backward(lab_tp *tp, float *dwte_r, float *dwpe, const float *dout,
                                   const int32_t *tokens)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dwte_r += rows [r V/t, (r+1) V/t) of the whole wte's
     * gradient; dwpe += the gradient from this rank's rows. Section 5: the
     * gradient of the embedding's output is the same on every rank. */
    if (!tp || !dwte_r || !dout || !tokens)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_vocab_embed_backward: NULL argument");
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, T = tp->T;
    size_t Vl = tp->cfg.vocab / (size_t)tp->t, start = (size_t)tp->rank * Vl;
    const float *dall = dout;
    if (tp->sp) {
        float *buf = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, N * C);
        if (!buf)
            return DT_ERR_NOMEM;
        DT_CHECK(dt_allgather(dout, buf, Nl * C, DT_F32, tp->comm));
        dall = buf;
    }
    for (size_t i = 0; i < N; i++) {
        size_t tok = (size_t)tokens[i];
        if (tok >= start && tok < start + Vl)
            for (size_t c = 0; c < C; c++)
                dwte_r[(tok - start) * C + c] += dall[i * C + c];
    }
    size_t row0 = tp->sp ? (size_t)tp->rank * Nl : 0;
    if (dwpe)
        for (size_t i = 0; i < Nl; i++)
            for (size_t c = 0; c < C; c++)
                dwpe[((row0 + i) % T) * C + c] += dout[i * C + c];
    return DT_OK;
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
    if (!tp || !probs_r || !loss || !logits_r || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_vocab_xent_forward: NULL argument");
    size_t N = tp->N, Vl = tp->cfg.vocab / (size_t)tp->t, start = (size_t)tp->rank * Vl;
    float *red = lab_tp_scratch(tp, LAB_TP_SLOT_LINEAR0, 3 * N);
    if (!red)
        return DT_ERR_NOMEM;
    float *mx = red, *sum = red + N, *tgt = red + 2 * N; /* sum and tgt: one reduction */
    for (size_t i = 0; i < N; i++) {
        const float *l = logits_r + i * Vl;
        float m = l[0];
        for (size_t j = 1; j < Vl; j++)
            m = l[j] > m ? l[j] : m;
        mx[i] = m;
    }
    DT_CHECK(dt_allreduce(mx, mx, N, DT_F32, DT_MAX, tp->comm));
    for (size_t i = 0; i < N; i++) {
        const float *l = logits_r + i * Vl;
        float *p = probs_r + i * Vl, s = 0;
        for (size_t j = 0; j < Vl; j++)
            s += p[j] = expf(l[j] - mx[i]);
        size_t lab = (size_t)labels[i];
        sum[i] = s;
        tgt[i] = lab >= start && lab < start + Vl ? l[lab - start] - mx[i] : 0.0f;
    }
    DT_CHECK(dt_allreduce(sum, sum, 2 * N, DT_F32, DT_SUM, tp->comm));
    double total = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < Vl; j++)
            probs_r[i * Vl + j] /= sum[i];
        total += logf(sum[i]) - tgt[i]; /* -log(e^(l - m) / S) */
    }
    *loss = (float)(total / (double)N);
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_vocab_xent_backward(lab_tp *tp, float *dlogits_r, const float *probs_r,
                                  const int32_t *labels, float scale)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: dlogits_r += scale (probs_r - this rank's slice of
     * onehot(label)). Section 5: no communication. */
    if (!tp || !dlogits_r || !probs_r || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_vocab_xent_backward: NULL argument");
    size_t N = tp->N, Vl = tp->cfg.vocab / (size_t)tp->t, start = (size_t)tp->rank * Vl;
    for (size_t i = 0; i < N; i++) {
        size_t lab = (size_t)labels[i];
        for (size_t j = 0; j < Vl; j++) {
            float onehot = start + j == lab ? 1.0f : 0.0f;
            dlogits_r[i * Vl + j] += scale * (probs_r[i * Vl + j] - onehot);
        }
    }
    return DT_OK;
    /* END STUDENT CODE */
}
