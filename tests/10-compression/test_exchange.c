/* test_exchange.c - lab 10, tasks 3 to 5: each exchange on 1, 2 and 4
 * ranks against the reference of cmp_test.c, bit for bit on dyadic inputs
 * (every rank the same mean; each rank's C(v) and residual; two steps, so
 * that the residual carries over), the collectives it calls, and the
 * bytes it sends against the compression ratio of the chapter. */
#include "cmp_test.h"
#include "exchange_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST_T(topk_exchange_exact, 3, 20)
{
    dt_test_see("chapter 10, section 6");
    lab_compress_config cc = {LAB_TOPK, 1, 0.1, 0, 0}; /* 6 of 64 values, with ties */
    for (int K = 1; K <= 4; K *= 2)
        exchange_expect(&cc, K, 2, 0);
    cc.error_feedback = 0;
    exchange_expect(&cc, 2, 1, 0);
}

TEST_T(int8_exchange_exact, 3, 20)
{
    dt_test_see("chapter 10, section 6");
    lab_compress_config cc = {LAB_INT8, 1, 0, 0, 0};
    for (int K = 1; K <= 4; K *= 2)
        exchange_expect(&cc, K, 2, 0);
    cc.error_feedback = 0;
    exchange_expect(&cc, 4, 1, 0);
}

TEST_T(sign_exchange_exact, 4, 20)
{
    dt_test_see("chapter 10, section 6");
    lab_compress_config cc = {LAB_SIGN, 1, 0, 0, 0};
    for (int K = 1; K <= 4; K *= 2)
        exchange_expect(&cc, K, 2, 0);
    cc.error_feedback = 0;
    exchange_expect(&cc, 2, 1, 0);
}

/* ------------------------------------------------------------ bytes */

/* mlp:64,256,10: n = 19210 floats, 76840 bytes. */
#define RATIO_SPEC "mlp:64,256,10"

typedef struct {
    lab_compress_config cc;
    uint64_t bytes[CMP_MAX_RANKS];
    size_t k, block_bytes;
} ratio_run;

static dt_result ratio_rank(dt_comm *w, void *arg)
{
    ratio_run *run = arg;
    int rank = dt_comm_rank(w);
    dt_model m = {0};
    lab_cdp c;
    dt_stats st;
    DT_CHECK(dt_model_create_spec(&m, RATIO_SPEC, 3));
    dt_result r = lab_cdp_init(&c, w, &m, &run->cc, NULL);
    if (r == DT_OK) {
        dt_rng rng;
        dt_rng_init(&rng, 11, (uint64_t)rank);
        for (size_t i = 0; i < m.num_params; i++)
            m.grads[i] = dt_rng_normal(&rng);
        r = dt_comm_stats_reset(w);
        if (r == DT_OK)
            r = lab_cdp_sync(&c);
        if (r == DT_OK)
            r = dt_comm_stats(w, &st);
        run->bytes[rank] = st.bytes_sent;
        if (rank == 0)
            run->k = c.k, run->block_bytes = c.block_bytes;
        lab_cdp_free(&c);
    }
    dt_model_free(&m);
    return r;
}

/* The bytes one rank sends in one sync, the mean over the ranks (the
 * ring's blocks differ by an element when K does not divide n). */
static double bytes_of(lab_compress_config cc, int K, ratio_run *out)
{
    ratio_run run;
    memset(&run, 0, sizeof run);
    run.cc = cc;
    EXPECT_OK(cmp_launch(K, NULL, ratio_rank, &run));
    double sum = 0;
    for (int r = 0; r < K; r++)
        sum += (double)run.bytes[r];
    if (out)
        *out = run;
    return sum / K;
}

static void expect_ratio(const char *what, double dense, double bytes, double ratio)
{
    double got = dense / bytes;
    EXPECT(fabs(got - ratio) <= 0.05 * ratio, "%s: the dense allreduce sends %.0f bytes per "
           "rank, this one %.0f: %.2f times less, expected %.2f within 5%%", what, dense, bytes,
           got, ratio);
}

TEST_T(exchanges_follow_compression_ratio, 3, 20)
{
    dt_test_see("chapter 10, section 6");
    const int K = 4;
    ratio_run run;
    double dense = bytes_of((lab_compress_config){LAB_DENSE, 0, 0, 0, 0}, K, NULL);
    /* 1-bit: 32 times less; exactly 2 (K-1) blocks of the longest block's payload */
    double sign = bytes_of((lab_compress_config){LAB_SIGN, 1, 0, 0, 0}, K, &run);
    EXPECT(sign == 2.0 * (K - 1) * (double)run.block_bytes, "1-bit: %.0f bytes, expected "
           "2 (K-1) x %zu (an alltoall and an allgather of one block each)", sign,
           run.block_bytes);
    expect_ratio("1-bit", dense, sign, 32);
    /* int8: 4 times less (and one float for the scale) */
    expect_ratio("int8", dense, bytes_of((lab_compress_config){LAB_INT8, 1, 0, 0, 0}, K,
                                                 NULL), 4);
    /* top-k at density d through an allgather: (K - 1) 8 k bytes, so
     * 1 / (K d) times less than the ring's 2 (K-1)/K 4 n, not 1 / d */
    double d[2] = {0.01, 0.05};
    for (int i = 0; i < 2; i++) {
        double topk = bytes_of((lab_compress_config){LAB_TOPK, 1, d[i], 0, 0}, K, &run);
        EXPECT(topk == (K - 1) * 8.0 * (double)run.k, "top-k %.0f%%: %.0f bytes, expected "
               "(K-1) x 8 x %zu pairs", 100 * d[i], topk, run.k);
        expect_ratio(d[i] == 0.01 ? "top-k 1%" : "top-k 5%", dense, topk, 1 / (K * d[i]));
    }
}

/* ------------------------------------------------------------ task 8 */

/* Predict, then measure: where top-k stops beating the dense allreduce,
 * on 5 ranks over ib100, which section 11 does not work out. */
TEST_T(predict_topk_crossover_on_ib100_then_measure, 2, 20)
{
    dt_test_see("chapter 10, sections 1, 3 and 6");
    crossover_expect(RATIO_SPEC, 5, "ib100");
}
