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
 * libdt's network model (dt/net.h, chapter 01, section 7): each rank has a
 * send port and a receive port; a message of n bytes (w = n/beta) leaves
 * at d = max(the sender's clock, its send port free), above the eager limit
 * not before its receive is posted (d' = max(d, the receiver's clock when
 * it posted it)), is taken by the receive port at s = max(d', that port
 * free), and arrives at s + alpha + w; the sender's send completes at
 * d' + w. The answer lies between (floor(log2 K) + 1) and
 * (floor(log2 K) + 2) rounds. */
typedef struct {
    double t, send_free, recv_free, posted;
} rd_rank;

static double rd_depart(rd_rank *s, double w)
{
    double d = s->t > s->send_free ? s->t : s->send_free;
    s->send_free = d + w;
    return d;
}

/* r takes a message that departed at d; the sender is done at the return. */
static double rd_take(rd_rank *r, double d, double alpha, double w, int eager)
{
    if (!eager && r->posted > d)
        d = r->posted;
    double start = d > r->recv_free ? d : r->recv_free;
    r->recv_free = start + w;
    if (start + alpha + w > r->t)
        r->t = start + alpha + w;
    return d + w;
}

static void rd_done(rd_rank *s, double sent)
{
    if (sent > s->t)
        s->t = sent;
}

static double rd_time(double alpha, double beta, double n, int k)
{
    double w = n / beta;
    int eager = n <= 16384;
    rd_rank c[64] = {{0, 0, 0, 0}};
    int l = floor_log2(k), p = 1 << l, extra = k - p;
    for (int i = 0; i < extra; i++) { /* rank p + i hands its buffer to rank i */
        c[i].posted = c[i].t;
        double d = rd_depart(&c[p + i], w);
        rd_done(&c[p + i], rd_take(&c[i], d, alpha, w, eager));
    }
    for (int mask = 1; mask < p; mask <<= 1) { /* both post, then both wait */
        double d[64];
        for (int r = 0; r < p; r++) {
            c[r].posted = c[r].t;
            d[r] = rd_depart(&c[r], w);
        }
        double sent[64];
        for (int r = 0; r < p; r++) /* r's message to its partner */
            sent[r] = rd_take(&c[r ^ mask], d[r], alpha, w, eager);
        for (int r = 0; r < p; r++)
            rd_done(&c[r], sent[r]);
    }
    for (int i = 0; i < extra; i++) { /* rank i sends the result back */
        c[p + i].posted = c[p + i].t;
        double d = rd_depart(&c[i], w);
        rd_done(&c[i], rd_take(&c[p + i], d, alpha, w, eager));
    }
    double t = 0;
    for (int r = 0; r < k; r++)
        t = c[r].t > t ? c[r].t : t;
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
