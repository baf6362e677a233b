/* test_recursive_doubling.c - lab 02, task (c): recursive doubling, for
 * powers of two and for any other number of ranks. Results against a serial
 * reference; bytes through dt_comm_stats; modeled time through dt_clock
 * against the formula of chapter 02, section 6, written out here. */
#include "grader.h"
#include "harness.h"

static const dt_dtype f32_i32[] = {DT_F32, DT_I32};
static const dt_redop sum_max[] = {DT_SUM, DT_MAX};

TEST_T(recursive_doubling_results, 3, 20)
{
    dt_test_see("chapter 02, sections 3 and 6");
    for (int k = 1; k <= 8; k++) {
        size_t counts[5];
        int nc = standard_counts(k, k == 3 || k == 8 ? 100003 : 0, counts);
        sweep_spec s = {ALGO_RD, k, counts, nc, f32_i32, 2, sum_max, 2, 60};
        run_sweep(&s);
    }
}

static int floor_log2(int k)
{
    int l = 0;
    while ((2 << l) <= k)
        l++;
    return l;
}

/* P = 2^floor(log2 K). Ranks P.. send their buffer once (to their
 * partner); their partners send it back once more; every rank below P
 * sends the whole buffer in each of the log2 P rounds: one message per
 * round, and one more to or from an extra rank. */
static traffic rd_traffic(int rank, int k, size_t count, size_t es)
{
    int l = floor_log2(k), p = 1 << l;
    double n = (double)count * (double)es;
    if (rank >= p)
        return (traffic){n, 0, 1};
    int msgs = l + (rank < k - p ? 1 : 0);
    return (traffic){msgs * n, 0, (uint64_t)msgs};
}

TEST(recursive_doubling_bytes, 1)
{
    dt_test_see("chapter 02, section 6");
    const int ks[] = {2, 4, 6, 7, 8};
    for (int i = 0; i < 5; i++)
        check_traffic(ALGO_RD, ks[i], 1001, DT_F32, rd_traffic);
}

/* Each round moves the whole buffer both ways at once: alpha + n/beta, so a
 * power of two takes log2 K (alpha + n/beta). Otherwise the rounds are not
 * all in step: the ranks with no extra partner start round 1 at once, while
 * the others first wait for their partner's buffer. So the time is worked
 * out by following the schedule of the chapter message by message under
 * libdt's network model: a send leaving a rank whose clock reads t occupies
 * the sender until t + n/beta and arrives at t + alpha + n/beta; a receive
 * sets the receiver's clock to max(its clock, the arrival). The answer lies
 * between (floor(log2 K) + 1) and (floor(log2 K) + 2) rounds. */
static double rd_time(double alpha, double beta, double n, int k)
{
    double w = n / beta, c[64] = {0}, next[64];
    int l = floor_log2(k), p = 1 << l, extra = k - p;
    for (int i = 0; i < extra; i++) { /* rank p + i hands its buffer to rank i */
        c[p + i] = w;
        c[i] = alpha + w;
    }
    for (int mask = 1; mask < p; mask <<= 1) { /* both send, then both receive */
        for (int r = 0; r < p; r++) {
            double mine = c[r] + w, theirs = c[r ^ mask] + alpha + w;
            next[r] = mine > theirs ? mine : theirs;
        }
        for (int r = 0; r < p; r++)
            c[r] = next[r];
    }
    for (int i = 0; i < extra; i++) { /* rank i sends the result back */
        double arrive = c[i] + alpha + w;
        c[p + i] = c[p + i] > arrive ? c[p + i] : arrive;
        c[i] += w;
    }
    double t = 0;
    for (int r = 0; r < k; r++)
        t = c[r] > t ? c[r] : t;
    if ((1 << l) == k) /* the plain formula, for a power of two */
        EXPECT_NEAR(t, l * (alpha + w), 1e-12); /* log2 K rounds */
    return t;
}

TEST_T(recursive_doubling_modeled_time, 2, 20)
{
    dt_test_see("chapter 02, sections 2 and 6");
    const char *nets[] = {"ib100", "eth10"};
    const int ks[] = {2, 3, 4, 5, 6, 8};
    const size_t counts[] = {256, 1 << 15};
    for (int ni = 0; ni < 2; ni++) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset(nets[ni], &alpha, &beta));
        for (int ki = 0; ki < 6; ki++)
            for (int ci = 0; ci < 2; ci++)
                check_time(ALGO_RD, ks[ki], nets[ni], counts[ci], DT_F32,
                           rd_time(alpha, beta, 4.0 * counts[ci], ks[ki]), 0.05);
    }
}
