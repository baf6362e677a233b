/* sgemm.c - C = alpha * op(A) * op(B) + beta * C, row-major.
 *
 * Two implementations with one contract: OpenBLAS's cblas_sgemm when the
 * build found it (DT_HAVE_OPENBLAS), and a built-in cache-blocked kernel
 * that is always compiled, so tests can compare the two and builds without
 * OpenBLAS (and ThreadSanitizer builds) still work.
 *
 * The built-in kernel follows the usual three-level blocking: for a panel of
 * KC rows of op(B) and NC columns, packed once, and a block of MC rows of
 * op(A), packed once, a 4x8 register tile of C accumulates over the KC
 * shared dimension. Packing is where the transposes are resolved, so the
 * inner kernel sees only one layout:
 *
 *     Ap: for each group of 4 rows, k-major:  a[k*4 + r]   (alpha folded in)
 *     Bp: for each group of 8 cols, k-major:  b[k*8 + c]
 *
 * Rows and columns past the matrix edge are packed as zeros and the tile is
 * written back only where it lies inside C.
 *
 * Which OpenBLAS kernels run, and its threads: blas.c. */
#include "blas_internal.h"

#include <stdlib.h>
#include <string.h>

#ifdef DT_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { MR = 4, NR = 8, MC = 64, KC = 256, NC = 256 }; /* micro_kernel assumes MR = 4 */

/* ---------------------------------------------------------------- checks */

static dt_result check_args(const char *fn, dt_trans ta, dt_trans tb, size_t M, size_t N,
                            size_t K, const float *A, size_t lda, const float *B, size_t ldb,
                            const float *C, size_t ldc)
{
    if (!A || !B || !C)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL matrix (A=%p B=%p C=%p)", fn,
                       (const void *)A, (const void *)B, (const void *)C);
    if (M == 0 || N == 0 || K == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: zero dimension (M=%zu N=%zu K=%zu)", fn, M, N, K);
    if ((ta != DT_NO_TRANS && ta != DT_TRANS) || (tb != DT_NO_TRANS && tb != DT_TRANS))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: transpose flag must be DT_NO_TRANS or DT_TRANS", fn);
    size_t a_cols = ta == DT_TRANS ? M : K, b_cols = tb == DT_TRANS ? K : N;
    if (lda < a_cols)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: lda %zu < %zu columns of A", fn, lda, a_cols);
    if (ldb < b_cols)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: ldb %zu < %zu columns of B", fn, ldb, b_cols);
    if (ldc < N)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: ldc %zu < N %zu", fn, ldc, N);
    /* cblas takes int sizes */
    if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldc > INT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: dimension above 2^31", fn);
    return DT_OK;
}

/* ---------------------------------------------------------------- built-in */

/* Ap <- alpha * op(A)[i0 .. i0+mc, k0 .. k0+kc], in groups of MR rows. */
static void pack_a(float *restrict Ap, dt_trans ta, const float *A, size_t lda, size_t i0,
                   size_t mc, size_t k0, size_t kc, float alpha)
{
    for (size_t ib = 0; ib < mc; ib += MR) {
        float *dst = Ap + ib * kc;
        for (size_t k = 0; k < kc; k++)
            for (size_t r = 0; r < MR; r++) {
                size_t i = ib + r;
                float v = 0;
                if (i < mc)
                    v = ta == DT_TRANS ? A[(k0 + k) * lda + i0 + i] : A[(i0 + i) * lda + k0 + k];
                dst[k * MR + r] = alpha * v;
            }
    }
}

/* Bp <- op(B)[k0 .. k0+kc, j0 .. j0+nc], in groups of NR columns. */
static void pack_b(float *restrict Bp, dt_trans tb, const float *B, size_t ldb, size_t k0,
                   size_t kc, size_t j0, size_t nc)
{
    for (size_t jb = 0; jb < nc; jb += NR) {
        float *dst = Bp + jb * kc;
        for (size_t k = 0; k < kc; k++)
            for (size_t c = 0; c < NR; c++) {
                size_t j = jb + c;
                float v = 0;
                if (j < nc)
                    v = tb == DT_TRANS ? B[(j0 + j) * ldb + k0 + k] : B[(k0 + k) * ldb + j0 + j];
                dst[k * NR + c] = v;
            }
    }
}

/* acc[MR][NR] = sum over k of a[k][r] * b[k][c]. A row of the tile is one
 * 8-float vector (GCC and Clang vector extension; the compiler splits it
 * into what the target has, e.g. two SSE registers), so the tile stays in
 * registers and each step is MR broadcast multiply-adds. */
typedef float vec8 __attribute__((vector_size(NR * sizeof(float))));

/* Not instrumented by ThreadSanitizer: it reads only the packed panels,
 * this call's own scratch, which no other thread can touch. Every read of
 * A and B (the packing) and every write of C stays checked, at a few
 * accesses per element instead of one per multiply-add (lab 10's
 * compressors_train_on_two_ranks under TSan: 6.6 s of CPU to 5.6). */
__attribute__((no_sanitize("thread")))
static void micro_kernel(size_t kc, const float *restrict a, const float *restrict b,
                         float acc[MR][NR])
{
    /* four named accumulators (MR = 4): an indexed array would live on the stack */
    vec8 t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
    for (size_t k = 0; k < kc; k++) {
        vec8 bk;
        memcpy(&bk, b + k * NR, sizeof bk); /* the panel is not vector-aligned */
        const float *ak = a + k * MR;
        t0 += ak[0] * bk;
        t1 += ak[1] * bk;
        t2 += ak[2] * bk;
        t3 += ak[3] * bk;
    }
    memcpy(acc[0], &t0, sizeof t0);
    memcpy(acc[1], &t1, sizeof t1);
    memcpy(acc[2], &t2, sizeof t2);
    memcpy(acc[3], &t3, sizeof t3);
}

static void scale_c(float *C, size_t ldc, size_t M, size_t N, float beta)
{
    if (beta == 1.0f)
        return;
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++)
            C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

dt_result dt_sgemm_builtin(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K, float alpha,
                           const float *A, size_t lda, const float *B, size_t ldb, float beta,
                           float *C, size_t ldc)
{
    DT_CHECK(check_args("dt_sgemm_builtin", ta, tb, M, N, K, A, lda, B, ldb, C, ldc));
    /* scratch for the packed panels: not model memory, so not accounted */
    /* sized to the problem: small products must not pay for big panels */
    size_t kmax = K < KC ? K : KC, mmax = M < MC ? M : MC, nmax = N < NC ? N : NC;
    float *Ap = malloc(sizeof(float) * kmax * ((mmax + MR - 1) / MR * MR));
    float *Bp = malloc(sizeof(float) * kmax * ((nmax + NR - 1) / NR * NR));
    if (!Ap || !Bp) {
        free(Ap);
        free(Bp);
        return dt_fail(DT_ERR_NOMEM, "dt_sgemm_builtin: no memory for packing buffers");
    }
    scale_c(C, ldc, M, N, beta);
    for (size_t j0 = 0; j0 < N; j0 += NC) {
        size_t nc = N - j0 < NC ? N - j0 : NC;
        for (size_t k0 = 0; k0 < K; k0 += KC) {
            size_t kc = K - k0 < KC ? K - k0 : KC;
            pack_b(Bp, tb, B, ldb, k0, kc, j0, nc);
            for (size_t i0 = 0; i0 < M; i0 += MC) {
                size_t mc = M - i0 < MC ? M - i0 : MC;
                pack_a(Ap, ta, A, lda, i0, mc, k0, kc, alpha);
                for (size_t ib = 0; ib < mc; ib += MR)
                    for (size_t jb = 0; jb < nc; jb += NR) {
                        float acc[MR][NR];
                        micro_kernel(kc, Ap + ib * kc, Bp + jb * kc, acc);
                        size_t mr = mc - ib < MR ? mc - ib : MR;
                        size_t nr = nc - jb < NR ? nc - jb : NR;
                        float *c = C + (i0 + ib) * ldc + j0 + jb;
                        for (size_t r = 0; r < mr; r++)
                            for (size_t q = 0; q < nr; q++)
                                c[r * ldc + q] += acc[r][q];
                    }
            }
        }
    }
    free(Ap);
    free(Bp);
    return DT_OK;
}

/* ---------------------------------------------------------------- dispatch */

dt_result dt_sgemm(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K, float alpha,
                   const float *A, size_t lda, const float *B, size_t ldb, float beta, float *C,
                   size_t ldc)
{
    dt_result r = dt_blas_init_once(); /* a bad DT_BLAS_THREADS fails every build */
    if (r != DT_OK)
        return r;
#ifdef DT_HAVE_OPENBLAS
    DT_CHECK(check_args("dt_sgemm", ta, tb, M, N, K, A, lda, B, ldb, C, ldc));
    cblas_sgemm(CblasRowMajor, ta == DT_TRANS ? CblasTrans : CblasNoTrans,
                tb == DT_TRANS ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)K, alpha, A,
                (int)lda, B, (int)ldb, beta, C, (int)ldc);
    return DT_OK;
#else
    return dt_sgemm_builtin(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}
