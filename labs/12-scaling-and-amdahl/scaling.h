/* scaling.h - lab 12: measuring scaling, fitting Amdahl's law, predicting.
 * Read chapters/12-scaling-and-amdahl.md first.
 *
 * The workload is a data-parallel training step in three parts, given in
 * workload.c:
 *
 *     serial    the part every rank does whole, whatever N: reading and
 *               decoding the batch, the optimizer update of the full
 *               replica, logging. It does not shrink when ranks are added.
 *     parallel  forward and backward on the rank's share of the batch.
 *     allreduce the gradient allreduce (its time includes waiting for the
 *               slowest rank to arrive).
 *
 * Times are read on the rank's clock, dt_clock(comm), in seconds: in modeled
 * mode the workload advances it by known amounts (dt_clock_advance) and the
 * network model prices the allreduce; in wall mode the compute is real
 * arithmetic timed by dt_compute_begin/end, so the same clock reads wall time.
 *
 * Every function returns DT_OK, or DT_ERR_INVALID_ARG (through dt_fail, with
 * a message naming the bad argument) for a NULL pointer or a value outside
 * the domain stated beside it; a failed call leaves its outputs unchanged.
 */
#ifndef LAB_SCALING_H
#define LAB_SCALING_H

#include <stddef.h>

#include "dt/comm.h"
#include "dt/core.h"

/* ---------------------------------------------------------------- the workload (given) */

typedef struct {
    int samples;       /* strong scaling: the global batch, split over the
                          ranks; weak scaling: the batch of each rank (>= 1) */
    int weak;          /* 0: strong scaling, 1: weak scaling */
    double sample_s;   /* seconds of forward + backward per sample (modeled
                          mode; wall mode measures them) */
    double serial_s;   /* seconds of the serial part per step (modeled mode) */
    double warmup_s;   /* extra serial seconds in step 0 only: the cold start
                          (first-touch allocation, lazy initialisation) */
    size_t grad_count; /* gradients (floats) allreduced per step */
    int slow_rank;     /* a straggler (-1: none) ... */
    double slow_factor; /* ... whose parallel part takes this many times longer */
    int wall;          /* 1: real arithmetic, timed (wall mode) */
    long wall_flops;   /* wall mode: floating-point operations per sample; the
                          serial part does serial_s / sample_s samples' worth */
} lab_workload;

/* A workload with the fields above set to: 64 samples, strong, 1 ms per
 * sample, 10 ms serial, no warm-up, 1024 gradients, no straggler, modeled. */
void lab_workload_init(lab_workload *w);

/* The samples rank `rank` of `nranks` works on: weak scaling, w->samples;
 * strong scaling, samples / nranks, plus one for the first
 * samples % nranks ranks. */
int lab_rank_samples(const lab_workload *w, int rank, int nranks);

/* The three parts of step `step` (0, 1, 2, ...) of the training loop, on the
 * calling rank. lab_work_allreduce also checks the summed gradients
 * (DT_ERR_INTERNAL if they are wrong). */
dt_result lab_work_serial(dt_comm *comm, const lab_workload *w, int step);
dt_result lab_work_parallel(dt_comm *comm, const lab_workload *w, int step);
dt_result lab_work_allreduce(dt_comm *comm, const lab_workload *w, int step);

/* ---------------------------------------------------------------- task (a): metrics */

/* Strong scaling (the total work fixed): speedup S = T_1 / T_N and
 * efficiency E = S / N. t1 > 0, tn > 0, n >= 1 (all finite). */
dt_result lab_strong_scaling(double t1, double tn, int n, double *speedup, double *efficiency);

/* Weak scaling (the work per rank fixed, so N ranks do N times the work of
 * one): efficiency E = T_1 / T_N; 1 when the step time does not grow with N.
 * t1 > 0, tn > 0. */
dt_result lab_weak_efficiency(double t1, double tn, double *efficiency);

/* Load imbalance of per-rank times t[0 .. count): (max - min) / mean.
 * count >= 1, every t[i] >= 0 and finite, mean > 0. */
dt_result lab_load_imbalance(const double *t, size_t count, double *imbalance);

/* ---------------------------------------------------------------- task (b): instrument */

/* One rank's times of one step, in seconds of dt_clock. */
typedef struct {
    double serial;   /* in lab_work_serial */
    double parallel; /* in lab_work_parallel */
    double comm;     /* in lab_work_allreduce */
    double total;    /* the whole step: from before serial to after allreduce */
} lab_step_time;

/* Runs step `step` of the loop on this rank (serial, then parallel, then
 * allreduce, each exactly once) and writes how long each part took on this
 * rank's clock. step >= 0. */
dt_result lab_measure_step(dt_comm *comm, const lab_workload *w, int step, lab_step_time *out);

/* The job's figures for one rank count, the same on every rank. */
typedef struct {
    int nranks;
    double step;      /* T_N: the largest, over the ranks, of the rank's mean
                         step time (the job goes as fast as its slowest rank) */
    double serial;    /* the mean over the ranks of the rank's mean serial time */
    double parallel;  /* the same for the parallel part */
    double comm;      /* the same for the allreduce */
    double imbalance; /* the load imbalance (task a) of the ranks' mean
                         parallel times */
} lab_job_time;

/* Collective (every rank of comm calls it): runs step 0 as a warm-up, not
 * counted, then steps 1 .. steps, each with lab_measure_step; "mean" is over
 * those `steps` steps. Afterwards every rank holds the same *out, computed
 * from every rank's means (libdt has no double dtype; bytes travel
 * exactly). The load imbalance is that of task (a), lab_load_imbalance.
 * steps >= 1. */
dt_result lab_measure_job(dt_comm *comm, const lab_workload *w, int steps, lab_job_time *out);

/* Given: runs lab_measure_job on ns[i] ranks for each i < count (the
 * backend DT_BACKEND names, else threads; network `net`: a preset name or
 * "alpha=..,bw=..", NULL for none), out[i] = the job's figures (rank 0's,
 * handed back through dt_rank_out). */
dt_result lab_sweep(const lab_workload *w, const char *net, const int *ns, size_t count,
                    int steps, lab_job_time *out);

/* ---------------------------------------------------------------- task (c): fit and predict */

typedef struct {
    double p;        /* the parallel fraction of the one-rank time */
    double t1;       /* the one-rank time of the fitted model */
    double residual; /* root mean square of T_i - model(N_i), seconds */
} lab_amdahl;

/* Fits Amdahl's law T_N = T_1 ((1 - p) + p / N) to the points (n[i], t[i]),
 * i < count, by ordinary least squares of T on x = 1/N: the model is the
 * line T = a + b x with a = T_1 (1 - p) (serial seconds) and b = T_1 p
 * (parallelisable seconds); every point weighs the same. Then
 * t1 = a + b, p = b / (a + b) (not clamped to [0, 1]), and residual is
 * sqrt(mean over i of (t[i] - a - b / n[i])^2). Needs at least two distinct
 * N, every n[i] >= 1, every t[i] > 0 and finite, and a + b > 0. */
dt_result lab_fit_amdahl(const int *n, const double *t, size_t count, lab_amdahl *out);

/* Amdahl's prediction for N >= 1 ranks from a fit: 1 / ((1 - p) + p / N). */
dt_result lab_predict_speedup(const lab_amdahl *fit, int n, double *speedup);

/* ---------------------------------------------------------------- task (d): plots */

/* The measurements behind the plots. */
typedef struct {
    size_t count;         /* points, >= 2 */
    const int *n;         /* rank counts, n[0] = 1, increasing */
    const double *strong; /* T_N with the global batch fixed, count values > 0 */
    const double *weak;   /* T_N with the batch per rank fixed, or NULL */
} lab_scaling_data;

/* Writes two SVG plots with dt/metrics.h's writer, both with a log2 x axis
 * (ranks N):
 *  speedup_svg: log2 y axis (speedup), three series:
 *    "measured"  the points (n[i], strong[0] / strong[i]), drawn as points;
 *    "ideal"     the line S = N from N = 1 to n[count-1];
 *    "Amdahl..." (a name that begins with "Amdahl", e.g. "Amdahl, p = 0.950")
 *                the curve 1 / ((1 - p) + p / N) of fit, N from 1 to n[count-1];
 *  efficiency_svg: linear y axis (efficiency), two or three series:
 *    "strong scaling"  the points (n[i], strong[0] / (n[i] strong[i])), as
 *                points;
 *    "Amdahl..." the curve of the fit's efficiency S(N) / N;
 *    "weak scaling"  only when data->weak is not NULL: the points
 *                (n[i], weak[0] / weak[i]), as points.
 * Series names other than these are not allowed; the order of the series,
 * titles and axis labels are yours. n[0] must be 1 and n increasing. */
dt_result lab_write_plots(const lab_scaling_data *data, const lab_amdahl *fit,
                          const char *speedup_svg, const char *efficiency_svg);

/* ---------------------------------------------------------------- task (e): predict, then measure */

/* *t_n := the T_N that lab_measure_job reports (its `step`: the slowest
 * rank's mean step time, the warm-up left out) for workload w on n ranks
 * over link, in modeled mode, with the ring allreduce (the algorithm libdt
 * picks for w->grad_count floats above 32 KiB, dt/comm.h): worked out from
 * sections 1, 7 and 9 without running a step. The tests then measure it
 * with lab_sweep, to 1e-9 s. w in modeled mode (wall 0), n >= 1, else
 * DT_ERR_INVALID_ARG. */
dt_result lab_predict_step_time(const lab_workload *w, const dt_net *link, int n, double *t_n);

#endif /* LAB_SCALING_H */
