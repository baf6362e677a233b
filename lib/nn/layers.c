/* layers.c - linear, relu, gelu, residual, layernorm, softmax
 * cross-entropy and embedding, each a forward/backward pair.
 *
 * Conventions (see dt/nn.h): outputs first, sizes explicit, a backward
 * accumulates with +=, a NULL gradient output is skipped. */
#include "dt/nn.h"

#include <math.h>

/* Fails when p is NULL; names the argument and the function. */
#define NEED(p, fn)                                                                  \
    do {                                                                             \
        if (!(p))                                                                    \
            return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer '%s'", fn, #p);      \
    } while (0)

/* Fails when a size is zero. */
#define NONZERO(n, fn)                                                               \
    do {                                                                             \
        if ((n) == 0)                                                                \
            return dt_fail(DT_ERR_INVALID_ARG, "%s: size %s is 0", fn, #n);          \
    } while (0)

/* ---------------------------------------------------------------- linear */

dt_result dt_linear_forward(float *out, const float *inp, const float *weight,
                            const float *bias, size_t N, size_t C, size_t OC)
{
    const char *fn = "dt_linear_forward";
    NEED(out, fn); NEED(inp, fn); NEED(weight, fn);
    NONZERO(N, fn); NONZERO(C, fn); NONZERO(OC, fn);
    float beta = 0;
    if (bias) { /* start every row at the bias, then add the product */
        for (size_t n = 0; n < N; n++)
            for (size_t o = 0; o < OC; o++)
                out[n * OC + o] = bias[o];
        beta = 1;
    }
    /* out (N, OC) = inp (N, C) @ weight^T (C, OC) */
    return dt_sgemm(DT_NO_TRANS, DT_TRANS, N, OC, C, 1, inp, C, weight, C, beta, out, OC);
}

static void bias_grad(float *dbias, const float *dout, float scale, size_t N, size_t OC)
{
    for (size_t n = 0; n < N; n++)
        for (size_t o = 0; o < OC; o++)
            dbias[o] += scale * dout[n * OC + o];
}

dt_result dt_linear_backward_scaled(float *dinp, float *dweight, float *dbias, const float *dout,
                                    const float *inp, const float *weight, float scale, size_t N,
                                    size_t C, size_t OC)
{
    const char *fn = "dt_linear_backward";
    NEED(dout, fn); NEED(inp, fn); NEED(weight, fn);
    NONZERO(N, fn); NONZERO(C, fn); NONZERO(OC, fn);
    /* first, while weight is unchanged (dweight may be weight itself):
     * dinp (N, C) += dout (N, OC) @ weight (OC, C) */
    if (dinp)
        DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, N, C, OC, 1, dout, OC, weight, C, 1, dinp, C));
    /* dweight (OC, C) += scale * dout^T (OC, N) @ inp (N, C) */
    if (dweight)
        DT_CHECK(dt_sgemm(DT_TRANS, DT_NO_TRANS, OC, C, N, scale, dout, OC, inp, C, 1, dweight, C));
    if (dbias)
        bias_grad(dbias, dout, scale, N, OC);
    return DT_OK;
}

dt_result dt_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, size_t N, size_t C,
                             size_t OC)
{
    return dt_linear_backward_scaled(dinp, dweight, dbias, dout, inp, weight, 1, N, C, OC);
}

/* ---------------------------------------------------------------- relu, gelu */

dt_result dt_relu_forward(float *out, const float *inp, size_t n)
{
    NEED(out, "dt_relu_forward"); NEED(inp, "dt_relu_forward");
    NONZERO(n, "dt_relu_forward");
    for (size_t i = 0; i < n; i++)
        out[i] = inp[i] > 0 ? inp[i] : 0;
    return DT_OK;
}

dt_result dt_relu_backward(float *dinp, const float *dout, const float *out, size_t n)
{
    NEED(dinp, "dt_relu_backward"); NEED(dout, "dt_relu_backward");
    NEED(out, "dt_relu_backward");
    NONZERO(n, "dt_relu_backward");
    for (size_t i = 0; i < n; i++)
        dinp[i] += out[i] > 0 ? dout[i] : 0;
    return DT_OK;
}

#define GELU_S 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_A 0.044715f

dt_result dt_gelu_forward(float *out, const float *inp, size_t n)
{
    NEED(out, "dt_gelu_forward"); NEED(inp, "dt_gelu_forward");
    NONZERO(n, "dt_gelu_forward");
    for (size_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(GELU_S * (x + GELU_A * x * x * x)));
    }
    return DT_OK;
}

dt_result dt_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    NEED(dinp, "dt_gelu_backward"); NEED(dout, "dt_gelu_backward");
    NEED(inp, "dt_gelu_backward");
    NONZERO(n, "dt_gelu_backward");
    for (size_t i = 0; i < n; i++) {
        /* y = x/2 (1 + tanh u), u = s (x + a x^3):
         * dy/dx = (1 + tanh u)/2 + x/2 (1 - tanh^2 u) s (1 + 3 a x^2) */
        float x = inp[i], t = tanhf(GELU_S * (x + GELU_A * x * x * x));
        float d = 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * GELU_S * (1 + 3 * GELU_A * x * x);
        dinp[i] += d * dout[i];
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- residual */

dt_result dt_residual_forward(float *out, const float *a, const float *b, size_t n)
{
    NEED(out, "dt_residual_forward"); NEED(a, "dt_residual_forward");
    NEED(b, "dt_residual_forward");
    NONZERO(n, "dt_residual_forward");
    for (size_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return DT_OK;
}

dt_result dt_residual_backward(float *da, float *db, const float *dout, size_t n)
{
    NEED(dout, "dt_residual_backward");
    NONZERO(n, "dt_residual_backward");
    for (size_t i = 0; i < n; i++) {
        if (da)
            da[i] += dout[i];
        if (db)
            db[i] += dout[i];
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- layernorm */

#define LN_EPS 1e-5f

dt_result dt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                               const float *weight, const float *bias, size_t N, size_t C)
{
    const char *fn = "dt_layernorm_forward";
    NEED(out, fn); NEED(mean, fn); NEED(rstd, fn); NEED(inp, fn); NEED(weight, fn);
    NEED(bias, fn);
    NONZERO(N, fn); NONZERO(C, fn);
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C;
        double m = 0, v = 0;
        for (size_t i = 0; i < C; i++)
            m += x[i];
        m /= (double)C;
        for (size_t i = 0; i < C; i++)
            v += (x[i] - m) * (x[i] - m);
        v /= (double)C;
        float r = (float)(1.0 / sqrt(v + LN_EPS));
        for (size_t i = 0; i < C; i++)
            out[n * C + i] = ((float)(x[i] - m) * r) * weight[i] + bias[i];
        mean[n] = (float)m;
        rstd[n] = r;
    }
    return DT_OK;
}

dt_result dt_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, const float *mean,
                                const float *rstd, size_t N, size_t C)
{
    const char *fn = "dt_layernorm_backward";
    NEED(dout, fn); NEED(inp, fn); NEED(weight, fn); NEED(mean, fn); NEED(rstd, fn);
    NONZERO(N, fn); NONZERO(C, fn);
    for (size_t n = 0; n < N; n++) {
        const float *x = inp + n * C, *dy = dout + n * C;
        /* with xhat = (x - mean) rstd and g = dy * weight:
         * dx = rstd (g - mean(g) - xhat mean(g xhat)) */
        double g_mean = 0, gx_mean = 0;
        for (size_t i = 0; i < C; i++) {
            float xhat = (x[i] - mean[n]) * rstd[n], g = dy[i] * weight[i];
            g_mean += g;
            gx_mean += g * xhat;
            if (dweight)
                dweight[i] += dy[i] * xhat;
            if (dbias)
                dbias[i] += dy[i];
        }
        g_mean /= (double)C;
        gx_mean /= (double)C;
        if (!dinp)
            continue;
        for (size_t i = 0; i < C; i++) {
            float xhat = (x[i] - mean[n]) * rstd[n], g = dy[i] * weight[i];
            dinp[n * C + i] += rstd[n] * (g - (float)g_mean - xhat * (float)gx_mean);
        }
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- cross-entropy */

static dt_result check_labels(const char *fn, const int32_t *labels, size_t N, size_t V)
{
    for (size_t n = 0; n < N; n++)
        if (labels[n] < 0 || (size_t)labels[n] >= V)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: label %d of row %zu is outside [0, %zu)", fn,
                           labels[n], n, V);
    return DT_OK;
}

dt_result dt_softmax_xent_forward(float *probs, float *losses, double *mean_loss,
                                  const float *logits, const int32_t *labels, size_t N,
                                  size_t V)
{
    const char *fn = "dt_softmax_xent_forward";
    NEED(probs, fn); NEED(logits, fn); NEED(labels, fn);
    NONZERO(N, fn); NONZERO(V, fn);
    DT_CHECK(check_labels(fn, labels, N, V));
    double total = 0;
    for (size_t n = 0; n < N; n++) {
        const float *z = logits + n * V;
        float *p = probs + n * V;
        float zmax = z[0];
        for (size_t v = 1; v < V; v++)
            zmax = z[v] > zmax ? z[v] : zmax;
        /* p = exp(z - max) / sum: the largest term is exp(0) = 1, no overflow */
        double sum = 0;
        for (size_t v = 0; v < V; v++) {
            p[v] = expf(z[v] - zmax);
            sum += p[v];
        }
        for (size_t v = 0; v < V; v++)
            p[v] = (float)(p[v] / sum);
        /* -log p[label] = log(sum) - (z[label] - max): finite even when p underflows */
        double loss = log(sum) - (double)(z[labels[n]] - zmax);
        if (losses)
            losses[n] = (float)loss;
        total += loss;
    }
    if (mean_loss)
        *mean_loss = total / (double)N;
    return DT_OK;
}

dt_result dt_softmax_xent_backward(float *dlogits, const float *probs, const int32_t *labels,
                                   float scale, size_t N, size_t V)
{
    const char *fn = "dt_softmax_xent_backward";
    NEED(dlogits, fn); NEED(probs, fn); NEED(labels, fn);
    NONZERO(N, fn); NONZERO(V, fn);
    DT_CHECK(check_labels(fn, labels, N, V));
    for (size_t n = 0; n < N; n++)
        for (size_t v = 0; v < V; v++) {
            float onehot = (size_t)labels[n] == v ? 1.0f : 0.0f;
            dlogits[n * V + v] += scale * (probs[n * V + v] - onehot);
        }
    return DT_OK;
}

/* ---------------------------------------------------------------- embedding */

static dt_result check_tokens(const char *fn, const int32_t *tokens, size_t n, size_t V)
{
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (size_t)tokens[i] >= V)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: token %d at position %zu is outside [0, %zu)",
                           fn, tokens[i], i, V);
    return DT_OK;
}

dt_result dt_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                               const float *wpe, size_t B, size_t T, size_t C, size_t V)
{
    const char *fn = "dt_embedding_forward";
    NEED(out, fn); NEED(tokens, fn); NEED(wte, fn);
    NONZERO(B, fn); NONZERO(T, fn); NONZERO(C, fn); NONZERO(V, fn);
    DT_CHECK(check_tokens(fn, tokens, B * T, V));
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            float *o = out + (b * T + t) * C;
            const float *e = wte + (size_t)tokens[b * T + t] * C;
            for (size_t i = 0; i < C; i++)
                o[i] = e[i] + (wpe ? wpe[t * C + i] : 0.0f);
        }
    return DT_OK;
}

dt_result dt_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                const int32_t *tokens, size_t B, size_t T, size_t C, size_t V)
{
    const char *fn = "dt_embedding_backward";
    NEED(dout, fn); NEED(tokens, fn);
    NONZERO(B, fn); NONZERO(T, fn); NONZERO(C, fn); NONZERO(V, fn);
    DT_CHECK(check_tokens(fn, tokens, B * T, V));
    for (size_t b = 0; b < B; b++)
        for (size_t t = 0; t < T; t++) {
            const float *d = dout + (b * T + t) * C;
            for (size_t i = 0; i < C; i++) {
                if (dwte)
                    dwte[(size_t)tokens[b * T + t] * C + i] += d[i];
                if (dwpe)
                    dwpe[t * C + i] += d[i];
            }
        }
    return DT_OK;
}
