/* test_codecs.c - lab 10, tasks 1 and 2: each compressor on fixed inputs,
 * byte for byte, and on random ones against a direct computation; error
 * feedback's invariant g + e_old = C(g + e_old) + e_new, bit for bit. */
#include "cmp_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ 1-bit */

TEST(sign_encode_fixed, 2)
{
    dt_test_see("chapter 10, section 2");
    /* 11 values: sum |v| = 22, scale 2; signs + - + + - - + + +(0) - + */
    const float v[11] = {1, -3, 2, 0.5f, -0.5f, -4, 6, 1, 0, -2, 2};
    const uint8_t bits[2] = {0xcd, 0x05}; /* 1011 0011, then 101: bit i of byte i/8 */
    uint8_t out[6];
    memset(out, 0xee, sizeof out);
    EXPECT(lab_sign_bytes(11) == 6 && lab_sign_bytes(8) == 5 && lab_sign_bytes(0) == 4,
           "lab_sign_bytes is given code and was changed");
    EXPECT_OK(lab_sign_encode(v, 11, out));
    float s;
    memcpy(&s, out, 4);
    EXPECT(s == 2.0f, "the scale of 11 values with sum |v| = 22 is %g, expected their mean "
           "|v| 2", (double)s);
    EXPECT(out[4] == bits[0] && out[5] == bits[1], "sign bits 0x%02x 0x%02x, expected 0x%02x "
           "0x%02x (bit i is bit i %% 8 of byte i / 8; 1 for v >= 0; unused bits 0)", out[4],
           out[5], bits[0], bits[1]);
    /* no values: a zero scale and nothing else */
    memset(out, 0xee, sizeof out);
    EXPECT_OK(lab_sign_encode(v, 0, out));
    memcpy(&s, out, 4);
    EXPECT(s == 0.0f && out[4] == 0xee, "n = 0: scale %g, and byte 4 written (0x%02x)",
           (double)s, out[4]);
}

/* The scale of values with 24 significant bits, as gradients have:
 * m_i 2^-20 with m_i in [2^19, 2^24), so |v_i| in [0.5, 16). Their sum,
 * below 2^14 on a grid of 2^-20, takes 34 bits: exact in a double in any
 * order, rounded at every step in a float (whose last bit is then worth
 * 2^-10). The contract's scale, the exact sum over n rounded once, is one
 * float, whatever order a correct encoder adds in. */
TEST(sign_scale_summed_in_double, 1)
{
    dt_test_see("chapter 10, section 2");
    enum { N = 1001 };
    float v[N];
    uint8_t out[4 + (N + 7) / 8];
    double exact = 0;
    float in_float = 0;
    for (int i = 0; i < N; i++) {
        uint64_t h = dt_hash64(77, 0, (uint64_t)i);
        float m = (float)((1u << 19) + h % ((1u << 24) - (1u << 19)));
        v[i] = (h >> 40 & 1 ? -m : m) / 1048576.0f;
        exact += fabs((double)v[i]);
        in_float += fabsf(v[i]);
    }
    float want = (float)(exact / N), s;
    EXPECT_OK(lab_sign_encode(v, N, out));
    memcpy(&s, out, 4);
    EXPECT(!memcmp(&s, &want, sizeof s), "the scale of %d values in [0.5, 16) with 24 "
           "significant bits is %.9g; their sum of |v| in double over n, rounded once, is "
           "%.9g%s", N, (double)s, (double)want,
           s == in_float / N || s == (float)((double)in_float / N)
               ? ": your scale is the sum in float, which rounds away the low bits of "
                 "every value added (sum |v_i| in a double, section 2)"
               : "");
}

TEST(sign_decode_fixed_and_random, 2)
{
    dt_test_see("chapter 10, section 2");
    uint8_t in[6] = {0, 0, 0x40, 0x3f, 0xcd, 0x05}; /* scale 0.75 (0x3f400000) */
    float out[11], want[11] = {1, -1, 1, 1, -1, -1, 1, 1, 1, -1, 1};
    EXPECT_OK(lab_sign_decode(in, 11, out));
    for (int i = 0; i < 11; i++)
        EXPECT(out[i] == 0.75f * want[i], "decoded[%d] = %g, expected %g", i, (double)out[i],
               0.75 * want[i]);
    /* random values: decode(encode(v)) = mean |v| with v's sign */
    enum { N = 1001 };
    float *v = malloc(N * sizeof *v), *c = malloc(N * sizeof *c);
    uint8_t *p = malloc(lab_sign_bytes(N));
    EXPECT(v && c && p, "malloc");
    dt_rng rng;
    dt_rng_init(&rng, 5, 0);
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += fabs(v[i] = dt_rng_normal(&rng));
    EXPECT_OK(lab_sign_encode(v, N, p));
    EXPECT_OK(lab_sign_decode(p, N, c));
    for (int i = 0; i < N; i++) {
        EXPECT_NEAR(fabsf(c[i]), sum / N, 1e-6);
        EXPECT((c[i] >= 0) == (v[i] >= 0), "v[%d] = %g decoded as %g", i, (double)v[i],
               (double)c[i]);
    }
    free(v), free(c), free(p);
}

/* ------------------------------------------------------------ top-k */

static void expect_topk(const float *v, size_t n, size_t k, const int32_t *idx)
{
    lab_pair out[16];
    memset(out, 0xff, sizeof out);
    EXPECT_OK(lab_topk_select(v, n, k, out));
    for (size_t j = 0; j < k; j++)
        EXPECT(out[j].index == idx[j] && out[j].value == v[idx[j]], "k = %zu: pair %zu is "
               "(%d, %g), expected (%d, %g) (largest |v| first, ties to the lower index, "
               "listed by index)", k, j, out[j].index, (double)out[j].value, idx[j],
               (double)v[idx[j]]);
}

TEST(topk_select_fixed, 3)
{
    dt_test_see("chapter 10, section 3");
    const float v[10] = {0.5f, -3, 2, -2, 0, 3, 1, -0.5f, 2, -1};
    expect_topk(v, 10, 1, (int32_t[]){1});             /* |-3| = |3|: the lower index */
    expect_topk(v, 10, 2, (int32_t[]){1, 5});
    expect_topk(v, 10, 3, (int32_t[]){1, 2, 5});       /* 2, -2, 2 tie: index 2 first */
    expect_topk(v, 10, 5, (int32_t[]){1, 2, 3, 5, 8});
    expect_topk(v, 10, 6, (int32_t[]){1, 2, 3, 5, 6, 8});
    expect_topk(v, 10, 10, (int32_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
    EXPECT(lab_topk_count(1000, 0.01) == 10 && lab_topk_count(10, 0.01) == 1 &&
           lab_topk_count(7, 1.0) == 7, "lab_topk_count is given code and was changed");
}

static int by_abs(const void *a, const void *b, void *v)
{
    const float *x = v;
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    float p = fabsf(x[i]), q = fabsf(x[j]);
    return p != q ? (p > q ? -1 : 1) : (i > j) - (i < j);
}

static int by_int(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    return (i > j) - (i < j);
}

TEST(topk_select_random_against_sorting, 2)
{
    dt_test_see("chapter 10, section 3");
    enum { N = 20000 };
    float *v = malloc(N * sizeof *v);
    int32_t *idx = malloc(N * sizeof *idx);
    lab_pair *out = malloc(N * sizeof *out);
    EXPECT(v && idx && out, "malloc");
    cmp_fill(v, N, 77, 0, 500, 8.0f); /* many equal magnitudes */
    for (int i = 0; i < N; i++)
        idx[i] = i;
    qsort_r(idx, N, sizeof *idx, by_abs, v);
    size_t ks[3] = {1, 200, 5000};
    for (int t = 0; t < 3; t++) {
        size_t k = ks[t];
        int32_t *want = malloc(k * sizeof *want);
        memcpy(want, idx, k * sizeof *want);
        qsort(want, k, sizeof *want, by_int);
        EXPECT_OK(lab_topk_select(v, N, k, out));
        for (size_t j = 0; j < k; j++)
            EXPECT(out[j].index == want[j] && out[j].value == v[want[j]], "n %d, k %zu: pair "
                   "%zu is (%d, %g), expected (%d, %g)", N, k, j, out[j].index,
                   (double)out[j].value, want[j], (double)v[want[j]]);
        free(want);
    }
    free(v), free(idx), free(out);
}

/* ------------------------------------------------------------ int8 */

TEST(int8_encode_decode_fixed, 2)
{
    dt_test_see("chapter 10, section 4");
    /* scale 0.5, 3 levels: v / s = 1.5 2.5 -0.5 -1.4 0.2 10 -7 0 -2.5 */
    const float v[9] = {0.75f, 1.25f, -0.25f, -0.7f, 0.1f, 5, -3.5f, 0, -1.25f};
    const int8_t want[9] = {2, 2, 0, -1, 0, 3, -3, 0, -2}; /* ties to even, clamped to 3 */
    int8_t q[9];
    float out[9];
    EXPECT_OK(lab_int8_encode(v, 9, 0.5f, 3, q));
    for (int i = 0; i < 9; i++)
        EXPECT(q[i] == want[i], "v = %g with scale 0.5 and 3 levels: q = %d, expected %d "
               "(rint: to nearest, ties to even; clamped to [-3, 3])", (double)v[i], q[i],
               want[i]);
    EXPECT_OK(lab_int8_decode(q, 9, 0.5f, out));
    for (int i = 0; i < 9; i++)
        EXPECT(out[i] == 0.5f * want[i], "decode(%d) with scale 0.5 = %g", want[i],
               (double)out[i]);
    EXPECT_OK(lab_int8_encode(v, 9, 0.0f, 63, q)); /* a zero scale sends zeros */
    for (int i = 0; i < 9; i++)
        EXPECT(q[i] == 0, "scale 0: q[%d] = %d, expected 0", i, q[i]);
    EXPECT(lab_int8_levels(1) == 127 && lab_int8_levels(2) == 63 && lab_int8_levels(4) == 31,
           "lab_int8_levels is given code and was changed");
}

/* ------------------------------------------------------------ task 2 */

TEST(error_feedback_correct_and_update, 2)
{
    dt_test_see("chapter 10, section 5");
    float g[4] = {1, -2, 3.5f, 0.25f}, e[4] = {0.5f, 0.5f, -1, 0}, v[4], c[4] = {2, 0, 2, 0};
    EXPECT_OK(lab_ef_correct(v, g, e, 4));
    for (int i = 0; i < 4; i++)
        EXPECT(v[i] == g[i] + e[i], "v[%d] = %g, expected g + e = %g", i, (double)v[i],
               (double)(g[i] + e[i]));
    EXPECT_OK(lab_ef_update(e, v, c, 4));
    const float want[4] = {-0.5f, -1.5f, 0.5f, 0.25f};
    for (int i = 0; i < 4; i++)
        EXPECT(e[i] == want[i], "e[%d] = %g, expected v - C(v) = %g", i, (double)e[i],
               (double)want[i]);
    /* without feedback: v = g, and nothing to update */
    EXPECT_OK(lab_ef_correct(v, g, NULL, 4));
    EXPECT(memcmp(v, g, sizeof v) == 0, "without feedback v must be g");
    EXPECT_OK(lab_ef_update(NULL, v, c, 4));
}

/* g + e_old = C(v) + e_new, bit for bit, with each compressor: top-k keeps
 * or drops values whole; int8's s q lies within a factor 2 of v whenever
 * q != 0, so v - s q is exact (Sterbenz's lemma); the 1-bit case uses
 * dyadic inputs, on which every step is exact (on others v - s is rounded:
 * the chapter's section 5 says why that is harmless). */
TEST(error_feedback_invariant_bit_for_bit, 3)
{
    dt_test_see("chapter 10, section 5");
    enum { N = 4096 };
    float *g = malloc(N * sizeof *g), *e = malloc(N * sizeof *e), *e0 = malloc(N * sizeof *e0);
    float *v = malloc(N * sizeof *v), *c = malloc(N * sizeof *c);
    lab_pair *p = malloc(N * sizeof *p);
    int8_t *q = malloc(N);
    uint8_t *bits = malloc(lab_sign_bytes(N));
    EXPECT(g && e && e0 && v && c && p && q && bits, "malloc");
    for (int method = 0; method < 3; method++) {
        dt_rng rng;
        dt_rng_init(&rng, 40 + (uint64_t)method, 0);
        for (int step = 0; step < 3; step++) { /* three steps: the residual carries on */
            if (method == 2) { /* dyadic, and a fresh residual: the scale stays exact */
                cmp_fill(g, N, 9, step, 64, 16.0f);
                cmp_fill(e, N, 10, step, 16, 16.0f);
            } else {
                for (int i = 0; i < N; i++)
                    g[i] = dt_rng_normal(&rng) * 1e-3f;
                if (step == 0)
                    for (int i = 0; i < N; i++)
                        e[i] = dt_rng_normal(&rng) * 1e-4f;
            }
            memcpy(e0, e, N * sizeof *e);
            EXPECT_OK(lab_ef_correct(v, g, e, N));
            if (method == 0) { /* top-k, 1% */
                EXPECT_OK(lab_topk_select(v, N, 41, p));
                memset(c, 0, N * sizeof *c);
                for (int j = 0; j < 41; j++)
                    c[p[j].index] = p[j].value;
            } else if (method == 1) { /* int8 with a scale from v's largest |v| */
                float m = 0;
                for (int i = 0; i < N; i++)
                    m = fabsf(v[i]) > m ? fabsf(v[i]) : m;
                EXPECT_OK(lab_int8_encode(v, N, m / 63, 63, q));
                EXPECT_OK(lab_int8_decode(q, N, m / 63, c));
            } else {
                EXPECT_OK(lab_sign_encode(v, N, bits));
                EXPECT_OK(lab_sign_decode(bits, N, c));
            }
            EXPECT_OK(lab_ef_update(e, v, c, N));
            for (int i = 0; i < N; i++) {
                float lhs = g[i] + e0[i], rhs = c[i] + e[i];
                EXPECT(memcmp(&lhs, &rhs, sizeof lhs) == 0, "%s, step %d, element %d: g + "
                       "e_old = %.9g but C(v) + e_new = %.9g + %.9g = %.9g",
                       method == 0 ? "top-k" : method == 1 ? "int8" : "1-bit", step, i,
                       (double)lhs, (double)c[i], (double)e[i], (double)rhs);
            }
        }
    }
    free(g), free(e), free(e0), free(v), free(c), free(p), free(q), free(bits);
}
