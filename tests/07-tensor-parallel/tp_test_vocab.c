/* tp_test_vocab.c - the rank functions of the vocabulary-parallel tests
 * (task 4, and task 6 with sequence parallelism): the embedding against
 * dt_embedding_* on one rank (bit for bit: each row is one rank's row plus
 * zeros), the cross-entropy against dt_softmax_xent_* (tolerance 1e-6). */
#include "tp_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { N = TPT_B * TPT_T };

typedef struct {
    dt_gpt_config cfg;
    lab_tp tp;
    size_t C, V, Vl, Nl, r0;
    int32_t tokens[N], labels[N];
} vocab_case;

static dt_result open_case(vocab_case *v, dt_comm *world, int sp)
{
    memset(v, 0, sizeof *v);
    v->cfg = tpt_config(1);
    DT_CHECK(lab_tp_init(&v->tp, world, &v->cfg, TPT_B, TPT_T, sp));
    v->C = v->cfg.channels, v->V = v->cfg.vocab, v->Vl = v->V / (size_t)v->tp.t;
    v->Nl = v->tp.Nl, v->r0 = sp ? (size_t)v->tp.rank * v->Nl : 0;
    tpt_batch(v->tokens, v->labels, N, v->V, TPT_DATA_SEED);
    return dt_comm_stats_reset(world);
}

/* The first element where got and want differ, bit for bit (n: none). */
static size_t first_diff(const float *got, const float *want, size_t n)
{
    size_t i = 0;
    while (i < n && !memcmp(&got[i], &want[i], sizeof *got))
        i++;
    return i;
}

/* Every rank's copy of x (n floats) must be rank 0's, bit for bit. */
static dt_result same_on_every_rank(dt_comm *comm, const float *x, size_t n, const char *what)
{
    float *root = malloc(n * sizeof *root);
    if (!root)
        return dt_fail(DT_ERR_NOMEM, "same_on_every_rank");
    dt_result r = dt_broadcast(x, root, n, DT_F32, 0, comm);
    size_t i = r == DT_OK ? first_diff(x, root, n) : n;
    if (i < n)
        r = dt_fail(DT_ERR_MISMATCH, "%s[%zu] = %.9g, rank 0's is %.9g (the gradient of the "
                    "embedding's output is the same on every rank)", what, i, (double)x[i],
                    (double)root[i]);
    free(root);
    return r;
}

static dt_result embed_check(vocab_case *v)
{
    lab_tp *tp = &v->tp;
    size_t C = v->C, V = v->V, T = TPT_T, Vl = v->Vl, Nl = v->Nl, r0 = v->r0;
    int t = tp->t;
    float *wte = malloc(V * C * sizeof(float)), *wpe = malloc(T * C * sizeof(float));
    float *out = malloc(N * C * sizeof(float)), *want = calloc(N * C, sizeof(float));
    float *dout = malloc(N * C * sizeof(float)), *dwte = calloc(V * C, sizeof(float));
    float *dwpe = calloc(T * C, sizeof(float)), *dwte_r = malloc(Vl * C * sizeof(float));
    float *dwpe_r = malloc(T * C * sizeof(float));
    dt_result res = wte && wpe && out && want && dout && dwte && dwpe && dwte_r && dwpe_r
                        ? DT_OK : dt_fail(DT_ERR_NOMEM, "embed_check");
    if (res != DT_OK)
        goto out;
    tpt_fill_normal(wte, V * C, 41, 0.5f);
    tpt_fill_normal(wpe, T * C, 42, 0.5f);
    tpt_fill_normal(dout, N * C, 43, 1.0f);
    res = dt_embedding_forward(want, v->tokens, wte, wpe, TPT_B, T, C, V);
    if (res == DT_OK)
        res = lab_vocab_embed_forward(tp, out, wte + (size_t)tp->rank * Vl * C, wpe, v->tokens);
    size_t at = res == DT_OK ? first_diff(out, want + r0 * C, Nl * C) : Nl * C;
    if (at < Nl * C)
        res = dt_fail(DT_ERR_MISMATCH, "the embedding's output at row %zu, channel %zu (token "
                      "%d, position %zu) is %.9g, one rank with the whole wte gives %.9g",
                      r0 + at / C, at % C, (int)v->tokens[r0 + at / C], (r0 + at / C) % T,
                      (double)out[at], (double)want[r0 * C + at]);
    tpt_calls fwd = {1, 0, 0, tpt_ring_allreduce_bytes(N * C, t)};
    tpt_calls sp_fwd = {0, 1, 0, tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, "embedding forward", tp->sp ? sp_fwd : fwd);
    /* backward: the reference on the whole dout; the lab from its rows,
     * into gradients that start at 1 (they must accumulate) */
    for (size_t k = 0; k < Vl * C; k++)
        dwte_r[k] = 1, dwte[(size_t)tp->rank * Vl * C + k] = 1;
    if (res == DT_OK)
        res = dt_embedding_backward(dwte, NULL, dout, v->tokens, TPT_B, T, C, V);
    for (size_t k = 0; k < T * C; k++)
        dwpe_r[k] = 1, dwpe[k] = 1;
    for (size_t i = r0; i < r0 + Nl; i++) /* wpe: the rows this rank holds */
        for (size_t c = 0; c < C; c++)
            dwpe[(i % T) * C + c] += dout[i * C + c];
    if (res == DT_OK)
        res = lab_vocab_embed_backward(tp, dwte_r, dwpe_r, dout + r0 * C, v->tokens);
    at = res == DT_OK ? first_diff(dwte_r, dwte + (size_t)tp->rank * Vl * C, Vl * C) : Vl * C;
    if (at < Vl * C)
        res = dt_fail(DT_ERR_MISMATCH, "wte's gradient, this rank's row %zu (token %zu), "
                      "channel %zu: %.9g, one rank gives %.9g (+= onto 1)", at / C,
                      (size_t)tp->rank * Vl + at / C, at % C, (double)dwte_r[at],
                      (double)dwte[(size_t)tp->rank * Vl * C + at]);
    at = res == DT_OK ? first_diff(dwpe_r, dwpe, T * C) : T * C;
    if (at < T * C)
        res = dt_fail(DT_ERR_MISMATCH, "wpe's gradient at position %zu, channel %zu: %.9g, the "
                      "sum of dout over this rank's rows gives %.9g (+= onto 1)", at / C, at % C,
                      (double)dwpe_r[at], (double)dwpe[at]);
    tpt_calls sp_bwd = {0, 0, 1, tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, "embedding backward", tp->sp ? sp_bwd : (tpt_calls){0});
    if (res == DT_OK && !tp->sp)
        res = same_on_every_rank(tp->comm, dwpe_r, T * C, "wpe's gradient");
out:
    free(wte), free(wpe), free(out), free(want), free(dout), free(dwte), free(dwpe);
    free(dwte_r), free(dwpe_r);
    return res;
}

static dt_result xent_check(vocab_case *v)
{
    lab_tp *tp = &v->tp;
    size_t V = v->V, Vl = v->Vl, start = (size_t)tp->rank * Vl;
    float *logits = malloc(N * V * sizeof(float)), *probs = malloc(N * V * sizeof(float));
    float *lr = malloc(N * Vl * sizeof(float)), *pr = malloc(N * Vl * sizeof(float));
    float *dl = calloc(N * V, sizeof(float)), *dlr = malloc(N * Vl * sizeof(float)), loss;
    double mean;
    dt_result res = logits && probs && lr && pr && dl && dlr ? DT_OK
                                                              : dt_fail(DT_ERR_NOMEM, "xent");
    if (res != DT_OK)
        goto out;
    tpt_fill_normal(logits, N * V, 51, 3.0f);
    for (size_t j = 0; j < V; j++) /* a row whose exponentials overflow unless shifted */
        logits[j] += 1e4f;
    for (size_t i = 0; i < N; i++)
        memcpy(lr + i * Vl, logits + i * V + start, Vl * sizeof(float));
    res = dt_softmax_xent_forward(probs, NULL, &mean, logits, v->labels, N, V);
    if (res == DT_OK)
        res = dt_softmax_xent_backward(dl, probs, v->labels, 0.25f, N, V);
    if (res == DT_OK)
        res = lab_vocab_xent_forward(tp, pr, &loss, lr, v->labels);
    if (res == DT_OK && !(fabs(loss - mean) <= 1e-6 * fabs(mean)))
        res = dt_fail(DT_ERR_MISMATCH, "loss %.9g, one rank with the whole logits gives %.9g "
                      "(the max and the sum of the exponentials are the whole row's)",
                      (double)loss, mean);
    for (size_t i = 0; res == DT_OK && i < N; i++)
        for (size_t j = 0; j < Vl; j++)
            if (!(fabsf(pr[i * Vl + j] - probs[i * V + start + j]) <= 1e-6f))
                res = dt_fail(DT_ERR_MISMATCH, "probs_r[%zu][%zu] = %.9g, expected %.9g", i,
                              j, (double)pr[i * Vl + j], (double)probs[i * V + start + j]);
    dt_stats st;
    if (res == DT_OK)
        res = dt_comm_stats(tp->comm, &st);
    uint64_t most = 3 * tpt_ring_allreduce_bytes(N, tp->t);
    if (res == DT_OK && (st.calls[DT_COLL_ALLREDUCE] < 2 || st.calls[DT_COLL_ALLREDUCE] > 3 ||
                         st.calls[DT_COLL_ALLGATHER] || st.calls[DT_COLL_REDUCE_SCATTER] ||
                         st.bytes_sent > most))
        res = dt_fail(DT_ERR_MISMATCH, "the cross-entropy made %llu allreduces and %llu "
                      "allgathers, sending %llu bytes; expected 2 or 3 allreduces of at most %zu "
                      "numbers in all, %llu bytes (reduce the max and the sums, never gather "
                      "the logits)",
                      (unsigned long long)st.calls[DT_COLL_ALLREDUCE],
                      (unsigned long long)st.calls[DT_COLL_ALLGATHER],
                      (unsigned long long)st.bytes_sent, 3 * (size_t)N, (unsigned long long)most);
    for (size_t k = 0; k < N * Vl; k++)
        dlr[k] = 1;
    if (res == DT_OK)
        res = lab_vocab_xent_backward(tp, dlr, pr, v->labels, 0.25f);
    for (size_t i = 0; res == DT_OK && i < N; i++)
        for (size_t j = 0; j < Vl; j++)
            if (!(fabsf(dlr[i * Vl + j] - 1 - dl[i * V + start + j]) <= 1e-6f))
                res = dt_fail(DT_ERR_MISMATCH, "dlogits_r[%zu][%zu] = %.9g, expected 1 + %.9g "
                              "(+=)", i, j, (double)dlr[i * Vl + j],
                              (double)dl[i * V + start + j]);
out:
    free(logits), free(probs), free(lr), free(pr), free(dl), free(dlr);
    return res;
}

dt_result tpt_vocab_rank(dt_comm *world, void *arg)
{
    const int *how = arg; /* {xent, sp} */
    vocab_case v;
    dt_result res = open_case(&v, world, how[1]);
    if (res == DT_OK)
        res = how[0] ? xent_check(&v) : embed_check(&v);
    lab_tp_free(&v.tp);
    return res;
}
