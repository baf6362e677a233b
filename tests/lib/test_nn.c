/* test_nn.c - every layer's backward against central finite differences,
 * on several shapes (batch 1, non-square), plus exact forward values and
 * bad input. The loss of a layer check is sum(out * w) for a fixed random
 * w, so the gradient arriving at the output is w itself. */
#include "grader.h"
#include "dt/nn.h"
#include "test_nn_gradcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-3

static float *fbuf(size_t n) { return calloc(n ? n : 1, sizeof(float)); }

/* ---------------------------------------------------------------- linear */

typedef struct {
    size_t N, C, OC;
    float *inp, *w, *b, *out, *wout;
} lin_ctx;

static double lin_loss(void *p)
{
    lin_ctx *c = p;
    EXPECT_OK(dt_linear_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC));
    return gc_dot(c->out, c->wout, c->N * c->OC);
}

TEST(nn_linear_gradcheck, 2)
{
    size_t shapes[][3] = {{1, 3, 5}, {4, 7, 2}, {3, 6, 6}, {2, 1, 1}};
    for (size_t s = 0; s < 4; s++) {
        lin_ctx c = {shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, 0, 0};
        size_t N = c.N, C = c.C, OC = c.OC;
        c.inp = fbuf(N * C), c.w = fbuf(OC * C), c.b = fbuf(OC), c.out = fbuf(N * OC);
        c.wout = fbuf(N * OC);
        gc_fill(c.inp, N * C, s, 1, 0), gc_fill(c.w, OC * C, s + 10, 1, 0);
        gc_fill(c.b, OC, s + 20, 1, 0), gc_fill(c.wout, N * OC, s + 30, 1, 0);
        float *di = fbuf(N * C), *dw = fbuf(OC * C), *db = fbuf(OC);
        EXPECT_OK(dt_linear_backward(di, dw, db, c.wout, c.inp, c.w, N, C, OC));
        double e1 = gc_rel_error(lin_loss, &c, c.inp, di, N * C, 1e-2f);
        double e2 = gc_rel_error(lin_loss, &c, c.w, dw, OC * C, 1e-2f);
        double e3 = gc_rel_error(lin_loss, &c, c.b, db, OC, 1e-2f);
        EXPECT(e1 < TOL && e2 < TOL && e3 < TOL, "linear N=%zu C=%zu OC=%zu: errors %g %g %g", N,
               C, OC, e1, e2, e3);
        /* a second backward accumulates: exactly twice the first */
        float before = dw[0];
        EXPECT_OK(dt_linear_backward(NULL, dw, NULL, c.wout, c.inp, c.w, N, C, OC));
        EXPECT(dw[0] == 2 * before, "backward accumulates: %g vs 2 x %g", dw[0], before);
        free(c.inp), free(c.w), free(c.b), free(c.out), free(c.wout), free(di), free(dw), free(db);
    }
}

TEST(nn_linear_forward_exact_and_scaled_backward, 1)
{
    /* out = x W^T + b with x = [1 2], W = [[1 0], [0 1], [1 1]], b = [0 1 2] */
    float x[2] = {1, 2}, W[6] = {1, 0, 0, 1, 1, 1}, b[3] = {0, 1, 2}, out[3];
    EXPECT_OK(dt_linear_forward(out, x, W, b, 1, 2, 3));
    EXPECT(out[0] == 1 && out[1] == 3 && out[2] == 5, "out %g %g %g", out[0], out[1], out[2]);
    /* scaled, into the parameters themselves: W += -0.5 dout^T x,
     * b += -0.5 dout; dinp uses W as it was before */
    float dout[3] = {1, 0, 2}, dinp[2] = {0, 0}, W2[6], b2[3];
    memcpy(W2, W, sizeof W), memcpy(b2, b, sizeof b);
    EXPECT_OK(dt_linear_backward_scaled(dinp, W2, b2, dout, x, W2, -0.5f, 1, 2, 3));
    EXPECT(dinp[0] == 3 && dinp[1] == 2, "dinp %g %g (W before the step)", dinp[0], dinp[1]);
    float wantW[6] = {0.5f, -1, 0, 1, 0, -1}, wantb[3] = {-0.5f, 1, 1};
    EXPECT(memcmp(W2, wantW, sizeof W2) == 0, "W after the step %g %g %g %g %g %g", W2[0], W2[1],
           W2[2], W2[3], W2[4], W2[5]);
    EXPECT(memcmp(b2, wantb, sizeof b2) == 0, "b after the step");
    /* scale 1 is dt_linear_backward */
    float g1[6] = {0}, g2[6] = {0}, gb1[3] = {0}, gb2[3] = {0};
    EXPECT_OK(dt_linear_backward(NULL, g1, gb1, dout, x, W, 1, 2, 3));
    EXPECT_OK(dt_linear_backward_scaled(NULL, g2, gb2, dout, x, W, 1, 1, 2, 3));
    EXPECT(memcmp(g1, g2, sizeof g1) == 0 && memcmp(gb1, gb2, sizeof gb1) == 0, "scale 1");
    EXPECT_ERR(dt_linear_backward_scaled(NULL, g2, gb2, NULL, x, W, 1, 1, 2, 3),
               DT_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- pointwise */

typedef struct {
    int kind; /* 0 relu, 1 gelu */
    size_t n;
    float *x, *out, *wout;
} pw_ctx;

static double pw_loss(void *p)
{
    pw_ctx *c = p;
    if (c->kind == 0)
        EXPECT_OK(dt_relu_forward(c->out, c->x, c->n));
    else
        EXPECT_OK(dt_gelu_forward(c->out, c->x, c->n));
    return gc_dot(c->out, c->wout, c->n);
}

TEST(nn_relu_gelu_gradcheck, 1)
{
    for (int kind = 0; kind < 2; kind++)
        for (size_t n = 1; n <= 37; n += 12) {
            pw_ctx c = {kind, n, fbuf(n), fbuf(n), fbuf(n)};
            gc_fill(c.x, n, n, 3, 0.05f); /* |x| >= 0.15: no kink inside a step */
            c.x[0] = fabsf(c.x[0]);        /* at least one element passes relu */
            gc_fill(c.wout, n, n + 1, 1, 0);
            float *dx = fbuf(n);
            pw_loss(&c);
            if (kind == 0)
                EXPECT_OK(dt_relu_backward(dx, c.wout, c.out, n));
            else
                EXPECT_OK(dt_gelu_backward(dx, c.wout, c.x, n));
            double e = gc_rel_error(pw_loss, &c, c.x, dx, n, 1e-2f);
            EXPECT(e < TOL, "%s n=%zu: error %g", kind ? "gelu" : "relu", n, e);
            free(c.x), free(c.out), free(c.wout), free(dx);
        }
    float x[3] = {-1, 0, 2}, y[3];
    EXPECT_OK(dt_relu_forward(y, x, 3));
    EXPECT(y[0] == 0 && y[1] == 0 && y[2] == 2, "relu values");
    EXPECT_OK(dt_gelu_forward(y, x, 3));
    EXPECT(y[1] == 0 && fabsf(y[2] - 1.9545977f) < 1e-6f && fabsf(y[0] + 0.1588080f) < 1e-6f,
           "gelu values %.7f %.7f", y[0], y[2]);
}

TEST(nn_residual_backward_adds_to_both, 1)
{
    float a[2] = {1, 2}, b[2] = {10, 20}, out[2], da[2] = {1, 1}, db[2] = {0, 0};
    float dout[2] = {3, 4};
    EXPECT_OK(dt_residual_forward(out, a, b, 2));
    EXPECT(out[0] == 11 && out[1] == 22, "sum");
    EXPECT_OK(dt_residual_backward(da, db, dout, 2));
    EXPECT(da[0] == 4 && da[1] == 5 && db[0] == 3 && db[1] == 4, "gradients add");
}

/* ---------------------------------------------------------------- layernorm */

typedef struct {
    size_t N, C;
    float *x, *w, *b, *out, *mean, *rstd, *wout;
} ln_ctx;

static double ln_loss(void *p)
{
    ln_ctx *c = p;
    EXPECT_OK(dt_layernorm_forward(c->out, c->mean, c->rstd, c->x, c->w, c->b, c->N, c->C));
    return gc_dot(c->out, c->wout, c->N * c->C);
}

TEST(nn_layernorm_gradcheck, 2)
{
    size_t shapes[][2] = {{1, 5}, {3, 8}, {2, 3}};
    for (size_t s = 0; s < 3; s++) {
        size_t N = shapes[s][0], C = shapes[s][1];
        ln_ctx c = {N, C, fbuf(N * C), fbuf(C), fbuf(C), fbuf(N * C), fbuf(N), fbuf(N),
                    fbuf(N * C)};
        gc_fill(c.x, N * C, s, 2, 0), gc_fill(c.w, C, s + 1, 1, 0.2f);
        gc_fill(c.b, C, s + 2, 1, 0), gc_fill(c.wout, N * C, s + 3, 1, 0);
        float *dx = fbuf(N * C), *dw = fbuf(C), *db = fbuf(C);
        ln_loss(&c);
        EXPECT_OK(dt_layernorm_backward(dx, dw, db, c.wout, c.x, c.w, c.mean, c.rstd, N, C));
        double e1 = gc_rel_error(ln_loss, &c, c.x, dx, N * C, 1e-2f);
        double e2 = gc_rel_error(ln_loss, &c, c.w, dw, C, 1e-2f);
        double e3 = gc_rel_error(ln_loss, &c, c.b, db, C, 1e-2f);
        EXPECT(e1 < TOL && e2 < TOL && e3 < TOL, "layernorm N=%zu C=%zu: errors %g %g %g", N, C,
               e1, e2, e3);
        free(c.x), free(c.w), free(c.b), free(c.out), free(c.mean), free(c.rstd), free(c.wout);
        free(dx), free(dw), free(db);
    }
    /* a row normalised with gain 1 and bias 0 has mean 0 and variance ~1 */
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, b[4] = {0}, y[4], m, r;
    EXPECT_OK(dt_layernorm_forward(y, &m, &r, x, w, b, 1, 4));
    EXPECT(m == 2.5f && fabsf(y[0] + y[3]) < 1e-6f && fabsf(y[3] - 1.3416355f) < 1e-5f,
           "mean %g, y %g %g", m, y[0], y[3]);
}

/* ---------------------------------------------------------------- cross-entropy */

typedef struct {
    size_t N, V;
    float *logits, *probs;
    int32_t *labels;
} xe_ctx;

static double xe_loss(void *p)
{
    xe_ctx *c = p;
    double loss;
    EXPECT_OK(dt_softmax_xent_forward(c->probs, NULL, &loss, c->logits, c->labels, c->N, c->V));
    return loss;
}

TEST(nn_softmax_xent_gradcheck_and_stability, 2)
{
    size_t shapes[][2] = {{1, 2}, {4, 10}, {3, 7}};
    for (size_t s = 0; s < 3; s++) {
        size_t N = shapes[s][0], V = shapes[s][1];
        xe_ctx c = {N, V, fbuf(N * V), fbuf(N * V), calloc(N, sizeof(int32_t))};
        gc_fill(c.logits, N * V, s, 3, 0);
        for (size_t n = 0; n < N; n++)
            c.labels[n] = (int32_t)((n * 3 + s) % V);
        float *dl = fbuf(N * V);
        xe_loss(&c);
        EXPECT_OK(dt_softmax_xent_backward(dl, c.probs, c.labels, 1.0f / (float)N, N, V));
        double e = gc_rel_error(xe_loss, &c, c.logits, dl, N * V, 1e-2f);
        EXPECT(e < TOL, "xent N=%zu V=%zu: error %g", N, V, e);
        free(c.logits), free(c.probs), free(c.labels), free(dl);
    }
    /* huge logits: the max is subtracted first, so nothing overflows */
    float z[3] = {1000, 999, -1000}, p[3], losses[1];
    int32_t lab[1] = {1};
    double loss;
    EXPECT_OK(dt_softmax_xent_forward(p, losses, &loss, z, lab, 1, 3));
    EXPECT(isfinite(loss) && fabs(loss - 1.3132617) < 1e-5, "loss %g (log(1 + e))", loss);
    lab[0] = 2; /* probability e^-2000 underflows to 0, the loss must still be finite */
    EXPECT_OK(dt_softmax_xent_forward(p, losses, &loss, z, lab, 1, 3));
    EXPECT(fabs(loss - 2000.3132617) < 1e-3, "loss of an underflowed class %g", loss);
    /* uniform logits: loss = log V exactly as defined */
    float u[4] = {0, 0, 0, 0}, pu[4];
    lab[0] = 3;
    EXPECT_OK(dt_softmax_xent_forward(pu, NULL, &loss, u, lab, 1, 4));
    EXPECT(fabs(loss - log(4.0)) < 1e-6 && pu[2] == 0.25f, "uniform: %g", loss);
}

/* ---------------------------------------------------------------- embedding */

typedef struct {
    size_t B, T, C, V;
    int32_t *tok;
    float *wte, *wpe, *out, *wout;
} emb_ctx;

static double emb_loss(void *p)
{
    emb_ctx *c = p;
    EXPECT_OK(dt_embedding_forward(c->out, c->tok, c->wte, c->wpe, c->B, c->T, c->C, c->V));
    return gc_dot(c->out, c->wout, c->B * c->T * c->C);
}

TEST(nn_embedding_gradcheck, 1)
{
    size_t B = 2, T = 3, C = 4, V = 5;
    int32_t tok[6] = {1, 4, 1, 0, 4, 4}; /* repeated tokens: gradients add up */
    emb_ctx c = {B, T, C, V, tok, fbuf(V * C), fbuf(T * C), fbuf(B * T * C), fbuf(B * T * C)};
    gc_fill(c.wte, V * C, 1, 1, 0), gc_fill(c.wpe, T * C, 2, 1, 0);
    gc_fill(c.wout, B * T * C, 3, 1, 0);
    float *dte = fbuf(V * C), *dpe = fbuf(T * C);
    EXPECT_OK(dt_embedding_backward(dte, dpe, c.wout, tok, B, T, C, V));
    double e1 = gc_rel_error(emb_loss, &c, c.wte, dte, V * C, 1e-2f);
    double e2 = gc_rel_error(emb_loss, &c, c.wpe, dpe, T * C, 1e-2f);
    EXPECT(e1 < TOL && e2 < TOL, "embedding errors %g %g", e1, e2);
    EXPECT(dte[2 * C] == 0 && dte[3 * C] == 0, "unused tokens get no gradient");
    int32_t bad[6] = {1, 5, 0, 0, 0, 0};
    EXPECT_ERR(dt_embedding_forward(c.out, bad, c.wte, c.wpe, B, T, C, V), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "token 5 at position 1"), "message: %s", dt_last_error());
    free(c.wte), free(c.wpe), free(c.out), free(c.wout), free(dte), free(dpe);
}

/* ---------------------------------------------------------------- attention */

typedef struct {
    size_t B, T, C, NH;
    float *qkv, *att, *out, *wout;
} att_ctx;

static double att_loss(void *p)
{
    att_ctx *c = p;
    EXPECT_OK(dt_attention_forward(c->out, c->att, c->qkv, c->B, c->T, c->C, c->NH));
    return gc_dot(c->out, c->wout, c->B * c->T * c->C);
}

TEST(nn_attention_gradcheck_and_causality, 2)
{
    size_t shapes[][4] = {{1, 1, 4, 1}, {1, 3, 4, 2}, {2, 4, 6, 3}, {2, 5, 4, 1}};
    for (size_t s = 0; s < 4; s++) {
        att_ctx c = {shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], 0, 0, 0, 0};
        size_t BT = c.B * c.T, C = c.C;
        c.qkv = fbuf(BT * 3 * C), c.att = fbuf(c.B * c.NH * c.T * c.T);
        c.out = fbuf(BT * C), c.wout = fbuf(BT * C);
        gc_fill(c.qkv, BT * 3 * C, s, 1.5f, 0), gc_fill(c.wout, BT * C, s + 5, 1, 0);
        float *dqkv = fbuf(BT * 3 * C);
        att_loss(&c);
        EXPECT_OK(dt_attention_backward(dqkv, c.wout, c.qkv, c.att, c.B, c.T, C, c.NH));
        double e = gc_rel_error(att_loss, &c, c.qkv, dqkv, BT * 3 * C, 1e-2f);
        EXPECT(e < TOL, "attention B=%zu T=%zu C=%zu NH=%zu: error %g", c.B, c.T, C, c.NH, e);
        /* causal: every row of att sums to 1 over t2 <= t and is 0 beyond */
        for (size_t r = 0; r < c.B * c.NH * c.T; r++) {
            size_t t = r % c.T;
            double sum = 0;
            for (size_t t2 = 0; t2 < c.T; t2++) {
                sum += c.att[r * c.T + t2];
                EXPECT(t2 <= t || c.att[r * c.T + t2] == 0, "att row %zu sees the future", r);
            }
            EXPECT(fabs(sum - 1) < 1e-5, "att row %zu sums to %g", r, sum);
        }
        /* the first position attends to itself only: its output is its v */
        EXPECT(c.out[0] == c.qkv[2 * C], "position 0 copies its value: %g vs %g", c.out[0],
               c.qkv[2 * C]);
        free(c.qkv), free(c.att), free(c.out), free(c.wout), free(dqkv);
    }
    float x[12] = {0}, y[4], a[1];
    EXPECT_ERR(dt_attention_forward(y, a, x, 1, 1, 4, 3), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "heads"), "message: %s", dt_last_error());
}

/* ---------------------------------------------------------------- bad input */

TEST(nn_layers_reject_bad_input, 1)
{
    float x[4] = {0}, w[4] = {0}, y[4];
    EXPECT_ERR(dt_linear_forward(y, NULL, w, NULL, 1, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "inp"), "names the argument: %s", dt_last_error());
    EXPECT_ERR(dt_linear_forward(y, x, w, NULL, 0, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "size N is 0"), "names the size: %s", dt_last_error());
    EXPECT_ERR(dt_relu_forward(y, x, 0), DT_ERR_INVALID_ARG);
    int32_t lab[2] = {0, 7};
    float p[4];
    EXPECT_ERR(dt_softmax_xent_forward(p, NULL, NULL, x, lab, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "label 7 of row 1"), "message: %s", dt_last_error());
    lab[1] = -1;
    EXPECT_ERR(dt_softmax_xent_backward(p, x, lab, 1, 2, 2), DT_ERR_INVALID_ARG);
    float m, r;
    EXPECT_ERR(dt_layernorm_forward(y, &m, &r, x, w, NULL, 1, 4), DT_ERR_INVALID_ARG);
}
