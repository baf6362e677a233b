/* test_metrics.c - libdt metrics: the scaling formulas against hand values,
 * and the Amdahl fits on exact and noisy synthetic measurements. */
#include "grader.h"

#include "dt/metrics.h"

#include <math.h>
#include <string.h>

TEST(metrics_speedup_and_efficiency, 1)
{
    EXPECT_NEAR(dt_speedup(10, 2.5), 4.0, 1e-15);
    EXPECT_NEAR(dt_efficiency_strong(10, 2.5, 8), 0.5, 1e-15);  /* 10 / (8 * 2.5) */
    EXPECT_NEAR(dt_efficiency_weak(2.0, 2.5), 0.8, 1e-15);       /* 2 / 2.5 */
    EXPECT_NEAR(dt_comm_efficiency(3, 1), 0.75, 1e-15);
    EXPECT_NEAR(dt_comm_efficiency(0, 2), 0.0, 1e-15);
    EXPECT_NEAR(dt_throughput(1024, 0.5), 2048, 1e-15);

    dt_clear_error();
    EXPECT(isnan(dt_speedup(0, 1)), "T_1 = 0 gives NaN");
    EXPECT(strstr(dt_last_error(), "T_1"), "message names T_1: '%s'", dt_last_error());
    EXPECT(isnan(dt_speedup(1, -2)), "negative T_N gives NaN");
    EXPECT(isnan(dt_efficiency_strong(1, 1, 0)), "N = 0 gives NaN");
    EXPECT(isnan(dt_comm_efficiency(0, 0)), "no time at all gives NaN");
    EXPECT(isnan(dt_throughput(10, 0)), "zero seconds gives NaN");
    EXPECT(isnan(dt_speedup(NAN, 1)), "NaN in, NaN out");
}

TEST(metrics_amdahl_gustafson_karp_flatt, 1)
{
    /* p = 0.9, N = 10: 1 / (0.1 + 0.09) = 100 / 19 */
    EXPECT_NEAR(dt_amdahl_speedup(0.9, 10), 100.0 / 19.0, 1e-14);
    EXPECT_NEAR(dt_amdahl_speedup(1.0, 64), 64.0, 1e-14);
    EXPECT_NEAR(dt_amdahl_speedup(0.0, 64), 1.0, 1e-14);
    EXPECT_NEAR(dt_gustafson_speedup(0.9, 10), 9.1, 1e-14);   /* 0.1 + 0.9 * 10 */
    EXPECT_NEAR(dt_gustafson_speedup(0.5, 1), 1.0, 1e-14);
    /* Karp-Flatt by hand: S = 4 on N = 8: (1/4 - 1/8) / (1 - 1/8) = 1/7. */
    EXPECT_NEAR(dt_karp_flatt(4, 8), 1.0 / 7.0, 1e-14);
    /* Linear speedup means no serial fraction. */
    EXPECT_NEAR(dt_karp_flatt(16, 16), 0.0, 1e-14);
    /* Under Amdahl's law the metric gives back 1 - p at every N. */
    for (int n = 2; n <= 1024; n *= 2)
        EXPECT_NEAR(dt_karp_flatt(dt_amdahl_speedup(0.95, n), n), 0.05, 1e-12);
    EXPECT(isnan(dt_amdahl_speedup(1.5, 4)), "p > 1 gives NaN");
    EXPECT(isnan(dt_gustafson_speedup(-0.1, 4)), "p < 0 gives NaN");
    EXPECT(isnan(dt_karp_flatt(1.5, 1)), "N = 1 gives NaN for Karp-Flatt");
    EXPECT(isnan(dt_karp_flatt(0, 4)), "speedup 0 gives NaN");
}

TEST(metrics_load_imbalance, 1)
{
    double t[] = {3, 5, 4, 4}; /* (5 - 3) / 4 = 0.5 */
    double imb = -1;
    EXPECT_OK(dt_load_imbalance(t, 4, &imb));
    EXPECT_NEAR(imb, 0.5, 1e-15);
    double even[] = {2, 2, 2};
    EXPECT_OK(dt_load_imbalance(even, 3, &imb));
    EXPECT(imb == 0, "balanced: %g", imb);
    double one[] = {7};
    EXPECT_OK(dt_load_imbalance(one, 1, &imb));
    EXPECT(imb == 0, "one rank: %g", imb);
    double skew[] = {0, 0, 0, 8}; /* (8 - 0) / 2 = 4 */
    EXPECT_OK(dt_load_imbalance(skew, 4, &imb));
    EXPECT_NEAR(imb, 4.0, 1e-15);

    imb = 123;
    EXPECT_ERR(dt_load_imbalance(NULL, 4, &imb), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_load_imbalance(t, 0, &imb), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_load_imbalance(t, 4, NULL), DT_ERR_INVALID_ARG);
    double bad[] = {1, -1};
    EXPECT_ERR(dt_load_imbalance(bad, 2, &imb), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "t[1]"), "names the bad element: '%s'", dt_last_error());
    double zeros[] = {0, 0};
    EXPECT_ERR(dt_load_imbalance(zeros, 2, &imb), DT_ERR_INVALID_ARG);
    EXPECT(imb == 123, "out untouched on failure");
}

/* T_N = T_1 ((1 - p) + p / N) */
static double amdahl_time(double t1, double p, int n) { return t1 * ((1 - p) + p / n); }

TEST(metrics_amdahl_fit_exact, 2)
{
    const double p = 0.93, t1 = 12.5;
    int n[] = {1, 2, 3, 4, 8, 16, 32};
    double t[7];
    for (int i = 0; i < 7; i++) t[i] = amdahl_time(t1, p, n[i]);

    dt_amdahl_fit fit;
    EXPECT_OK(dt_amdahl_fit_known_t1(n, t, 7, t1, &fit));
    EXPECT(fabs(fit.p - p) < 1e-9, "known T_1: p = %.12f, expected %g", fit.p, p);
    EXPECT(fit.t1 == t1, "known T_1 is kept: %g", fit.t1);
    EXPECT(fit.residual < 1e-9, "exact data, residual %g", fit.residual);

    EXPECT_OK(dt_amdahl_fit_joint(n, t, 7, &fit));
    EXPECT(fabs(fit.p - p) < 1e-9, "joint: p = %.12f, expected %g", fit.p, p);
    EXPECT(fabs(fit.t1 - t1) < 1e-9, "joint: T_1 = %.12f, expected %g", fit.t1, t1);
    EXPECT(fit.residual < 1e-9, "exact data, residual %g", fit.residual);

    /* The joint fit needs no N = 1 point: two points define the line. */
    int n2[] = {4, 16};
    double t2[] = {amdahl_time(3, 0.5, 4), amdahl_time(3, 0.5, 16)};
    EXPECT_OK(dt_amdahl_fit_joint(n2, t2, 2, &fit));
    EXPECT(fabs(fit.p - 0.5) < 1e-9 && fabs(fit.t1 - 3) < 1e-9, "two points: p %g T_1 %g", fit.p, fit.t1);
}

TEST(metrics_amdahl_fit_noisy, 2)
{
    /* Three repeats at each N with 2% Gaussian noise, from a fixed seed. */
    const double p = 0.85, t1 = 4.0;
    int n[30];
    double t[30];
    dt_rng rng;
    dt_rng_init(&rng, 2026, 12);
    size_t count = 0;
    for (int k = 1; k <= 512; k *= 2)
        for (int rep = 0; rep < 3; rep++) {
            n[count] = k;
            t[count] = amdahl_time(t1, p, k) * (1 + 0.02 * dt_rng_normal(&rng));
            count++;
        }
    dt_amdahl_fit fit;
    EXPECT_OK(dt_amdahl_fit_known_t1(n, t, count, t1, &fit));
    EXPECT(fabs(fit.p - p) < 0.02, "known T_1 noisy: p = %g, expected %g", fit.p, p);
    EXPECT(fit.residual > 0 && fit.residual < 0.1 * t1, "residual %g shows the noise", fit.residual);
    EXPECT_OK(dt_amdahl_fit_joint(n, t, count, &fit));
    EXPECT(fabs(fit.p - p) < 0.02, "joint noisy: p = %g, expected %g", fit.p, p);
    EXPECT(fabs(fit.t1 - t1) < 0.1, "joint noisy: T_1 = %g, expected %g", fit.t1, t1);
    /* The fitted law predicts a speedup at N = 1024 near the truth. */
    double s = dt_amdahl_speedup(p, 1024);
    EXPECT(fabs(dt_amdahl_speedup(fit.p < 1 ? fit.p : 1, 1024) - s) < 0.15 * s, "prediction");
}

TEST(metrics_amdahl_fit_bad_input, 1)
{
    int n[] = {1, 2, 4};
    double t[] = {8, 5, 3.5};
    dt_amdahl_fit fit = {-1, -1, -1};
    EXPECT_ERR(dt_amdahl_fit_known_t1(NULL, t, 3, 8, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_amdahl_fit_known_t1(n, NULL, 3, 8, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_amdahl_fit_known_t1(n, t, 3, 8, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_amdahl_fit_known_t1(n, t, 0, 8, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_amdahl_fit_known_t1(n, t, 3, 0, &fit), DT_ERR_INVALID_ARG);
    int ones[] = {1, 1, 1};
    EXPECT_ERR(dt_amdahl_fit_known_t1(ones, t, 3, 8, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_amdahl_fit_joint(ones, t, 3, &fit), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "distinct"), "says why: '%s'", dt_last_error());
    int zero[] = {1, 0, 4};
    EXPECT_ERR(dt_amdahl_fit_joint(zero, t, 3, &fit), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "N[1]"), "names N[1]: '%s'", dt_last_error());
    double neg[] = {8, -5, 3.5};
    EXPECT_ERR(dt_amdahl_fit_joint(n, neg, 3, &fit), DT_ERR_INVALID_ARG);
    /* Times that grow fast with N extrapolate to a negative T_1. */
    double grow[] = {1, 10, 30};
    EXPECT_ERR(dt_amdahl_fit_joint(n, grow, 3, &fit), DT_ERR_INVALID_ARG);
    EXPECT(fit.p == -1 && fit.t1 == -1 && fit.residual == -1, "out untouched on failure");
}
