// kernels.cu - the small kernels of gpu.h: elementwise layers, softmax
// cross-entropy, layernorm and the fused optimizer steps, each the formula
// of its CPU twin in lib/nn and lib/optim (the comment gives it).
#include "gpu.h"
#include "kernels_internal.h"

#include <cuda_runtime.h>
#include <math.h>

dt_result dt_gpu_launched(const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(cudaStreamPerThread);
    if (e != cudaSuccess)
        return dt_fail(DT_ERR_INTERNAL, "%s: CUDA error %d (%s): %s", what, (int)e,
                       cudaGetErrorName(e), cudaGetErrorString(e));
    return DT_OK;
}

static unsigned blocks(size_t n, unsigned threads) { return (unsigned)((n + threads - 1) / threads); }

// ---------------------------------------------------------------- elementwise

// out = max(inp, 0)
__global__ static void relu_fwd(float *out, const float *inp, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = inp[i] > 0.0f ? inp[i] : 0.0f;
}

// dinp += dout where out > 0
__global__ static void relu_bwd(float *dinp, const float *dout, const float *out, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && out[i] > 0.0f)
        dinp[i] += dout[i];
}

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
__global__ static void gelu_fwd(float *out, const float *inp, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
}

extern "C" dt_result dt_gpu_relu_forward(float *out, const float *inp, size_t n)
{
    if (n == 0)
        return DT_OK;
    relu_fwd<<<blocks(n, 256), 256>>>(out, inp, n);
    return dt_gpu_launched("dt_gpu_relu_forward");
}

extern "C" dt_result dt_gpu_relu_backward(float *dinp, const float *dout, const float *out, size_t n)
{
    if (n == 0)
        return DT_OK;
    relu_bwd<<<blocks(n, 256), 256>>>(dinp, dout, out, n);
    return dt_gpu_launched("dt_gpu_relu_backward");
}

extern "C" dt_result dt_gpu_gelu_forward(float *out, const float *inp, size_t n)
{
    if (n == 0)
        return DT_OK;
    gelu_fwd<<<blocks(n, 256), 256>>>(out, inp, n);
    return dt_gpu_launched("dt_gpu_gelu_forward");
}

// y = x/2 (1 + tanh u), u = s (x + a x^3):
// dinp += dout ((1 + tanh u)/2 + x/2 (1 - tanh^2 u) s (1 + 3 a x^2))
__global__ static void gelu_bwd(float *dinp, const float *dout, const float *inp, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float x = inp[i], t = tanhf(0.7978845608f * (x + 0.044715f * x * x * x));
        float d = 0.5f * (1 + t) + 0.5f * x * (1 - t * t) * 0.7978845608f * (1 + 3 * 0.044715f * x * x);
        dinp[i] += d * dout[i];
    }
}

extern "C" dt_result dt_gpu_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n)
{
    if (!dinp || !dout || !inp || n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_gelu_backward: NULL buffer or n = 0");
    gelu_bwd<<<blocks(n, 256), 256>>>(dinp, dout, inp, n);
    return dt_gpu_launched("dt_gpu_gelu_backward");
}

// out = a + b (out may be a or b)
__global__ static void residual_fwd(float *out, const float *a, const float *b, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

// da += dout, db += dout (either NULL: skipped)
__global__ static void residual_bwd(float *da, float *db, const float *dout, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        if (da)
            da[i] += dout[i];
        if (db)
            db[i] += dout[i];
    }
}

extern "C" dt_result dt_gpu_residual_forward(float *out, const float *a, const float *b, size_t n)
{
    if (!out || !a || !b || n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_residual_forward: NULL buffer or n = 0");
    residual_fwd<<<blocks(n, 256), 256>>>(out, a, b, n);
    return dt_gpu_launched("dt_gpu_residual_forward");
}

extern "C" dt_result dt_gpu_residual_backward(float *da, float *db, const float *dout, size_t n)
{
    if (!dout || n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_residual_backward: NULL dout or n = 0");
    residual_bwd<<<blocks(n, 256), 256>>>(da, db, dout, n);
    return dt_gpu_launched("dt_gpu_residual_backward");
}

// dbias (OC) += sum over the N rows of dout (N, OC): one thread per column
__global__ static void bias_bwd(float *dbias, const float *dout, size_t N, size_t OC)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= OC)
        return;
    float s = 0.0f;
    for (size_t i = 0; i < N; i++)
        s += dout[i * OC + j];
    dbias[j] += s;
}

extern "C" dt_result dt_gpu_bias_backward(float *dbias, const float *dout, size_t N, size_t OC)
{
    if (N == 0 || OC == 0)
        return DT_OK;
    bias_bwd<<<blocks(OC, 128), 128>>>(dbias, dout, N, OC);
    return dt_gpu_launched("dt_gpu_bias_backward");
}

// ---------------------------------------------------------------- softmax cross-entropy

// One block per row: the row's max, then the sum of exp(x - max), each by
// a block reduction in shared memory (probs = exp(x - max) / sum, losses =
// -log probs[label]).
__device__ static float block_reduce(float v, int is_max)
{
    __shared__ float part[32];
    for (int o = 16; o > 0; o /= 2) {
        float w = __shfl_down_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, w) : v + w;
    }
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    int nwarps = (blockDim.x + 31) / 32;
    v = threadIdx.x < nwarps ? part[threadIdx.x] : (is_max ? -INFINITY : 0.0f);
    if (warp == 0)
        for (int o = 16; o > 0; o /= 2) {
            float w = __shfl_down_sync(0xffffffffu, v, o);
            v = is_max ? fmaxf(v, w) : v + w;
        }
    __shared__ float result;
    if (threadIdx.x == 0)
        result = v;
    __syncthreads();
    return result;
}

__global__ static void xent_fwd(float *probs, float *losses, const float *logits,
                                const int32_t *labels, size_t V)
{
    size_t row = blockIdx.x;
    const float *x = logits + row * V;
    float *p = probs + row * V;
    float mx = -INFINITY;
    for (size_t j = threadIdx.x; j < V; j += blockDim.x)
        mx = fmaxf(mx, x[j]);
    mx = block_reduce(mx, 1);
    float sum = 0.0f;
    for (size_t j = threadIdx.x; j < V; j += blockDim.x) {
        float e = expf(x[j] - mx);
        p[j] = e;
        sum += e;
    }
    sum = block_reduce(sum, 0);
    for (size_t j = threadIdx.x; j < V; j += blockDim.x)
        p[j] /= sum;
    __syncthreads();
    if (threadIdx.x == 0 && losses)
        losses[row] = -logf(p[labels[row]]);
}

// dlogits += scale (probs - onehot(label))
__global__ static void xent_bwd(float *dlogits, const float *probs, const int32_t *labels,
                                float scale, size_t N, size_t V)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N * V) {
        size_t row = i / V, j = i % V;
        dlogits[i] += scale * (probs[i] - (j == (size_t)labels[row] ? 1.0f : 0.0f));
    }
}

extern "C" dt_result dt_gpu_softmax_xent_forward(float *probs, float *losses, const float *logits,
                                                 const int32_t *labels, size_t N, size_t V)
{
    if (N == 0 || V == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_softmax_xent_forward: N and V must be > 0");
    xent_fwd<<<(unsigned)N, 256>>>(probs, losses, logits, labels, V);
    return dt_gpu_launched("dt_gpu_softmax_xent_forward");
}

extern "C" dt_result dt_gpu_softmax_xent_backward(float *dlogits, const float *probs,
                                                  const int32_t *labels, float scale, size_t N,
                                                  size_t V)
{
    if (N == 0 || V == 0)
        return DT_OK;
    xent_bwd<<<blocks(N * V, 256), 256>>>(dlogits, probs, labels, scale, N, V);
    return dt_gpu_launched("dt_gpu_softmax_xent_backward");
}

// ---------------------------------------------------------------- layernorm

// One block per row: out = (x - mean) rstd weight + bias, rstd = 1 / sqrt(var + 1e-5)
__global__ static void ln_fwd(float *out, float *mean, float *rstd, const float *inp,
                              const float *w, const float *b, size_t C)
{
    size_t row = blockIdx.x;
    const float *x = inp + row * C;
    float s = 0.0f;
    for (size_t j = threadIdx.x; j < C; j += blockDim.x)
        s += x[j];
    float m = block_reduce(s, 0) / (float)C;
    float q = 0.0f;
    for (size_t j = threadIdx.x; j < C; j += blockDim.x)
        q += (x[j] - m) * (x[j] - m);
    float r = rsqrtf(block_reduce(q, 0) / (float)C + 1e-5f);
    for (size_t j = threadIdx.x; j < C; j += blockDim.x)
        out[row * C + j] = (x[j] - m) * r * w[j] + b[j];
    if (threadIdx.x == 0) {
        if (mean)
            mean[row] = m;
        if (rstd)
            rstd[row] = r;
    }
}

extern "C" dt_result dt_gpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                              const float *weight, const float *bias, size_t N,
                                              size_t C)
{
    if (N == 0 || C == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_layernorm_forward: N and C must be > 0");
    ln_fwd<<<(unsigned)N, 256>>>(out, mean, rstd, inp, weight, bias, C);
    return dt_gpu_launched("dt_gpu_layernorm_forward");
}

// One block per row: with xhat = (x - mean) rstd and g = dy weight,
// dinp += rstd (g - mean(g) - xhat mean(g xhat)), the two means by block reductions
__global__ static void ln_bwd_inp(float *dinp, const float *dout, const float *inp,
                                  const float *w, const float *mean, const float *rstd, size_t C)
{
    size_t row = blockIdx.x;
    const float *x = inp + row * C, *dy = dout + row * C;
    float m = mean[row], r = rstd[row], sg = 0.0f, sgx = 0.0f;
    for (size_t j = threadIdx.x; j < C; j += blockDim.x) {
        float xhat = (x[j] - m) * r, g = dy[j] * w[j];
        sg += g;
        sgx += g * xhat;
    }
    float g_mean = block_reduce(sg, 0) / (float)C;
    float gx_mean = block_reduce(sgx, 0) / (float)C;
    for (size_t j = threadIdx.x; j < C; j += blockDim.x) {
        float xhat = (x[j] - m) * r, g = dy[j] * w[j];
        dinp[row * C + j] += r * (g - g_mean - xhat * gx_mean);
    }
}

// One thread per channel j: dweight[j] += sum over rows of dy xhat, dbias[j] += sum of dy
// (either NULL: skipped)
__global__ static void ln_bwd_params(float *dweight, float *dbias, const float *dout,
                                     const float *inp, const float *mean, const float *rstd,
                                     size_t N, size_t C)
{
    size_t j = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= C)
        return;
    float sw = 0.0f, sb = 0.0f;
    for (size_t n = 0; n < N; n++) {
        float dy = dout[n * C + j];
        sw += dy * (inp[n * C + j] - mean[n]) * rstd[n];
        sb += dy;
    }
    if (dweight)
        dweight[j] += sw;
    if (dbias)
        dbias[j] += sb;
}

extern "C" dt_result dt_gpu_layernorm_backward(float *dinp, float *dweight, float *dbias,
                                               const float *dout, const float *inp,
                                               const float *weight, const float *mean,
                                               const float *rstd, size_t N, size_t C)
{
    if (!dout || !inp || !weight || !mean || !rstd || N == 0 || C == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_layernorm_backward: NULL dout, inp, weight, "
                       "mean or rstd, or N or C = 0 (N %zu, C %zu)", N, C);
    if (dinp) {
        ln_bwd_inp<<<(unsigned)N, 256>>>(dinp, dout, inp, weight, mean, rstd, C);
        dt_result r = dt_gpu_launched("dt_gpu_layernorm_backward (dinp)");
        if (r != DT_OK)
            return r;
    }
    if (!dweight && !dbias)
        return DT_OK;
    ln_bwd_params<<<blocks(C, 128), 128>>>(dweight, dbias, dout, inp, mean, rstd, N, C);
    return dt_gpu_launched("dt_gpu_layernorm_backward (dweight, dbias)");
}

// ---------------------------------------------------------------- fused optimizers

// g = grad + wd p; buf = mu buf + g; p -= lr buf (without momentum: p -= lr g)
__global__ static void sgd(float *p, const float *g, float *buf, float lr, float wd, float mu,
                           size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float gi = g[i] + wd * p[i];
    if (buf) {
        buf[i] = mu * buf[i] + gi;
        gi = buf[i];
    }
    p[i] -= lr * gi;
}

// p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
// p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps)
__global__ static void adamw(float *p, const float *g, float *m, float *v, float b1, float b2,
                             float eps, float decay, float step_size, float inv_sqrt_bc2, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float gi = g[i];
    p[i] *= decay;
    m[i] = b1 * m[i] + (1 - b1) * gi;
    v[i] = b2 * v[i] + (1 - b2) * gi * gi;
    p[i] -= step_size * m[i] / (sqrtf(v[i]) * inv_sqrt_bc2 + eps);
}

extern "C" dt_result dt_gpu_sgd_update(const dt_optim_config *cfg, float *params, const float *grads,
                                       float *momentum_buf, size_t count)
{
    if (!cfg || (count && (!params || !grads)))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_sgd_update: NULL config, params or grads");
    if (count == 0)
        return DT_OK;
    sgd<<<blocks(count, 256), 256>>>(params, grads, cfg->momentum != 0.0f ? momentum_buf : NULL,
                                     cfg->lr, cfg->weight_decay, cfg->momentum, count);
    return dt_gpu_launched("dt_gpu_sgd_update");
}

extern "C" dt_result dt_gpu_adamw_update(const dt_optim_config *cfg, float *params,
                                         const float *grads, float *m, float *v, size_t count,
                                         long step)
{
    if (!cfg || step < 1 || (count && (!params || !grads || !m || !v)))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_adamw_update: NULL buffer or step %ld < 1",
                       step);
    if (count == 0)
        return DT_OK;
    double bc1 = 1.0 - pow(cfg->beta1, (double)step), bc2 = 1.0 - pow(cfg->beta2, (double)step);
    adamw<<<blocks(count, 256), 256>>>(params, grads, m, v, cfg->beta1, cfg->beta2, cfg->eps,
                                       1.0f - cfg->lr * cfg->weight_decay, (float)(cfg->lr / bc1),
                                       (float)(1.0 / sqrt(bc2)), count);
    return dt_gpu_launched("dt_gpu_adamw_update");
}
