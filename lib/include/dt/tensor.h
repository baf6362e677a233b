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

/* ---------------------------------------------------------------- CPU and BLAS kernels
 *
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernels when it
 * loads, from the CPU model. On a CPU model it does not know it falls back
 * to older kernels: "Prescott" (SSE3) on a recent Intel Xeon, "Haswell"
 * (AVX2) on AMD's Zen 5, two to five times slower than the kernels the CPU
 * can run. The choice can only be changed before the library loads, by the
 * environment variable OPENBLAS_CORETYPE. So libdt checks at start-up
 * (a constructor, before main) and, where OpenBLAS chose kernels below
 * what the CPU supports, sets OPENBLAS_CORETYPE and starts the program
 * again, once, with the same arguments (docs/design.md, "The BLAS kernels").
 *
 *   DT_BLAS_KERNELS=auto   (default) replace kernels below the CPU's level
 *   DT_BLAS_KERNELS=off    keep OpenBLAS's own choice
 *   OPENBLAS_CORETYPE=X    the user's choice: libdt leaves it alone
 *   DT_QUIET=1             no line on stderr when libdt replaces the kernels
 *                          (it is also quiet under the grader and in MPI
 *                          ranks other than 0)
 *   DT_BLAS_TEST_FALLBACK=1  (tests) take OPENBLAS_CORETYPE as OpenBLAS's own
 *                          choice, so that a test can make it fall back */

/* Levels of vector instructions, each including the ones below it. */
typedef enum {
    DT_ISA_BASE = 0,    /* x86-64's SSE2 (and SSE3), or a CPU that is not x86 */
    DT_ISA_AVX,         /* 256-bit AVX */
    DT_ISA_AVX2,        /* AVX2 and FMA3 */
    DT_ISA_AVX512,      /* AVX-512 F, DQ, CD, BW, VL: OpenBLAS's SkylakeX kernels */
    DT_ISA_AVX512_BF16, /* and AVX512_BF16: its Cooperlake kernels */
    DT_NUM_ISAS
} dt_isa;

/* "base", "avx", "avx2", "avx512", "avx512_bf16"; "unknown" otherwise. */
const char *dt_isa_name(dt_isa isa);

/* dt_cpu_info.features: one bit each, usable only (the CPU has it and the
 * operating system saves its registers). */
enum {
    DT_CPU_SSE2 = 1u << 0,
    DT_CPU_SSE3 = 1u << 1,
    DT_CPU_AVX = 1u << 2,
    DT_CPU_FMA = 1u << 3,
    DT_CPU_AVX2 = 1u << 4,
    DT_CPU_AVX512F = 1u << 5,
    DT_CPU_AVX512DQ = 1u << 6,
    DT_CPU_AVX512CD = 1u << 7,
    DT_CPU_AVX512BW = 1u << 8,
    DT_CPU_AVX512VL = 1u << 9,
    DT_CPU_AVX512_BF16 = 1u << 10,
};

typedef struct {
    char vendor[13];     /* "GenuineIntel", "AuthenticAMD"; "" when not x86 */
    char model_name[49]; /* the brand string, e.g. "AMD EPYC"; "unknown" when none */
    int family, model, stepping;
    unsigned features;   /* DT_CPU_* bits */
    dt_isa isa;          /* the highest complete level of features */
} dt_cpu_info;

/* The cpuid leaves dt_cpu_decode reads, registers in the order EAX, EBX,
 * ECX, EDX: leaf 0, leaf 1, leaf 7 subleaf 0 and 1, leaf 0x80000000 and the
 * brand string's 0x80000002..4; and XCR0 (XGETBV 0; 0 when unknown). */
typedef struct {
    uint32_t leaf0[4], leaf1[4], leaf7[4], leaf7_1[4], ext0[4], brand[3][4];
    uint64_t xcr0;
} dt_cpuid_raw;

/* Decodes raw registers (a pure function: tests give other CPUs' values). */
void dt_cpu_decode(const dt_cpuid_raw *raw, dt_cpu_info *out);
/* This machine's CPU. */
void dt_cpu_detect(dt_cpu_info *out);
/* Writes the names of the features, space separated ("avx avx2 ..."), into
 * buf as snprintf does; returns the length the whole list needs. */
int dt_cpu_features_str(unsigned features, char *buf, size_t len);

/* The level of an OpenBLAS kernel set ("Prescott" -> DT_ISA_BASE,
 * "Haswell" and "Zen" -> DT_ISA_AVX2, "SkylakeX" -> DT_ISA_AVX512, ...),
 * by OpenBLAS's core names, case as OpenBLAS writes them; -1 for a name
 * libdt does not know. */
int dt_blas_kernels_isa(const char *kernels);

/* The kernels libdt asks for when OpenBLAS chose `kernels` on `cpu`: the
 * kernel set of the CPU's level ("Cooperlake", "SkylakeX", "Haswell",
 * "Sandybridge") when `kernels` is below that level; NULL when they are
 * at the CPU's level or above, when the name is unknown, or when the CPU
 * has nothing above SSE. */
const char *dt_blas_kernels_better(const char *kernels, const dt_cpu_info *cpu);

/* Who chose the kernels in use. */
typedef enum {
    DT_BLAS_BY_BLAS,  /* OpenBLAS, by itself */
    DT_BLAS_BY_LIBDT, /* libdt replaced OpenBLAS's choice (OPENBLAS_CORETYPE) */
    DT_BLAS_BY_USER,  /* the user's OPENBLAS_CORETYPE */
    DT_BLAS_BY_BUILD, /* no OpenBLAS in this build: the built-in kernel */
} dt_blas_chooser;

/* "openblas", "libdt", "OPENBLAS_CORETYPE", "build". */
const char *dt_blas_chooser_name(dt_blas_chooser c);

typedef struct {
    char library[32];     /* "OpenBLAS 0.3.21"; "built-in" without OpenBLAS */
    char config[128];     /* openblas_get_config(); "" without OpenBLAS */
    char kernels[24];     /* the kernels in use ("Cooperlake"); "built-in" */
    char blas_choice[24]; /* what OpenBLAS chose by itself ("Haswell"), where
                             libdt knows it; "" when the user chose */
    dt_blas_chooser chosen_by;
    int dynamic;          /* 1: OpenBLAS can pick kernels at load (DYNAMIC_ARCH) */
    dt_cpu_info cpu;
} dt_blas_info;

/* Fills *out with the BLAS, its kernels, who chose them and the CPU.
 * DT_ERR_INVALID_ARG (with *out still filled) when DT_BLAS_KERNELS,
 * DT_QUIET or DT_BLAS_TEST_FALLBACK held a value libdt does not accept:
 * the message names the variable and its value. */
dt_result dt_blas_info_get(dt_blas_info *out);

/* One line for people, e.g. "OpenBLAS 0.3.21, Cooperlake kernels (chosen
 * by libdt; OpenBLAS chose Haswell); CPU AMD EPYC (avx512_bf16)". Writes
 * into buf as snprintf does and returns buf. */
char *dt_blas_info_str(const dt_blas_info *info, char *buf, size_t len);

/* The same as JSON members, for a tool's --json object: "blas",
 * "blas_kernels", "blas_kernels_by" (dt_blas_chooser_name),
 * "blas_own_choice", "cpu" and "cpu_isa", e.g. "blas": "OpenBLAS 0.3.21",
 * "blas_kernels": "Cooperlake", ... (no braces). Returns buf; a buf too
 * short is cut (512 bytes always suffice). */
char *dt_blas_info_json(const dt_blas_info *info, char *buf, size_t len);

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
