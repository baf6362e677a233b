/* hidden_collectives.c - lab 02: hidden tests (staff only; graded, but not
 * in the student tree). Other ops and dtypes, other counts, communicators
 * made by dt_comm_split, and a third network. */
#include "grader.h"
#include "harness.h"

#include <math.h>

static const lab_algo all_algos[] = {ALGO_NAIVE, ALGO_RING, ALGO_RD, ALGO_RING_RS, ALGO_RING_AG};

/* Products and minima in f32 and i32; sums and minima in bf16 (integers of
 * at most 8 bits are exact there). Counts 7, 2K-1 and 1000. */
TEST_HIDDEN_T(hidden_prod_min_bf16, 2, 20)
{
    dt_test_see("chapter 02, section 3");
    const int ks[] = {2, 3, 5, 8};
    const dt_dtype f32_i32[] = {DT_F32, DT_I32}, bf16[] = {DT_BF16};
    const dt_redop prod_min[] = {DT_PROD, DT_MIN}, sum_min[] = {DT_SUM, DT_MIN};
    for (int a = 0; a < 5; a++)
        for (int ki = 0; ki < 4; ki++) {
            int k = ks[ki];
            size_t counts[3] = {7, 2 * (size_t)k - 1, 1000};
            sweep_spec s1 = {all_algos[a], k, counts, 3, f32_i32, 2, prod_min, 2, 700};
            run_sweep(&s1);
            sweep_spec s2 = {all_algos[a], k, counts, 3, bf16, 1, sum_min, 2, 800};
            run_sweep(&s2);
        }
}

/* The algorithms on communicators of their own: 7 ranks split into two
 * groups (4 and 3 ranks, in reversed order), running at the same time. A
 * lab that uses world ranks, or assumes rank r's peer is r +- 1 of the
 * world, fails here. */
TEST_HIDDEN_T(hidden_split_communicators, 2, 20)
{
    dt_test_see("chapter 02, section 3");
    const dt_dtype f32[] = {DT_F32};
    const dt_redop sum[] = {DT_SUM};
    const size_t counts[] = {5, 1000};
    for (int a = 0; a < 5; a++) {
        sweep_spec s = {all_algos[a], 7, counts, 2, f32, 1, sum, 1, 900};
        run_sweep_split(&s, 2);
    }
}

static int floor_log2(int k)
{
    int l = 0;
    while ((2 << l) <= k)
        l++;
    return l;
}

/* A third network, "alpha=5us,bw=2GB/s", 4 and 8 ranks (powers of two, so
 * every formula is exact), 128 KiB and 4 KiB. */
TEST_HIDDEN_T(hidden_modeled_time_third_network, 1, 20)
{
    dt_test_see("chapter 02, sections 2, 4, 5 and 6");
    const char *net = "alpha=5us,bw=2GB/s";
    const double alpha = 5e-6, beta = 2e9;
    const size_t counts[] = {1024, 1 << 15};
    for (int k = 4; k <= 8; k *= 2)
        for (int ci = 0; ci < 2; ci++) {
            double n = 4.0 * counts[ci], step = alpha + n / (k * beta), whole = alpha + n / beta;
            check_time(ALGO_RING, k, net, counts[ci], DT_F32, 2 * (k - 1) * step, 0.05);
            check_time(ALGO_RING_RS, k, net, counts[ci], DT_F32, (k - 1) * step, 0.05);
            check_time(ALGO_RING_AG, k, net, counts[ci], DT_F32, (k - 1) * step, 0.05);
            check_time(ALGO_RD, k, net, counts[ci], DT_F32, floor_log2(k) * whole, 0.05);
            /* naive: rank 0's ports serve 2 (K-1) buffers in a row; above
             * the eager limit each gathered one also waits for its dt_recv */
            double lat = n <= 16384 ? 2 * alpha : k * alpha;
            check_time(ALGO_NAIVE, k, net, counts[ci], DT_F32, lat + 2 * (k - 1) * n / beta, 0.05);
        }
}

/* The ring's bytes on counts that leave a remainder of K-1 elements. */
static traffic ring_traffic(int rank, int k, size_t count, size_t es)
{
    (void)rank;
    return (traffic){2.0 * (k - 1) / k * (double)count * (double)es,
                     (double)((count + (size_t)k - 1) / (size_t)k) * (double)es,
                     2 * ((uint64_t)k - 1)};
}

TEST_HIDDEN(hidden_ring_bytes_uneven, 1)
{
    dt_test_see("chapter 02, section 5");
    for (int k = 3; k <= 7; k += 2)
        check_traffic(ALGO_RING, k, 1000 * (size_t)k + (size_t)k - 1, DT_I32, ring_traffic);
}
