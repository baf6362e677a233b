// blas.cu - the GPU's plumbing (probe, memory, copies) and its matrix
// products through cuBLAS (gpu.h).
//
// cuBLAS is column-major, libdt row-major: a row-major C (M x N) is the
// column-major C^T (N x M), and C^T = op(B)^T op(A)^T, so the row-major
// product is cuBLAS's with the operands swapped and M, N exchanged; the
// leading dimensions stay what they are.
#include "gpu.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

static dt_result cuda_fail(cudaError_t e, const char *what)
{
    return dt_fail(e == cudaErrorMemoryAllocation ? DT_ERR_NOMEM
                   : e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorStubLibrary
                     ? DT_ERR_UNSUPPORTED
                   : DT_ERR_INTERNAL,
                   "%s: CUDA error %d (%s): %s", what, (int)e, cudaGetErrorName(e),
                   cudaGetErrorString(e));
}

#define GPU_TRY(expr)                                 \
    do {                                              \
        dt_result r_ = (expr);                        \
        if (r_ != DT_OK)                              \
            return r_;                                \
    } while (0)

#define CUDA_TRY(call, what)                          \
    do {                                              \
        cudaError_t e_ = (call);                      \
        if (e_ != cudaSuccess)                        \
            return cuda_fail(e_, what);               \
    } while (0)

extern "C" dt_result dt_gpu_probe(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e == cudaErrorStubLibrary)
        return dt_fail(DT_ERR_UNSUPPORTED, "no GPU: %s (%s)",
                       e == cudaErrorInsufficientDriver ? "no CUDA driver, or one older than the runtime"
                       : e == cudaErrorStubLibrary      ? "only the driver's stub library is installed"
                                                        : "no CUDA device",
                       cudaGetErrorString(e));
    if (e != cudaSuccess)
        return dt_fail(DT_ERR_UNSUPPORTED, "no GPU: cudaGetDeviceCount: %s", cudaGetErrorString(e));
    if (n < 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "no GPU: the driver sees no device");
    return DT_OK;
}

extern "C" dt_result dt_gpu_alloc(void **p, size_t bytes)
{
    CUDA_TRY(cudaMalloc(p, bytes ? bytes : 1), "cudaMalloc");
    return DT_OK;
}

extern "C" void dt_gpu_free(void *p) { cudaFree(p); }

extern "C" dt_result dt_gpu_to_device(void *dst, const void *src, size_t bytes)
{
    CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy (to device)");
    return DT_OK;
}

extern "C" dt_result dt_gpu_zero(void *p, size_t bytes)
{
    CUDA_TRY(cudaMemset(p, 0, bytes), "cudaMemset");
    return DT_OK;
}

extern "C" dt_result dt_gpu_to_host(void *dst, const void *src, size_t bytes)
{
    CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy (to host)");
    return DT_OK;
}

// One handle per thread (a cuBLAS handle must not be shared between
// threads that use it at once), made on the thread's first product for the
// device current then, bound to the thread's own stream (gpu.h), and
// destroyed as the thread ends. Creating one costs milliseconds.
struct blas_handle_slot {
    cublasHandle_t h = nullptr;
    ~blas_handle_slot()
    {
        if (h)
            cublasDestroy(h);
    }
};
static thread_local blas_handle_slot handle_slot;

static dt_result blas_handle(cublasHandle_t *out)
{
    if (!handle_slot.h) {
        cublasStatus_t s = cublasCreate(&handle_slot.h);
        if (s != CUBLAS_STATUS_SUCCESS) {
            handle_slot.h = nullptr;
            return dt_fail(DT_ERR_UNSUPPORTED, "cublasCreate: %s", cublasGetStatusString(s));
        }
        // fp32 products in fp32: the tolerance of the tests is fp32's, not TF32's
        cublasSetMathMode(handle_slot.h, CUBLAS_DEFAULT_MATH);
        s = cublasSetStream(handle_slot.h, cudaStreamPerThread);
        if (s != CUBLAS_STATUS_SUCCESS)
            return dt_fail(DT_ERR_INTERNAL, "cublasSetStream: %s", cublasGetStatusString(s));
    }
    *out = handle_slot.h;
    return DT_OK;
}

extern "C" dt_result dt_gpu_get_device(int *device)
{
    CUDA_TRY(cudaGetDevice(device), "cudaGetDevice");
    return DT_OK;
}

extern "C" dt_result dt_gpu_set_device(int device)
{
    CUDA_TRY(cudaSetDevice(device), "cudaSetDevice");
    return DT_OK;
}

extern "C" dt_result dt_gpu_sgemm(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K,
                                  float alpha, const float *A, size_t lda, const float *B,
                                  size_t ldb, float beta, float *C, size_t ldc)
{
    if (M == 0 || N == 0 || K == 0 || !A || !B || !C)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpu_sgemm: M, N, K must be > 0 and A, B, C "
                       "not NULL (M %zu, N %zu, K %zu)", M, N, K);
    cublasHandle_t handle = nullptr;
    GPU_TRY(blas_handle(&handle));
    cublasOperation_t opa = ta == DT_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opb = tb == DT_TRANS ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t s = cublasSgemm(handle, opb, opa, (int)N, (int)M, (int)K, &alpha, B, (int)ldb,
                                   A, (int)lda, &beta, C, (int)ldc);
    if (s != CUBLAS_STATUS_SUCCESS)
        return dt_fail(DT_ERR_INTERNAL, "dt_gpu_sgemm: cublasSgemm: %s", cublasGetStatusString(s));
    CUDA_TRY(cudaStreamSynchronize(cudaStreamPerThread), "dt_gpu_sgemm");
    return DT_OK;
}

__global__ static void add_bias(float *out, const float *bias, size_t N, size_t OC)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N * OC)
        out[i] += bias[i % OC];
}

// out (N, OC) = inp (N, C) @ weight^T + bias
extern "C" dt_result dt_gpu_linear_forward(float *out, const float *inp, const float *weight,
                                           const float *bias, size_t N, size_t C, size_t OC)
{
    GPU_TRY(dt_gpu_sgemm(DT_NO_TRANS, DT_TRANS, N, OC, C, 1.0f, inp, C, weight, C, 0.0f, out, OC));
    if (bias) {
        size_t n = N * OC;
        add_bias<<<(unsigned)((n + 255) / 256), 256>>>(out, bias, N, OC);
        CUDA_TRY(cudaGetLastError(), "dt_gpu_linear_forward (bias)");
        CUDA_TRY(cudaStreamSynchronize(cudaStreamPerThread), "dt_gpu_linear_forward");
    }
    return DT_OK;
}

// dinp = dout @ W; dW += dout^T @ inp; db += colsum(dout)
extern "C" dt_result dt_gpu_linear_backward(float *dinp, float *dweight, float *dbias,
                                            const float *dout, const float *inp,
                                            const float *weight, size_t N, size_t C, size_t OC)
{
    if (dinp)
        GPU_TRY(dt_gpu_sgemm(DT_NO_TRANS, DT_NO_TRANS, N, C, OC, 1.0f, dout, OC, weight, C, 0.0f,
                             dinp, C));
    GPU_TRY(dt_gpu_sgemm(DT_TRANS, DT_NO_TRANS, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dweight, C));
    return dbias ? dt_gpu_bias_backward(dbias, dout, N, OC) : DT_OK;
}
