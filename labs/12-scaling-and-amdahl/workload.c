/* workload.c - lab 12: the training step whose scaling you measure (given;
 * nothing to write here). A synthetic data-parallel step: a serial part that
 * every rank does whole, a parallel part on the rank's share of the batch,
 * and a gradient allreduce. In modeled mode each part costs a known time on
 * the rank's clock, so that the truth (p, the imbalance) is known exactly;
 * in wall mode the compute is real arithmetic. */
#include "scaling.h"

#include <math.h>
#include <stdlib.h>

void lab_workload_init(lab_workload *w)
{
    if (!w) return;
    *w = (lab_workload){
        .samples = 64,
        .sample_s = 1e-3,
        .serial_s = 10e-3,
        .grad_count = 1024,
        .slow_rank = -1,
        .slow_factor = 1,
        .wall_flops = 2000000,
    };
}

int lab_rank_samples(const lab_workload *w, int rank, int nranks)
{
    if (w->weak) return w->samples;
    return w->samples / nranks + (rank < w->samples % nranks ? 1 : 0);
}

static dt_result check_workload(const dt_comm *comm, const lab_workload *w, int step)
{
    if (!comm || !w) return dt_fail(DT_ERR_INVALID_ARG, "workload: NULL %s", comm ? "w" : "comm");
    if (w->samples < 1) return dt_fail(DT_ERR_INVALID_ARG, "workload: samples %d < 1", w->samples);
    if (!(w->sample_s >= 0) || !(w->serial_s >= 0) || !(w->warmup_s >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "workload: negative or NaN time");
    if (!(w->slow_factor >= 1)) return dt_fail(DT_ERR_INVALID_ARG, "workload: slow_factor %g < 1", w->slow_factor);
    if (step < 0) return dt_fail(DT_ERR_INVALID_ARG, "workload: step %d < 0", step);
    return DT_OK;
}

/* Real arithmetic: a dependent chain of multiply-adds (2 flops each), which
 * the compiler can neither vectorise nor drop (the result is returned and
 * stored through a volatile). */
static double burn(long flops, double seed)
{
    double y = seed;
    for (long i = 0; i < flops / 2; i++) y = y * 0.9999999 + 1e-7;
    return y;
}

/* Wall mode: `samples` samples' worth of arithmetic, timed as compute. */
static dt_result compute_for_real(dt_comm *comm, const lab_workload *w, double samples)
{
    volatile double sink;
    DT_CHECK(dt_compute_begin(comm));
    sink = burn((long)(samples * (double)w->wall_flops), 1.0 + dt_comm_rank(comm));
    (void)sink;
    return dt_compute_end(comm);
}

dt_result lab_work_serial(dt_comm *comm, const lab_workload *w, int step)
{
    DT_CHECK(check_workload(comm, w, step));
    double seconds = w->serial_s + (step == 0 ? w->warmup_s : 0);
    if (!w->wall) return dt_clock_advance(comm, seconds);
    return compute_for_real(comm, w, w->sample_s > 0 ? seconds / w->sample_s : 0);
}

dt_result lab_work_parallel(dt_comm *comm, const lab_workload *w, int step)
{
    DT_CHECK(check_workload(comm, w, step));
    int rank = dt_comm_rank(comm);
    double samples = lab_rank_samples(w, rank, dt_comm_size(comm));
    if (rank == w->slow_rank) samples *= w->slow_factor;
    if (!w->wall) return dt_clock_advance(comm, samples * w->sample_s);
    return compute_for_real(comm, w, samples);
}

/* Gradient i of rank r is (r + 1)(1 + i mod 4), so the sum over N ranks is
 * N (N + 1) / 2 (1 + i mod 4): exact in float for N <= 1024. */
dt_result lab_work_allreduce(dt_comm *comm, const lab_workload *w, int step)
{
    DT_CHECK(check_workload(comm, w, step));
    int rank = dt_comm_rank(comm), size = dt_comm_size(comm);
    float *g = NULL;
    if (w->grad_count > 0) {
        g = malloc(w->grad_count * sizeof *g);
        if (!g) return dt_fail(DT_ERR_NOMEM, "workload: %zu gradients", w->grad_count);
        for (size_t i = 0; i < w->grad_count; i++) g[i] = (float)((rank + 1) * (int)(1 + i % 4));
    }
    dt_result r = dt_allreduce(g, g, w->grad_count, DT_F32, DT_SUM, comm);
    double ranks_sum = 0.5 * size * (size + 1);
    for (size_t i = 0; r == DT_OK && i < w->grad_count; i++)
        if (g[i] != (float)(ranks_sum * (double)(1 + i % 4)))
            r = dt_fail(DT_ERR_INTERNAL, "workload: gradient %zu summed to %g, expected %g", i,
                        (double)g[i], ranks_sum * (double)(1 + i % 4));
    free(g);
    return r;
}

typedef struct {
    const lab_workload *w;
    int steps;
} sweep_arg;

/* Every rank hands back the job's figures in its block of the launch's
 * out (dt_rank_out: the way back on every backend); the sweep reads rank
 * 0's. */
static dt_result sweep_rank(dt_comm *world, void *varg)
{
    const sweep_arg *a = varg;
    return lab_measure_job(world, a->w, a->steps, dt_rank_out(world));
}

dt_result lab_sweep(const lab_workload *w, const char *net, const int *ns, size_t count,
                    int steps, lab_job_time *out)
{
    if (!w || !ns || !out) return dt_fail(DT_ERR_INVALID_ARG, "sweep: NULL argument");
    if (steps < 1) return dt_fail(DT_ERR_INVALID_ARG, "sweep: steps %d < 1", steps);
    for (size_t i = 0; i < count; i++)
        if (ns[i] < 1 || ns[i] > DT_MAX_RANKS)
            return dt_fail(DT_ERR_INVALID_ARG, "sweep: ns[%zu] = %d ranks", i, ns[i]);
    for (size_t i = 0; i < count; i++) {
        lab_job_time *jobs = calloc((size_t)ns[i], sizeof *jobs);
        if (!jobs) return dt_fail(DT_ERR_NOMEM, "sweep: %d ranks' figures", ns[i]);
        dt_launch_opts o;
        dt_result r = dt_launch_opts_init(&o); /* DT_BACKEND: thread, proc or mpi */
        o.nranks = ns[i];
        o.net = net ? net : "none";
        o.out = jobs;
        o.out_bytes = sizeof *jobs;
        sweep_arg a = {w, steps};
        if (r == DT_OK) r = dt_launch(&o, sweep_rank, &a);
        if (r == DT_OK) out[i] = jobs[0];
        free(jobs);
        if (r != DT_OK) return r;
    }
    return DT_OK;
}
