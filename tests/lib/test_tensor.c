/* test_tensor.c - libdt tensor: sgemm (built-in vs OpenBLAS vs a naive
 * reference), elementwise ops, reductions, half-precision arrays. */
#include "grader.h"
#include "dt/tensor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Small integers: every product and sum below is exact in float32, so all
 * implementations must agree exactly with alpha = 1, beta in {0, 1}. */
static void fill_ints(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)(dt_hash64(seed, 0, i) % 7) - 3);
}

/* The definition, in double. */
static void ref_gemm(dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K, float alpha,
                     const float *A, size_t lda, const float *B, size_t ldb, float beta,
                     float *C, size_t ldc)
{
    for (size_t i = 0; i < M; i++)
        for (size_t j = 0; j < N; j++) {
            double s = 0;
            for (size_t k = 0; k < K; k++) {
                double a = ta ? A[k * lda + i] : A[i * lda + k];
                double b = tb ? B[j * ldb + k] : B[k * ldb + j];
                s += a * b;
            }
            C[i * ldc + j] = (float)(alpha * s + (beta == 0 ? 0 : beta * C[i * ldc + j]));
        }
}

typedef dt_result (*gemm_fn)(dt_trans, dt_trans, size_t, size_t, size_t, float, const float *,
                             size_t, const float *, size_t, float, float *, size_t);

/* Runs fn and the reference on one case, with padded leading dimensions so
 * that a kernel ignoring ld is caught. Returns the max abs difference. */
static float one_case(gemm_fn fn, dt_trans ta, dt_trans tb, size_t M, size_t N, size_t K,
                      float alpha, float beta, uint64_t seed)
{
    size_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    size_t arows = ta ? K : M, brows = tb ? N : K;
    float *A = malloc(sizeof(float) * arows * lda), *B = malloc(sizeof(float) * brows * ldb);
    float *C = malloc(sizeof(float) * M * ldc), *R = malloc(sizeof(float) * M * ldc);
    fill_ints(A, arows * lda, seed);
    fill_ints(B, brows * ldb, seed + 1);
    fill_ints(C, M * ldc, seed + 2);
    memcpy(R, C, sizeof(float) * M * ldc);
    EXPECT_OK(fn(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc));
    ref_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    float d;
    EXPECT_OK(dt_vec_max_abs_diff(C, R, M * ldc, &d)); /* padding must be untouched too */
    free(A), free(B), free(C), free(R);
    return d;
}

static const size_t odd_sizes[][3] = {{1, 1, 1},   {1, 7, 3},    {5, 1, 9},   {3, 5, 1},
                                      {13, 17, 19}, {64, 8, 256}, {65, 9, 257}, {70, 300, 33},
                                      {129, 31, 513}};

TEST(tensor_sgemm_builtin_matches_reference, 2)
{
    for (size_t c = 0; c < sizeof odd_sizes / sizeof odd_sizes[0]; c++)
        for (int t = 0; t < 4; t++) {
            dt_trans ta = t & 1 ? DT_TRANS : DT_NO_TRANS, tb = t & 2 ? DT_TRANS : DT_NO_TRANS;
            size_t M = odd_sizes[c][0], N = odd_sizes[c][1], K = odd_sizes[c][2];
            float d0 = one_case(dt_sgemm_builtin, ta, tb, M, N, K, 1, 0, c);
            float d1 = one_case(dt_sgemm_builtin, ta, tb, M, N, K, 1, 1, c + 100);
            EXPECT(d0 == 0 && d1 == 0, "M=%zu N=%zu K=%zu ta=%d tb=%d: max diff %g / %g", M, N,
                   K, ta, tb, d0, d1);
            /* alpha and beta that are not exact: a tolerance scaled by K */
            float d2 = one_case(dt_sgemm_builtin, ta, tb, M, N, K, 0.37f, -1.3f, c + 200);
            EXPECT(d2 <= 1e-5f * (float)K * 9, "alpha/beta case: diff %g", d2);
        }
}

TEST(tensor_sgemm_dispatch_matches_builtin, 2)
{
    /* dt_sgemm is OpenBLAS when built with it: the two must agree exactly on
     * integer data, for every transpose and odd size */
    for (size_t c = 0; c < sizeof odd_sizes / sizeof odd_sizes[0]; c++)
        for (int t = 0; t < 4; t++) {
            dt_trans ta = t & 1 ? DT_TRANS : DT_NO_TRANS, tb = t & 2 ? DT_TRANS : DT_NO_TRANS;
            size_t M = odd_sizes[c][0], N = odd_sizes[c][1], K = odd_sizes[c][2];
            float d = one_case(dt_sgemm, ta, tb, M, N, K, 1, 1, 7 * c);
            EXPECT(d == 0, "dt_sgemm (%s) M=%zu N=%zu K=%zu ta=%d tb=%d: diff %g",
                   dt_blas_available() ? "OpenBLAS" : "built-in", M, N, K, ta, tb, d);
        }
}

TEST(tensor_sgemm_beta_zero_clears_nan, 1)
{
    float A[2] = {1, 2}, B[2] = {3, 4}, C[4] = {NAN, NAN, NAN, NAN};
    EXPECT_OK(dt_sgemm_builtin(DT_NO_TRANS, DT_NO_TRANS, 2, 2, 1, 1, A, 1, B, 2, 0, C, 2));
    EXPECT(C[0] == 3 && C[1] == 4 && C[2] == 6 && C[3] == 8, "outer product %g %g %g %g", C[0],
           C[1], C[2], C[3]);
    float D[4] = {NAN, NAN, NAN, NAN};
    EXPECT_OK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, 2, 2, 1, 1, A, 1, B, 2, 0, D, 2));
    EXPECT(D[3] == 8, "dispatch with beta 0: %g", D[3]);
}

TEST(tensor_sgemm_bad_arguments, 1)
{
    float A[4] = {0}, B[4] = {0}, C[4] = {0};
    EXPECT_ERR(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, 2, 2, 2, 1, NULL, 2, B, 2, 0, C, 2),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "NULL"), "message names NULL: %s", dt_last_error());
    EXPECT_ERR(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, 0, 2, 2, 1, A, 2, B, 2, 0, C, 2),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "zero dimension"), "message: %s", dt_last_error());
    EXPECT_ERR(dt_sgemm_builtin(DT_TRANS, DT_NO_TRANS, 2, 2, 2, 1, A, 1, B, 2, 0, C, 2),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "lda"), "message names lda: %s", dt_last_error());
    EXPECT_ERR(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, 2, 2, 2, 1, A, 2, B, 2, 0, C, 1),
               DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_blas_set_threads(0), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_blas_set_threads(1));
    EXPECT(dt_blas_threads() == 1, "threads %d", dt_blas_threads());
}

/* The variable is read once per process, at the first sgemm (each test
 * runs in a process of its own): a bad value fails every sgemm, naming it. */
TEST(tensor_blas_threads_variable_is_checked, 1)
{
    setenv("DT_BLAS_THREADS", "many", 1);
    float A[4] = {1, 0, 0, 1}, B[4] = {1, 2, 3, 4}, C[4] = {0};
    EXPECT_ERR(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, 2, 2, 2, 1, A, 2, B, 2, 0, C, 2),
               DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "DT_BLAS_THREADS='many'"), "message: %s", dt_last_error());
}

TEST(tensor_elementwise_and_reductions, 1)
{
    float a[5] = {1, -2, 3, 7, -5}, b[5] = {2, 2, 2, 2, 2}, o[5];
    EXPECT_OK(dt_vec_add(o, a, b, 5));
    EXPECT(o[0] == 3 && o[4] == -3, "add");
    EXPECT_OK(dt_vec_sub(o, a, b, 5));
    EXPECT(o[1] == -4 && o[3] == 5, "sub");
    EXPECT_OK(dt_vec_mul(o, a, b, 5));
    EXPECT(o[2] == 6 && o[4] == -10, "mul");
    EXPECT_OK(dt_vec_copy(o, a, 5));
    EXPECT_OK(dt_vec_axpy(o, 3, b, 5)); /* o = a + 3b */
    EXPECT(o[0] == 7 && o[4] == 1, "axpy %g %g", o[0], o[4]);
    EXPECT_OK(dt_vec_scale(o, -1, 5));
    EXPECT(o[0] == -7, "scale");
    EXPECT_OK(dt_vec_fill(o, 0.5f, 5));
    EXPECT(o[3] == 0.5f, "fill");
    double s;
    EXPECT_OK(dt_vec_sum(a, 5, &s));
    EXPECT(s == 4, "sum %g", s);
    EXPECT_OK(dt_vec_dot(a, b, 5, &s));
    EXPECT(s == 8, "dot %g", s);
    EXPECT_OK(dt_vec_sumsq(a, 5, &s));
    EXPECT(s == 88, "sumsq %g", s);
    float m;
    size_t i;
    EXPECT_OK(dt_vec_max(a, 5, &m));
    EXPECT_OK(dt_vec_argmax(a, 5, &i));
    EXPECT(m == 7 && i == 3, "max %g at %zu", m, i);
    EXPECT_ERR(dt_vec_argmax(a, 0, &i), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_vec_add(o, NULL, b, 5), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_vec_add(NULL, NULL, NULL, 0)); /* an empty shard is fine */
}

TEST(tensor_shapes_and_owned_tensors, 1)
{
    dt_shape s = dt_shape3(2, 3, 4);
    EXPECT(dt_shape_numel(&s) == 24, "numel");
    char buf[32];
    EXPECT(strcmp(dt_shape_str(&s, buf, sizeof buf), "(2, 3, 4)") == 0, "str %s", buf);
    dt_mem_stats before, after;
    dt_mem_stats_get(&before);
    dt_tensor t;
    EXPECT_OK(dt_tensor_alloc(&t, dt_shape2(10, 3), DT_MEM_ACT));
    dt_mem_stats_get(&after);
    EXPECT(after.current[DT_MEM_ACT] - before.current[DT_MEM_ACT] == 120, "120 bytes of ACT");
    EXPECT(dt_tensor_numel(&t) == 30 && t.data[29] == 0, "zeroed 30 floats");
    dt_tensor_free(&t);
    EXPECT(t.data == NULL, "freed");
    EXPECT_ERR(dt_tensor_alloc(&t, dt_shape2(0, 3), DT_MEM_ACT), DT_ERR_INVALID_ARG);
}

TEST(tensor_half_arrays, 1)
{
    float x[6] = {1.0f, -2.5f, 65504.0f, 1e6f, INFINITY, NAN}, y[6];
    uint16_t h[6], b[6];
    EXPECT_OK(dt_f32_to_f16_array(h, x, 6));
    EXPECT_OK(dt_f16_to_f32_array(y, h, 6));
    EXPECT(y[0] == 1 && y[1] == -2.5f && y[2] == 65504.0f, "exact values survive");
    EXPECT(isinf(y[3]) && isinf(y[4]) && isnan(y[5]), "overflow -> inf, inf, nan");
    EXPECT_OK(dt_f32_to_bf16_array(b, x, 6));
    EXPECT_OK(dt_bf16_to_f32_array(y, b, 6));
    EXPECT(y[1] == -2.5f && y[3] == 999424.0f && isnan(y[5]), "bf16: %g %g", y[1], y[3]);
    /* f16 -> bf16 directly equals f16 -> f32 -> bf16 */
    uint16_t hb[6];
    EXPECT_OK(dt_convert(hb, DT_BF16, h, DT_F16, 6));
    for (int i = 0; i < 5; i++)
        EXPECT(hb[i] == dt_f32_to_bf16(dt_f16_to_f32(h[i])), "f16->bf16 element %d", i);
    /* every finite half survives a trip through f32 and back */
    uint16_t all[0x7c00], back[0x7c00];
    float wide[0x7c00];
    for (uint32_t i = 0; i < 0x7c00; i++)
        all[i] = (uint16_t)i;
    EXPECT_OK(dt_convert(wide, DT_F32, all, DT_F16, 0x7c00));
    EXPECT_OK(dt_convert(back, DT_F16, wide, DT_F32, 0x7c00));
    EXPECT(memcmp(all, back, sizeof all) == 0, "f16 round trip");
    EXPECT_ERR(dt_convert(wide, DT_F32, all, DT_I32, 4), DT_ERR_UNSUPPORTED);
}
