/* hidden_async.c - lab 04: more of the same properties, other shapes. */
#include "ref.h"

TEST_HIDDEN(hidden_shard_range_sweep, 2)
{
    dt_test_see("chapter 04, section 4, task 1");
    for (size_t n = 1; n <= 120; n++)
        for (int parts = 1; parts <= 12 && (size_t)parts <= n; parts++) {
            size_t next = 0, lo = n / (size_t)parts;
            for (int p = 0; p < parts; p++) {
                size_t off = 0, cnt = 0;
                EXPECT_OK(lab_shard_range(n, parts, p, &off, &cnt));
                EXPECT(off == next, "n %zu, %d parts, part %d starts at %zu, expected %zu", n,
                       parts, p, off, next);
                /* the first n % parts shards hold one more */
                size_t want = lo + ((size_t)p < n % (size_t)parts ? 1 : 0);
                EXPECT(cnt == want, "n %zu, %d parts, part %d has %zu, expected %zu", n, parts,
                       p, cnt, want);
                next = off + cnt;
            }
            EXPECT(next == n, "n %zu, %d parts cover %zu", n, parts, next);
        }
}

TEST_HIDDEN_T(hidden_ps_three_servers_bound_two, 2, 30, .race = 1)
{
    dt_test_see("chapter 04, section 7");
    ref_data();
    const int G = 48, K = 4, S = 3;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.servers = S, cfg.updates = G, cfg.compute_s = 1e-3, cfg.bound = 2;
    dt_launch_opts o = ref_opts(S + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    ref_check_staleness(&res, G, 2);
    lab_ps_result_free(&res);
}

TEST_HIDDEN_T(hidden_ps_sync_one_server, 2, 20, .race = 1)
{
    dt_test_see("chapter 04, sections 4 and 5");
    ref_data();
    const int K = 2, rounds = 8;
    lab_ps_config cfg = lab_ps_defaults(&ref_train);
    cfg.sync = 1, cfg.updates = rounds * K + 1; /* the odd one is not a round */
    float *want = ref_sync_sgd(rounds, K, cfg.batch, cfg.lr, cfg.seed);
    dt_launch_opts o = ref_opts(1 + K);
    lab_ps_result res = {0};
    EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
    EXPECT(res.applied[0] == rounds * K, "server applied %d gradients, expected %d",
           res.applied[0], rounds * K);
    double d = ref_max_diff(res.params, want, res.num_params);
    EXPECT(d <= 2e-5, "synchronous, %d rounds of %d and an odd update: the parameters differ "
           "from SGD on the workers' mean gradient by %.3g (at most 2e-5)", rounds, K, d);
    lab_ps_result_free(&res);
    free(want);
}

/* Two ranks subtract 1 from every word of one shared array, 200 times each:
 * each word ends between -400 (no update lost) and -200 (every update of
 * one rank lost), and stays an integer. */

static dt_result race_rank(dt_comm *world, void *arg)
{
    (void)arg;
    void *base = NULL;
    dt_win *win = NULL;
    DT_CHECK(dt_test_on_backend(dt_comm_rank(world), dt_test_backend()));
    DT_CHECK(dt_win_allocate(world, 256 * sizeof(float), &base, &win));
    float ones[256];
    for (int i = 0; i < 256; i++)
        ones[i] = 1;
    for (int k = 0; k < 200; k++)
        DT_CHECK(lab_hogwild_apply(base, ones, 256, 1.0f));
    DT_CHECK(dt_barrier(world));
    float out[256];
    DT_CHECK(lab_hogwild_read(out, base, 256));
    for (int i = 0; i < 256; i++)
        EXPECT(out[i] <= -200 && out[i] >= -400 && out[i] == (float)(int)out[i],
               "word %d = %g after 2 x 200 updates of -1, expected an integer in "
               "[-400, -200]", i, out[i]);
    return dt_win_free(win);
}

TEST_HIDDEN(hidden_hogwild_concurrent_apply, 2, .race = 1)
{
    dt_test_see("chapter 04, section 8");
    dt_launch_opts o = ref_opts(2);
    EXPECT_OK(dt_launch(&o, race_rank, NULL));
}

static double hidden_job_time(const double *clock, int n)
{
    double t = 0;
    for (int r = 0; r < n; r++)
        if (clock[r] > t)
            t = clock[r];
    return t;
}

/* A straggler by compute: worker 2's gradients cost 100 ms, the others' 5 ms.
 * The workers keep wall time in step with their modeled clocks, so that
 * the server sees messages in modeled order; gradients of several ms keep
 * that true on a loaded machine and under ThreadSanitizer, where 1 ms
 * gradients fell behind and the straggler's late messages held the others
 * back (0.104 s where 0.035 s was due). */
TEST_HIDDEN_T(hidden_ps_compute_straggler, 2, 30, .race = 1)
{
    dt_test_see("chapter 04, sections 1 and 10");
    ref_data();
    const int K = 3, G = 30;
    double t[2];
    for (int sync = 0; sync <= 1; sync++) {
        lab_ps_config cfg = lab_ps_defaults(&ref_train);
        cfg.updates = G, cfg.sync = sync, cfg.compute_s = 5e-3;
        cfg.slow_worker = 2, cfg.slow_compute_s = 100e-3;
        dt_launch_opts o = ref_opts(1 + K);
        lab_ps_result res = {0};
        EXPECT_OK(lab_ps_launch(&o, &cfg, &res));
        ref_check_staleness(&res, G, sync ? 0 : -1);
        t[sync] = hidden_job_time(res.clock, 1 + K);
        /* against an equal share and the fastest worker, not each: a fast
         * worker kept off the CPU on a loaded machine pushes few too */
        int fastest = res.pushed[0] > res.pushed[1] ? res.pushed[0] : res.pushed[1];
        if (!sync)
            EXPECT(res.pushed[2] < G / K && res.pushed[2] < fastest,
                   "asynchronous: the straggler pushed %d gradients, the others %d and %d: "
                   "expected fewer than an equal share (%d) and than the fastest",
                   res.pushed[2], res.pushed[0], res.pushed[1], G / K);
        lab_ps_result_free(&res);
    }
    /* synchronous: 10 rounds of at least 100 ms; asynchronous: about
     * 30 / (2 / 5 ms + 1 / 100 ms) = 73 ms, plus at most one straggler
     * gradient in flight. */
    EXPECT(t[1] >= 0.99, "synchronous run took %.3f modeled s, expected about 1", t[1]);
    EXPECT(t[0] < 0.5 * t[1], "asynchronous %.3f modeled s, synchronous %.3f: expected less "
           "than half", t[0], t[1]);
}

/* Hogwild! workers claim gradients from one counter: a slow one claims few. */
TEST_HIDDEN_T(hidden_hogwild_straggler_claims_less, 2, 30, .race = 1)
{
    dt_test_see("chapter 04, section 8");
    ref_data();
    lab_hogwild_config cfg = {.updates = 60, .batch = 16, .lr = 0.1f, .compute_s = 1e-3,
                              .slow_worker = 1, .slow_compute_s = 20e-3, .seed = 1,
                              .train = &ref_train};
    dt_launch_opts o = ref_opts(3);
    lab_hogwild_result res;
    EXPECT_OK(lab_hogwild_launch(&o, &cfg, &res));
    EXPECT(res.steps[0] + res.steps[1] + res.steps[2] == cfg.updates,
           "%d + %d + %d gradients applied, expected %d in all", res.steps[0], res.steps[1],
           res.steps[2], cfg.updates);
    /* Claims race in wall time: on a loaded machine one fast worker may be
     * kept off the CPU for the whole run (1 gradient against 56, seen at a
     * load of 35), so the straggler is compared with an equal share and
     * with the fastest worker, not with each. */
    int fastest = res.steps[0] > res.steps[2] ? res.steps[0] : res.steps[2];
    EXPECT(res.steps[1] < cfg.updates / 3 && res.steps[1] < fastest,
           "the straggler applied %d gradients, the others %d and %d: expected fewer than "
           "an equal share (%d) and than the fastest", res.steps[1], res.steps[0], res.steps[2],
           cfg.updates / 3);
    double t = hidden_job_time(res.clock, 3);
    EXPECT(t < 20 * 20e-3, "Hogwild! run took %.3f modeled s: the fast workers should not "
           "wait for the straggler's 20 shares of 20 ms", t);
    lab_hogwild_result_free(&res);
}

/* ---------------------------------------------------------------- predict: the formula */

/* Section 9.1's formula, written here apart from the lab: rounds of
 * 2 alpha + c + (K+1) n/beta, plus the opening pull and the closing stop. */
static double sync_formula(int K, int updates, double c, const dt_net *link)
{
    double w = dt_net_wire(link, 4.0 * (double)lab_num_params());
    return (updates / K) * (2 * link->alpha + c + (K + 1) * w) + 2 * link->alpha;
}

TEST_HIDDEN(hidden_predict_sync_against_the_formula, 2)
{
    dt_test_see("chapter 04, section 9.1");
    ref_data();
    static const char *const nets[] = {"eth10", "ib100", "alpha=10us,bw=500MB/s", "none"};
    static const int Ks[] = {1, 2, 3, 5, 7};
    static const double cs[] = {0, 50e-6, 1e-3};
    for (size_t n = 0; n < sizeof nets / sizeof *nets; n++) {
        dt_net link;
        EXPECT_OK(dt_net_link(nets[n], &link));
        for (size_t k = 0; k < sizeof Ks / sizeof *Ks; k++)
            for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
                lab_ps_config cfg = lab_ps_defaults(&ref_train);
                cfg.sync = 1, cfg.updates = 23, cfg.compute_s = cs[c];
                double got = -1, want = sync_formula(Ks[k], cfg.updates, cs[c], &link);
                EXPECT_OK(lab_ps_predict_sync(&cfg, Ks[k], &link, &got));
                EXPECT(fabs(got - want) <= 1e-9 * want + 1e-12,
                       "%d workers on %s, %d updates of %.0f us gradients: "
                       "lab_ps_predict_sync says %.4f us, section 9.1's formula gives %.4f "
                       "us", Ks[k], nets[n], cfg.updates, cs[c] * 1e6, got * 1e6, want * 1e6);
            }
    }
    /* a straggler on a free network: every round waits for it */
    dt_net none;
    EXPECT_OK(dt_net_link("none", &none));
    lab_ps_config slow = lab_ps_defaults(&ref_train);
    slow.sync = 1, slow.updates = 20, slow.compute_s = 2e-3;
    slow.slow_worker = 3, slow.slow_compute_s = 7e-3;
    double got = -1;
    EXPECT_OK(lab_ps_predict_sync(&slow, 4, &none, &got));
    EXPECT(fabs(got - 5 * 7e-3) <= 1e-12, "4 workers, 20 updates, worker 3 taking 7 ms per "
           "gradient and the others 2 ms, free network: lab_ps_predict_sync says %.4f ms, 5 "
           "rounds of the straggler's 7 ms give 35 ms", got * 1e3);
}
