/* test_metrics.c - lab 12, task (a): speedup, efficiency, load imbalance,
 * against answers worked out by hand. */
#include "grader.h"
#include "scaling.h"

#include <math.h>

TEST(strong_scaling_examples, 2)
{
    dt_test_see("chapter 12, section 2");
    double s = -1, e = -1;
    /* 12 s on one rank, 4 s on four: speedup 3, efficiency 3/4 */
    EXPECT_OK(lab_strong_scaling(12, 4, 4, &s, &e));
    EXPECT_NEAR(s, 3, 1e-15);
    EXPECT_NEAR(e, 0.75, 1e-15);
    /* perfect: 1 s -> 1/8 s on 8 ranks */
    EXPECT_OK(lab_strong_scaling(1, 0.125, 8, &s, &e));
    EXPECT_NEAR(s, 8, 1e-15);
    EXPECT_NEAR(e, 1, 1e-15);
    /* slower on more ranks: 10 s -> 20 s on 2: speedup 1/2, efficiency 1/4 */
    EXPECT_OK(lab_strong_scaling(10, 20, 2, &s, &e));
    EXPECT_NEAR(s, 0.5, 1e-15);
    EXPECT_NEAR(e, 0.25, 1e-15);
}

TEST(weak_efficiency_examples, 2)
{
    dt_test_see("chapter 12, section 5");
    double e = -1;
    /* the work per rank is fixed: ideal T_N = T_1, efficiency 1 */
    EXPECT_OK(lab_weak_efficiency(3, 3, &e));
    EXPECT_NEAR(e, 1, 1e-15);
    /* 10 s per step on one rank, 12.5 s on N: 0.8, whatever N */
    EXPECT_OK(lab_weak_efficiency(10, 12.5, &e));
    EXPECT_NEAR(e, 0.8, 1e-15);
    EXPECT_OK(lab_weak_efficiency(0.2, 0.25, &e));
    EXPECT_NEAR(e, 0.8, 1e-15);
}

TEST(load_imbalance_examples, 2)
{
    dt_test_see("chapter 12, section 7");
    double b = -1;
    const double three[] = {1, 2, 3};     /* (3 - 1) / 2 = 1 */
    EXPECT_OK(lab_load_imbalance(three, 3, &b));
    EXPECT_NEAR(b, 1, 1e-15);
    const double even[] = {4, 4, 4, 4};   /* balanced */
    EXPECT_OK(lab_load_imbalance(even, 4, &b));
    EXPECT(b == 0, "imbalance of equal times = %g, expected 0", b);
    const double one_slow[] = {2, 2, 2, 4}; /* (4 - 2) / 2.5 = 0.8 */
    EXPECT_OK(lab_load_imbalance(one_slow, 4, &b));
    EXPECT_NEAR(b, 0.8, 1e-15);
    const double idle[] = {0, 2};          /* (2 - 0) / 1 = 2 */
    EXPECT_OK(lab_load_imbalance(idle, 2, &b));
    EXPECT_NEAR(b, 2, 1e-15);
    const double single[] = {5};
    EXPECT_OK(lab_load_imbalance(single, 1, &b));
    EXPECT(b == 0, "imbalance of one rank = %g, expected 0", b);
}

TEST(metrics_reject_bad_arguments, 1)
{
    dt_test_see("chapter 12, section 10");
    double s = 42, e = 42, b = 42;
    const double ok[] = {1, 2}, neg[] = {1, -2}, zeros[] = {0, 0}, nan_t[] = {1, NAN};
    EXPECT_OK(lab_strong_scaling(2, 1, 2, &s, &e)); /* valid calls first */
    EXPECT_OK(lab_load_imbalance(ok, 2, &b));
    s = e = b = 42;
    EXPECT_ERR(lab_strong_scaling(0, 1, 2, &s, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_strong_scaling(1, -1, 2, &s, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_strong_scaling(1, NAN, 2, &s, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_strong_scaling(1, 1, 0, &s, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_strong_scaling(1, 1, 2, NULL, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_strong_scaling(1, 1, 2, &s, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_weak_efficiency(0, 1, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_weak_efficiency(1, 0, &e), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_weak_efficiency(1, 1, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(ok, 0, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(neg, 2, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(zeros, 2, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(nan_t, 2, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(NULL, 2, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_load_imbalance(ok, 2, NULL), DT_ERR_INVALID_ARG);
    EXPECT(s == 42 && e == 42 && b == 42, "a failed call changed its output");
    EXPECT(dt_last_error()[0] != '\0', "a failure records a message (dt_fail)");
}
