/* test_naive.c - lab 02, task (a): allreduce through rank 0.
 * Results against a serial reference; bytes through dt_comm_stats; modeled
 * time through dt_clock against the formula worked out in chapter 02,
 * section 4 (written out here, not taken from the library). */
#include "grader.h"
#include "harness.h"

static const dt_dtype f32_i32[] = {DT_F32, DT_I32};
static const dt_redop sum_max[] = {DT_SUM, DT_MAX};

TEST_T(naive_allreduce_results, 3, 20)
{
    dt_test_see("chapter 02, sections 3 and 4");
    for (int k = 1; k <= 8; k++) {
        size_t counts[5];
        /* The large count on a few K only, to keep grading fast. */
        int nc = standard_counts(k, k == 3 || k == 8 ? 100003 : 0, counts);
        sweep_spec s = {ALGO_NAIVE, k, counts, nc, f32_i32, 2, sum_max, 2, 20};
        run_sweep(&s);
    }
}

/* Rank 0 sends the result to each of the K-1 others: (K-1) n bytes in K-1
 * messages; every other rank sends its buffer once: n bytes, one message.
 * Exact. */
static traffic naive_traffic(int rank, int k, size_t count, size_t es)
{
    double n = (double)count * (double)es;
    return rank == 0 ? (traffic){(k - 1) * n, 0, (uint64_t)k - 1} : (traffic){n, 0, 1};
}

TEST(naive_allreduce_bytes, 1)
{
    dt_test_see("chapter 02, section 4");
    const int ks[] = {2, 5, 8};
    for (int i = 0; i < 3; i++) {
        check_traffic(ALGO_NAIVE, ks[i], 1000, DT_F32, naive_traffic);
        check_traffic(ALGO_NAIVE, ks[i], 777, DT_I32, naive_traffic);
    }
}

/* libdt's network (dt/net.h) charges both ends: a message occupies the
 * sender's send port and the receiver's receive port for n/beta each, and
 * arrives alpha after the receive port took it; above the eager limit
 * (16 KiB) it waits for its receive to be posted. The K-1 buffers all leave
 * at 0 and queue at rank 0's receive port:
 *  - eager (n <= 16 KiB): rank 0's port takes them one after another, the
 *    last arrives at alpha + (K-1) n/beta;
 *  - rendezvous: rank 0 posts its receives one at a time (dt_recv), so each
 *    buffer starts only once the previous one has arrived: (K-1)(alpha +
 *    n/beta).
 * Then rank 0 sends K-1 results through its send port, the last leaving
 * (K-2) n/beta later and arriving alpha + n/beta after that (the receivers
 * posted their receives long before):
 *     T = 2 alpha + 2 (K-1) n/beta (eager), K alpha + 2 (K-1) n/beta (not). */
static double naive_time(double alpha, double beta, double n, int k)
{
    if (k == 1)
        return 0;
    double w = n / beta;
    return (n <= 16384 ? 2 : k) * alpha + 2 * (k - 1) * w;
}

TEST_T(naive_allreduce_modeled_time, 2, 20)
{
    dt_test_see("chapter 02, sections 2 and 4");
    const char *nets[] = {"ib100", "eth10"};
    const int ks[] = {2, 4, 7};
    const size_t counts[] = {256, 1 << 15};
    for (int ni = 0; ni < 2; ni++) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset(nets[ni], &alpha, &beta));
        for (int ki = 0; ki < 3; ki++)
            for (int ci = 0; ci < 2; ci++)
                check_time(ALGO_NAIVE, ks[ki], nets[ni], counts[ci], DT_F32,
                           naive_time(alpha, beta, 4.0 * counts[ci], ks[ki]), 0.05);
    }
}
