/* run.c - lab 12's program: `make run-lab LAB=12 [ARGS="..."]`.
 *
 * Measures the scaling of the training step of workload.c with your
 * functions, three ways, and prints a table for each:
 *  1. wall clock: real arithmetic on 1 .. W ranks (W = the cores here);
 *  2. modeled clock, strong scaling on 1, 2, 4, .. K ranks on a network
 *     (compute priced per sample, the allreduce by the network's model);
 *     Amdahl's p is fitted on N <= 4 (what a laptop can run) and its
 *     predictions are set beside the modeled measurements;
 *  3. modeled clock, weak scaling (the batch per rank fixed).
 * Then a straggler, the prediction for 1,024 ranks with and without the
 * network, and the two SVG plots (their paths are printed).
 *
 *   --net NAME      network of the modeled runs (default eth10; see dt/comm.h)
 *   --max-ranks K   largest modeled rank count, a power of two >= 8 (default 64)
 *   --wall-ranks W  largest wall-clock rank count (default: the cores, <= 8)
 *   --steps S       measured steps per run, after one warm-up (default 3)
 *   --figures DIR   where the SVGs go (default $BUILD, else build)
 * (`run --help` lists them with their ranges.)
 */
#include "scaling.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/net.h"

#define MAX_POINTS 16

typedef struct {
    const char *net, *out;
    int max_ranks, wall_ranks, steps;
} options;

/* Reads the command line into o: DT_CLI_GO, or the exit status. */
static int parse(int argc, char **argv, options *o)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (options){"eth10", dt_cli_build_dir(), 64, cores < 1 ? 1 : cores > 8 ? 8 : (int)cores, 3};
    const dt_opt opts[] = {
        {"--net", DT_OPT_NET, &o->net, .help = "network of the modeled runs"},
        {"--max-ranks", DT_OPT_INT, &o->max_ranks, .help = "largest modeled rank count, a power "
         "of two", .arg = "K", .lo = 8, .hi = DT_MAX_RANKS},
        {"--wall-ranks", DT_OPT_INT, &o->wall_ranks, .help = "largest wall-clock rank count "
         "(default: the cores, at most 8)", .arg = "W", .lo = 1, .hi = MAX_POINTS,
         .flags = DT_OPT_NO_DEFAULT},
        {"--steps", DT_OPT_INT, &o->steps, .help = "measured steps per run, after one warm-up",
         .arg = "S", .lo = 1, .hi = 1000},
        {"--figures", DT_OPT_DIR, &o->out, .help = "where 12-speedup.svg and 12-efficiency.svg "
         "go"},
        {"--out", DT_OPT_RENAMED, NULL, .arg = "--figures"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 12: the scaling of workload.c's training step with your "
                           "functions: wall clock, modeled strong and weak scaling, a "
                           "straggler, Amdahl's fit and its predictions."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (o->max_ranks & (o->max_ranks - 1))
        return dt_cli_fail(&cli, "--max-ranks %d: not a power of two", o->max_ranks);
    return DT_CLI_GO;
}

static int failed(const char *what, dt_result r)
{
    fprintf(stderr, "%s: %s: %s\n", what, dt_strerror(r), dt_last_error());
    return 1;
}

/* One table: N, T_N, speedup, efficiency, Amdahl's prediction, the
 * Karp-Flatt serial fraction, communication efficiency, load imbalance. */
static dt_result print_strong(const int *n, const lab_job_time *job, size_t count,
                              const lab_amdahl *fit)
{
    printf("%6s %11s %9s %9s %9s %9s %9s %9s\n", "N", "T_N (ms)", "speedup", "effic.",
           "Amdahl", "Karp-Fl.", "comm eff", "imbal.");
    for (size_t i = 0; i < count; i++) {
        double s, e, pred;
        DT_CHECK(lab_strong_scaling(job[0].step, job[i].step, n[i], &s, &e));
        DT_CHECK(lab_predict_speedup(fit, n[i], &pred));
        double comp = job[i].serial + job[i].parallel;
        printf("%6d %11.3f %9.3f %9.3f %9.3f", n[i], job[i].step * 1e3, s, e, pred);
        if (n[i] > 1) printf(" %9.4f", dt_karp_flatt(s, n[i]));
        else printf(" %9s", "-");
        printf(" %9.3f %9.3f\n", dt_comm_efficiency(comp, job[i].comm), job[i].imbalance);
    }
    return DT_OK;
}

static int wall_clock(const options *o)
{
    lab_workload w;
    lab_workload_init(&w);
    w.wall = 1;
    int n[MAX_POINTS];
    lab_job_time job[MAX_POINTS];
    size_t count = (size_t)o->wall_ranks;
    for (size_t i = 0; i < count; i++) n[i] = (int)i + 1;
    printf("== 1. wall clock, strong scaling: %d samples, serial part worth %.0f samples, "
           "no network model\n", w.samples, w.serial_s / w.sample_s);
    dt_result r = lab_sweep(&w, "none", n, count, o->steps, job);
    if (r != DT_OK) return failed("wall-clock sweep", r);
    double t[MAX_POINTS];
    for (size_t i = 0; i < count; i++) t[i] = job[i].step;
    lab_amdahl fit = {0};
    if (count >= 2 && (r = lab_fit_amdahl(n, t, count, &fit)) != DT_OK)
        return failed("fit", r);
    if ((r = print_strong(n, job, count, &fit)) != DT_OK) return failed("table", r);
    if (count >= 2)
        printf("fitted p = %.3f (the workload's own: %.3f), T_1 = %.1f ms, residual %.2f ms\n",
               fit.p, w.samples / (w.samples + w.serial_s / w.sample_s), fit.t1 * 1e3,
               fit.residual * 1e3);
    printf("(more ranks than cores share the cores: the time stops falling)\n\n");
    return 0;
}

/* The modeled workload of parts 2 to 4 of the output: 512 samples of 2 ms, 20 ms of
 * serial work, 4 MB of gradients. */
static void modeled_workload(lab_workload *w)
{
    lab_workload_init(w);
    w->samples = 512;
    w->sample_s = 2e-3;
    w->serial_s = 20e-3;
    w->warmup_s = 0.5;
    w->grad_count = 1 << 20;
}

static int write_plots(const options *o, const int *n, const double *strong, const double *weak,
                       size_t count, const lab_amdahl *fit)
{
    char sp[512], ef[512];
    snprintf(sp, sizeof sp, "%s/12-speedup.svg", o->out);
    snprintf(ef, sizeof ef, "%s/12-efficiency.svg", o->out);
    lab_scaling_data d = {count, n, strong, weak};
    dt_result r = lab_write_plots(&d, fit, sp, ef);
    if (r != DT_OK) return failed("plots", r);
    printf("plots: %s\n       %s\n", sp, ef);
    return 0;
}

static int modeled(const options *o)
{
    lab_workload w;
    modeled_workload(&w);
    int n[MAX_POINTS];
    size_t count = 0;
    for (int k = 1; k <= o->max_ranks; k *= 2) n[count++] = k;
    lab_job_time strong[MAX_POINTS], weak[MAX_POINTS];
    dt_net link;
    dt_result r = dt_net_link(o->net, &link);
    if (r != DT_OK) return failed("--net", r);
    double p_true = w.samples * w.sample_s / (w.samples * w.sample_s + w.serial_s);
    printf("== 2. modeled clock, strong scaling on %s (alpha %.1f us, %.2f GB/s): %d samples x "
           "%.0f ms, serial %.0f ms, %zu MB of gradients; true p = %.4f\n", o->net, link.alpha * 1e6,
           link.beta / 1e9, w.samples, w.sample_s * 1e3, w.serial_s * 1e3, w.grad_count * 4 >> 20, p_true);
    if ((r = lab_sweep(&w, o->net, n, count, o->steps, strong)) != DT_OK)
        return failed("strong sweep", r);
    double ts[MAX_POINTS], tw[MAX_POINTS];
    for (size_t i = 0; i < count; i++) ts[i] = strong[i].step;
    lab_amdahl fit;
    if ((r = lab_fit_amdahl(n, ts, 3, &fit)) != DT_OK) return failed("fit", r); /* N = 1, 2, 4 */
    if ((r = print_strong(n, strong, count, &fit)) != DT_OK) return failed("table", r);
    printf("Amdahl fitted on N = 1, 2, 4: p = %.4f, T_1 = %.1f ms, residual %.3f ms\n", fit.p,
           fit.t1 * 1e3, fit.residual * 1e3);
    const int at[] = {8, 64, 1024};
    for (int i = 0; i < 3; i++) {
        double s;
        if ((r = lab_predict_speedup(&fit, at[i], &s)) != DT_OK) return failed("predict", r);
        printf("  predicted S(%d) = %.2f", at[i], s);
        for (size_t k = 0; k < count; k++)
            if (n[k] == at[i]) printf("   measured %.2f", strong[0].step / strong[k].step);
        printf("\n");
    }
    /* What the network adds at 1,024 ranks: the alpha-beta price of the ring. */
    double ring = dt_net_ring_allreduce(&link, 4.0 * (double)w.grad_count, 1024);
    double t1024 = w.serial_s + w.samples * w.sample_s / 1024 + ring;
    printf("  with the network (ring allreduce %.2f ms at N = 1024): T_1024 = %.2f ms, S(1024) = %.2f\n\n",
           ring * 1e3, t1024 * 1e3, strong[0].step / t1024);

    w.weak = 1;
    w.samples = 16;
    printf("== 3. modeled clock, weak scaling on %s: %d samples per rank\n", o->net, w.samples);
    if ((r = lab_sweep(&w, o->net, n, count, o->steps, weak)) != DT_OK)
        return failed("weak sweep", r);
    printf("%6s %11s %9s %11s %9s %9s\n", "N", "T_N (ms)", "effic.", "samples/s", "scaled S",
           "Gustafson");
    /* Gustafson's p: the parallel share of the one-rank step. The scaled
     * speedup counts the useful work of N ranks once: one rank would take
     * serial + N * parallel for it. */
    double p_g = weak[0].parallel / (weak[0].serial + weak[0].parallel);
    for (size_t i = 0; i < count; i++) {
        double e;
        if ((r = lab_weak_efficiency(weak[0].step, weak[i].step, &e)) != DT_OK)
            return failed("weak efficiency", r);
        tw[i] = weak[i].step;
        double scaled = (weak[0].serial + n[i] * weak[0].parallel) / tw[i];
        printf("%6d %11.3f %9.3f %11.0f %9.2f %9.2f\n", n[i], tw[i] * 1e3, e,
               dt_throughput((double)w.samples * n[i], tw[i]), scaled,
               dt_gustafson_speedup(p_g, n[i]));
    }
    printf("(Gustafson's law (1 - p) + p N with p = %.4f, the parallel share of one rank's step)\n\n",
           p_g);

    /* A straggler: one rank of 8 computes 1.5 times slower. */
    lab_workload s;
    modeled_workload(&s);
    s.slow_rank = 3, s.slow_factor = 1.5;
    int eight = 8;
    lab_job_time st;
    if ((r = lab_sweep(&s, o->net, &eight, 1, o->steps, &st)) != DT_OK)
        return failed("straggler", r);
    printf("== 4. straggler: rank 3 of 8 computes 1.5x slower: T_8 = %.3f ms (balanced %.3f ms), "
           "load imbalance %.3f\n\n", st.step * 1e3, strong[3].step * 1e3, st.imbalance);
    return write_plots(o, n, ts, tw, count, &fit);
}

int main(int argc, char **argv)
{
    options o;
    int st = parse(argc, argv, &o);
    if (st != DT_CLI_GO) return st;
    if (wall_clock(&o)) return 1;
    return modeled(&o);
}
