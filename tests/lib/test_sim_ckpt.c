/* test_sim_ckpt.c - libdt sim: the checkpoint interval. Daly's own worked
 * figures (FGCS 2006: R = 10 min, delta = 5 min), Young's first order, and
 * the waste model's minimum found by a scan, independent of the closed
 * forms. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>

#define MIN 60.0
#define HOUR 3600.0

TEST(sim_ckpt_daly_worked_figures, 1)
{
    /* delta = 5 min; M = 24 h -> 117 min, 6 h -> 57 min, 15 min -> 9.1 min */
    const double M[3] = {24 * HOUR, 6 * HOUR, 15 * MIN}, want[3] = {117, 57, 9.1};
    const double tol[3] = {0.5, 0.5, 0.05}; /* the paper's rounding */
    for (int i = 0; i < 3; i++) {
        double tau = dt_sim_ckpt_daly(5 * MIN, M[i]) / MIN;
        EXPECT(fabs(tau - want[i]) <= tol[i], "M = %g min: Daly's interval %.4f min, the paper %g",
              M[i] / MIN, tau, want[i]);
    }
    /* Young's first order: sqrt(2 x 5 x 1440) = 120 min exactly */
    EXPECT_NEAR(dt_sim_ckpt_young(5 * MIN, 24 * HOUR) / MIN, 120.0, 1e-9);
    /* a checkpoint dearer than 2M: checkpoint once per MTBF */
    EXPECT_NEAR(dt_sim_ckpt_daly(30 * MIN, 10 * MIN), 10 * MIN, 1e-9);
}

/* The waste model's own minimum, by a scan of tau in steps of 0.01 min. */
static double scan_best(double delta, double R, double M)
{
    double best = NAN, least = 2;
    for (double tau = 0.01 * MIN; tau < 4 * M; tau += 0.01 * MIN) {
        double w = dt_sim_ckpt_waste(tau, delta, R, M);
        if (w < least)
            least = w, best = tau;
    }
    return best;
}

TEST(sim_ckpt_daly_is_near_the_models_minimum, 1)
{
    /* Daly's form is an expansion of the minimum of his waste model: within
     * 1% of it while delta << M, and nearer than Young's everywhere here. */
    const double M[3] = {24 * HOUR, 6 * HOUR, 15 * MIN};
    for (int i = 0; i < 3; i++) {
        double best = scan_best(5 * MIN, 10 * MIN, M[i]);
        double daly = dt_sim_ckpt_daly(5 * MIN, M[i]), young = dt_sim_ckpt_young(5 * MIN, M[i]);
        EXPECT(fabs(daly - best) <= fabs(young - best) + 0.01 * MIN,
              "M = %g min: scan %.3f, Daly %.3f, Young %.3f min", M[i] / MIN, best / MIN,
              daly / MIN, young / MIN);
        if (i < 2)
            EXPECT(fabs(daly - best) / best < 0.01, "M = %g min: scan %.3f, Daly %.3f min",
                  M[i] / MIN, best / MIN, daly / MIN);
    }
}

TEST(sim_ckpt_waste_limits, 1)
{
    /* no failures to speak of and free checkpoints: nothing wasted */
    EXPECT(dt_sim_ckpt_waste(60, 0, 0, 1e12) < 1e-9, "waste %g",
          dt_sim_ckpt_waste(60, 0, 0, 1e12));
    /* M large: wall / work - 1 ~ delta / tau + ((tau + delta) / 2 + R) / M to
     * first order in 1 / M (the checkpoints, half an interval of rework and
     * a restart per failure) */
    double tau = 3600, delta = 60, R = 300, M = 1e7;
    double over = 1 / (1 - dt_sim_ckpt_waste(tau, delta, R, M)) - 1;
    double first = delta / tau + ((tau + delta) / 2 + R) / M;
    EXPECT(fabs(over - first) < 1e-5, /* the second order: (C / tau) (tau / 2M) ~ 3e-6 */
            "wall / work - 1 = %.8f, first order %.8f", over, first);
    /* more frequent failures waste more at the same interval */
    EXPECT(dt_sim_ckpt_waste(tau, delta, R, 6 * HOUR) > dt_sim_ckpt_waste(tau, delta, R, 24 * HOUR),
          "waste does not grow as M falls");
    /* 16,384 devices of a 1-million-hour MTBF: a job MTBF of 61 h */
    EXPECT_NEAR(dt_sim_job_mtbf(1e6 * HOUR, 16384) / HOUR, 1e6 / 16384, 1e-9);
}

TEST(sim_ckpt_refuses_bad_arguments, 1)
{
    EXPECT(isnan(dt_sim_ckpt_young(0, 100)), "delta = 0 accepted");
    EXPECT(isnan(dt_sim_ckpt_daly(5, -1)), "M < 0 accepted");
    EXPECT(isnan(dt_sim_ckpt_daly(5, INFINITY)), "M infinite accepted");
    EXPECT(isnan(dt_sim_ckpt_waste(0, 1, 1, 100)), "tau = 0 accepted");
    EXPECT(isnan(dt_sim_ckpt_waste(10, 1, -1, 100)), "R < 0 accepted");
    EXPECT(isnan(dt_sim_job_mtbf(100, 0)), "n = 0 accepted");
}

TEST(sim_ckpt_run_with_injected_failures, 1)
{
    long f = -1;
    /* failures never come within the job: the work and 4 checkpoints */
    double wall = dt_sim_ckpt_run(100, 30, 2, 7, 1e15, 3, &f);
    EXPECT(wall == 100 + 4 * 2 && f == 0, "wall %g, %ld failures (want 108, 0)", wall, f);
    /* a job of 2000 M at Daly's interval: the measured waste is Daly's
     * model within 1.5 points, and the failures are about work / M (a
     * fixed seed: always the same figures) */
    double C = 5 * MIN, R = 10 * MIN, M = 6 * HOUR, tau = dt_sim_ckpt_daly(C, M);
    wall = dt_sim_ckpt_run(2000 * M, tau, C, R, M, 1, &f);
    double waste = 1 - 2000 * M / wall, model = dt_sim_ckpt_waste(tau, C, R, M);
    EXPECT(fabs(waste - model) < 0.015, "measured waste %.4f, Daly's model %.4f", waste, model);
    EXPECT(fabs(f - wall / M) < 4 * sqrt(wall / M), "%ld failures in %g MTBFs", f, wall / M);
    EXPECT(isnan(dt_sim_ckpt_run(100, 0, 1, 1, 10, 1, NULL)), "tau = 0 accepted");
}
