/* test_ring.c - lab 02, task (b): ring reduce-scatter, ring allgather and
 * the ring allreduce made of them. Results against a serial reference;
 * bytes through dt_comm_stats (2(K-1)/K n per rank, give or take one
 * block of rounding); modeled time through dt_clock against
 * T = 2 (K-1) (alpha + n / (K beta)) (chapter 02, section 5), written out
 * here. */
#include "grader.h"
#include "harness.h"

static const dt_dtype f32_i32[] = {DT_F32, DT_I32};
static const dt_redop sum_max[] = {DT_SUM, DT_MAX};

static void ring_sweep(lab_algo algo, uint64_t seed)
{
    for (int k = 1; k <= 8; k++) {
        size_t counts[5];
        int nc = standard_counts(k, k == 3 || k == 8 ? 100003 : 0, counts);
        sweep_spec s = {algo, k, counts, nc, f32_i32, 2, sum_max, 2, seed};
        run_sweep(&s);
    }
}

TEST_T(ring_reduce_scatter_results, 3, 20)
{
    dt_test_see("chapter 02, sections 3 and 5");
    ring_sweep(ALGO_RING_RS, 30);
}

TEST_T(ring_allgather_results, 3, 20)
{
    dt_test_see("chapter 02, sections 3 and 5");
    ring_sweep(ALGO_RING_AG, 40);
}

TEST_T(ring_allreduce_results, 3, 20)
{
    dt_test_see("chapter 02, sections 3 and 5");
    ring_sweep(ALGO_RING, 50);
}

/* One block: the largest block of the cut, ceil(count / K) elements. */
static double one_block(int k, size_t count, size_t es)
{
    return (double)((count + (size_t)k - 1) / (size_t)k) * (double)es;
}

/* K-1 steps, one block each: (K-1)/K n bytes in K-1 messages. */
static traffic half_ring_traffic(int rank, int k, size_t count, size_t es)
{
    (void)rank;
    return (traffic){(double)(k - 1) / k * (double)count * (double)es, one_block(k, count, es),
                     (uint64_t)k - 1};
}

/* 2 (K-1) steps: 2 (K-1)/K n bytes in 2 (K-1) messages. */
static traffic ring_traffic(int rank, int k, size_t count, size_t es)
{
    (void)rank;
    return (traffic){2.0 * (k - 1) / k * (double)count * (double)es, one_block(k, count, es),
                     2 * ((uint64_t)k - 1)};
}

/* The counts include 1 << 16, which every K here but 3 divides: a lab that
 * hands such counts to the library's dt_allreduce (which counts the ring's
 * bytes and messages for them) fails on its calls. */
TEST_T(ring_bytes_per_rank, 2, 20)
{
    dt_test_see("chapter 02, section 5");
    const int ks[] = {2, 3, 4, 8};
    const size_t counts[] = {1 << 16, 100003};
    for (int ki = 0; ki < 4; ki++)
        for (int ci = 0; ci < 2; ci++) {
            check_traffic(ALGO_RING_RS, ks[ki], counts[ci], DT_F32, half_ring_traffic);
            check_traffic(ALGO_RING_AG, ks[ki], counts[ci], DT_F32, half_ring_traffic);
            check_traffic(ALGO_RING, ks[ki], counts[ci], DT_I32, ring_traffic);
        }
}

/* Every step moves one block of n/K bytes between every pair of
 * neighbours at once: alpha + n / (K beta). */
static double ring_steps_time(double alpha, double beta, double n, int k, int steps)
{
    return steps * (alpha + n / (k * beta));
}

TEST_T(ring_modeled_time, 3, 30)
{
    dt_test_see("chapter 02, sections 2 and 5");
    const char *nets[] = {"ib100", "eth10"};
    const int ks[] = {2, 3, 4, 8};
    const size_t counts[] = {96, 1 << 15};
    for (int ni = 0; ni < 2; ni++) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset(nets[ni], &alpha, &beta));
        for (int ki = 0; ki < 4; ki++)
            for (int ci = 0; ci < 2; ci++) {
                int k = ks[ki];
                double n = 4.0 * counts[ci];
                check_time(ALGO_RING_RS, k, nets[ni], counts[ci], DT_F32,
                           ring_steps_time(alpha, beta, n, k, k - 1), 0.05);
                check_time(ALGO_RING_AG, k, nets[ni], counts[ci], DT_F32,
                           ring_steps_time(alpha, beta, n, k, k - 1), 0.05);
                check_time(ALGO_RING, k, nets[ni], counts[ci], DT_F32,
                           ring_steps_time(alpha, beta, n, k, 2 * (k - 1)), 0.05);
            }
    }
}
