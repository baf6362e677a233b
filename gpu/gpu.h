/* gpu.h - CUDA compute for the workbook's models (chapter 15), built by
 * `make gpu` only (the .cu files of gpu/, into build/gpu/). Each function is the GPU
 * twin of a CPU function of libdt, with the same contract on device
 * buffers (a test compares it with the CPU function; tests/gpu/).
 *
 * Each call runs on the CALLING THREAD's own stream (CUDA's per-thread
 * default stream: nvcc --default-stream per-thread, and a cuBLAS handle
 * per thread bound to it) and is complete when it returns (it synchronizes
 * that stream, not the device). So two threads' calls run concurrently on
 * the GPU: a host thread of dt/stream.h is one GPU stream (chapter 15,
 * section 9). A thread uses the device current on it: a new thread starts
 * on device 0 (dt_gpu_set_device).
 *
 *   dt_gpu_sgemm            dt_sgemm (row-major, through cuBLAS)
 *   dt_gpu_linear_forward   dt_linear_forward (sgemm, then the bias)
 *   dt_gpu_linear_backward  dt_linear_backward (two sgemms, the bias's sum)
 *   dt_gpu_relu_forward/backward, dt_gpu_gelu_forward/backward,
 *   dt_gpu_residual_forward/backward       the elementwise layers
 *   dt_gpu_softmax_xent_forward/backward   dt_softmax_xent_*
 *   dt_gpu_layernorm_forward/backward      dt_layernorm_*
 *   dt_gpu_embedding_forward/backward      dt_embedding_* (the backward's
 *                                          scatter-add is atomic: its sum
 *                                          order is not the CPU's)
 *   dt_gpu_attention_forward/backward      dt_attention_* (causal, multi-head,
 *                                          the same qkv and att layouts)
 *   dt_gpu_sgd_update, dt_gpu_adamw_update dt/optim.h's rules, fused:
 *                                          one kernel reads each parameter,
 *                                          gradient and state once
 *
 * A failure of CUDA or cuBLAS comes back as a dt_result naming the call and
 * CUDA's message. Plain C: callable from the C tests and programs. */
#ifndef DT_GPU_H
#define DT_GPU_H

#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/tensor.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* DT_OK when a GPU can be used here; else DT_ERR_UNSUPPORTED, with why
 * ("no CUDA driver", "no GPU visible", ...) in dt_last_error(). */
dt_result dt_gpu_probe(void);

/* The calling thread's current device, and setting it (cudaGetDevice,
 * cudaSetDevice). */
dt_result dt_gpu_get_device(int *device);
dt_result dt_gpu_set_device(int device);

/* cudaMalloc, cudaFree and copies, as dt_results. */
dt_result dt_gpu_alloc(void **p, size_t bytes);
void dt_gpu_free(void *p);
dt_result dt_gpu_to_device(void *dst, const void *src, size_t bytes);
dt_result dt_gpu_to_host(void *dst, const void *src, size_t bytes);
dt_result dt_gpu_zero(void *p, size_t bytes);

dt_result dt_gpu_sgemm(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K, float alpha,
                       const float *A, size_t lda, const float *B, size_t ldb, float beta,
                       float *C, size_t ldc);
dt_result dt_gpu_linear_forward(float *out, const float *inp, const float *weight,
                                const float *bias, size_t N, size_t C, size_t OC);
/* dinp (N, C) = dout @ weight (overwritten; NULL: skipped); dweight +=
 * dout^T @ inp; dbias += the column sums of dout (NULL: no bias). */
dt_result dt_gpu_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                 const float *inp, const float *weight, size_t N, size_t C,
                                 size_t OC);
dt_result dt_gpu_bias_backward(float *dbias, const float *dout, size_t N, size_t OC);
dt_result dt_gpu_relu_forward(float *out, const float *inp, size_t n);
dt_result dt_gpu_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
dt_result dt_gpu_gelu_forward(float *out, const float *inp, size_t n);
dt_result dt_gpu_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);
dt_result dt_gpu_residual_forward(float *out, const float *a, const float *b, size_t n);
dt_result dt_gpu_residual_backward(float *da, float *db, const float *dout, size_t n);
dt_result dt_gpu_softmax_xent_forward(float *probs, float *losses, const float *logits,
                                      const int32_t *labels, size_t N, size_t V);
dt_result dt_gpu_softmax_xent_backward(float *dlogits, const float *probs,
                                       const int32_t *labels, float scale, size_t N, size_t V);
dt_result dt_gpu_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                                   const float *weight, const float *bias, size_t N, size_t C);
dt_result dt_gpu_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                    const float *inp, const float *weight, const float *mean,
                                    const float *rstd, size_t N, size_t C);
/* The tokens (device, B x T) are checked in [0, V) on a host copy. */
dt_result dt_gpu_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                                   const float *wpe, size_t B, size_t T, size_t C, size_t V);
dt_result dt_gpu_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                    const int32_t *tokens, size_t B, size_t T, size_t C, size_t V);
dt_result dt_gpu_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T,
                                   size_t C, size_t NH);
/* dqkv += the gradient; a scratch of B NH T T floats is allocated for the call. */
dt_result dt_gpu_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                    const float *att, size_t B, size_t T, size_t C, size_t NH);
dt_result dt_gpu_sgd_update(const dt_optim_config *cfg, float *params, const float *grads,
                            float *momentum_buf, size_t count);
dt_result dt_gpu_adamw_update(const dt_optim_config *cfg, float *params, const float *grads,
                              float *m, float *v, size_t count, long step);

/* Around the loss (loss.c): every label in [0, classes), else an error
 * naming who, the row and the label; and *loss = the mean of the n device
 * losses, brought down into host (n floats) and summed in double. */
dt_result dt_gpu_check_labels(const char *who, const int32_t *labels, size_t n, size_t classes);
dt_result dt_gpu_mean_loss(float *loss, float *host, const float *losses, size_t n);

/* ---------------------------------------------------------------- the MLP on the GPU (mlp.c)
 *
 * A dt_mlp_create model's training step on device buffers: forward
 * (linear, ReLU), softmax cross-entropy, backward, and plain SGD (p -= lr
 * g, fused), the same step as the CPU's dt_model_forward, dt_model_loss,
 * dt_model_backward and dt_sgd_update, within fp32's rounding. */
typedef struct {
    const dt_model *model;  /* the layout (an MLP); its host buffers are not used */
    size_t B;               /* rows per step */
    float *params, *grads;  /* device, the model's layout */
    float *input;           /* B x in_width */
    float **act;            /* [layers] B x out_width of each layer */
    float *dbuf[2];         /* B x the widest layer: gradients between layers */
    float *probs, *losses;  /* B x classes, B */
    int32_t *labels;        /* B */
    float *host_losses;     /* B, for the mean */
} dt_gpu_mlp;

/* Device buffers for m's step on B rows, m's parameters copied up. */
dt_result dt_gpu_mlp_create(dt_gpu_mlp *g, const dt_model *m, size_t B);
/* One step on x (B x in_width) and labels (B), host buffers; *loss: the
 * mean loss before the step (may be NULL). */
dt_result dt_gpu_mlp_step(dt_gpu_mlp *g, const float *x, const int32_t *labels, float lr,
                          float *loss);
/* The parameters back, into params (the model's num_params floats). */
dt_result dt_gpu_mlp_params(const dt_gpu_mlp *g, float *params);
void dt_gpu_mlp_free(dt_gpu_mlp *g);

/* ---------------------------------------------------------------- the tiny GPT on the GPU (gpt.c)
 *
 * A whole dt_gpt_create model's training step on device buffers: the
 * CPU's reference path (DT_NN_REFERENCE: embedding, blocks, head, softmax
 * cross-entropy, the backward in reverse) call for call, then plain SGD
 * (p -= lr g, fused): dt_model_forward, dt_model_loss, dt_model_backward
 * and dt_sgd_update within fp32's rounding. */
typedef struct {
    const dt_model *model;     /* the layout (a GPT); its host buffers are not used */
    size_t B, T;               /* sequences per step, positions per sequence */
    float *params, *grads;     /* device, the model's layout; grads: the last step's */
    int32_t *tokens, *labels;  /* B T */
    float **out;               /* [layers] B T x out_width of each layer */
    float **saved;             /* [layers] what a block's or the head's backward reads */
    float *dbuf[2];            /* B T x max(C, V): gradients between layers */
    float *scratch;            /* a block's backward temporaries */
    float *probs, *losses;     /* B T x V, B T */
    float *host_losses;        /* B T, for the mean */
} dt_gpu_gpt;

/* Device buffers for m's step on B sequences of T tokens (T <= the
 * context), m's parameters copied up. */
dt_result dt_gpu_gpt_create(dt_gpu_gpt *g, const dt_model *m, size_t B, size_t T);
/* One step on tokens and labels (B T each, host buffers); *loss: the mean
 * loss before the step (may be NULL). */
dt_result dt_gpu_gpt_step(dt_gpu_gpt *g, const int32_t *tokens, const int32_t *labels, float lr,
                          float *loss);
/* The parameters, or the last step's gradients, back into num_params floats. */
dt_result dt_gpu_gpt_params(const dt_gpu_gpt *g, float *params);
dt_result dt_gpu_gpt_grads(const dt_gpu_gpt *g, float *grads);
void dt_gpu_gpt_free(dt_gpu_gpt *g);

#ifdef __cplusplus
}
#endif

#endif /* DT_GPU_H */
