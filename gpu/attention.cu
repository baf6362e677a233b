// attention.cu - the tiny GPT's own kernels (gpu.h): the token and position
// embedding and causal multi-head self-attention, each the loop of its CPU
// twin (lib/nn/layers.c, lib/nn/attention.c) with one thread per output
// row or element, written to be checked against it by eye, not to be fast.
#include "gpu.h"
#include "kernels_internal.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

static unsigned blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// ---------------------------------------------------------------- embedding

// The CPU's check of the tokens, on a host copy: a token outside [0, V)
// fails naming its position instead of reading outside wte.
static dt_result check_tokens(const char *fn, const int32_t *tokens, size_t n, size_t V)
{
    int32_t *h = (int32_t *)malloc(n * sizeof *h);
    if (!h)
        return dt_fail(DT_ERR_NOMEM, "%s: %zu tokens' host copy", fn, n);
    dt_result r = dt_gpu_to_host(h, tokens, n * sizeof *h);
    for (size_t i = 0; r == DT_OK && i < n; i++)
        if (h[i] < 0 || (size_t)h[i] >= V)
            r = dt_fail(DT_ERR_INVALID_ARG, "%s: token %d at position %zu is outside [0, %zu)",
                        fn, h[i], i, V);
    free(h);
    return r;
}

// out[bt, i] = wte[tokens[bt], i] + wpe[t, i]: one thread per element of out
__global__ static void embed_fwd(float *out, const int32_t *tokens, const float *wte,
                                 const float *wpe, size_t BT, size_t T, size_t C)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= BT * C)
        return;
    size_t bt = e / C, i = e % C, t = bt % T;
    out[e] = wte[(size_t)tokens[bt] * C + i] + (wpe ? wpe[t * C + i] : 0.0f);
}

// dwte[tokens[bt], i] += dout[bt, i]: one thread per element of dout. Two
// positions with the same token add into the same row of dwte, so the adds
// are atomic; their order is the scheduler's, not the CPU's b, t order, so
// the sum rounds differently (a tolerance in the test, not exactness).
__global__ static void embed_bwd_wte(float *dwte, const float *dout, const int32_t *tokens,
                                     size_t BT, size_t C)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < BT * C)
        atomicAdd(&dwte[(size_t)tokens[e / C] * C + e % C], dout[e]);
}

// dwpe[t, i] += sum over b of dout[b, t, i]: one thread per element of wpe
__global__ static void embed_bwd_wpe(float *dwpe, const float *dout, size_t B, size_t T, size_t C)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= T * C)
        return;
    float s = 0.0f;
    for (size_t b = 0; b < B; b++)
        s += dout[b * T * C + e];
    dwpe[e] += s;
}

extern "C" dt_result dt_gpu_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                                              const float *wpe, size_t B, size_t T, size_t C,
                                              size_t V)
{
    const char *fn = "dt_gpu_embedding_forward";
    if (!out || !tokens || !wte || !B || !T || !C || !V)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL out, tokens or wte, or a zero size "
                       "(B=%zu T=%zu C=%zu V=%zu)", fn, B, T, C, V);
    DT_CHECK(check_tokens(fn, tokens, B * T, V));
    embed_fwd<<<blocks(B * T * C, 256), 256>>>(out, tokens, wte, wpe, B * T, T, C);
    return dt_gpu_launched(fn);
}

extern "C" dt_result dt_gpu_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                               const int32_t *tokens, size_t B, size_t T,
                                               size_t C, size_t V)
{
    const char *fn = "dt_gpu_embedding_backward";
    if (!dout || !tokens || !B || !T || !C || !V)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL dout or tokens, or a zero size "
                       "(B=%zu T=%zu C=%zu V=%zu)", fn, B, T, C, V);
    DT_CHECK(check_tokens(fn, tokens, B * T, V));
    if (dwte) {
        embed_bwd_wte<<<blocks(B * T * C, 256), 256>>>(dwte, dout, tokens, B * T, C);
        DT_CHECK(dt_gpu_launched("dt_gpu_embedding_backward (dwte)"));
    }
    if (dwpe) {
        embed_bwd_wpe<<<blocks(T * C, 256), 256>>>(dwpe, dout, B, T, C);
        DT_CHECK(dt_gpu_launched("dt_gpu_embedding_backward (dwpe)"));
    }
    return DT_OK;
}

// ---------------------------------------------------------------- attention
//
// qkv (B, T, 3C): q at [0, C), k at [C, 2C), v at [2C, 3C) of each
// position, head h owning channels [h hs, (h+1) hs) of each; att (B, NH, T, T).

// One thread per row (b, h, t) of att, the CPU's loop body:
//   att[t2] = softmax over t2 <= t of q_t . k_t2 / sqrt(hs), 0 for t2 > t
//   out_t   = sum over t2 <= t of att[t2] v_t2
__global__ static void attn_fwd(float *out, float *att, const float *qkv, size_t B, size_t T,
                                size_t C, size_t NH)
{
    size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= B * NH * T)
        return;
    size_t t = row % T, h = row / T % NH, b = row / T / NH;
    size_t hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    const float *q = qkv + (b * T + t) * C3 + h * hs;
    float *a = att + row * T;
    float amax = -INFINITY;
    for (size_t t2 = 0; t2 <= t; t2++) {
        const float *k = qkv + (b * T + t2) * C3 + C + h * hs;
        float s = 0.0f;
        for (size_t i = 0; i < hs; i++)
            s += q[i] * k[i];
        a[t2] = s * scale;
        amax = fmaxf(amax, a[t2]);
    }
    float sum = 0.0f;
    for (size_t t2 = 0; t2 <= t; t2++) {
        a[t2] = expf(a[t2] - amax);
        sum += a[t2];
    }
    for (size_t t2 = 0; t2 < T; t2++)
        a[t2] = t2 <= t ? a[t2] / sum : 0.0f;
    float *o = out + (b * T + t) * C + h * hs;
    for (size_t i = 0; i < hs; i++) {
        float s = 0.0f;
        for (size_t t2 = 0; t2 <= t; t2++)
            s += a[t2] * qkv[(b * T + t2) * C3 + 2 * C + h * hs + i];
        o[i] = s;
    }
}

// The backward in two passes, so that no two threads add into one place.
// Pass 1, one thread per row (b, h, t): the gradient of the scores,
//   datt[t2]   = dout_t . v_t2
//   dscore[t2] = att[t2] (datt[t2] - sum over t2' of att datt) / sqrt(hs), t2 <= t
// into dscore (B, NH, T, T), 0 above the diagonal.
__global__ static void attn_bwd_scores(float *dscore, const float *dout, const float *qkv,
                                       const float *att, size_t B, size_t T, size_t C, size_t NH)
{
    size_t row = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= B * NH * T)
        return;
    size_t t = row % T, h = row / T % NH, b = row / T / NH;
    size_t hs = C / NH, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    const float *a = att + row * T, *dy = dout + (b * T + t) * C + h * hs;
    float *ds = dscore + row * T;
    float dot = 0.0f;
    for (size_t t2 = 0; t2 <= t; t2++) {
        const float *v = qkv + (b * T + t2) * C3 + 2 * C + h * hs;
        float s = 0.0f;
        for (size_t i = 0; i < hs; i++)
            s += dy[i] * v[i];
        ds[t2] = s;
        dot += a[t2] * s;
    }
    for (size_t t2 = 0; t2 < T; t2++)
        ds[t2] = t2 <= t ? a[t2] * (ds[t2] - dot) * scale : 0.0f;
}

// Pass 2, one thread per (b, t, c), c a channel of head h = c / hs:
//   dq[t, c] += sum over t2 <= t of dscore[h, t, t2] k[t2, c]
//   dk[t, c] += sum over t3 >= t of dscore[h, t3, t] q[t3, c]
//   dv[t, c] += sum over t3 >= t of att[h, t3, t] dout[t3, c]
__global__ static void attn_bwd_qkv(float *dqkv, const float *dscore, const float *dout,
                                    const float *qkv, const float *att, size_t B, size_t T,
                                    size_t C, size_t NH)
{
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= B * T * C)
        return;
    size_t c = e % C, t = e / C % T, b = e / C / T;
    size_t h = c / (C / NH), C3 = 3 * C;
    const float *ds = dscore + (b * NH + h) * T * T, *a = att + (b * NH + h) * T * T;
    float dq = 0.0f, dk = 0.0f, dv = 0.0f;
    for (size_t t2 = 0; t2 <= t; t2++)
        dq += ds[t * T + t2] * qkv[(b * T + t2) * C3 + C + c];
    for (size_t t3 = t; t3 < T; t3++) {
        dk += ds[t3 * T + t] * qkv[(b * T + t3) * C3 + c];
        dv += a[t3 * T + t] * dout[(b * T + t3) * C + c];
    }
    float *d = dqkv + (b * T + t) * C3;
    d[c] += dq;
    d[C + c] += dk;
    d[2 * C + c] += dv;
}

static dt_result attn_check(const char *fn, const void *x, const void *y, const void *z, size_t B,
                            size_t T, size_t C, size_t NH)
{
    if (!x || !y || !z)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer", fn);
    if (!B || !T || !C || !NH)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: zero size (B=%zu T=%zu C=%zu NH=%zu)", fn, B, T,
                       C, NH);
    if (C % NH)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %zu channels do not split into %zu heads", fn, C,
                       NH);
    return DT_OK;
}

extern "C" dt_result dt_gpu_attention_forward(float *out, float *att, const float *qkv, size_t B,
                                              size_t T, size_t C, size_t NH)
{
    DT_CHECK(attn_check("dt_gpu_attention_forward", out, att, qkv, B, T, C, NH));
    attn_fwd<<<blocks(B * NH * T, 64), 64>>>(out, att, qkv, B, T, C, NH);
    return dt_gpu_launched("dt_gpu_attention_forward");
}

extern "C" dt_result dt_gpu_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                               const float *att, size_t B, size_t T, size_t C,
                                               size_t NH)
{
    const char *fn = "dt_gpu_attention_backward";
    DT_CHECK(attn_check(fn, dqkv, dout, qkv, B, T, C, NH));
    if (!att)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer 'att'", fn);
    float *dscore = NULL;
    DT_CHECK(dt_gpu_alloc((void **)&dscore, B * NH * T * T * sizeof(float)));
    attn_bwd_scores<<<blocks(B * NH * T, 64), 64>>>(dscore, dout, qkv, att, B, T, C, NH);
    dt_result r = dt_gpu_launched("dt_gpu_attention_backward (scores)");
    if (r == DT_OK) {
        attn_bwd_qkv<<<blocks(B * T * C, 256), 256>>>(dqkv, dscore, dout, qkv, att, B, T, C, NH);
        r = dt_gpu_launched("dt_gpu_attention_backward (qkv)");
    }
    dt_gpu_free(dscore);
    return r;
}
