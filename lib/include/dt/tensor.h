/* dt/tensor.h - float32 buffers, matrix multiply, elementwise ops,
 * reductions and half-precision array conversion.
 *
 * Matrices are row-major. A "buffer" is a plain float pointer with an
 * explicit count: the layers above carve one big buffer into views, so no
 * call here owns or frees memory unless it says so.
 *
 * Every call that can fail returns a dt_result and records a message
 * (dt_last_error). Flat-range calls (the dt_vec_* family) accept count 0 as
 * a no-op, because a shard of a flat buffer may be empty; matrix calls reject
 * zero dimensions, which always mean a caller's mistake. */
#ifndef DT_TENSOR_H
#define DT_TENSOR_H

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- shapes */

#define DT_MAX_DIMS 4

typedef struct {
    int ndim;                  /* 1..DT_MAX_DIMS */
    size_t dims[DT_MAX_DIMS];  /* dims[ndim-1] varies fastest */
} dt_shape;

/* Shapes of 1 to 4 dimensions. */
dt_shape dt_shape1(size_t a);
dt_shape dt_shape2(size_t a, size_t b);
dt_shape dt_shape3(size_t a, size_t b, size_t c);
dt_shape dt_shape4(size_t a, size_t b, size_t c, size_t d);

/* The number of elements (product of the dims); 0 for an invalid shape. */
size_t dt_shape_numel(const dt_shape *s);

/* Writes "(a, b, c)" into buf; returns buf. */
char *dt_shape_str(const dt_shape *s, char *buf, size_t len);

/* A float32 tensor that owns its buffer (allocated with dt_mem_alloc). */
typedef struct {
    float *data;
    dt_shape shape;
    dt_mem_tag tag;
} dt_tensor;

/* Allocates a zeroed tensor charged to tag. On failure *t is left zeroed. */
dt_result dt_tensor_alloc(dt_tensor *t, dt_shape shape, dt_mem_tag tag);
/* Frees t's buffer and zeroes t. NULL or an empty tensor is ignored. */
void dt_tensor_free(dt_tensor *t);
size_t dt_tensor_numel(const dt_tensor *t);

/* ---------------------------------------------------------------- sgemm */

typedef enum { DT_NO_TRANS = 0, DT_TRANS = 1 } dt_trans;

/* C = alpha * op(A) * op(B) + beta * C, row-major, as cblas_sgemm:
 *   op(A) is M x K: A is M x K (lda >= K), or K x M transposed (lda >= M);
 *   op(B) is K x N: B is K x N (ldb >= N), or N x K transposed (ldb >= K);
 *   C is M x N (ldc >= N). beta = 0 overwrites C (a nan in C does not
 *   survive). M, N, K must be > 0. C must not overlap A or B.
 * Goes through OpenBLAS when libdt was built with it, else the built-in
 * kernel. */
dt_result dt_sgemm(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K,
                   float alpha, const float *A, size_t lda, const float *B,
                   size_t ldb, float beta, float *C, size_t ldc);

/* The same contract, always the built-in cache-blocked kernel. */
dt_result dt_sgemm_builtin(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K,
                           float alpha, const float *A, size_t lda, const float *B,
                           size_t ldb, float beta, float *C, size_t ldc);

/* 1 when dt_sgemm goes through OpenBLAS, 0 when through the built-in kernel. */
int dt_blas_available(void);

/* Threads OpenBLAS may use (process-wide). Ranks are threads, so libdt
 * starts OpenBLAS at DT_BLAS_THREADS (environment), else 1: eight ranks
 * each starting N BLAS threads on two cores would thrash. n < 1 is refused.
 * Without OpenBLAS this only records n. */
dt_result dt_blas_set_threads(int n);
int dt_blas_threads(void);

/* ---------------------------------------------------------------- elementwise
 * All take a count of elements; in-place use (out == a) is allowed unless
 * stated otherwise. NULL is refused unless count is 0. */

dt_result dt_vec_fill(float *x, float value, size_t count);
dt_result dt_vec_copy(float *dst, const float *src, size_t count);
dt_result dt_vec_scale(float *x, float alpha, size_t count);           /* x *= alpha */
dt_result dt_vec_axpy(float *y, float alpha, const float *x, size_t count); /* y += alpha*x */
dt_result dt_vec_add(float *out, const float *a, const float *b, size_t count); /* out = a+b */
dt_result dt_vec_sub(float *out, const float *a, const float *b, size_t count); /* out = a-b */
dt_result dt_vec_mul(float *out, const float *a, const float *b, size_t count); /* out = a*b */

/* ---------------------------------------------------------------- reductions
 * Sums are accumulated in double so that results do not depend on count's
 * size more than float rounding of the result itself. count must be > 0 for
 * max and argmax. */

dt_result dt_vec_sum(const float *x, size_t count, double *out);
dt_result dt_vec_dot(const float *a, const float *b, size_t count, double *out);
dt_result dt_vec_sumsq(const float *x, size_t count, double *out); /* sum x_i^2 */
dt_result dt_vec_max(const float *x, size_t count, float *out);
dt_result dt_vec_argmax(const float *x, size_t count, size_t *out); /* first max */
/* max |a_i - b_i|; 0 for count 0. */
dt_result dt_vec_max_abs_diff(const float *a, const float *b, size_t count, float *out);

/* ---------------------------------------------------------------- conversion
 * Element-wise conversion between f32, f16 and bf16 arrays, round to
 * nearest even, inf and nan kept (core's scalar converters). Same dtype is
 * a copy. src and dst must not overlap. */
dt_result dt_convert(void *dst, dt_dtype dst_type, const void *src, dt_dtype src_type,
                     size_t count);
dt_result dt_f32_to_f16_array(uint16_t *dst, const float *src, size_t count);
dt_result dt_f16_to_f32_array(float *dst, const uint16_t *src, size_t count);
dt_result dt_f32_to_bf16_array(uint16_t *dst, const float *src, size_t count);
dt_result dt_bf16_to_f32_array(float *dst, const uint16_t *src, size_t count);

#ifdef __cplusplus
}
#endif

#endif /* DT_TENSOR_H */
