/* test_measure.c - lab 12, task (b): instrumenting the step, combining the
 * ranks, and the end-to-end measurement of a known parallel fraction.
 * The workload runs in modeled time, so each part's time is known exactly:
 * the expected values below are worked out from the workload's settings.
 * The launches run on the backend DT_BACKEND names (`make check
 * BACKEND=proc|mpi`); each rank checks that it runs there, and the ranks'
 * figures come back through dt_rank_out. */
#include "grader.h"
#include "scaling_test.h"

#include <math.h>
#include <stdio.h>

/* 1e-6 s: exact up to rounding, even if the ranks' times travel as float */
#define CLOSE(a, b) (fabs((a) - (b)) < 1e-6)

static dt_launch_opts opts(int nranks, const char *net)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    o.net = net;
    o.timeout_s = 5;
    return o;
}

/* 7 samples of 10 ms on 3 ranks: shares 3, 2, 2; serial 50 ms; no network.
 * Every rank leaves the allreduce when the last one enters it (at 80 ms), so
 * a rank's comm time is its wait: 80 ms - 50 ms - its parallel time. */
static dt_result step_parts_rank(dt_comm *comm, void *arg)
{
    const lab_workload *w = arg;
    int rank = dt_comm_rank(comm);
    double par = (rank == 0 ? 3 : 2) * 0.01;
    lab_step_time st;
    dt_stats stats;
    DT_CHECK(dt_test_on_backend(rank, dt_test_backend()));
    /* step 0 carries the warm-up: 200 ms more serial work */
    EXPECT_OK(lab_measure_step(comm, w, 0, &st));
    EXPECT(CLOSE(st.serial, 0.25), "step 0: serial %.9g s, expected 0.25 (with the warm-up)", st.serial);
    EXPECT_OK(dt_comm_stats_reset(comm));
    for (int s = 1; s <= 2; s++) {
        double before = dt_clock(comm);
        EXPECT_OK(lab_measure_step(comm, w, s, &st));
        EXPECT(CLOSE(st.serial, 0.05), "step %d: serial %.9g s, expected 0.05", s, st.serial);
        EXPECT(CLOSE(st.parallel, par), "step %d: parallel %.9g s, expected %g", s, st.parallel, par);
        EXPECT(CLOSE(st.comm, 0.03 - par), "step %d: comm %.9g s, expected %g (waiting for rank 0)",
               s, st.comm, 0.03 - par);
        EXPECT(CLOSE(st.total, 0.08), "step %d: total %.9g s, expected 0.08", s, st.total);
        EXPECT(CLOSE(dt_clock(comm) - before, st.total), "step %d: total %.9g s, but the clock "
               "advanced %.9g s over lab_measure_step", s, st.total, dt_clock(comm) - before);
    }
    EXPECT_OK(dt_comm_stats(comm, &stats));
    EXPECT(stats.calls[DT_COLL_ALLREDUCE] == 2, "2 steps made %llu allreduce calls, expected 2",
           (unsigned long long)stats.calls[DT_COLL_ALLREDUCE]);
    return DT_OK;
}

TEST(measure_step_parts, 3)
{
    dt_test_see("chapter 12, sections 1 and 2");
    lab_workload w;
    lab_workload_init(&w);
    w.samples = 7, w.sample_s = 0.01, w.serial_s = 0.05, w.warmup_s = 0.2, w.grad_count = 10;
    dt_launch_opts o = opts(3, "none");
    EXPECT_OK(dt_launch(&o, step_parts_rank, &w));
}

/* On a network, the allreduce's time is what the network model charged the
 * rank's clock in the call (dt_comm_stats' time_comm_modeled). */
static dt_result step_network_rank(dt_comm *comm, void *arg)
{
    const lab_workload *w = arg;
    lab_step_time st;
    dt_stats stats;
    DT_CHECK(dt_test_on_backend(dt_comm_rank(comm), dt_test_backend()));
    EXPECT_OK(dt_comm_stats_reset(comm));
    EXPECT_OK(lab_measure_step(comm, w, 1, &st));
    EXPECT_OK(dt_comm_stats(comm, &stats));
    EXPECT(st.comm > 0, "comm %g s on a network with 1 ms latency", st.comm);
    EXPECT(CLOSE(st.comm, stats.time_comm_modeled), "comm %.9g s, the network charged %.9g s",
           st.comm, stats.time_comm_modeled);
    EXPECT(CLOSE(st.total, st.serial + st.parallel + st.comm), "total %.9g s is not the sum of "
           "the parts, %.9g + %.9g + %.9g s", st.total, st.serial, st.parallel, st.comm);
    EXPECT(CLOSE(st.parallel, 0.004), "parallel %.9g s, expected 0.004", st.parallel);
    return DT_OK;
}

TEST(measure_step_comm_is_the_network, 2)
{
    dt_test_see("chapter 12, sections 8 and 9");
    lab_workload w;
    lab_workload_init(&w);
    w.samples = 16, w.sample_s = 0.001, w.serial_s = 0.002, w.grad_count = 4096;
    dt_launch_opts o = opts(4, "alpha=1ms,bw=1GB/s");
    EXPECT_OK(dt_launch(&o, step_network_rank, &w));
}

typedef struct {
    lab_workload w;
    int steps;
    lab_job_time job[8]; /* the launch's out: each rank's figures */
} job_arg;

static dt_result job_rank(dt_comm *comm, void *arg)
{
    const job_arg *a = arg;
    DT_CHECK(dt_test_on_backend(dt_comm_rank(comm), dt_test_backend()));
    return lab_measure_job(comm, &a->w, a->steps, dt_rank_out(comm));
}

static dt_launch_opts job_opts(job_arg *a, int nranks)
{
    dt_launch_opts o = opts(nranks, "none");
    o.out = a->job;
    o.out_bytes = sizeof a->job[0];
    return o;
}

static void expect_same_on_every_rank(const job_arg *a, int n)
{
    for (int r = 1; r < n; r++)
        EXPECT(a->job[r].step == a->job[0].step && a->job[r].serial == a->job[0].serial &&
               a->job[r].parallel == a->job[0].parallel && a->job[r].comm == a->job[0].comm &&
               a->job[r].imbalance == a->job[0].imbalance && a->job[r].nranks == n,
               "rank %d got other figures than rank 0", r);
}

/* 4 ranks, 8 samples of 10 ms (2 each), 20 ms serial, 1 s of warm-up in
 * step 0, which must not count: every step takes 40 ms. */
TEST(measure_job_balanced, 2)
{
    dt_test_see("chapter 12, section 2");
    job_arg a = {.steps = 3};
    lab_workload_init(&a.w);
    a.w.samples = 8, a.w.sample_s = 0.01, a.w.serial_s = 0.02, a.w.warmup_s = 1.0;
    dt_launch_opts o = job_opts(&a, 4);
    EXPECT_OK(dt_launch(&o, job_rank, &a));
    expect_same_on_every_rank(&a, 4);
    const lab_job_time *j = &a.job[0];
    EXPECT(j->nranks == 4, "4 ranks: the job's nranks is %d", j->nranks);
    EXPECT(CLOSE(j->step, 0.04), "T_4 = %.9g s, expected 0.04 (step 0 is a warm-up)", j->step);
    EXPECT(CLOSE(j->serial, 0.02), "serial %.9g s, expected 0.02", j->serial);
    EXPECT(CLOSE(j->parallel, 0.02), "parallel %.9g s, expected 0.02", j->parallel);
    EXPECT(CLOSE(j->comm, 0), "comm %.9g s, expected 0", j->comm);
    EXPECT(CLOSE(j->imbalance, 0), "imbalance %.9g, expected 0", j->imbalance);
}

/* The same with rank 3 twice as slow: parallel times 20, 20, 20, 40 ms.
 * T_4 = 20 + 40 = 60 ms; mean parallel 25 ms; imbalance (40 - 20) / 25 =
 * 0.8; the others wait 20 ms in the allreduce: mean comm 15 ms. */
TEST(measure_job_straggler, 3)
{
    dt_test_see("chapter 12, sections 2 and 7");
    job_arg a = {.steps = 2};
    lab_workload_init(&a.w);
    a.w.samples = 8, a.w.sample_s = 0.01, a.w.serial_s = 0.02, a.w.warmup_s = 0.5;
    a.w.slow_rank = 3, a.w.slow_factor = 2;
    dt_launch_opts o = job_opts(&a, 4);
    EXPECT_OK(dt_launch(&o, job_rank, &a));
    expect_same_on_every_rank(&a, 4);
    const lab_job_time *j = &a.job[0];
    EXPECT(CLOSE(j->step, 0.06), "T_4 = %.9g s, expected 0.06", j->step);
    EXPECT(CLOSE(j->parallel, 0.025), "parallel %.9g s, expected 0.025", j->parallel);
    EXPECT(CLOSE(j->comm, 0.015), "comm %.9g s, expected 0.015", j->comm);
    EXPECT(CLOSE(j->imbalance, 0.8), "imbalance %.9g, expected 0.8", j->imbalance);
}

/* End to end: 840 samples of 1 ms (divisible by 1 .. 8) and a serial part
 * of 840/9 ms, so the parallel fraction is 0.84 / (0.84 + 0.84/9) = 0.9,
 * measured on 1 .. 8 ranks over 10 Gb Ethernet (whose small allreduce adds
 * well under a millisecond) and fitted: p within 0.02 of 0.9. */
TEST_T(measured_p_matches_injected_serial_fraction, 3, 20)
{
    dt_test_see("chapter 12, sections 2 and 4");
    lab_workload w;
    lab_workload_init(&w);
    w.samples = 840, w.sample_s = 1e-3, w.serial_s = 0.84 / 9, w.warmup_s = 0.3, w.grad_count = 256;
    int n[8];
    double t[8];
    lab_job_time job[8];
    for (int i = 0; i < 8; i++) n[i] = i + 1;
    EXPECT_OK(lab_sweep(&w, "eth10", n, 8, 2, job));
    for (int i = 0; i < 8; i++) {
        t[i] = job[i].step;
        double want = w.serial_s + 0.84 / n[i]; /* plus the allreduce: < 1 ms */
        EXPECT(t[i] >= want - 1e-9 && t[i] < want + 1e-3, "T_%d = %.6g s, expected %.6g s + comm",
               n[i], t[i], want);
    }
    lab_amdahl fit;
    EXPECT_OK(lab_fit_amdahl(n, t, 8, &fit));
    EXPECT(fabs(fit.p - 0.9) < 0.02, "measured p = %.4f, the workload's is 0.9", fit.p);
}

/* ---------------------------------------------------------------- task (e) */

void st_expect_step_prediction(const lab_workload *w, const char *net, int n)
{
    dt_net link;
    EXPECT_OK(dt_net_link(net, &link));
    double par = 0; /* the slowest rank's share: the first ranks get one sample more */
    for (int r = 0; r < n; r++) {
        int share = w->weak ? w->samples : w->samples / n + (r < w->samples % n);
        par = fmax(par, share * w->sample_s * (r == w->slow_rank ? w->slow_factor : 1));
    }
    double bytes = 4.0 * (double)w->grad_count;
    double ring = n == 1 ? 0 : 2.0 * (n - 1) * (link.alpha + bytes / (n * link.beta));
    double want = w->serial_s + par + ring, pred = -1;
    char what[200];
    snprintf(what, sizeof what, "%s scaling, %d samples of %g ms, %g ms serial, %zu gradients, "
             "straggler %d x %g, on %d ranks over %s", w->weak ? "weak" : "strong", w->samples,
             w->sample_s * 1e3, w->serial_s * 1e3, w->grad_count, w->slow_rank, w->slow_factor,
             n, net);
    dt_result r = lab_predict_step_time(w, &link, n, &pred);
    EXPECT(r == DT_OK, "%s: lab_predict_step_time: %s", what, dt_last_error());
    EXPECT(fabs(pred - want) <= 1e-9, "%s: predicted T_N = %.9f ms; the serial part, the "
           "slowest rank's share and the ring allreduce (sections 1, 7 and 9) give %.9f ms",
           what, pred * 1e3, want * 1e3);
    lab_job_time job;
    EXPECT_OK(lab_sweep(w, net, &n, 1, 2, &job));
    EXPECT(fabs(job.step - pred) <= 1e-9, "%s: predicted T_N = %.9f ms, as sections 1, 7 and "
           "9 do; lab_measure_job measured %.9f ms over 2 steps after the warm-up", what,
           pred * 1e3, job.step * 1e3);
}

/* Predict, then measure: 500 samples of 2 ms on 6 ranks (shares of 84 and
 * 83), 20 ms serial, 3 MiB of gradients over InfiniBand, which the
 * chapter does not work out. */
TEST_T(predict_step_time_then_measure, 2, 20)
{
    dt_test_see("chapter 12, sections 1, 7 and 9");
    lab_workload w;
    lab_workload_init(&w);
    w.samples = 500, w.sample_s = 2e-3, w.serial_s = 0.02, w.warmup_s = 0.1;
    w.grad_count = 786432; /* 3 x 2^18: 3 MiB, divisible by 6 */
    st_expect_step_prediction(&w, "ib100", 6);
}
