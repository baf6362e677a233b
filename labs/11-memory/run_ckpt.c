/* run_ckpt.c - lab 11's program, tables 6 and 7: activation checkpointing
 * on the deep MLP (the peak of ACT against the sqrt(L) formula, the layers
 * recomputed, the wall clock against one extra forward; 11-ckpt-memory.svg)
 * and plans under a memory budget (chapter 11, sections 6 and 7). */
#include "run.h"

#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 64, REPS = 9 };

/* A deep MLP of L layers of width w, its executor and a batch. */
typedef struct {
    dt_model m;
    lab_ckpt c;
    lab_plan p;
    float *x;
    int32_t y[ROWS];
} deep;

static dt_result deep_open(deep *d, int L, size_t w)
{
    memset(d, 0, sizeof *d);
    DT_CHECK(dt_deep_mlp_create(&d->m, w, w, (size_t)(L - 2), w, 1));
    DT_CHECK(lab_ckpt_create(&d->c, &d->m, ROWS));
    DT_CHECK(lab_plan_init(&d->p, L));
    if (!(d->x = malloc(ROWS * w * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "run: a batch");
    dt_rng g;
    dt_rng_init(&g, 3, 0);
    for (size_t i = 0; i < ROWS * w; i++)
        d->x[i] = dt_rng_normal(&g);
    for (int n = 0; n < ROWS; n++)
        d->y[n] = (int32_t)dt_rng_below(&g, (uint32_t)w);
    return DT_OK;
}

static void deep_close(deep *d)
{
    lab_plan_free(&d->p);
    lab_ckpt_free(&d->c);
    dt_model_free(&d->m);
    free(d->x);
}

/* One step of d->p: the peak of ACT and the layers recomputed. */
static dt_result measure(deep *d, size_t *peak, long *recomputed)
{
    dt_mem_stats s;
    float loss;
    DT_CHECK(dt_model_zero_grads(&d->m));
    dt_mem_reset_peak();
    DT_CHECK(lab_ckpt_step(&d->c, &d->p, d->x, d->y, &loss));
    dt_mem_stats_get(&s);
    *peak = s.peak[DT_MEM_ACT];
    *recomputed = d->c.layers_run - d->c.num_layers;
    return DT_OK;
}

/* Medians over REPS steps of d->p: forward (with the loss), backward,
 * step, and the step's CPU time on this thread. */
static dt_result time_steps(deep *d, double *fwd, double *bwd, double *step, double *cpu)
{
    double f[REPS], b[REPS], s[REPS], c[REPS];
    float loss;
    for (int r = 0; r < REPS; r++) {
        DT_CHECK(dt_model_zero_grads(&d->m));
        double c0 = dt_thread_cpu(), t0 = dt_now();
        DT_CHECK(lab_ckpt_forward(&d->c, &d->p, d->x));
        DT_CHECK(lab_ckpt_loss(&d->c, d->y, &loss));
        double t1 = dt_now();
        DT_CHECK(lab_ckpt_backward(&d->c, &d->p));
        double t2 = dt_now();
        f[r] = t1 - t0, b[r] = t2 - t1, s[r] = t2 - t0, c[r] = dt_thread_cpu() - c0;
    }
    *fwd = dt_median(f, REPS), *bwd = dt_median(b, REPS), *step = dt_median(s, REPS);
    *cpu = dt_median(c, REPS);
    return DT_OK;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

dt_result ckpt_table(size_t w, int wall)
{
    static const int Ls[] = {16, 64};
    printf("## 6. Checkpointing the deep MLP: width %zu, batch %d (one output A = %.3f MiB), "
           "sqrt(L) segments\n\n| L | plain peak | checkpointed peak | formula F + (2 sqrt(L) "
           "- 1) A | recomputed | (sqrt(L) - 1)^2 |%s\n|---|---|---|---|---|---|%s\n", w, ROWS,
           mib(4.0 * ROWS * (double)w), wall ? " step plain | step checkpointed | overhead, wall "
           "| overhead, CPU | predicted | one whole forward |" : "",
           wall ? "---|---|---|---|---|---|" : "");
    for (size_t i = 0; i < 2; i++) {
        int L = Ls[i], k = (int)lround(sqrt(L));
        deep d;
        size_t plain, peak;
        long rp, rec;
        RUN_CHECK(deep_open(&d, L, w));
        double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
        RUN_CHECK(lab_plan_segments(&d.p, 1));
        RUN_CHECK(measure(&d, &plain, &rp));
        double pf, pb, ps, pc, cf, cb, cs, cc;
        if (wall)
            RUN_CHECK(time_steps(&d, &pf, &pb, &ps, &pc));
        RUN_CHECK(lab_plan_segments(&d.p, k));
        RUN_CHECK(measure(&d, &peak, &rec));
        printf("| %d | %.2f MiB | %.2f MiB | %.2f MiB | %ld | %d |", L, mib((double)plain),
               mib((double)peak), mib(F + (2 * k - 1) * A), rec, (k - 1) * (k - 1));
        if (wall) {
            RUN_CHECK(time_steps(&d, &cf, &cb, &cs, &cc));
            /* the forward of the recomputed layers, priced at the plain forward's rate */
            double pred = (double)rec / L * pf / ps;
            printf(" %.1f ms | %.1f ms | %.1f%% | %.1f%% | %.1f%% | %.1f%% |", 1e3 * ps, 1e3 * cs,
                   100 * (cs / ps - 1), 100 * (cc / pc - 1), 100 * pred, 100 * pf / ps);
        }
        printf("\n");
        deep_close(&d);
    }
    if (wall)
        printf("\n(medians of %d steps on %s; overhead, CPU: the same from this thread's CPU time, "
               "which a busy machine disturbs less; predicted: recomputed/L x T_fwd / T_step of "
               "the plain step; one whole forward: T_fwd / T_step)\n", REPS,
               dt_blas_available() ? "OpenBLAS" : "the built-in sgemm");
    printf("\n");
    return DT_OK;
}

/* Segments 1 .. L of the deep MLP of 64 layers: measured and formula. */
dt_result segments_table(size_t w)
{
    enum { L = 64 };
    static const int ks[] = {1, 2, 4, 6, 8, 11, 16, 32, 64};
    enum { NK = sizeof ks / sizeof *ks };
    double x[NK], meas[NK], form[NK];
    deep d;
    RUN_CHECK(deep_open(&d, L, w));
    double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
    printf("## 6b. L = 64, every segment count: peak of ACT in outputs A beyond F = %.0f A\n\n"
           "| segments k | peak, measured | formula k - 1 + L - (k - 1) floor(L/k) | recomputed, "
           "measured | formula (k - 1)(floor(L/k) - 1) |\n|---|---|---|---|---|\n", F / A);
    for (int i = 0; i < NK; i++) {
        size_t peak;
        long rec;
        RUN_CHECK(lab_plan_segments(&d.p, ks[i]));
        RUN_CHECK(measure(&d, &peak, &rec));
        dt_sim_recompute_cost s = dt_sim_recompute_segments(L, ks[i]);
        x[i] = ks[i], meas[i] = ((double)peak - F) / A, form[i] = s.peak;
        printf("| %d | %.2f | %.0f | %ld | %.0f |\n", ks[i], meas[i], s.peak, rec, s.recomputed);
    }
    dt_plot *pl = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/11-ckpt-memory.svg", out_dir);
    dt_result r = dt_plot_create(&pl, "deep MLP, 64 layers: peak activations by segments",
                                 "segments k", "layer outputs at the peak (beyond F)");
    if (r == DT_OK)
        r = dt_plot_set_xscale(pl, DT_AXIS_LOG2);
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "formula", x, form, NK, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "measured (ACT)", x, meas, NK, DT_SERIES_POINTS);
    if (r == DT_OK)
        r = dt_plot_write_svg(pl, path);
    dt_plot_free(pl);
    deep_close(&d);
    RUN_CHECK(r);
    printf("\nwrote %s\n\n", path);
    return DT_OK;
}

/* ================================================================ 7. budgets */

/* The segment count with the fewest recomputed FLOPs whose peak fits. */
static int best_segments(deep *d, size_t budget, lab_plan_cost *best)
{
    int k_best = 0;
    for (int k = 1; k <= d->c.num_layers; k++) {
        lab_plan_cost cost;
        if (lab_plan_segments(&d->p, k) != DT_OK ||
            lab_plan_cost_of(&d->c.chain, &d->p, &cost) != DT_OK)
            return -1;
        if (cost.peak_bytes <= budget && (!k_best || cost.recompute_flops < best->recompute_flops))
            k_best = k, *best = cost;
    }
    return k_best;
}

static dt_result budget_row(deep *d, const char *label, size_t budget)
{
    size_t peak;
    long rec;
    lab_plan_cost seg;
    int k = best_segments(d, budget, &seg);
    RUN_CHECK(k < 0 ? DT_ERR_INTERNAL : DT_OK);
    printf("| %s | %.2f |", label, mib((double)budget));
    if (lab_plan_select(&d->c.chain, budget, &d->p) == DT_OK) {
        RUN_CHECK(measure(d, &peak, &rec));
        printf(" %.2f | %ld |", mib((double)peak), rec);
    } else {
        printf(" none fits | - |");
    }
    if (k)
        printf(" k = %d: %.2f, %d |", k, mib((double)seg.peak_bytes), seg.recomputed_layers);
    else
        printf(" none fits |");
    if (lab_plan_greedy(&d->c.chain, budget, &d->p) == DT_OK) {
        RUN_CHECK(measure(d, &peak, &rec));
        printf(" %.2f%s | %ld |\n", mib((double)peak), peak > budget ? " (over)" : "", rec);
    } else {
        printf(" none | - |\n");
    }
    return DT_OK;
}

dt_result budget_table(size_t w)
{
    enum { L = 64 };
    deep d;
    RUN_CHECK(deep_open(&d, L, w));
    double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
    printf("## 7. Budgets, L = 64 (A = %.3f MiB, F = %.2f MiB): peak (MiB, measured) and layers "
           "recomputed\n\n| budget, outputs beyond F | budget (MiB) | optimum: peak | "
           "recomputed | best segments: peak, recomputed | kept-bytes rule: peak | recomputed |\n"
           "|---|---|---|---|---|---|---|\n", mib(A), mib(F));
    static const int Ms[] = {10, 11, 12, 15, 20, 32, 48, 64};
    for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++) {
        char label[32];
        snprintf(label, sizeof label, "%d", Ms[i]);
        RUN_CHECK(budget_row(&d, label, (size_t)(F + Ms[i] * A)));
    }
    deep_close(&d);
    /* unequal layers: wide outputs that are cheap to recompute, narrow ones that are not */
    dt_model m;
    lab_ckpt c;
    RUN_CHECK(dt_model_create_spec(&m, "mlp:256,2048,128,2048,128,2048,128,2048,128,2048,128,"
                                   "2048,128,2048,128,10", 1));
    RUN_CHECK(lab_ckpt_create(&c, &m, ROWS));
    size_t all = 0;
    for (int i = 0; i < c.num_layers; i++)
        all += c.chain.out_bytes[i];
    printf("\nUnequal layers (mlp:256,2048,128,2048,...,128,10, %d layers): the wide outputs "
           "cost %.0f FLOPs a byte to recompute, the narrow ones %.0f. Budgets as a share of "
           "all outputs (%.2f MiB) beyond F = %.2f MiB; peaks in MiB, recompute in MFLOP\n\n"
           "| budget | optimum: peak | recompute | kept-bytes rule: peak | recompute |\n"
           "|---|---|---|---|---|\n", c.num_layers, c.chain.flops[2] / (double)c.chain.out_bytes[2],
           c.chain.flops[1] / (double)c.chain.out_bytes[1], mib((double)all),
           mib((double)c.chain.fixed_bytes));
    lab_plan p;
    RUN_CHECK(lab_plan_init(&p, c.num_layers));
    static const int shares[] = {20, 30, 40, 50, 60, 80};
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
        size_t budget = c.chain.fixed_bytes + all * (size_t)shares[i] / 100;
        lab_plan_cost o, g;
        printf("| %d%% |", shares[i]);
        if (lab_plan_select(&c.chain, budget, &p) == DT_OK &&
            lab_plan_cost_of(&c.chain, &p, &o) == DT_OK)
            printf(" %.2f | %.1f |", mib((double)o.peak_bytes), o.recompute_flops / 1e6);
        else
            printf(" none fits | - |");
        if (lab_plan_greedy(&c.chain, budget, &p) == DT_OK &&
            lab_plan_cost_of(&c.chain, &p, &g) == DT_OK)
            printf(" %.2f%s | %.1f |\n", mib((double)g.peak_bytes),
                   g.peak_bytes > budget ? " (over)" : "", g.recompute_flops / 1e6);
        else
            printf(" none | - |\n");
    }
    lab_plan_free(&p);
    lab_ckpt_free(&c);
    dt_model_free(&m);
    printf("\n");
    return DT_OK;
}
