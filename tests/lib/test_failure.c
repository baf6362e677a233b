/* test_failure.c - libdt comm: failure plans (dt_failure_*). A plan kills
 * its victim at the named step and phase, on thread and proc ranks, and
 * nowhere else; the MTBF plan's failure times are the seed's, the same at
 * each call, and their mean gap is the MTBF; the victim dies at the first
 * phase point its modeled clock reaches the drawn time. */
#include "grader.h"

#include "dt/comm.h"
#include "dt/failure.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { STEPS = 4, RANKS = 3 };

typedef struct {
    dt_failure plan;
    int thread; /* thread ranks: reached[] is seen by the test */
    /* where each rank was last (step * DT_NUM_PHASES + phase), -1 none;
     * written by thread ranks only (the proc test reads the result) */
    long reached[RANKS];
} job;

/* A loop of steps with every phase point, an allreduce in the middle of
 * each step and 1 modeled second a step. */
static dt_result ranks_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    int me = dt_comm_rank(w);
    float x = 1;
    for (long s = 0; s < STEPS; s++) {
        for (int p = 0; p < DT_NUM_PHASES; p++) {
            DT_CHECK(dt_failure_point(w, &j->plan, s, (dt_phase)p));
            if (j->thread)
                j->reached[me] = s * DT_NUM_PHASES + p;
            if (p == DT_PHASE_MID_ALLREDUCE)
                DT_CHECK(dt_allreduce(&x, &x, 1, DT_F32, DT_SUM, w));
        }
        DT_CHECK(dt_clock_advance(w, 1.0));
    }
    return DT_OK;
}

static dt_result launch(job *j, dt_backend b)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = RANKS;
    o.backend = b;
    o.timeout_s = 10;
    j->thread = b == DT_BACKEND_THREAD;
    for (int r = 0; r < RANKS; r++)
        j->reached[r] = -1;
    return dt_launch(&o, ranks_fn, j);
}

TEST(failure_parse, 1)
{
    dt_failure f;
    EXPECT_OK(dt_failure_parse("rank=1:step=5:phase=mid-save", &f));
    EXPECT(f.rank == 1 && f.step == 5 && f.phase == DT_PHASE_MID_SAVE && f.mtbf == 0, "parsed");
    EXPECT_OK(dt_failure_parse("mtbf=3600:seed=7", &f));
    EXPECT(f.rank == -1 && f.mtbf == 3600 && f.seed == 7 && f.at_s == dt_failure_time(7, 3600, 0),
           "mtbf plan: at %g", f.at_s);
    EXPECT_OK(dt_failure_parse(NULL, &f));
    EXPECT(f.rank == -1 && f.mtbf == 0, "no plan");
    const char *bad[] = {"rank=1:step=5:phase=mid-nap", "rank=-1:step=5:phase=mid-save",
                         "rank=1:step=5", "mtbf=0:seed=1", "mtbf=-3:seed=1",
                         "rank=1:step=5:phase=mid-save:x", "kill:rank=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT_ERR(dt_failure_parse(bad[i], &f), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i]), "the message names the plan: %s", dt_last_error());
    }
    for (int p = 0; p < DT_NUM_PHASES; p++)
        EXPECT(strcmp(dt_phase_name((dt_phase)p), "?"), "phase %d has a name", p);
}

TEST(failure_times_are_the_seeds_and_exponential, 1)
{
    enum { N = 20000 };
    double prev = 0, sum_gap = 0, sum_sq = 0;
    for (int k = 0; k < 200; k++) {
        double t = dt_failure_time(42, 100, k);
        EXPECT(t > prev, "failure %d at %g, before failure %d at %g", k, t, k - 1, prev);
        EXPECT(t == dt_failure_time(42, 100, k), "failure %d drawn twice differs", k);
        prev = t;
    }
    EXPECT(dt_failure_time(42, 100, 0) != dt_failure_time(43, 100, 0), "seeds 42, 43 agree");
    /* an exponential law: the mean gap of N = 20000 failures is M within
     * 3% (4 standard errors), and the first 2000 gaps' standard deviation
     * is M too, within 10%; a fixed seed, so always the same figures */
    double mean = dt_failure_time(9, 100, N - 1) / N;
    prev = 0;
    for (int k = 0; k < 2000; k++) {
        double t = dt_failure_time(9, 100, k), g = t - prev;
        sum_gap += g, sum_sq += g * g, prev = t;
    }
    double m2 = sum_gap / 2000, sd = sqrt(sum_sq / 2000 - m2 * m2);
    EXPECT(fabs(mean - 100) < 3 && fabs(sd - 100) < 10, "gaps: mean %.3f, sd %.3f (want 100, 100)",
           mean, sd);
    int hit[RANKS] = {0};
    for (int k = 0; k < 300; k++)
        hit[dt_failure_victim(5, k, RANKS)]++;
    for (int r = 0; r < RANKS; r++)
        EXPECT(hit[r] > 60, "rank %d struck %d times in 300", r, hit[r]);
    EXPECT(isnan(dt_failure_time(1, 0, 0)) && isnan(dt_failure_time(1, 5, -1)), "bad arguments");
}

/* Each phase of step 2 on rank 1: the launch fails with DT_ERR_FAULT
 * naming the point; on thread ranks the victim got no further than it,
 * and no rank passed the allreduce that follows. */
static void kill_at_each_phase(dt_backend b)
{
    for (int p = 0; p < DT_NUM_PHASES; p++) {
        job j;
        char spec[64];
        snprintf(spec, sizeof spec, "rank=1:step=2:phase=%s", dt_phase_name((dt_phase)p));
        EXPECT_OK(dt_failure_parse(spec, &j.plan));
        dt_result r = launch(&j, b);
        EXPECT(r == DT_ERR_FAULT || (b == DT_BACKEND_PROC && r != DT_OK),
               "%s on %s ranks: %s: %s", spec, dt_backend_name(b), dt_strerror(r),
               dt_last_error());
        if (b != DT_BACKEND_THREAD)
            continue;
        /* mid-allreduce dies as DT_FAULT's kill: "at allreduce #3" (its third) */
        EXPECT(p == DT_PHASE_MID_ALLREDUCE
                   ? strstr(dt_last_error(), "allreduce #3") != NULL
                   : strstr(dt_last_error(), "step 2") &&
                         strstr(dt_last_error(), dt_phase_name((dt_phase)p)),
               "%s: the message names the point: %s", spec, dt_last_error());
        long at = 2 * DT_NUM_PHASES + p;
        /* mid-allreduce: armed at the point, the victim dies in the allreduce after it */
        EXPECT(j.reached[1] == (p == DT_PHASE_MID_ALLREDUCE ? at : at - 1),
               "%s: the victim reached point %ld", spec, j.reached[1]);
        for (int q = 0; q < RANKS; q++)
            EXPECT(j.reached[q] <= 3 * DT_NUM_PHASES + DT_PHASE_MID_ALLREDUCE,
                   "%s: rank %d passed the allreduce after the failure (point %ld)", spec, q,
                   j.reached[q]);
    }
    job none;
    EXPECT_OK(dt_failure_parse("rank=1:step=9:phase=mid-save", &none.plan));
    EXPECT_OK(launch(&none, b)); /* a step the run never reaches: no failure */
}

TEST(failure_kills_at_each_phase_thread_ranks, 1) { kill_at_each_phase(DT_BACKEND_THREAD); }
TEST(failure_kills_at_each_phase_proc_ranks, 1) { kill_at_each_phase(DT_BACKEND_PROC); }

TEST(failure_mtbf_on_the_modeled_clock, 1)
{
    /* find a seed whose first failure falls inside the run (1 modeled
     * second a step): the victim dies at its first point with clock >= t */
    job j;
    uint64_t seed = 0;
    while (dt_failure_time(seed, 2.0, 0) >= STEPS - 1)
        seed++;
    char spec[64];
    snprintf(spec, sizeof spec, "mtbf=2:seed=%llu", (unsigned long long)seed);
    EXPECT_OK(dt_failure_parse(spec, &j.plan));
    double t = j.plan.at_s;
    int victim = dt_failure_victim(seed, 0, RANKS);
    for (int round = 0; round < 2; round++) { /* the same plan, the same failure */
        dt_result r = launch(&j, DT_BACKEND_THREAD);
        EXPECT(r == DT_ERR_FAULT, "%s: %s", spec, dt_strerror(r));
        long step = (long)ceil(t); /* the clock at step s's points is s */
        EXPECT(j.reached[victim] == step * DT_NUM_PHASES - 1,
               "%s: failure at %.4f s on rank %d: it reached point %ld, expected %ld", spec, t,
               victim, j.reached[victim], step * DT_NUM_PHASES - 1);
    }
}
