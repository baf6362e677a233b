/* test_fit.c - lab 12, task (c): fitting Amdahl's law and predicting.
 * The expected values are worked out by hand (exact fractions in the
 * comments), never with the formula under test. */
#include "grader.h"
#include "scaling.h"

#include <math.h>

/* Data that follow Amdahl's law exactly: T_N = T_1 ((1 - p) + p / N). */
TEST(fit_exact_data, 2)
{
    dt_test_see("chapter 12, section 4");
    int n[8];
    double t[8];
    for (int i = 0; i < 8; i++) n[i] = i + 1, t[i] = 2.0 * (0.1 + 0.9 / n[i]); /* p 0.9, T_1 2 */
    lab_amdahl fit = {0};
    EXPECT_OK(lab_fit_amdahl(n, t, 8, &fit));
    EXPECT(fabs(fit.p - 0.9) < 1e-9, "p = %.12g, expected 0.9", fit.p);
    EXPECT(fabs(fit.t1 - 2.0) < 1e-9, "t1 = %.12g, expected 2", fit.t1);
    EXPECT(fabs(fit.residual) < 1e-9, "residual = %g on exact data, expected 0", fit.residual);
    /* p = 1/2, T_1 = 6 on N = 1, 3, 10 (no N = 1 needed twice): 6, 4, 3.3 */
    const int n2[] = {3, 10, 1};
    const double t2[] = {4, 3.3, 6};
    EXPECT_OK(lab_fit_amdahl(n2, t2, 3, &fit));
    EXPECT(fabs(fit.p - 0.5) < 1e-9, "p = %.12g, expected 0.5", fit.p);
    EXPECT(fabs(fit.t1 - 6) < 1e-9, "t1 = %.12g, expected 6", fit.t1);
}

/* N = 1, 2, 4, 8 and T = 9, 6, 3.5, 3: least squares of T on x = 1/N.
 * mean x = 15/32, mean T = 43/8; b = 812/115, a = 43/8 - b 15/32 = 95/46;
 * T_1 = a + b = 2099/230, p = b / T_1 = 1624/2099 = 0.77370176...;
 * squared errors sum to 67/230, so the residual is sqrt(67/920).
 * (Taking T_1 = 9, the first point, and fitting p alone gives another p:
 * the spec asks for T_1 fitted with p.) */
TEST(fit_noisy_known_answer, 3)
{
    dt_test_see("chapter 12, section 4");
    const int n[] = {1, 2, 4, 8};
    const double t[] = {9, 6, 3.5, 3};
    lab_amdahl fit = {0};
    EXPECT_OK(lab_fit_amdahl(n, t, 4, &fit));
    EXPECT_NEAR(fit.p, 1624.0 / 2099.0, 1e-9);
    EXPECT_NEAR(fit.t1, 2099.0 / 230.0, 1e-9);
    EXPECT_NEAR(fit.residual, sqrt(67.0 / 920.0), 1e-9);
}

TEST(predict_examples, 2)
{
    dt_test_see("chapter 12, sections 3 and 4");
    lab_amdahl fit = {.p = 0.9, .t1 = 1, .residual = 0};
    double s = -1;
    /* 1 / (0.1 + 0.9/8) = 1 / 0.2125 */
    EXPECT_OK(lab_predict_speedup(&fit, 8, &s));
    EXPECT_NEAR(s, 1 / 0.2125, 1e-12);
    /* 1 / (0.1 + 0.0140625) */
    EXPECT_OK(lab_predict_speedup(&fit, 64, &s));
    EXPECT_NEAR(s, 1 / 0.1140625, 1e-12);
    /* 1 / (0.1 + 0.9/1024): close to the limit 1 / (1 - p) = 10 */
    EXPECT_OK(lab_predict_speedup(&fit, 1024, &s));
    EXPECT_NEAR(s, 1024.0 / 103.3, 1e-12);
    EXPECT_OK(lab_predict_speedup(&fit, 1, &s));
    EXPECT_NEAR(s, 1, 1e-15);
    fit.p = 1; /* all parallel: S = N */
    EXPECT_OK(lab_predict_speedup(&fit, 64, &s));
    EXPECT_NEAR(s, 64, 1e-12);
    fit.p = 0; /* all serial: S = 1 */
    EXPECT_OK(lab_predict_speedup(&fit, 64, &s));
    EXPECT_NEAR(s, 1, 1e-12);
}

/* The predictions at N = 8, 64, 1024 follow from the fitted p exactly. */
TEST(predictions_follow_fit, 2)
{
    dt_test_see("chapter 12, section 4");
    const int n[] = {1, 2, 4, 8};
    const double t[] = {9, 6, 3.5, 3};
    lab_amdahl fit = {0};
    EXPECT_OK(lab_fit_amdahl(n, t, 4, &fit));
    const int at[] = {8, 64, 1024};
    for (int i = 0; i < 3; i++) {
        double s = -1;
        EXPECT_OK(lab_predict_speedup(&fit, at[i], &s));
        EXPECT_NEAR(s, 1.0 / ((1.0 - fit.p) + fit.p / at[i]), 1e-12);
    }
}

TEST(fit_rejects_bad_arguments, 1)
{
    dt_test_see("chapter 12, sections 4 and 10");
    const int n[] = {1, 2}, same[] = {4, 4}, zero[] = {0, 2}, up[] = {2, 4};
    const double t[] = {2, 1.5}, neg[] = {2, -1}, nan_t[] = {2, NAN}, rising[] = {1, 3};
    lab_amdahl fit = {.p = 42, .t1 = 42, .residual = 42};
    lab_amdahl ok;
    EXPECT_OK(lab_fit_amdahl(n, t, 2, &ok)); /* a valid call first */
    EXPECT_ERR(lab_fit_amdahl(same, t, 2, &fit), DT_ERR_INVALID_ARG); /* one N only */
    EXPECT_ERR(lab_fit_amdahl(n, t, 1, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(n, t, 0, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(zero, t, 2, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(n, neg, 2, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(n, nan_t, 2, &fit), DT_ERR_INVALID_ARG);
    /* T_2 = 1, T_4 = 3: the line in 1/N meets x = 1 at T_1 = -3 */
    EXPECT_ERR(lab_fit_amdahl(up, rising, 2, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(NULL, t, 2, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(n, NULL, 2, &fit), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_fit_amdahl(n, t, 2, NULL), DT_ERR_INVALID_ARG);
    EXPECT(fit.p == 42 && fit.t1 == 42 && fit.residual == 42, "a failed fit changed *out "
           "to p %g, t1 %g, residual %g", fit.p, fit.t1, fit.residual);
    double s = 42;
    EXPECT_ERR(lab_predict_speedup(&ok, 0, &s), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_predict_speedup(NULL, 4, &s), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_predict_speedup(&ok, 4, NULL), DT_ERR_INVALID_ARG);
    EXPECT(s == 42, "a failed prediction changed *speedup to %g", s);
    EXPECT(dt_last_error()[0] != '\0', "a failure records a message (dt_fail)");
}
