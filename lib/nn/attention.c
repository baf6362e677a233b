/* attention.c - multi-head causal self-attention, forward and backward.
 *
 * qkv (B, T, 3C) holds, for each position, the query, key and value of
 * every head side by side: q at [0, C), k at [C, 2C), v at [2C, 3C), head h
 * owning channels [h*hs, (h+1)*hs) of each. Causal: position t attends to
 * positions t2 <= t only. */
#include "dt/nn.h"

#include <math.h>
#include <stdlib.h>

static dt_result check(const char *fn, const void *a, const void *b, const void *c, size_t B,
                       size_t T, size_t C, size_t NH)
{
    if (!a || !b || !c)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer", fn);
    if (!B || !T || !C || !NH)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: zero size (B=%zu T=%zu C=%zu NH=%zu)", fn, B, T,
                       C, NH);
    if (C % NH)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %zu channels do not split into %zu heads", fn, C,
                       NH);
    return DT_OK;
}

dt_result dt_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T,
                               size_t C, size_t NH)
{
    DT_CHECK(check("dt_attention_forward", out, att, qkv, B, T, C, NH));
    size_t hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < NH; h++)
            for (size_t t = 0; t < T; t++) {
                const float *q = qkv + (b * T + t) * C3 + h * hs;
                float *a = att + ((b * NH + h) * T + t) * T;
                /* scores of the visible positions, and their max for a stable softmax */
                float amax = -INFINITY;
                for (size_t t2 = 0; t2 <= t; t2++) {
                    const float *k = qkv + (b * T + t2) * C3 + C + h * hs;
                    float s = 0;
                    for (size_t i = 0; i < hs; i++)
                        s += q[i] * k[i];
                    a[t2] = s * scale;
                    amax = a[t2] > amax ? a[t2] : amax;
                }
                float sum = 0;
                for (size_t t2 = 0; t2 <= t; t2++) {
                    a[t2] = expf(a[t2] - amax);
                    sum += a[t2];
                }
                for (size_t t2 = 0; t2 < T; t2++)
                    a[t2] = t2 <= t ? a[t2] / sum : 0.0f;
                /* out_t = sum over t2 of att[t, t2] v_t2 */
                float *o = out + (b * T + t) * C + h * hs;
                for (size_t i = 0; i < hs; i++)
                    o[i] = 0;
                for (size_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
                    for (size_t i = 0; i < hs; i++)
                        o[i] += a[t2] * v[i];
                }
            }
    return DT_OK;
}

dt_result dt_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                const float *att, size_t B, size_t T, size_t C, size_t NH)
{
    DT_CHECK(check("dt_attention_backward", dqkv, dout, qkv, B, T, C, NH));
    if (!att)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_attention_backward: NULL buffer 'att'");
    size_t hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    float *datt = malloc(T * sizeof(float)); /* one row of scratch */
    if (!datt)
        return dt_fail(DT_ERR_NOMEM, "dt_attention_backward: %zu floats of scratch", T);
    for (size_t b = 0; b < B; b++)
        for (size_t h = 0; h < NH; h++)
            for (size_t t = 0; t < T; t++) {
                const float *a = att + ((b * NH + h) * T + t) * T;
                const float *dy = dout + (b * T + t) * C + h * hs;
                const float *q = qkv + (b * T + t) * C3 + h * hs;
                float *dq = dqkv + (b * T + t) * C3 + h * hs;
                /* through out = att v: datt[t2] = dy . v_t2, dv_t2 += att[t2] dy */
                float dot = 0; /* sum over t2 of att datt, for the softmax */
                for (size_t t2 = 0; t2 <= t; t2++) {
                    const float *v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
                    float *dv = dqkv + (b * T + t2) * C3 + 2 * C + h * hs;
                    float s = 0;
                    for (size_t i = 0; i < hs; i++) {
                        s += dy[i] * v[i];
                        dv[i] += a[t2] * dy[i];
                    }
                    datt[t2] = s;
                    dot += a[t2] * s;
                }
                /* through the softmax: dscore = att (datt - sum att datt);
                 * through score = scale q . k: dq += dscore scale k, dk += dscore scale q */
                for (size_t t2 = 0; t2 <= t; t2++) {
                    float ds = a[t2] * (datt[t2] - dot) * scale;
                    const float *k = qkv + (b * T + t2) * C3 + C + h * hs;
                    float *dk = dqkv + (b * T + t2) * C3 + C + h * hs;
                    for (size_t i = 0; i < hs; i++) {
                        dq[i] += ds * k[i];
                        dk[i] += ds * q[i];
                    }
                }
            }
    free(datt);
    return DT_OK;
}
