/* test_powersgd.c - lab 10, task 7 (going further): Gram-Schmidt; one
 * PowerSGD step recovers a gradient of rank <= r exactly, in two
 * allreduces of the P and Q matrices; with error feedback it trains the
 * digits within 2 points of the uncompressed run (chapter 10, section 8). */
#include "cmp_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(orthonormalize_columns, 2)
{
    dt_test_see("chapter 10, section 8");
    /* columns (3, 4, 0) and (1, 2, 2): (0.6, 0.8, 0), then (1, 2, 2) less
     * 2.2 x (0.6, 0.8, 0) = (-0.32, 0.24, 2), divided by sqrt(4.16) */
    float p[6] = {3, 1, 4, 2, 0, 2};
    double n1 = sqrt(4.16), want[6] = {0.6, -0.32 / n1, 0.8, 0.24 / n1, 0, 2 / n1};
    EXPECT_OK(lab_orthonormalize(p, 3, 2));
    for (int i = 0; i < 6; i++)
        EXPECT(fabs(p[i] - want[i]) <= 1e-6, "p[%d] = %.7f, expected %.7f", i, (double)p[i],
               want[i]);
    /* random 50 x 3: P^T P = I */
    float q[150];
    dt_rng rng;
    dt_rng_init(&rng, 3, 0);
    for (int i = 0; i < 150; i++)
        q[i] = dt_rng_normal(&rng);
    EXPECT_OK(lab_orthonormalize(q, 50, 3));
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            double dot = 0;
            for (int k = 0; k < 50; k++)
                dot += (double)q[k * 3 + a] * q[k * 3 + b];
            EXPECT(fabs(dot - (a == b)) <= 1e-5, "columns %d and %d: dot product %.7f, "
                   "expected %d", a, b, dot, a == b);
        }
    /* a column that is 0.7 times the first, up to rounding: one pass of
     * projections leaves rounding noise, not orthogonal to the first; the
     * second pass must make it so (or leave it 0) */
    float d[8];
    for (int k = 0; k < 4; k++)
        d[2 * k] = 0.1f + 0.37f * (float)k, d[2 * k + 1] = 0.7f * d[2 * k];
    EXPECT_OK(lab_orthonormalize(d, 4, 2));
    double dot = 0, norm = 0;
    for (int k = 0; k < 4; k++)
        dot += (double)d[2 * k] * d[2 * k + 1], norm += (double)d[2 * k + 1] * d[2 * k + 1];
    EXPECT(fabs(dot) <= 1e-5 && (fabs(norm - 1) <= 1e-5 || norm == 0), "a second column 0.7 "
           "times the first: afterwards their dot product is %.3g and its norm %.6f "
           "(expected 0, and 1 or 0): project it twice", dot, sqrt(norm));
    /* a zero column stays zero */
    float z[4] = {1, 0, 1, 0};
    EXPECT_OK(lab_orthonormalize(z, 2, 2));
    EXPECT(z[1] == 0 && z[3] == 0 && fabsf(z[0] - 0.70710678f) < 1e-6f, "a zero column: "
           "%g %g (expected 0 0), first column %g %g", (double)z[1], (double)z[3],
           (double)z[0], (double)z[2]);
}

/* mlp:8,6,3 with r = 2: fc1.weight (6 x 8) is compressed ((6 + 8) 2 < 48);
 * fc1.bias, fc2.weight (3 x 6: (3 + 6) 2 = 18, no gain) and fc2.bias go
 * plain. Rank k's fc1 gradient is u_k v_k^T: their mean has rank 2. */
#define LR_N 75 /* 6 x 8 + 6 + 3 x 6 + 3 */

static dt_result lowrank_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int K = dt_comm_size(w), me = dt_comm_rank(w);
    dt_model m = {0};
    lab_cdp c;
    lab_compress_config cc = {LAB_POWERSGD, 1, 0, 2, 21};
    DT_CHECK(dt_model_create_spec(&m, "mlp:8,6,3", 1));
    dt_result r = lab_cdp_init(&c, w, &m, &cc, NULL);
    if (r != DT_OK) {
        dt_model_free(&m);
        return r;
    }
    size_t n = m.num_params;
    if (n != LR_N)
        r = dt_fail(DT_ERR_INTERNAL, "mlp:8,6,3 has %zu parameters, not %d", n, LR_N);
    float *mean = calloc(n, sizeof *mean), *mine = calloc(n, sizeof *mine);
    float *root = calloc(n, sizeof *root);
    if (!mean || !mine || !root)
        r = dt_fail(DT_ERR_NOMEM, "lowrank test");
    for (int k = 0; r == DT_OK && k < K; k++) { /* every rank's gradient; the exact mean */
        float u[6], v[8], rest[LR_N - 48];
        cmp_fill(u, 6, 50, k, 8, 4.0f);
        cmp_fill(v, 8, 51, k, 8, 4.0f);
        cmp_fill(rest, LR_N - 48, 52, k, 16, 8.0f);
        for (size_t i = 0; i < n; i++) {
            float x = i < 48 ? u[i / 8] * v[i % 8] : rest[i - 48];
            mean[i] += x / (float)K;
            if (k == me)
                mine[i] = x;
        }
    }
    dt_stats st;
    if (r == DT_OK) {
        memcpy(m.grads, mine, n * sizeof *mine);
        r = dt_comm_stats_reset(w);
    }
    if (r == DT_OK)
        r = lab_cdp_sync(&c);
    if (r == DT_OK)
        r = dt_comm_stats(w, &st);
    if (r == DT_OK && (st.calls[DT_COLL_ALLREDUCE] != 2 || st.calls[DT_COLL_ALLGATHER] ||
                       st.calls[DT_COLL_ALLTOALL]))
        r = dt_fail(DT_ERR_MISMATCH, "K=%d, one sync: %llu allreduces (and %llu allgathers, "
                    "%llu alltoalls): PowerSGD makes two, one of the P's and one of the Q's", K,
                    (unsigned long long)st.calls[DT_COLL_ALLREDUCE],
                    (unsigned long long)st.calls[DT_COLL_ALLGATHER],
                    (unsigned long long)st.calls[DT_COLL_ALLTOALL]);
    uint64_t want = 4 * (uint64_t)(c.lr_p_count + c.lr_q_count); /* K = 2: the ring sends n */
    if (r == DT_OK && K == 2 && st.bytes_sent != want)
        r = dt_fail(DT_ERR_MISMATCH, "K=2, one sync: %llu bytes sent, expected %llu: the P's "
                    "and plain values (%zu floats) and the Q's (%zu floats), once each",
                    (unsigned long long)st.bytes_sent, (unsigned long long)want, c.lr_p_count,
                    c.lr_q_count);
    for (size_t i = 0; r == DT_OK && i < n; i++) {
        double tol = i < 48 ? 1e-5 * 4 : 0; /* the rank-2 part up to rounding; the rest exact */
        if (!(fabs((double)m.grads[i] - mean[i]) <= tol))
            r = dt_fail(DT_ERR_MISMATCH, "K=%d: gradient[%zu] = %.9g, the mean is %.9g (%s)",
                        K, i, (double)m.grads[i], (double)mean[i],
                        i < 48 ? "a rank-2 matrix: PowerSGD with r = 2 recovers it"
                               : "sent uncompressed");
        if (r == DT_OK && i >= 48 && (c.sent[i] != mine[i] || c.error[i] != 0))
            r = dt_fail(DT_ERR_MISMATCH, "K=%d: value %zu, sent uncompressed: C(v) = %.9g and "
                        "residual %.9g, expected v = %.9g and 0", K, i, (double)c.sent[i],
                        (double)c.error[i], (double)mine[i]);
        float e = mine[i] - c.sent[i];
        if (r == DT_OK && memcmp(&e, &c.error[i], sizeof e) != 0)
            r = dt_fail(DT_ERR_MISMATCH, "K=%d: residual[%zu] = %.9g, expected v - C(v) = %.9g",
                        K, i, (double)c.error[i], (double)e);
    }
    if (r == DT_OK)
        r = dt_broadcast(m.grads, root, n, DT_F32, 0, w);
    if (r == DT_OK && memcmp(root, m.grads, n * sizeof *root) != 0)
        r = dt_fail(DT_ERR_MISMATCH, "rank %d's gradient differs from rank 0's", me);
    free(mean), free(mine), free(root);
    lab_cdp_free(&c);
    dt_model_free(&m);
    return r;
}

TEST_T(powersgd_recovers_low_rank_in_two_allreduces, 3, 20)
{
    dt_test_see("chapter 10, section 8");
    EXPECT_OK(cmp_launch(2, NULL, lowrank_rank, NULL));
    EXPECT_OK(cmp_launch(1, NULL, lowrank_rank, NULL));
}

TEST_T(powersgd_with_feedback_trains_digits, 3, 60)
{
    dt_test_see("chapter 10, section 8");
    cmp_expect_within_two_points((lab_compress_config){LAB_POWERSGD, 1, 0, 2, 5}, NULL, NULL);
}
