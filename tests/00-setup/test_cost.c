/* test_cost.c - lab 00, task (a): the alpha-beta cost model.
 * Expected values are worked out by hand in the comments, or by walking
 * the ring step by step: never with the formula under test. */
#include "grader.h"
#include "setup.h"

#include <math.h>

TEST(cost_send_examples, 2)
{
    dt_test_see("chapter 00, section 5");
    double t = -1;
    /* 1 MB over 1 GB/s with 2 us latency: 2e-6 + 1e6 / 1e9 = 1.002e-3 s. */
    EXPECT_OK(lab_cost_send(2e-6, 1e9, 1e6, &t));
    EXPECT_NEAR(t, 1.002e-3, 1e-12);
    /* An empty message costs the latency alone. */
    EXPECT_OK(lab_cost_send(30e-6, 1.25e9, 0, &t));
    EXPECT_NEAR(t, 30e-6, 1e-12);
    /* No latency: 4096 bytes at 4096 B/s is one second. */
    EXPECT_OK(lab_cost_send(0, 4096, 4096, &t));
    EXPECT(t == 1.0, "send of 4096 B at 4096 B/s = %g s, expected 1", t);
    /* An infinitely fast link costs the latency alone. */
    EXPECT_OK(lab_cost_send(5e-6, INFINITY, 1e9, &t));
    EXPECT_NEAR(t, 5e-6, 1e-12);
}

/* The ring, step by step: 2 (K-1) steps, each one chunk of n / K bytes. */
static double ring_by_steps(double alpha, double beta, double n, int k)
{
    double t = 0;
    for (int phase = 0; phase < 2; phase++)       /* reduce-scatter, allgather */
        for (int step = 0; step < k - 1; step++)
            t += alpha + (n / k) / beta;
    return t;
}

TEST(cost_ring_allreduce_examples, 3)
{
    dt_test_see("chapter 00, section 6");
    double t = -1;
    /* K = 4, alpha = 10 us, 1 GB/s, 400 MB: 6 steps of 10 us + 0.1 s = 0.60006 s. */
    EXPECT_OK(lab_cost_ring_allreduce(10e-6, 1e9, 4e8, 4, &t));
    EXPECT_NEAR(t, 0.60006, 1e-12);
    /* K = 2: two steps of half the buffer: 2 * (1 + 50) = 102 s. */
    EXPECT_OK(lab_cost_ring_allreduce(1, 2, 200, 2, &t));
    EXPECT_NEAR(t, 102, 1e-12);
    /* One rank: nothing to exchange. */
    EXPECT_OK(lab_cost_ring_allreduce(10e-6, 1e9, 4e8, 1, &t));
    EXPECT(t == 0, "one rank: %g s, expected 0", t);
}

TEST(cost_ring_matches_step_by_step, 3)
{
    dt_test_see("chapter 00, section 6");
    const double alphas[] = {0, 1e-6, 30e-6};
    const double betas[] = {1.25e9, 300e9};
    const double sizes[] = {0, 1, 4096, 1e6 + 3, 1e9};
    for (int k = 1; k <= 16; k++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 2; b++)
                for (int s = 0; s < 5; s++) {
                    double t = -1, want = ring_by_steps(alphas[a], betas[b], sizes[s], k);
                    EXPECT_OK(lab_cost_ring_allreduce(alphas[a], betas[b], sizes[s], k, &t));
                    EXPECT_NEAR(t, want, 1e-9);
                }
}

TEST(cost_ring_bytes_per_rank, 2)
{
    dt_test_see("chapter 00, section 6");
    double b = -1;
    /* K = 4, 1000 bytes: 3 reduce-scatter + 3 allgather chunks of 250 = 1500. */
    EXPECT_OK(lab_ring_bytes_per_rank(1000, 4, &b));
    EXPECT_NEAR(b, 1500, 1e-12);
    EXPECT_OK(lab_ring_bytes_per_rank(1000, 1, &b));
    EXPECT(b == 0, "one rank sends %g bytes, expected 0", b);
    /* K = 8, 8 MB: 14 chunks of 1 MB. */
    EXPECT_OK(lab_ring_bytes_per_rank(8e6, 8, &b));
    EXPECT_NEAR(b, 14e6, 1e-12);
}

TEST(cost_rejects_bad_arguments, 2)
{
    dt_test_see("chapter 00, section 7");
    double t = 42;
    /* A valid call first, so that a stub cannot pass by failing everything. */
    EXPECT_OK(lab_cost_send(1e-6, 1e9, 100, &t));
/* Each refusal leaves the output as it was and records a message. */
#define REFUSED(call)                                                                          \
    do {                                                                                       \
        t = 42;                                                                                \
        dt_clear_error();                                                                      \
        EXPECT_ERR(call, DT_ERR_INVALID_ARG);                                                  \
        EXPECT(t == 42, "%s was refused, but it changed its output from 42 to %g", #call, t);  \
        EXPECT(dt_last_error()[0] != '\0', "%s was refused without a message (dt_fail)",      \
               #call);                                                                         \
    } while (0)
    REFUSED(lab_cost_send(-1e-6, 1e9, 100, &t));
    REFUSED(lab_cost_send(1e-6, 0, 100, &t));
    REFUSED(lab_cost_send(1e-6, -5, 100, &t));
    REFUSED(lab_cost_send(1e-6, NAN, 100, &t));
    REFUSED(lab_cost_send(1e-6, 1e9, -1, &t));
    REFUSED(lab_cost_send(1e-6, 1e9, 100, NULL));
    REFUSED(lab_cost_ring_allreduce(1e-6, 1e9, 100, 0, &t));
    REFUSED(lab_cost_ring_allreduce(1e-6, 1e9, 100, 4, NULL));
    REFUSED(lab_ring_bytes_per_rank(100, 0, &t));
    REFUSED(lab_ring_bytes_per_rank(100, 2, NULL));
#undef REFUSED
}
