/* test_sim_straggler.c - libdt sim: the straggler policies on the modeled
 * clock (dt_sim_stragglers, chapter 14, section 9). One worker at half
 * speed: the figures worked by hand; slowdowns at random: the step times
 * recomputed from the same draws, independent of the order statistics of
 * the library; bad configurations refused by name. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>
#include <string.h>

/* K = 4, B = 64 (16 a worker), 1 ms a sample, no network. */
static dt_sim_straggle base(void)
{
    return (dt_sim_straggle){.workers = 4, .batch = 64, .sample_s = 1e-3, .link = {0, INFINITY, 0},
                             .slow_rank = -1, .slow_speed = 0.5, .seed = 7, .steps = 10};
}

static dt_sim_straggle_out run(dt_sim_straggle s, dt_sim_straggle_policy p, int extra)
{
    dt_sim_straggle_out o;
    memset(&o, 0, sizeof o);
    s.extra = extra;
    if (dt_sim_stragglers(&s, p, &o) != DT_OK)
        o.step_s = NAN;
    return o;
}

TEST(sim_stragglers_one_slow_worker, 1)
{
    dt_test_see("chapter 14, section 9");
    dt_sim_straggle s = base();
    s.slow_rank = 3;
    /* waiting: 16 samples at half speed, 32 ms; every sample counts */
    dt_sim_straggle_out w = run(s, DT_STRAGGLE_WAIT_ALL, 0);
    EXPECT(fabs(w.step_s - 32e-3) < 1e-12 && w.used == 64 && w.share_min == 1,
           "wait for all: step %g ms, %g samples used, share %g; expected 32 ms, 64, 1",
           1e3 * w.step_s, w.used, w.share_min);
    /* a spare: the first 4 of 5 at 16 ms; worker 3's samples never count */
    dt_sim_straggle_out b = run(s, DT_STRAGGLE_BACKUP, 1);
    EXPECT(fabs(b.step_s - 16e-3) < 1e-12 && b.used == 64 && b.computed == 80 &&
           b.share_min == 0 && b.share_max == 1, "backup +1: step %g ms, used %g of %g "
           "computed, shares %g..%g; expected 16 ms, 64 of 80, 0..1", 1e3 * b.step_s, b.used,
           b.computed, b.share_min, b.share_max);
    dt_sim_straggle_out d = run(s, DT_STRAGGLE_DROP, 1);
    EXPECT(fabs(d.step_s - 16e-3) < 1e-12 && d.used == 48 && d.share_min == 0,
           "drop 1: step %g ms, used %g, share min %g; expected 16 ms, 48, 0", 1e3 * d.step_s,
           d.used, d.share_min);
    /* adaptive: equal shares at the first step (32 ms), then 64 x (1, 1, 1,
       0.5) / 3.5 = 18.29, 18.29, 18.29, 9.14 -> 19, 18, 18, 9: 19 ms */
    dt_sim_straggle_out a = run(s, DT_STRAGGLE_ADAPTIVE, 0);
    EXPECT(fabs(a.step_s - (32e-3 + 9 * 19e-3) / 10) < 1e-12 && a.used == 64 &&
           a.share_min == 1, "adaptive: mean step %.6f ms, expected (32 + 9 x 19) / 10 = 20.3",
           1e3 * a.step_s);
    /* the exchange: a ring allreduce among the gradients used, after the compute */
    dt_net ib;
    EXPECT_OK(dt_net_link("ib100", &ib));
    s.link = ib, s.grad_bytes = 1e8;
    d = run(s, DT_STRAGGLE_DROP, 1), b = run(s, DT_STRAGGLE_BACKUP, 1);
    EXPECT(fabs(d.step_s - 16e-3 - dt_net_ring_allreduce(&ib, 1e8, 3)) < 1e-12 &&
           fabs(b.step_s - 16e-3 - dt_net_ring_allreduce(&ib, 1e8, 4)) < 1e-12,
           "on ib100, 100 MB: drop %.6f ms, backup %.6f ms; expected 16 ms + the ring "
           "allreduce on 3 and on 4", 1e3 * d.step_s, 1e3 * b.step_s);
}

/* The mean step from the same draws (dt_rng stream w of the seed, one
 * uniform a worker a step): 16 ms while at most `spare` of W workers are
 * slow, else 64 ms (a quarter speed). */
static double by_hand(uint64_t seed, int W, int spare, int steps, double p)
{
    dt_rng g[8];
    for (int w = 0; w < W; w++)
        dt_rng_init(&g[w], seed, (uint64_t)w);
    double total = 0;
    for (int k = 0; k < steps; k++) {
        int slow = 0;
        for (int w = 0; w < W; w++)
            slow += dt_rng_uniform(&g[w]) < p;
        total += slow > spare ? 64e-3 : 16e-3;
    }
    return total / steps;
}

TEST(sim_stragglers_random_slowdowns, 1)
{
    dt_test_see("chapter 14, section 9");
    dt_sim_straggle s = base();
    s.p_slow = 0.1, s.slow_speed = 0.25, s.steps = 1000;
    dt_sim_straggle_out w = run(s, DT_STRAGGLE_WAIT_ALL, 0), b = run(s, DT_STRAGGLE_BACKUP, 1);
    dt_sim_straggle_out d = run(s, DT_STRAGGLE_DROP, 1);
    double hw = by_hand(7, 4, 0, 1000, 0.1), hb = by_hand(7, 5, 1, 1000, 0.1);
    double hd = by_hand(7, 4, 1, 1000, 0.1);
    EXPECT(fabs(w.step_s - hw) < 1e-12 && fabs(b.step_s - hb) < 1e-12 &&
           fabs(d.step_s - hd) < 1e-12, "mean steps %.6f, %.6f, %.6f ms (wait, backup +1, drop "
           "1); from the draws %.6f, %.6f, %.6f", 1e3 * w.step_s, 1e3 * b.step_s,
           1e3 * d.step_s, 1e3 * hw, 1e3 * hb, 1e3 * hd);
    EXPECT(b.step_s < w.step_s && d.step_s < w.step_s, "the spare and the drop do not shorten "
           "the step");
    /* equal times arrive in turn: no worker is the one always dropped */
    EXPECT(b.share_min > 0.7 && b.share_max < 0.9, "backup +1: shares %.3f..%.3f of the "
           "samples dealt reach an update, expected about 4/5 each", b.share_min, b.share_max);
    s.seed = 8;
    EXPECT(fabs(run(s, DT_STRAGGLE_WAIT_ALL, 0).step_s - by_hand(8, 4, 0, 1000, 0.1)) < 1e-12,
           "seed 8: the draws are not the seed's");
}

TEST(sim_stragglers_refuse_bad_configurations, 1)
{
    dt_sim_straggle s = base();
    dt_sim_straggle_out o;
    s.batch = 63;
    EXPECT_ERR(dt_sim_stragglers(&s, DT_STRAGGLE_WAIT_ALL, &o), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "batch") != NULL, "not named: %s", dt_last_error());
    s = base(), s.extra = 4;
    EXPECT_ERR(dt_sim_stragglers(&s, DT_STRAGGLE_DROP, &o), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "extra") != NULL, "not named: %s", dt_last_error());
    s = base(), s.slow_speed = 0;
    EXPECT_ERR(dt_sim_stragglers(&s, DT_STRAGGLE_BACKUP, &o), DT_ERR_INVALID_ARG);
    s = base(), s.slow_rank = 4;
    EXPECT_ERR(dt_sim_stragglers(&s, DT_STRAGGLE_WAIT_ALL, &o), DT_ERR_INVALID_ARG);
    s.extra = 1; /* worker 4 exists with a spare */
    EXPECT_OK(dt_sim_stragglers(&s, DT_STRAGGLE_BACKUP, &o));
    EXPECT_ERR(dt_sim_stragglers(&s, DT_NUM_STRAGGLE, &o), DT_ERR_INVALID_ARG);
}
