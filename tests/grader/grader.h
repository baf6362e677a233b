/* grader.h - how a test is written.
 *
 *     #include "grader.h"
 *
 *     TEST(ring_allreduce_small, 2)          // name, points
 *     {
 *         float x = 1;
 *         EXPECT(x == 1, "x = %g, expected 1", x);
 *         EXPECT_OK(lab_function(...));       // a dt_result that must be DT_OK
 *     }
 *
 * TEST_T(name, points, timeout_s) gives a timeout other than the default
 * 10 s; TEST_HIDDEN(name, points) and TEST_HIDDEN_T(...) register a test that
 * is graded but left out of the student tree (write hidden tests in files
 * named hidden_*.c: `make dist-student` drops those files).
 *
 * A test passes when its function returns. A failed EXPECT prints
 *     FAIL: tests/02-collectives/test_ring.c:41: rank 3: recv[17] = 2, expected 6
 * (the rank is the logging rank of the calling thread, when there is one)
 * and ends the test's process with status 1. The driver (dtgrade) runs each
 * test in its own process group with its timeout, so a test may crash, hang
 * or fork: the grader survives it. */
#ifndef DT_GRADER_H
#define DT_GRADER_H

#include "dt/core.h"

typedef struct dt_test {
    const char *name;
    int points;
    double timeout_s;
    int hidden;
    void (*fn)(void);
    const char *file;
    struct dt_test *next;
} dt_test;

void dt_test_register(dt_test *t);

/* Ends the test as failed with "FAIL: file:line: [rank R: ]message", and
 * " (see WHERE)" when the test named WHERE with dt_test_see. */
void dt_test_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Names the text that explains what this test checks, e.g.
 * dt_test_see("chapter 02, section 5"): every failure of the test from
 * here on ends with " (see chapter 02, section 5)". Call it first in the
 * test, before any rank starts; where is a string literal. */
void dt_test_see(const char *where);

#define DT_TEST_DEFINE(name_, points_, timeout_, hidden_)                    \
    static void name_(void);                                                 \
    static dt_test name_##_entry = {#name_, (points_), (timeout_), (hidden_),\
                                    name_, __FILE__, 0};                      \
    __attribute__((constructor)) static void name_##_register(void)          \
    {                                                                        \
        dt_test_register(&name_##_entry);                                    \
    }                                                                        \
    static void name_(void)

#define TEST(name, points) DT_TEST_DEFINE(name, points, 10.0, 0)
#define TEST_T(name, points, timeout_s) DT_TEST_DEFINE(name, points, timeout_s, 0)
#define TEST_HIDDEN(name, points) DT_TEST_DEFINE(name, points, 10.0, 1)
#define TEST_HIDDEN_T(name, points, timeout_s) DT_TEST_DEFINE(name, points, timeout_s, 1)

#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond))                                                         \
            dt_test_fail(__FILE__, __LINE__, __VA_ARGS__);                   \
    } while (0)

/* expr is a dt_result; anything but DT_OK fails with its name and message. */
#define EXPECT_OK(expr)                                                      \
    do {                                                                     \
        dt_result expect_ok_r_ = (expr);                                     \
        if (expect_ok_r_ != DT_OK)                                           \
            dt_test_fail(__FILE__, __LINE__, "%s returned %s%s%s", #expr,    \
                         dt_strerror(expect_ok_r_),                          \
                         dt_last_error()[0] ? ": " : "", dt_last_error());   \
    } while (0)

/* expr must fail with exactly the result want. */
#define EXPECT_ERR(expr, want)                                               \
    do {                                                                     \
        dt_result expect_err_r_ = (expr);                                    \
        if (expect_err_r_ != (want))                                         \
            dt_test_fail(__FILE__, __LINE__, "%s returned %s, expected %s",  \
                         #expr, dt_strerror(expect_err_r_),                  \
                         dt_strerror(want));                                 \
    } while (0)

#define EXPECT_NEAR(a, b, rel)                                               \
    do {                                                                     \
        double en_a_ = (double)(a), en_b_ = (double)(b);                     \
        double en_d_ = en_a_ - en_b_, en_m_ = en_b_ < 0 ? -en_b_ : en_b_;    \
        if (en_d_ < 0) en_d_ = -en_d_;                                       \
        if (!(en_d_ <= (rel) * (en_m_ > 1e-30 ? en_m_ : 1e-30) ||            \
              en_d_ <= 1e-30))                                               \
            dt_test_fail(__FILE__, __LINE__, "%s = %.9g, expected %.9g "     \
                         "(relative tolerance %g)", #a, en_a_, en_b_,        \
                         (double)(rel));                                     \
    } while (0)

#endif /* DT_GRADER_H */
