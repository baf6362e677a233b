/* test_gpu_kernels.c - each CUDA kernel of gpu/ against its CPU twin in
 * libdt, on the same random data, within a stated tolerance (llm.c's way:
 * a test per kernel against the CPU reference; timings are a benchmark's,
 * bench/gpu-check.sh). The tolerances are fp32's: an elementwise formula
 * within a few units of the last place (the GPU's expf, tanhf and fused
 * multiply-adds round differently from the CPU's), a sum of K products
 * within 1e-4 of its size (another order of summation). Skipped, saying
 * so, where no GPU can be used. */
#include "gpu_test.h"

#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/tensor.h"

#include <stdlib.h>
#include <string.h>

static float *rand_floats(size_t n, unsigned seed, float lo, float hi)
{
    float *x = malloc(n * sizeof *x);
    EXPECT(x, "malloc");
    uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = lo + (hi - lo) * (float)((s >> 40) & 0xffffff) / 16777216.0f;
    }
    return x;
}

TEST(gpu_sgemm_matches_cpu, 2)
{
    gpu_require();
    size_t M = 37, N = 53, K = 129;
    float *A = rand_floats(M * K, 1, -1, 1), *B = rand_floats(K * N, 2, -1, 1);
    float *C = rand_floats(M * N, 3, -1, 1), *want = malloc(M * N * 4), *got = malloc(M * N * 4);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            size_t lda = ta ? M : K, ldb = tb ? K : N;
            memcpy(want, C, M * N * 4);
            EXPECT_OK(dt_sgemm((dt_trans)ta, (dt_trans)tb, M, N, K, 0.5f, A, lda, B, ldb, 2.0f,
                               want, N));
            float *dA = gpu_upload(A, M * K * 4), *dB = gpu_upload(B, K * N * 4);
            float *dC = gpu_upload(C, M * N * 4);
            EXPECT_OK(dt_gpu_sgemm((dt_trans)ta, (dt_trans)tb, M, N, K, 0.5f, dA, lda, dB, ldb,
                                   2.0f, dC, N));
            gpu_download(got, dC, M * N * 4);
            gpu_expect_close(ta ? (tb ? "sgemm TT" : "sgemm TN") : (tb ? "sgemm NT" : "sgemm NN"),
                             got, want, M * N, 1e-4f, 1e-4f);
            dt_gpu_free(dA), dt_gpu_free(dB), dt_gpu_free(dC);
        }
    free(A), free(B), free(C), free(want), free(got);
}

TEST(gpu_linear_forward_matches_cpu, 1)
{
    gpu_require();
    size_t N = 16, C = 64, OC = 10;
    float *x = rand_floats(N * C, 4, -1, 1), *w = rand_floats(OC * C, 5, -0.5f, 0.5f);
    float *b = rand_floats(OC, 6, -1, 1), *want = malloc(N * OC * 4), *got = malloc(N * OC * 4);
    EXPECT_OK(dt_linear_forward(want, x, w, b, N, C, OC));
    float *dx = gpu_upload(x, N * C * 4), *dw = gpu_upload(w, OC * C * 4), *db = gpu_upload(b, OC * 4);
    float *dout = gpu_upload(want, N * OC * 4); /* overwritten */
    EXPECT_OK(dt_gpu_linear_forward(dout, dx, dw, db, N, C, OC));
    gpu_download(got, dout, N * OC * 4);
    gpu_expect_close("linear", got, want, N * OC, 1e-4f, 1e-4f);
    dt_gpu_free(dx), dt_gpu_free(dw), dt_gpu_free(db), dt_gpu_free(dout);
    free(x), free(w), free(b), free(want), free(got);
}

TEST(gpu_relu_gelu_matches_cpu, 1)
{
    gpu_require();
    size_t n = 1000;
    float *x = rand_floats(n, 7, -3, 3), *dy = rand_floats(n, 8, -1, 1);
    float *want = malloc(n * 4), *got = malloc(n * 4), *dwant = calloc(n, 4);
    EXPECT_OK(dt_relu_forward(want, x, n));
    float *dx = gpu_upload(x, n * 4), *dout = gpu_upload(x, n * 4);
    EXPECT_OK(dt_gpu_relu_forward(dout, dx, n));
    gpu_download(got, dout, n * 4);
    gpu_expect_close("relu", got, want, n, 0, 0); /* a max is exact */
    float *zeros = calloc(n, 4);
    float *ddy = gpu_upload(dy, n * 4), *ddx = gpu_upload(zeros, n * 4);
    EXPECT_OK(dt_relu_backward(dwant, dy, want, n)); /* dwant starts at 0, as ddx */
    EXPECT_OK(dt_gpu_relu_backward(ddx, ddy, dout, n));
    gpu_download(got, ddx, n * 4);
    gpu_expect_close("relu backward", got, dwant, n, 0, 0);
    EXPECT_OK(dt_gelu_forward(want, x, n));
    EXPECT_OK(dt_gpu_gelu_forward(dout, dx, n));
    gpu_download(got, dout, n * 4);
    gpu_expect_close("gelu", got, want, n, 1e-6f, 1e-5f);
    dt_gpu_free(dx), dt_gpu_free(dout), dt_gpu_free(ddy), dt_gpu_free(ddx);
    free(x), free(dy), free(want), free(got), free(dwant), free(zeros);
}

TEST(gpu_softmax_xent_matches_cpu, 2)
{
    gpu_require();
    size_t N = 33, V = 517; /* V not a multiple of the block: the tail counts */
    float *logits = rand_floats(N * V, 9, -20, 20);
    int32_t *labels = malloc(N * 4);
    for (size_t i = 0; i < N; i++)
        labels[i] = (int32_t)((i * 97) % V);
    float *probs = malloc(N * V * 4), *losses = malloc(N * 4), *got = malloc(N * V * 4);
    float *dlog = calloc(N * V, 4);
    EXPECT_OK(dt_softmax_xent_forward(probs, losses, NULL, logits, labels, N, V));
    float *dl = gpu_upload(logits, N * V * 4), *dp = gpu_upload(probs, N * V * 4);
    float *dloss = gpu_upload(losses, N * 4);
    int32_t *dlab = gpu_upload(labels, N * 4);
    EXPECT_OK(dt_gpu_softmax_xent_forward(dp, dloss, dl, dlab, N, V));
    gpu_download(got, dp, N * V * 4);
    gpu_expect_close("softmax probs", got, probs, N * V, 1e-7f, 1e-5f);
    gpu_download(got, dloss, N * 4);
    gpu_expect_close("xent losses", got, losses, N, 1e-5f, 1e-5f);
    EXPECT_OK(dt_softmax_xent_backward(dlog, probs, labels, 1.0f / (float)N, N, V));
    memset(got, 0, N * V * 4);
    float *ddl = gpu_upload(got, N * V * 4); /* starts at 0, as dlog */
    EXPECT_OK(dt_gpu_softmax_xent_backward(ddl, dp, dlab, 1.0f / (float)N, N, V));
    gpu_download(got, ddl, N * V * 4);
    gpu_expect_close("xent backward", got, dlog, N * V, 1e-7f, 1e-4f);
    dt_gpu_free(dl), dt_gpu_free(dp), dt_gpu_free(dloss), dt_gpu_free(dlab), dt_gpu_free(ddl);
    free(logits), free(labels), free(probs), free(losses), free(got), free(dlog);
}

TEST(gpu_layernorm_matches_cpu, 1)
{
    gpu_require();
    size_t N = 19, C = 300;
    float *x = rand_floats(N * C, 10, -2, 3), *w = rand_floats(C, 11, 0.5f, 1.5f);
    float *b = rand_floats(C, 12, -0.5f, 0.5f);
    float *want = malloc(N * C * 4), *mean = malloc(N * 4), *rstd = malloc(N * 4);
    float *got = malloc(N * C * 4);
    EXPECT_OK(dt_layernorm_forward(want, mean, rstd, x, w, b, N, C));
    float *dx = gpu_upload(x, N * C * 4), *dw = gpu_upload(w, C * 4), *db = gpu_upload(b, C * 4);
    float *dout = gpu_upload(x, N * C * 4), *dm = gpu_upload(mean, N * 4), *dr = gpu_upload(rstd, N * 4);
    EXPECT_OK(dt_gpu_layernorm_forward(dout, dm, dr, dx, dw, db, N, C));
    gpu_download(got, dout, N * C * 4);
    gpu_expect_close("layernorm out", got, want, N * C, 1e-5f, 1e-4f);
    gpu_download(got, dm, N * 4);
    gpu_expect_close("layernorm mean", got, mean, N, 1e-6f, 1e-5f);
    gpu_download(got, dr, N * 4);
    gpu_expect_close("layernorm rstd", got, rstd, N, 1e-6f, 1e-4f);
    dt_gpu_free(dx), dt_gpu_free(dw), dt_gpu_free(db), dt_gpu_free(dout), dt_gpu_free(dm),
        dt_gpu_free(dr);
    free(x), free(w), free(b), free(want), free(mean), free(rstd), free(got);
}

/* Five steps of each fused optimizer against dt/optim.h's rule. */
TEST(gpu_fused_optimizers_matches_cpu, 2)
{
    gpu_require();
    size_t n = 4099;
    float *p = rand_floats(n, 13, -1, 1), *g = rand_floats(n, 14, -1, 1);
    float *st = calloc(2 * n, 4), *got = malloc(n * 4);
    dt_optim_config cfgs[2] = {dt_sgd_config(0.1f, 0.9f, 0.01f), dt_adamw_config(1e-3f)};
    for (int k = 0; k < 2; k++) {
        float *cp = malloc(n * 4);
        memcpy(cp, p, n * 4);
        memset(st, 0, 2 * n * 4);
        float *dp = gpu_upload(p, n * 4), *dg = gpu_upload(g, n * 4), *ds = gpu_upload(st, 2 * n * 4);
        for (long step = 1; step <= 5; step++) {
            if (k == 0) {
                EXPECT_OK(dt_sgd_update(&cfgs[k], cp, g, st, n));
                EXPECT_OK(dt_gpu_sgd_update(&cfgs[k], dp, dg, ds, n));
            } else {
                EXPECT_OK(dt_adamw_update(&cfgs[k], cp, g, st, st + n, n, step));
                EXPECT_OK(dt_gpu_adamw_update(&cfgs[k], dp, dg, ds, ds + n, n, step));
            }
        }
        gpu_download(got, dp, n * 4);
        gpu_expect_close(k ? "adamw params" : "sgd params", got, cp, n, 1e-6f, 1e-5f);
        dt_gpu_free(dp), dt_gpu_free(dg), dt_gpu_free(ds);
        free(cp);
    }
    free(p), free(g), free(st), free(got);
}

/* GELU's backward is elementwise (tanhf and fused multiply-adds: a few
 * units of the last place); a residual's sum and its backward's add are
 * one IEEE addition each, the same on both: exact. */
TEST(gpu_residual_gelu_bwd_matches_cpu, 1)
{
    gpu_require();
    size_t n = 1000;
    float *x = rand_floats(n, 15, -4, 4), *y = rand_floats(n, 16, -1, 1);
    float *dy = rand_floats(n, 17, -1, 1), *want = rand_floats(n, 18, -1, 1);
    float *want2 = malloc(n * 4), *got = malloc(n * 4);
    memcpy(want2, want, n * 4);
    float *dx = gpu_upload(x, n * 4), *ddy = gpu_upload(dy, n * 4), *dd = gpu_upload(want, n * 4);
    EXPECT_OK(dt_gelu_backward(want, dy, x, n)); /* accumulates into random values */
    EXPECT_OK(dt_gpu_gelu_backward(dd, ddy, dx, n));
    gpu_download(got, dd, n * 4);
    gpu_expect_close("gelu backward", got, want, n, 1e-6f, 1e-5f);
    float *dy2 = gpu_upload(y, n * 4);
    EXPECT_OK(dt_residual_forward(want, x, y, n));
    EXPECT_OK(dt_gpu_residual_forward(dd, dx, dy2, n));
    gpu_download(got, dd, n * 4);
    gpu_expect_close("residual", got, want, n, 0, 0);
    /* da and db both accumulate; then db alone (da NULL) */
    float *da = gpu_upload(x, n * 4), *db = gpu_upload(y, n * 4);
    memcpy(want, x, n * 4), memcpy(want2, y, n * 4);
    EXPECT_OK(dt_residual_backward(want, want2, dy, n));
    EXPECT_OK(dt_residual_backward(NULL, want2, dy, n));
    EXPECT_OK(dt_gpu_residual_backward(da, db, ddy, n));
    EXPECT_OK(dt_gpu_residual_backward(NULL, db, ddy, n));
    gpu_download(got, da, n * 4);
    gpu_expect_close("residual backward da", got, want, n, 0, 0);
    gpu_download(got, db, n * 4);
    gpu_expect_close("residual backward db", got, want2, n, 0, 0);
    dt_gpu_free(dx), dt_gpu_free(ddy), dt_gpu_free(dd), dt_gpu_free(dy2), dt_gpu_free(da),
        dt_gpu_free(db);
    free(x), free(y), free(dy), free(want), free(want2), free(got);
}

/* The backward of the forward's saved mean and rstd, every gradient
 * accumulating into random values. dinp: two means of C = 300 products,
 * the CPU's in double, the GPU's in a float block reduction, then a
 * difference that can cancel: 1e-4 absolute and relative. dweight and
 * dbias: sums over the 19 rows in another order: 1e-5 and 1e-5. */
TEST(gpu_layernorm_backward_matches_cpu, 1)
{
    gpu_require();
    size_t N = 19, C = 300;
    float *x = rand_floats(N * C, 19, -2, 3), *w = rand_floats(C, 20, 0.5f, 1.5f);
    float *b = rand_floats(C, 21, -0.5f, 0.5f), *dy = rand_floats(N * C, 22, -1, 1);
    float *dx = rand_floats(N * C, 23, -1, 1), *dw = rand_floats(C, 24, -1, 1);
    float *dbias = rand_floats(C, 25, -1, 1);
    float *out = malloc(N * C * 4), *mean = malloc(N * 4), *rstd = malloc(N * 4);
    float *got = malloc(N * C * 4);
    EXPECT_OK(dt_layernorm_forward(out, mean, rstd, x, w, b, N, C));
    float *d_x = gpu_upload(x, N * C * 4), *d_w = gpu_upload(w, C * 4);
    float *d_dy = gpu_upload(dy, N * C * 4), *d_m = gpu_upload(mean, N * 4);
    float *d_r = gpu_upload(rstd, N * 4), *d_dx = gpu_upload(dx, N * C * 4);
    float *d_dw = gpu_upload(dw, C * 4), *d_db = gpu_upload(dbias, C * 4);
    EXPECT_OK(dt_layernorm_backward(dx, dw, dbias, dy, x, w, mean, rstd, N, C));
    EXPECT_OK(dt_gpu_layernorm_backward(d_dx, d_dw, d_db, d_dy, d_x, d_w, d_m, d_r, N, C));
    gpu_download(got, d_dx, N * C * 4);
    gpu_expect_close("layernorm backward dinp", got, dx, N * C, 1e-4f, 1e-4f);
    gpu_download(got, d_dw, C * 4);
    gpu_expect_close("layernorm backward dweight", got, dw, C, 1e-5f, 1e-5f);
    gpu_download(got, d_db, C * 4);
    gpu_expect_close("layernorm backward dbias", got, dbias, C, 1e-5f, 1e-5f);
    dt_gpu_free(d_x), dt_gpu_free(d_w), dt_gpu_free(d_dy), dt_gpu_free(d_m), dt_gpu_free(d_r),
        dt_gpu_free(d_dx), dt_gpu_free(d_dw), dt_gpu_free(d_db);
    free(x), free(w), free(b), free(dy), free(dx), free(dw), free(dbias), free(out), free(mean),
        free(rstd), free(got);
}

/* The forward is one addition per element: exact. The backward's rows of
 * dwte take the atomic adds of every position holding their token (V = 5
 * tokens over B T = 21 positions: collisions are certain), in the
 * scheduler's order, not the CPU's: up to 21 adds of |x| <= 1 onto a
 * running sum below 22, each rounding by at most 2^-24 of it, so within
 * 21 * 22 * 2^-24 < 3e-5: 5e-5 absolute. dwpe sums B = 3 rows: 1e-6. A
 * token outside [0, V) fails, naming it. */
TEST(gpu_embedding_matches_cpu, 1)
{
    gpu_require();
    size_t B = 3, T = 7, C = 40, V = 5;
    int32_t tokens[21];
    for (size_t i = 0; i < B * T; i++)
        tokens[i] = (int32_t)((i * 3 + i / 4) % V);
    float *wte = rand_floats(V * C, 26, -1, 1), *wpe = rand_floats(T * C, 27, -1, 1);
    float *dout = rand_floats(B * T * C, 28, -1, 1), *dwte = rand_floats(V * C, 29, -1, 1);
    float *dwpe = rand_floats(T * C, 30, -1, 1), *want = malloc(B * T * C * 4);
    float *got = malloc(B * T * C * 4);
    int32_t *d_tok = gpu_upload(tokens, sizeof tokens);
    float *d_wte = gpu_upload(wte, V * C * 4), *d_wpe = gpu_upload(wpe, T * C * 4);
    float *d_out = gpu_upload(want, B * T * C * 4), *d_dout = gpu_upload(dout, B * T * C * 4);
    float *d_dwte = gpu_upload(dwte, V * C * 4), *d_dwpe = gpu_upload(dwpe, T * C * 4);
    EXPECT_OK(dt_embedding_forward(want, tokens, wte, wpe, B, T, C, V));
    EXPECT_OK(dt_gpu_embedding_forward(d_out, d_tok, d_wte, d_wpe, B, T, C, V));
    gpu_download(got, d_out, B * T * C * 4);
    gpu_expect_close("embedding", got, want, B * T * C, 0, 0);
    EXPECT_OK(dt_embedding_backward(dwte, dwpe, dout, tokens, B, T, C, V));
    EXPECT_OK(dt_gpu_embedding_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, V));
    gpu_download(got, d_dwte, V * C * 4);
    gpu_expect_close("embedding backward dwte", got, dwte, V * C, 5e-5f, 0);
    gpu_download(got, d_dwpe, T * C * 4);
    gpu_expect_close("embedding backward dwpe", got, dwpe, T * C, 1e-6f, 1e-6f);
    tokens[11] = (int32_t)V;
    dt_gpu_free(d_tok);
    d_tok = gpu_upload(tokens, sizeof tokens);
    EXPECT_ERR(dt_gpu_embedding_forward(d_out, d_tok, d_wte, d_wpe, B, T, C, V),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "position 11"), "the error names the position: %s",
           dt_last_error());
    EXPECT_ERR(dt_gpu_embedding_backward(d_dwte, d_dwpe, d_dout, d_tok, B, T, C, V),
               DT_ERR_INVALID_ARG);
    dt_gpu_free(d_tok), dt_gpu_free(d_wte), dt_gpu_free(d_wpe), dt_gpu_free(d_out),
        dt_gpu_free(d_dout), dt_gpu_free(d_dwte), dt_gpu_free(d_dwpe);
    free(wte), free(wpe), free(dout), free(dwte), free(dwpe), free(want), free(got);
}

/* Causal attention, B = 2, T = 9, C = 24 in NH = 3 heads of 8. att: a
 * softmax of dot products of 8 (expf's and the order of the sums): 1e-6
 * absolute, 1e-5 relative. out and the backward's dqkv (accumulated into
 * random values): sums of at most T = 9 products, the backward's in
 * another order than the CPU's (by output element, not by row of att):
 * 1e-5 absolute, 1e-4 relative. Channels that do not split into the heads
 * fail. */
TEST(gpu_attention_matches_cpu, 2)
{
    gpu_require();
    size_t B = 2, T = 9, C = 24, NH = 3, nq = B * T * 3 * C, na = B * NH * T * T, no = B * T * C;
    float *qkv = rand_floats(nq, 31, -1, 1), *dout = rand_floats(no, 32, -1, 1);
    float *dqkv = rand_floats(nq, 33, -1, 1), *out = malloc(no * 4), *att = malloc(na * 4);
    float *got = malloc(nq * 4);
    float *d_qkv = gpu_upload(qkv, nq * 4), *d_dout = gpu_upload(dout, no * 4);
    float *d_dqkv = gpu_upload(dqkv, nq * 4), *d_out = gpu_upload(dout, no * 4);
    float *d_att = NULL;
    EXPECT_OK(dt_gpu_alloc((void **)&d_att, na * 4));
    EXPECT_OK(dt_attention_forward(out, att, qkv, B, T, C, NH));
    EXPECT_OK(dt_gpu_attention_forward(d_out, d_att, d_qkv, B, T, C, NH));
    gpu_download(got, d_att, na * 4);
    gpu_expect_close("attention att", got, att, na, 1e-6f, 1e-5f);
    gpu_download(got, d_out, no * 4);
    gpu_expect_close("attention out", got, out, no, 1e-5f, 1e-4f);
    EXPECT_OK(dt_attention_backward(dqkv, dout, qkv, att, B, T, C, NH));
    EXPECT_OK(dt_gpu_attention_backward(d_dqkv, d_dout, d_qkv, d_att, B, T, C, NH));
    gpu_download(got, d_dqkv, nq * 4);
    gpu_expect_close("attention backward dqkv", got, dqkv, nq, 1e-5f, 1e-4f);
    EXPECT_ERR(dt_gpu_attention_forward(d_out, d_att, d_qkv, B, T, C, 5), DT_ERR_INVALID_ARG);
    dt_gpu_free(d_qkv), dt_gpu_free(d_dout), dt_gpu_free(d_dqkv), dt_gpu_free(d_out),
        dt_gpu_free(d_att);
    free(qkv), free(dout), free(dqkv), free(out), free(att), free(got);
}
