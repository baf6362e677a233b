/* tp_vocab.c - the embedding and the cross-entropy with the vocabulary
 * split over a tensor-parallel group (chapter 07, section 5): rank r holds
 * rows [r V/t, (r+1) V/t) of wte and of the LM head.
 *
 *   embedding  each rank writes its tokens' rows and zeros for the others;
 *              an allreduce sums them (exactly one non-zero per token, and
 *              x + 0 = x: bit for bit one rank's lookup); wpe after
 *   loss       m_i = max_r max_j l_rij                    allreduce MAX, N floats
 *              S_i = sum_r sum_j e^(l_rij - m_i), and l_{i,y_i} - m_i from the
 *              rank that holds y_i                        allreduce SUM, 2N floats
 *              L = 1/N sum_i (log S_i - (l_{i,y_i} - m_i))
 *              never the (N, V) logits: three N-vectors, whatever V. Each
 *              rank must subtract the GLOBAL max: sums of e^(l - m_r) on
 *              each rank's own scale would mean nothing added together.
 *   backward   dl_r = scale (p_r - onehot_r(y)), local.
 * On one rank (tp NULL or of size 1) each is the plain layer of layers.c. */
#include "tp_internal.h"

#include <math.h>
#include <string.h>

/* The vocabulary's split: V/t rows from start. */
static dt_result vocab(dt_comm *tp, const char *fn, size_t V, size_t *t, size_t *Vl,
                       size_t *start)
{
    size_t r;
    DT_CHECK(nn_tp_group(tp, fn, t, &r));
    if (V == 0 || V % *t)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a vocabulary of %zu does not split over %zu "
                       "tensor-parallel ranks", fn, V, *t);
    *Vl = V / *t, *start = r * *Vl;
    return DT_OK;
}

static dt_result check_ids(const char *fn, const char *what, const int32_t *ids, size_t n,
                           size_t V)
{
    if (!ids)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, what);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= V)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: %s %d of row %zu is outside [0, %zu)", fn,
                           what, (int)ids[i], i, V);
    return DT_OK;
}

/* ================================================================ embedding */

dt_result dt_tp_embedding_forward(dt_comm *tp, float *out, const int32_t *tokens,
                                  const float *wte_r, const float *wpe, size_t B, size_t T,
                                  size_t C, size_t V)
{
    const char *fn = "dt_tp_embedding_forward";
    size_t t, Vl, start, N = B * T;
    DT_CHECK(vocab(tp, fn, V, &t, &Vl, &start));
    if (t == 1)
        return dt_embedding_forward(out, tokens, wte_r, wpe, B, T, C, V);
    if (!out || !wte_r || N == 0 || C == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer or zero size", fn);
    DT_CHECK(check_ids(fn, "token", tokens, N, V));
    for (size_t i = 0; i < N; i++) { /* this rank's rows of wte, zeros elsewhere */
        size_t tok = (size_t)tokens[i];
        if (tok >= start && tok < start + Vl)
            memcpy(out + i * C, wte_r + (tok - start) * C, C * sizeof(float));
        else
            memset(out + i * C, 0, C * sizeof(float));
    }
    DT_CHECK(dt_allreduce(out, out, N * C, DT_F32, DT_SUM, tp));
    if (wpe) /* replicated: added after the sum, once */
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < C; c++)
                out[i * C + c] += wpe[(i % T) * C + c];
    return DT_OK;
}

dt_result dt_tp_embedding_backward(dt_comm *tp, float *dwte_r, float *dwpe, const float *dout,
                                   const int32_t *tokens, size_t B, size_t T, size_t C,
                                   size_t V)
{
    const char *fn = "dt_tp_embedding_backward";
    size_t t, Vl, start, N = B * T;
    DT_CHECK(vocab(tp, fn, V, &t, &Vl, &start));
    if (t == 1)
        return dt_embedding_backward(dwte_r, dwpe, dout, tokens, B, T, C, V);
    if (!dout || N == 0 || C == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL dout or zero size", fn);
    DT_CHECK(check_ids(fn, "token", tokens, N, V));
    /* dout is the same on every rank (it left the first block's f): each
     * rank adds into its own rows, wpe's gradient comes out replicated */
    for (size_t i = 0; i < N; i++) {
        size_t tok = (size_t)tokens[i];
        const float *d = dout + i * C;
        for (size_t c = 0; c < C; c++) {
            if (dwte_r && tok >= start && tok < start + Vl)
                dwte_r[(tok - start) * C + c] += d[c];
            if (dwpe)
                dwpe[(i % T) * C + c] += d[c];
        }
    }
    return DT_OK;
}

/* ================================================================ cross-entropy */

/* argmax[i] (N) = the first column of row i's largest logit over the whole
 * vocabulary, given the global row maxima: each rank offers the first
 * column where its slice reaches the max (V where it does not), the
 * smallest offer wins. */
static dt_result whole_argmax(dt_comm *tp, int32_t *argmax, const float *logits_r,
                              const float *mx, size_t N, size_t Vl, size_t start, size_t V)
{
    for (size_t i = 0; i < N; i++) {
        const float *l = logits_r + i * Vl;
        argmax[i] = (int32_t)V;
        for (size_t j = 0; j < Vl; j++)
            if (l[j] == mx[i]) {
                argmax[i] = (int32_t)(start + j);
                break;
            }
    }
    return dt_allreduce(argmax, argmax, N, DT_I32, DT_MIN, tp);
}

static dt_result xent_split(dt_comm *tp, float *probs_r, float *losses, double *mean_loss,
                            int32_t *argmax, const float *logits_r, const int32_t *labels,
                            size_t N, size_t V, size_t Vl, size_t start, float *red)
{
    float *mx = red, *sum = red + N, *tgt = red + 2 * N; /* sum and tgt: one reduction */
    for (size_t i = 0; i < N; i++) {
        const float *l = logits_r + i * Vl;
        float m = l[0];
        for (size_t j = 1; j < Vl; j++)
            m = l[j] > m ? l[j] : m;
        mx[i] = m;
    }
    DT_CHECK(dt_allreduce(mx, mx, N, DT_F32, DT_MAX, tp));
    for (size_t i = 0; i < N; i++) {
        const float *l = logits_r + i * Vl;
        float *p = probs_r + i * Vl;
        double s = 0;
        for (size_t j = 0; j < Vl; j++) {
            p[j] = expf(l[j] - mx[i]);
            s += p[j];
        }
        size_t y = (size_t)labels[i];
        sum[i] = (float)s;
        tgt[i] = y >= start && y < start + Vl ? l[y - start] - mx[i] : 0.0f;
    }
    DT_CHECK(dt_allreduce(sum, sum, 2 * N, DT_F32, DT_SUM, tp));
    double total = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t j = 0; j < Vl; j++)
            probs_r[i * Vl + j] = (float)(probs_r[i * Vl + j] / (double)sum[i]);
        /* -log p[label] = log S - (l_y - m): finite even when p underflows */
        double loss = log((double)sum[i]) - (double)tgt[i];
        if (losses)
            losses[i] = (float)loss;
        total += loss;
    }
    if (mean_loss)
        *mean_loss = total / (double)N;
    return argmax ? whole_argmax(tp, argmax, logits_r, mx, N, Vl, start, V) : DT_OK;
}

dt_result dt_tp_xent_forward(dt_comm *tp, float *probs_r, float *losses, double *mean_loss,
                             int32_t *argmax, const float *logits_r, const int32_t *labels,
                             size_t N, size_t V)
{
    const char *fn = "dt_tp_xent_forward";
    size_t t, Vl, start;
    DT_CHECK(vocab(tp, fn, V, &t, &Vl, &start));
    if (t == 1) {
        DT_CHECK(dt_softmax_xent_forward(probs_r, losses, mean_loss, logits_r, labels, N, V));
        for (size_t i = 0; argmax && i < N; i++) {
            size_t best;
            DT_CHECK(dt_vec_argmax(logits_r + i * V, V, &best));
            argmax[i] = (int32_t)best;
        }
        return DT_OK;
    }
    if (!probs_r || !logits_r || N == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer or zero rows", fn);
    DT_CHECK(check_ids(fn, "label", labels, N, V));
    float *red = dt_mem_alloc(DT_MEM_COMM, 3 * N * sizeof(float));
    if (!red)
        return dt_fail(DT_ERR_NOMEM, "%s: %zu rows", fn, N);
    dt_result r = xent_split(tp, probs_r, losses, mean_loss, argmax, logits_r, labels, N, V, Vl,
                             start, red);
    dt_mem_free(red);
    return r;
}

dt_result dt_tp_xent_backward(dt_comm *tp, float *dlogits_r, const float *probs_r,
                              const int32_t *labels, float scale, size_t N, size_t V)
{
    const char *fn = "dt_tp_xent_backward";
    size_t t, Vl, start;
    DT_CHECK(vocab(tp, fn, V, &t, &Vl, &start));
    if (t == 1)
        return dt_softmax_xent_backward(dlogits_r, probs_r, labels, scale, N, V);
    if (!dlogits_r || !probs_r || N == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer or zero rows", fn);
    DT_CHECK(check_ids(fn, "label", labels, N, V));
    for (size_t i = 0; i < N; i++) {
        size_t y = (size_t)labels[i];
        for (size_t j = 0; j < Vl; j++) {
            float onehot = start + j == y ? 1.0f : 0.0f;
            dlogits_r[i * Vl + j] += scale * (probs_r[i * Vl + j] - onehot);
        }
    }
    return DT_OK;
}
