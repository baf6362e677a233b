/* test_comm_model.c - the modeled clock against the closed forms (the ring),
 * point-to-point and overlap, the byte counts of the stats against
 * 2(N-1)/N * n, determinism of results, options from the environment.
 * (The network strings: test_net.c; both ends' ports: test_comm_ports.c.)
 * Every launch takes its backend from DT_BACKEND; the ranks hand their
 * figures back through dt_rank_out. */
#include "test_comm_util.h"

#include <math.h>
#include <stdio.h>

#define ALPHA 2e-6
#define BETA 10e9
#define GAMMA 0.25e-9
#define NET "alpha=2us,bw=10GB/s"
#define NET_GAMMA "alpha=2us,bw=10GB/s,gamma=0.25ns"

/* ---------------------------------------------------------------- clock */

/* What each rank hands back after its allreduce. */
typedef struct {
    double clock;
    dt_stats stats;
} model_out;

static dt_result allreduce_clock_rank(dt_comm *c, void *argp)
{
    size_t count = *(const size_t *)argp;
    model_out *out = tc_mine(c);
    float *x = calloc(count, sizeof *x);
    EXPECT_OK(dt_allreduce(x, x, count, DT_F32, DT_SUM, c));
    out->clock = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &out->stats));
    free(x);
    return DT_OK;
}

/* An allreduce of count floats on n ranks; out[r]: rank r's figures. */
static void run_model(int n, dt_algo algo, size_t count, model_out *out)
{
    dt_launch_opts o = tc_opts(n, algo);
    o.net = NET_GAMMA;
    o.debug = 0;
    tc_out(&o, out, sizeof *out);
    EXPECT_OK(dt_launch(&o, allreduce_clock_rank, &count));
}

/* The ring allreduce costs 2(N-1)(alpha + n/(N beta)) + (N-1)/N n gamma,
 * the shortcut as much as the ring. 2^18 floats: the chunks of N = 3 differ
 * by one element, a few 1e-6 of the total. */
TEST_T(comm_model_ring_allreduce_formula, 3, 60)
{
    size_t count = 1 << 18;
    model_out a[8];
    double bytes = (double)count * 4;
    int ns[] = {2, 3, 4, 8};
    for (int k = 0; k < 4; k++) {
        int n = ns[k];
        double want = 2.0 * (n - 1) * (ALPHA + bytes / (n * BETA)) + (n - 1.0) / n * bytes * GAMMA;
        for (int algo = DT_ALGO_AUTO; algo <= DT_ALGO_RING; algo++) { /* shortcut and ring */
            run_model(n, (dt_algo)algo, count, a);
            for (int r = 0; r < n; r++) {
                EXPECT_NEAR(a[r].clock, want, 1e-5);
                EXPECT_NEAR(a[r].stats.time_comm_modeled, want, 1e-5);
            }
        }
    }
    /* recursive doubling, N = 4: log2(N) rounds of the whole vector, each reduced */
    run_model(4, DT_ALGO_TREE, count, a);
    for (int r = 0; r < 4; r++)
        EXPECT_NEAR(a[r].clock, 2 * (ALPHA + bytes / BETA + bytes * GAMMA), 1e-9);
}

typedef struct {
    double t_send, t_recv, hidden, exposed, compute;
} p2p_clock_arg;

static dt_result p2p_clock_rank(dt_comm *c, void *argp)
{
    (void)argp;
    p2p_clock_arg *a = tc_mine(c); /* rank 0 fills t_send and the rest, rank 1 t_recv */
    int r = dt_comm_rank(c);
    static const size_t count = 250000; /* 1 MB */
    float *x = calloc(count, sizeof *x);
    if (r == 0) {
        EXPECT_OK(dt_send(x, count, DT_F32, 1, c));
        a->t_send = dt_clock(c);
    } else {
        EXPECT_OK(dt_recv(x, count, DT_F32, 0, c));
        a->t_recv = dt_clock(c);
    }
    /* overlap: a 2-rank ring allreduce of 1 MB costs 2(alpha + 0.5 MB/beta) */
    EXPECT_OK(dt_barrier(c));
    double t0 = dt_clock(c);
    dt_request *q;
    EXPECT_OK(dt_iallreduce(x, x, count, DT_F32, DT_SUM, c, &q));
    EXPECT_OK(dt_clock_advance(c, 0.01)); /* compute far longer than the comm */
    EXPECT_OK(dt_wait(q));
    double hidden = dt_clock(c) - t0;
    t0 = dt_clock(c);
    EXPECT_OK(dt_iallreduce(x, x, count, DT_F32, DT_SUM, c, &q));
    EXPECT_OK(dt_wait(q)); /* nothing to hide behind */
    double exposed = dt_clock(c) - t0;
    t0 = dt_clock(c);
    EXPECT_OK(dt_compute_begin(c));
    dt_sleep(0.02);
    EXPECT_OK(dt_compute_end(c));
    if (r == 0) {
        a->hidden = hidden;
        a->exposed = exposed;
        a->compute = dt_clock(c) - t0;
    }
    free(x);
    return DT_OK;
}

TEST_T(comm_model_p2p_and_overlap, 3, 30)
{
    p2p_clock_arg a[2];
    dt_launch_opts o = tc_opts(2, DT_ALGO_RING);
    o.net = NET;
    o.debug = 0;
    tc_out(&o, a, sizeof a[0]);
    EXPECT_OK(dt_launch(&o, p2p_clock_rank, NULL));
    double wire = 1e6 / BETA;
    EXPECT_NEAR(a[0].t_send, wire, 1e-9);         /* the link is busy n/beta */
    EXPECT_NEAR(a[1].t_recv, ALPHA + wire, 1e-9); /* arrives alpha + n/beta later */
    EXPECT_NEAR(a[0].hidden, 0.01, 1e-6);         /* fully overlapped */
    EXPECT_NEAR(a[0].exposed, 2 * (ALPHA + wire / 2), 0.01);
    EXPECT(a[0].compute >= 0.02 && a[0].compute < 0.5, "compute region %g s", a[0].compute);
}

/* ---------------------------------------------------------------- bytes */

TEST_T(comm_stats_ring_bytes, 3, 30)
{
    model_out a[8];
    run_model(4, DT_ALGO_RING, 1200, a); /* 1200 = 4 x 300: chunks are exact */
    for (int r = 0; r < 4; r++) {
        dt_stats *s = &a[r].stats;
        EXPECT(s->bytes_sent == 2 * 3 * 1200 * 4 / 4, "rank %d sent %llu bytes, expected %d", r,
               (unsigned long long)s->bytes_sent, 2 * 3 * 1200 * 4 / 4);
        EXPECT(s->bytes_recv == s->bytes_sent, "received as much as sent");
        EXPECT(s->msgs_sent == 6 && s->msgs_recv == 6, "2(N-1) messages: %llu",
               (unsigned long long)s->msgs_sent);
        EXPECT(s->calls[DT_COLL_ALLREDUCE] == 1, "one allreduce call");
    }
    run_model(3, DT_ALGO_RING, 1000, a);
    for (int r = 0; r < 3; r++) {
        double want = 2.0 * 2 / 3 * 1000 * 4, got = (double)a[r].stats.bytes_sent;
        EXPECT(fabs(got - want) <= 2 * 2 * 4, "rank %d sent %g bytes, expected %g up to chunk "
               "rounding", r, got, want);
    }
    /* AUTO at 1 MiB: the shared-memory shortcut reports what the ring would
     * send; the mpi backend, which has no shortcuts, runs the ring itself */
    run_model(4, DT_ALGO_AUTO, 1 << 18, a);
    for (int r = 0; r < 4; r++)
        EXPECT(a[r].stats.bytes_sent == 2ULL * 3 * (1 << 18) * 4 / 4, "AUTO: %llu bytes",
               (unsigned long long)a[r].stats.bytes_sent);
}

static dt_result stats_scope_rank(dt_comm *c, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(c);
    float x[256] = {0};
    dt_comm *half;
    EXPECT_OK(dt_comm_split(c, r % 2, r, &half));
    void *base;
    dt_win *w;
    EXPECT_OK(dt_win_allocate(c, 64, &base, &w));
    EXPECT_OK(dt_win_free(w));
    EXPECT_OK(dt_allreduce(x, x, 256, DT_F32, DT_SUM, half));
    dt_stats s;
    EXPECT_OK(dt_comm_stats(c, &s));
    EXPECT(s.bytes_sent == 0 && s.msgs_sent == 0, "split, window and the other comm's "
           "traffic are not in this comm's stats (%llu bytes)", (unsigned long long)s.bytes_sent);
    EXPECT_OK(dt_broadcast(x, x, 256, DT_F32, 0, c));
    EXPECT_OK(dt_comm_stats(c, &s));
    EXPECT(s.bytes_recv == (r == 0 ? 0 : 1024), "rank %d received %llu bytes of the broadcast",
           r, (unsigned long long)s.bytes_recv);
    EXPECT(s.calls[DT_COLL_BROADCAST] == 1 && s.calls[DT_COLL_ALLREDUCE] == 0, "calls");
    EXPECT(s.time_comm_wall > 0, "wall time in communication");
    EXPECT_OK(dt_comm_stats(half, &s));
    EXPECT(s.calls[DT_COLL_ALLREDUCE] == 1 && s.bytes_sent > 0, "the half comm's stats");
    EXPECT_OK(dt_comm_stats_reset(half));
    EXPECT_OK(dt_comm_stats(half, &s));
    EXPECT(s.bytes_sent == 0 && s.calls[DT_COLL_ALLREDUCE] == 0, "reset");
    EXPECT_OK(dt_comm_free(half));
    return DT_OK;
}

TEST_T(comm_stats_scope_and_reset, 2, 30)
{
    dt_launch_opts o = tc_opts(4, DT_ALGO_TREE);
    EXPECT_OK(dt_launch(&o, stats_scope_rank, NULL));
}

/* ---------------------------------------------------------------- determinism */

static dt_result det_rank(dt_comm *c, void *argp)
{
    (void)argp;
    size_t count = 5003;
    float *x = malloc(count * sizeof *x);
    dt_rng rng;
    dt_rng_init(&rng, 7, (uint64_t)dt_comm_rank(c));
    for (size_t i = 0; i < count; i++)
        x[i] = dt_rng_normal(&rng);
    EXPECT_OK(dt_allreduce(x, x, count, DT_F32, DT_SUM, c));
    uint64_t h = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        h = dt_hash64(h, bits, i);
    }
    *(uint64_t *)tc_mine(c) = h;
    free(x);
    return DT_OK;
}

TEST_T(comm_results_are_bit_identical, 2, 30)
{
    for (int ai = 0; ai < TC_LEN(tc_algos); ai++) {
        uint64_t a1[5], a2[5];
        dt_launch_opts o = tc_opts(5, tc_algos[ai]);
        tc_out(&o, a1, sizeof a1[0]);
        EXPECT_OK(dt_launch(&o, det_rank, NULL));
        tc_out(&o, a2, sizeof a2[0]);
        EXPECT_OK(dt_launch(&o, det_rank, NULL));
        for (int r = 0; r < 5; r++) {
            EXPECT(a1[r] == a1[0], "%s: rank %d's result differs from rank 0's",
                   dt_algo_name(tc_algos[ai]), r);
            EXPECT(a1[r] == a2[r], "%s: rank %d differs between runs",
                   dt_algo_name(tc_algos[ai]), r);
        }
    }
}

/* ---------------------------------------------------------------- environment */

typedef struct {
    double alpha, beta;
    dt_algo algo;
} env_arg;

static dt_result env_rank(dt_comm *c, void *argp)
{
    (void)argp;
    env_arg *a = tc_mine(c);
    EXPECT_OK(dt_comm_net(c, &a->alpha, &a->beta));
    a->algo = dt_comm_get_algo(c);
    return DT_OK;
}

TEST(comm_options_come_from_the_environment, 1)
{
    setenv("DT_NET", "eth10", 1);
    setenv("DT_ALGO", "ring", 1);
    setenv("DT_NRANKS", "3", 1);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    unsetenv("DT_NET");
    unsetenv("DT_ALGO");
    unsetenv("DT_NRANKS");
    EXPECT(o.nranks == 3 && o.algo == DT_ALGO_RING, "nranks %d algo %s", o.nranks,
           dt_algo_name(o.algo));
    env_arg a[3];
    tc_out(&o, a, sizeof a[0]);
    EXPECT_OK(dt_launch(&o, env_rank, NULL));
    for (int r = 0; r < 3; r++) {
        EXPECT(a[r].alpha == 30e-6 && a[r].beta == 1.25e9, "eth10: %g %g", a[r].alpha,
               a[r].beta);
        EXPECT(a[r].algo == DT_ALGO_RING, "algo %s", dt_algo_name(a[r].algo));
    }
    /* without DT_NET the network costs nothing */
    o.net = NULL;
    EXPECT_OK(dt_launch(&o, env_rank, NULL));
    EXPECT(a[0].alpha == 0 && isinf(a[0].beta), "no network: %g %g", a[0].alpha, a[0].beta);
    const char *backend = getenv("DT_BACKEND");
    char keep[32];
    snprintf(keep, sizeof keep, "%s", backend ? backend : "");
    setenv("DT_BACKEND", "carrier-pigeon", 1);
    dt_launch_opts_init(&o);
    if (backend)
        setenv("DT_BACKEND", keep, 1);
    else
        unsetenv("DT_BACKEND");
    EXPECT_ERR(dt_launch(&o, env_rank, NULL), DT_ERR_INVALID_ARG);
}

/* dt_comm_link hands over the job's whole link, gamma included, as the
 * clock prices it. */
static dt_result link_rank(dt_comm *c, void *argp)
{
    (void)argp;
    EXPECT_ERR(dt_comm_link(c, NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_comm_link(c, tc_mine(c)));
    return DT_OK;
}

TEST(comm_link_is_the_jobs_whole_link, 1)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2;
    o.net = "alpha=2us,bw=10GB/s,gamma=0.1ns";
    dt_net link[2];
    tc_out(&o, link, sizeof link[0]);
    EXPECT_OK(dt_launch(&o, link_rank, NULL));
    for (int r = 0; r < 2; r++)
        EXPECT(link[r].alpha == 2e-6 && link[r].beta == 10e9 &&
                   fabs(link[r].gamma - 1e-10) < 1e-22,
               "rank %d: link alpha %g beta %g gamma %g", r, link[r].alpha, link[r].beta,
               link[r].gamma);
}
