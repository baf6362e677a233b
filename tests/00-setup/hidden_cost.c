/* hidden_cost.c - lab 00, task (a): hidden tests (staff only; graded, but
 * not in the student tree). */
#include "grader.h"
#include "setup.h"

/* The ring is worth it: for a large buffer, the allreduce on K ranks costs
 * about 2 n / beta whatever K, while sending the whole buffer K-1 times to
 * one rank costs (K-1) n / beta. Checked through the functions themselves. */
TEST_HIDDEN(cost_ring_bandwidth_term_flat_in_k, 2)
{
    dt_test_see("chapter 00, section 6");
    const double n = 1e9, beta = 1e10;
    for (int k = 2; k <= 64; k *= 2) {
        double ring, one;
        EXPECT_OK(lab_cost_ring_allreduce(0, beta, n, k, &ring));
        EXPECT_OK(lab_cost_send(0, beta, n, &one));
        /* 2 (K-1) / K * n / beta */
        EXPECT_NEAR(ring, 2.0 * (k - 1) / k * one, 1e-12);
        EXPECT(ring < 2 * one, "K = %d: ring %g s >= 2 n / beta = %g s", k, ring, 2 * one);
    }
}

/* The latency term grows with K: 2 (K-1) alpha for an empty buffer. */
TEST_HIDDEN(cost_ring_latency_term, 1)
{
    dt_test_see("chapter 00, section 6");
    for (int k = 1; k <= 33; k += 4) {
        double t;
        EXPECT_OK(lab_cost_ring_allreduce(1e-6, 1e9, 0, k, &t));
        EXPECT_NEAR(t, 2 * (k - 1) * 1e-6, 1e-12);
    }
}
