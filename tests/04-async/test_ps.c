/* test_ps.c - lab 04, tasks 1 to 4: the parameter server.
 * References are computed here by plain serial SGD (ref.h); staleness is
 * checked against what the protocol allows, never against the code under
 * test. */
#include "ref.h"

/* ---------------------------------------------------------------- task 1 */

TEST(shard_range_examples, 2)
{
    dt_test_see("chapter 04, section 4, task 1");
    size_t off = 99, cnt = 99;
    /* 10 over 3: 4 + 3 + 3 */
    const size_t want_off[3] = {0, 4, 7}, want_cnt[3] = {4, 3, 3};
    for (int p = 0; p < 3; p++) {
        EXPECT_OK(lab_shard_range(10, 3, p, &off, &cnt));
        EXPECT(off == want_off[p] && cnt == want_cnt[p],
               "10 over 3, part %d: offset %zu count %zu, expected %zu %zu", p, off, cnt,
               want_off[p], want_cnt[p]);
    }
    /* the lab's model over 4 servers: 2410 = 603 + 603 + 602 + 602 */
    EXPECT_OK(lab_shard_range(2410, 4, 3, &off, &cnt));
    EXPECT(off == 1808 && cnt == 602, "2410 over 4, part 3: %zu %zu, expected 1808 602", off,
           cnt);
    EXPECT_OK(lab_shard_range(7, 1, 0, &off, &cnt));
    EXPECT(off == 0 && cnt == 7, "7 over 1: %zu %zu, expected 0 7", off, cnt);
    EXPECT_OK(lab_shard_range(5, 5, 4, &off, &cnt));
    EXPECT(off == 4 && cnt == 1, "5 over 5, part 4: %zu %zu, expected 4 1", off, cnt);
    /* bad arguments leave nothing half done */
    EXPECT_ERR(lab_shard_range(10, 0, 0, &off, &cnt), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_shard_range(10, 3, 3, &off, &cnt), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_shard_range(10, 3, -1, &off, &cnt), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_shard_range(2, 3, 0, &off, &cnt), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_shard_range(10, 3, 0, NULL, &cnt), DT_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- task 4 */

static int admit(const lab_server *s, int w)
{
    int a = -1;
    EXPECT_OK(lab_ps_admit(s, w, &a));
    EXPECT(a == 0 || a == 1, "lab_ps_admit set %d, expected 0 or 1", a);
    return a;
}

TEST(admit_rule, 3)
{
    dt_test_see("chapter 04, sections 5 and 7");
    lab_ps_config cfg;
    memset(&cfg, 0, sizeof cfg);
    lab_server s;
    memset(&s, 0, sizeof s);
    s.cfg = &cfg;
    s.workers = 4;
    s.version = 5;

    /* synchronous: worker 2 has pushed its round-5 gradient, worker 1 not */
    cfg.sync = 1;
    s.pushes[1] = 5, s.pushes[2] = 6;
    EXPECT(admit(&s, 1) == 1, "sync, V 5, worker pushed 5: must be answered");
    EXPECT(admit(&s, 2) == 0, "sync, V 5, worker pushed 6 (this round's is in): must wait");
    cfg.sync = 0;
    s.pushes[1] = s.pushes[2] = 0;

    /* no bound: always */
    cfg.bound = -1;
    s.in_flight[0] = 1, s.pulled_version[0] = 0;
    EXPECT(admit(&s, 1) == 1, "no bound: must be answered");

    /* bound 2. In flight: worker 0 at version 0, V = 5: (5 - 0) + 1 > 2 */
    cfg.bound = 2;
    EXPECT(admit(&s, 1) == 0, "bound 2, V 5, one in flight from version 0: must wait");
    /* nobody in flight: 0 + 0 <= 2 */
    s.in_flight[0] = 0;
    EXPECT(admit(&s, 1) == 1, "bound 2, nobody in flight: must be answered");
    /* one in flight from version 5: 0 + 1 <= 2 */
    s.in_flight[0] = 1, s.pulled_version[0] = 5;
    EXPECT(admit(&s, 1) == 1, "bound 2, one in flight from V: must be answered");
    /* two in flight, from 4 and 5: (5 - 4) + 2 = 3 > 2 ... */
    s.in_flight[3] = 1, s.pulled_version[3] = 4;
    EXPECT(admit(&s, 1) == 0, "bound 2, in flight from 5 and 4: must wait");
    /* ... but <= 3 */
    cfg.bound = 3;
    EXPECT(admit(&s, 1) == 1, "bound 3, in flight from 5 and 4: must be answered");
    /* two in flight, both from 5: 0 + 2 <= 2 */
    cfg.bound = 2;
    s.pulled_version[3] = 5;
    EXPECT(admit(&s, 1) == 1, "bound 2, two in flight from V: must be answered");
    /* bound 0: only when nobody is in flight */
    cfg.bound = 0;
    EXPECT(admit(&s, 1) == 0, "bound 0, two in flight: must wait");
    s.in_flight[0] = s.in_flight[3] = 0;
    EXPECT(admit(&s, 1) == 1, "bound 0, nobody in flight: must be answered");
}

/* ---------------------------------------------------------------- tasks 2 and 3 */

/* With one worker nothing is ever stale: the run is serial SGD, bit for bit,
 * however the vector is sharded. */
TEST_T(ps_one_worker_equals_serial_sgd, 3, 20)
{
    dt_test_see("chapter 04, section 4");
    ref_data();
    const int G = 40;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.updates = G;
    float *want = ref_serial_sgd(G, cfg.batch, cfg.lr, cfg.seed);
    for (int S = 1; S <= 3; S++) {
        cfg.servers = S;
        dt_launch_opts o = ref_opts(S + 1);
        lab_ps_result res = {0};
        EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
        EXPECT(res.pushed[0] == G, "%d servers: the worker pushed %d gradients, expected %d",
               S, res.pushed[0], G);
        double mean = ref_check_staleness(&res, G, 0);
        EXPECT(mean == 0, "%d servers, one worker: mean staleness %.3f, expected 0 (nobody "
               "else updates the shards between its pull and its push)", S, mean);
        for (size_t i = 0; i < res.num_params; i++)
            EXPECT(res.params[i] == want[i], "%d servers: params[%zu] = %.9g, serial SGD "
                   "gives %.9g", S, i, res.params[i], want[i]);
        lab_ps_result_free(&res);
    }
    free(want);
}

/* 1200 updates of 3 workers reach 93.5% to 96% here (30 runs, with both
 * cores busy besides; 400 gave 90% and less on a busy machine). */
TEST_T(ps_async_trains_digits, 3, 30, .race = 1)
{
    dt_test_see("chapter 04, section 4");
    ref_data();
    const int G = 1200, K = 3, S = 2;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.servers = S, cfg.updates = G;
    dt_launch_opts o = ref_opts(S + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    ref_check_staleness(&res, G, -1);
    int total = 0;
    for (int w = 0; w < K; w++)
        total += res.pushed[w];
    EXPECT(total == G, "workers pushed %d gradients in all, expected %d (one per update)",
           total, G);
    float acc = ref_accuracy(res.params, res.num_params);
    dt_log("parameter server: test accuracy %.4f after %d updates", (double)acc, G);
    EXPECT(acc >= 0.90f, "test accuracy %.4f after %d asynchronous updates, expected >= 0.90",
           acc, G);
    lab_ps_result_free(&res);
}

/* Three workers that each take 2 ms of modeled (and slept) compute overlap:
 * a gradient usually lands after the other two workers' ones. */
TEST_T(ps_staleness_recorded, 2, 30, .race = 1)
{
    dt_test_see("chapter 04, sections 2 and 4");
    ref_data();
    const int G = 60, K = 3;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.updates = G, cfg.compute_s = 2e-3;
    dt_launch_opts o = ref_opts(1 + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    double mean = ref_check_staleness(&res, G, -1);
    EXPECT(mean >= 0.8, "mean staleness %.3f with 3 overlapping workers, expected about 2 "
           "(at least 0.8)", mean);
    lab_ps_result_free(&res);
}

TEST_T(ps_bounded_staleness, 3, 30, .race = 1)
{
    dt_test_see("chapter 04, section 7");
    ref_data();
    const int G = 60, K = 3, S = 2;
    for (int b = 0; b <= 1; b++) {
        lab_ps_config cfg = lab_ps_defaults(&ref_train);
        cfg.servers = S, cfg.updates = G, cfg.compute_s = 1e-3, cfg.bound = b;
        dt_launch_opts o = ref_opts(S + K);
        lab_ps_result res = {0};
        EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
        double mean = ref_check_staleness(&res, G, b);
        /* bound 1 lets two workers overlap: some gradients land 1 late */
        EXPECT(b == 0 || mean > 0, "bound %d: every staleness is 0; the bound allows %d and "
               "overlapping workers reach it", b, b);
        lab_ps_result_free(&res);
    }
}

TEST_T(ps_sync_equals_large_batch, 3, 20, .race = 1)
{
    dt_test_see("chapter 04, sections 4 and 5");
    ref_data();
    const int K = 3, S = 2, rounds = 10;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.servers = S, cfg.sync = 1, cfg.updates = rounds * K;
    float *want = ref_sync_sgd(rounds, K, cfg.batch, cfg.lr, cfg.seed);
    dt_launch_opts o = ref_opts(S + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    for (int w = 0; w < K; w++)
        EXPECT(res.pushed[w] == rounds, "synchronous: worker %d pushed %d gradients, "
               "expected %d (one per round)", w, res.pushed[w], rounds);
    double mean = ref_check_staleness(&res, rounds * K, 0);
    EXPECT(mean == 0, "synchronous, %d workers: mean staleness %.3f, expected 0 (a round's "
           "gradients are all computed on its version)", K, mean);
    double d = ref_max_diff(res.params, want, res.num_params);
    EXPECT(d <= 2e-5, "synchronous run differs from SGD on the %d workers' mean gradient by "
           "%.3g (at most 2e-5)", K, d);
    lab_ps_result_free(&res);
    free(want);
}

static double job_time(const lab_ps_result *res)
{
    double t = 0;
    for (int r = 0; r < res->servers + res->workers; r++)
        if (res->clock[r] > t)
            t = res->clock[r];
    return t;
}

/* Worker 0 (rank 1) is a straggler: each message it sends is 100 ms late.
 * The synchronous run waits for it every round; the asynchronous one goes
 * on with the others. Gradients of 5 ms (not 1 ms) keep the workers' wall
 * time in step with their modeled clocks on a loaded machine, so that the
 * server sees messages in modeled order whatever the load. */
TEST_T(ps_async_beats_sync_with_straggler, 3, 30, .race = 1)
{
    dt_test_see("chapter 04, sections 1 and 11");
    ref_data();
    const int K = 3, G = 30;
    double t[2];
    for (int sync = 0; sync <= 1; sync++) {
        lab_ps_config cfg = lab_ps_defaults(&ref_train);
        cfg.updates = G, cfg.sync = sync, cfg.compute_s = 5e-3;
        dt_launch_opts o = ref_opts(1 + K);
        o.fault = "delay:rank=1:ms=100";
        lab_ps_result res = {0};
        EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
        ref_check_staleness(&res, G, sync ? 0 : -1);
        t[sync] = job_time(&res);
        lab_ps_result_free(&res);
    }
    /* 10 rounds, each waiting for at least two late messages of the straggler */
    EXPECT(t[1] >= 10 * 2 * 0.100, "synchronous run took %.3f modeled s, expected at least "
           "2 (10 rounds behind the straggler)", t[1]);
    EXPECT(t[0] < 0.5 * t[1], "asynchronous run took %.3f modeled s, synchronous %.3f: "
           "expected less than half", t[0], t[1]);
}

/* The server's bottleneck (chapter 04, section 9.1), on the modeled clock
 * alone: one server, K workers, 10 synchronous rounds on eth10 with 50 us
 * gradients. Each round the server's send port carries K replies of n
 * bytes one after another and its receive port K pushes, so a round lasts
 * 2 alpha + c + (K+1) n/beta: one more worker adds exactly n/beta. A
 * server that replies with more than its shard, or a worker that pushes
 * more, moves the slope; one that skips messages or answers before the
 * round is complete breaks the formula too. The clock follows each rank's
 * program order, never the machine's scheduling: dt_recv_any takes the
 * message first in modeled time (dt/comm.h), on every backend. */
static double ps_round_time(int K, int rounds, const char *net, double compute_s)
{
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.sync = 1, cfg.updates = rounds * K, cfg.compute_s = compute_s;
    dt_launch_opts o = ref_opts(1 + K);
    o.net = net;
    lab_ps_result res = {0};
    dt_result r = lab_ps_launch(&o, &cfg, &res);
    double t = r == DT_OK ? job_time(&res) : -1;
    EXPECT(r == DT_OK, "synchronous run with %d workers on %s: %s", K, net, dt_strerror(r));
    lab_ps_result_free(&res);
    return t;
}

TEST_T(ps_server_ports_set_the_pace, 2, 30)
{
    dt_test_see("chapter 04, section 9.1");
    ref_data();
    /* 1 + 7 ranks: the most `make check BACKEND=mpi` starts (MPI_NP = 8) */
    const int rounds = 10, k_small = 2, k_large = 7;
    const double c = 50e-6;
    dt_net link;
    EXPECT_OK(dt_net_link("eth10", &link));
    const double n = 4.0 * (LAB_IN * LAB_HIDDEN + LAB_HIDDEN + LAB_HIDDEN * LAB_CLASSES +
                            LAB_CLASSES),
                 w = n / link.beta;
    double t_small = ps_round_time(k_small, rounds, "eth10", c);
    double t_large = ps_round_time(k_large, rounds, "eth10", c);
    /* per added worker and round: n/beta (16-byte headers add 0.2%) */
    double slope = (t_large - t_small) / ((k_large - k_small) * rounds);
    EXPECT(fabs(slope - w) <= 0.02 * w, "each worker more made a round %.3f us longer, "
           "expected n/beta = %.3f us (the server's port carries one more shard)",
           slope * 1e6, w * 1e6);
    double want = rounds * (2 * link.alpha + c + (k_small + 1) * w) + 2 * link.alpha;
    EXPECT(fabs(t_small - want) <= 0.01 * want, "%d workers, %d rounds took %.2f us, "
           "expected 10 (2 alpha + c + (K+1) n/beta) + 2 alpha = %.2f us",
           k_small, rounds, t_small * 1e6, want * 1e6);
}

/* ---------------------------------------------------------------- predict, then measure */

/* A measured synchronous run: its modeled time, or -1. */
static double sync_run(const lab_ps_config *cfg, int K, const char *net)
{
    dt_launch_opts o = ref_opts(1 + K);
    o.net = net;
    lab_ps_result res = {0};
    dt_result r = lab_ps_launch(&o, cfg, &res);
    EXPECT(r == DT_OK, "synchronous run with %d workers on %s: %s", K, net, dt_strerror(r));
    double t = job_time(&res);
    lab_ps_result_free(&res);
    return t;
}

/* Your prediction against the modeled clock of your own server and
 * workers: a straggler on a free network (exact), and equal workers on
 * eth10 (within 0.5%: the 16-byte headers, which section 9.1 leaves out,
 * make up about 0.1%). Hidden tests hold the prediction to the formula on
 * configurations no run here makes. */
TEST_T(predict_then_measure_sync_run, 3, 30)
{
    dt_test_see("chapter 04, section 9.1");
    ref_data();
    dt_net none, eth10;
    EXPECT_OK(dt_net_link("none", &none));
    EXPECT_OK(dt_net_link("eth10", &eth10));
    lab_ps_config slow = lab_ps_defaults(&ref_train);
    slow.sync = 1, slow.updates = 15, slow.compute_s = 1e-3;
    slow.slow_worker = 1, slow.slow_compute_s = 4e-3;
    double got = -1;
    EXPECT_OK(lab_ps_predict_sync(&slow, 3, &none, &got));
    double t = sync_run(&slow, 3, "none");
    EXPECT(fabs(t - got) <= 1e-9, "3 workers, 15 updates, worker 1 taking 4 ms per gradient and "
           "the others 1 ms, free network: lab_ps_predict_sync says %.6f ms, your synchronous "
           "run took %.6f ms of modeled time", got * 1e3, t * 1e3);
    for (int K = 3; K <= 5; K += 2) {
        lab_ps_config cfg = lab_ps_defaults(&ref_train);
        cfg.sync = 1, cfg.updates = 8 * K, cfg.compute_s = 50e-6;
        EXPECT_OK(lab_ps_predict_sync(&cfg, K, &eth10, &got));
        t = sync_run(&cfg, K, "eth10");
        EXPECT(fabs(t - got) <= 0.005 * got, "%d workers, 8 rounds of 50 us gradients on eth10: "
               "lab_ps_predict_sync says %.3f us, your synchronous run took %.3f us of modeled "
               "time (more than 0.5%% apart; the headers the formula leaves out make up 0.1%%)",
               K, got * 1e6, t * 1e6);
    }
    /* what the formula does not cover is refused */
    got = -1;
    slow.servers = 2;
    EXPECT_ERR(lab_ps_predict_sync(&slow, 3, &none, &got), DT_ERR_INVALID_ARG);
    slow.servers = 1;
    EXPECT_ERR(lab_ps_predict_sync(&slow, 3, &eth10, &got), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_ps_predict_sync(&slow, 0, &none, &got), DT_ERR_INVALID_ARG);
    EXPECT(got == -1, "a refused prediction wrote %g to *seconds", got);
}
