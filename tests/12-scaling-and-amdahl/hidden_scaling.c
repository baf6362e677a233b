/* hidden_scaling.c - lab 12: hidden tests (staff only; graded, but not in
 * the student tree). Same functions, other cases. */
#include "grader.h"
#include "scaling_test.h"

#include <math.h>

/* 1e-6 s: exact up to rounding, even if the ranks' times travel as float */
#define CLOSE(a, b) (fabs((a) - (b)) < 1e-6)

/* Points in any order, N = 1 measured three times. Least squares of T on
 * 1/N: mean x = 31/48, mean T = 79/12, b = 2204/317, a = 1327/634;
 * T_1 = 5735/634, p = 4408/5735; squared errors sum to 730/317. */
TEST_HIDDEN(fit_unsorted_repeated_points, 2)
{
    dt_test_see("chapter 12, section 4");
    const int n[] = {4, 1, 2, 1, 8, 1};
    const double t[] = {3.5, 9, 6, 10, 3, 8};
    lab_amdahl fit = {0};
    EXPECT_OK(lab_fit_amdahl(n, t, 6, &fit));
    EXPECT_NEAR(fit.p, 4408.0 / 5735.0, 1e-9);
    EXPECT_NEAR(fit.t1, 5735.0 / 634.0, 1e-9);
    EXPECT_NEAR(fit.residual, sqrt(730.0 / 317.0 / 6.0), 1e-9);
}

TEST_HIDDEN(predict_large_n, 1)
{
    dt_test_see("chapter 12, section 3");
    lab_amdahl fit = {.p = 0.99, .t1 = 1, .residual = 0};
    double s = -1;
    /* 1 / (0.01 + 0.99 / 1024) = 1024 / (10.24 + 0.99) */
    EXPECT_OK(lab_predict_speedup(&fit, 1024, &s));
    EXPECT_NEAR(s, 1024.0 / 11.23, 1e-12);
}

/* Weak scaling with no network: every rank does the same work in the same
 * time, so T_N = T_1 and the efficiency is 1; with 1 ms per message the
 * allreduce makes T_N grow and the efficiency fall below 1. */
TEST_HIDDEN_T(weak_sweep_efficiency, 2, 20)
{
    dt_test_see("chapter 12, section 5");
    lab_workload w;
    lab_workload_init(&w);
    w.weak = 1, w.samples = 5, w.sample_s = 0.01, w.serial_s = 0.01, w.grad_count = 64;
    const int n[] = {1, 2, 4};
    lab_job_time job[3];
    EXPECT_OK(lab_sweep(&w, "none", n, 3, 1, job));
    for (int i = 0; i < 3; i++) {
        double e = -1;
        EXPECT(CLOSE(job[i].step, 0.06), "weak T_%d = %.9g s, expected 0.06", n[i], job[i].step);
        EXPECT_OK(lab_weak_efficiency(job[0].step, job[i].step, &e));
        EXPECT_NEAR(e, 1, 1e-9);
    }
    EXPECT_OK(lab_sweep(&w, "alpha=1ms", n, 3, 1, job));
    double prev = 1;
    for (int i = 1; i < 3; i++) {
        double e = -1;
        EXPECT_OK(lab_weak_efficiency(job[0].step, job[i].step, &e));
        EXPECT(e < 1 && e <= prev, "weak efficiency on %d ranks over a 1 ms network "
               "%g, after %g on fewer: it must fall below 1 and not rise", n[i], e, prev);
        prev = e;
    }
}

typedef struct {
    lab_workload w;
    lab_job_time job[3]; /* the launch's out: each rank's figures */
} job_arg;

static dt_result job_rank(dt_comm *comm, void *arg)
{
    const job_arg *a = arg;
    DT_CHECK(dt_test_on_backend(dt_comm_rank(comm), dt_test_backend()));
    return lab_measure_job(comm, &a->w, 2, dt_rank_out(comm));
}

/* 8 samples of 10 ms on 3 ranks: shares 3, 3, 2; parallel 30, 30, 20 ms,
 * mean 80/3 ms; imbalance 10 / (80/3) = 0.375; rank 2 waits 10 ms. */
TEST_HIDDEN(measure_job_uneven_batch, 1)
{
    dt_test_see("chapter 12, section 7");
    job_arg a;
    lab_workload_init(&a.w);
    a.w.samples = 8, a.w.sample_s = 0.01, a.w.serial_s = 0.005;
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 3, o.net = "none", o.timeout_s = 5;
    o.out = a.job, o.out_bytes = sizeof a.job[0];
    EXPECT_OK(dt_launch(&o, job_rank, &a));
    EXPECT(CLOSE(a.job[0].step, 0.035), "T_3 = %.9g s, expected 0.035", a.job[0].step);
    EXPECT(CLOSE(a.job[0].imbalance, 0.375), "imbalance %.9g, expected 0.375", a.job[0].imbalance);
    EXPECT(CLOSE(a.job[0].comm, 0.01 / 3), "comm %.9g s, expected 0.01/3", a.job[0].comm);
    EXPECT(CLOSE(a.job[2].parallel, 0.08 / 3), "parallel %.9g s on rank 2, expected 0.08/3",
           a.job[2].parallel);
}

/* Predict, then measure: weak scaling with a straggler over eth10, an
 * even strong split over another link, one rank, and the arguments the
 * contract refuses. */
TEST_HIDDEN_T(predict_step_time_elsewhere, 2, 30)
{
    dt_test_see("chapter 12, sections 1, 7 and 9");
    lab_workload w;
    lab_workload_init(&w);
    w.weak = 1, w.samples = 16, w.sample_s = 2e-3, w.serial_s = 0.02, w.warmup_s = 0.05;
    w.grad_count = 655360, w.slow_rank = 2, w.slow_factor = 1.5; /* 5 x 2^17 */
    st_expect_step_prediction(&w, "eth10", 5);
    lab_workload_init(&w);
    w.samples = 96, w.sample_s = 1e-3, w.serial_s = 0.005, w.grad_count = 1 << 16;
    st_expect_step_prediction(&w, "alpha=10us,bw=5GB/s", 4);
    st_expect_step_prediction(&w, "ib100", 1);
    dt_net link;
    double t;
    EXPECT_OK(dt_net_link("ib100", &link));
    EXPECT_ERR(lab_predict_step_time(&w, &link, 0, &t), DT_ERR_INVALID_ARG);
    w.wall = 1;
    EXPECT_ERR(lab_predict_step_time(&w, &link, 2, &t), DT_ERR_INVALID_ARG);
}
