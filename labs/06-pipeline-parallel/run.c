/* run.c - lab 06's program: `make run-lab LAB=06 [ARGS=...]`.
 *
 * Runs your schedules (schedules.c) with your runner (pipe.c) and prints
 * the measurements that confirm the chapter's formulas. Without options,
 * on p ranks (--ranks, default 4) and m micro-batches (--micro, default 8):
 *   1. each schedule's timeline per rank, measured on the modeled clock
 *      (T_F = T_B = T_W = 1 ms per stage; an unsplit backward 2 ms), with
 *      its Gantt chart written to DIR/06-<schedule>.svg (--figures DIR,
 *      default $BUILD);
 *   2. the bubble measured against (p-1)/(m+p-1), (p-1)/(v m), (p-1)/(3m);
 *   3. the activations each rank holds at its peak (tag ACT), in
 *      micro-batches' worth, as m grows;
 *   4. messages per step, and the step with messages of t_c = 0.25 ms and
 *      on a link (--net, default eth10) against section 7.
 * --schedule FILE  checks, times and runs a schedule written by hand;
 * --skew           1F1B with a last stage 1.5 times slower (exercise 3);
 * --measure        the wall clock: 1F1B of a deep MLP on 1, 2 and 4 proc
 *                  ranks, samples/s, against the prediction from each
 *                  stage's measured time. */
#include "pipe.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SPEC "deep:32,64,8,10"       /* 10 layers: the modeled runs */
#define WALL_SPEC "deep:256,512,8,10" /* 10 layers, 2.3 M parameters: --measure */
#define MICRO_B 4                     /* samples per micro-batch, modeled runs */
#define WALL_B 16                     /* --measure */
#define MAX_RANKS 8

typedef struct {
    const dt_schedule *s;
    const char *spec, *net;
    size_t B;
    lab_pipe_cost cost;
    dt_sched_timing *timing;  /* filled by the ranks (NULL: none) */
    struct {
        size_t act_peak, act_pair; /* bytes: the step's peak, one micro-batch's on all chunks */
        uint64_t msgs;
        double grad_err;           /* this rank's layers against one rank */
    } out[MAX_RANKS];
} job;

static void batch(size_t rows, size_t in, float *x, int32_t *y)
{
    for (size_t i = 0; i < rows * in; i++)
        x[i] = (float)((int)(i * 7 % 17) - 8) / 8.0f;
    for (size_t i = 0; i < rows; i++)
        y[i] = (int32_t)(i * 5 % 10);
}

/* One micro-batch's activations on all of this rank's chunks, in bytes. */
static size_t pair_bytes(lab_pipe *lp)
{
    dt_mem_stats a, b;
    dt_acts *acts[DT_SCHED_MAX_CHUNKS] = {0};
    dt_wgrad *w[DT_SCHED_MAX_CHUNKS] = {0};
    dt_mem_stats_get(&a);
    for (int c = 0; c < lp->v; c++) {
        int s = lab_pipe_stage(lp, c);
        if (dt_acts_create(&acts[c], lp->model, lp->first[s], lp->first[s + 1], lp->B, 1) == DT_OK &&
            lp->split)
            (void)dt_wgrad_create(&w[c], acts[c]);
    }
    dt_mem_stats_get(&b);
    for (int c = 0; c < lp->v; c++)
        dt_wgrad_free(w[c]), dt_acts_free(acts[c]);
    return b.current[DT_MEM_ACT] - a.current[DT_MEM_ACT];
}

/* This rank's layers' gradients against one rank on the whole batch. */
static double grad_error(const lab_pipe *lp, const float *x, const int32_t *y, size_t rows)
{
    dt_model ref = {0};
    dt_acts *a = NULL;
    float loss;
    double err = INFINITY;
    if (dt_model_create_spec(&ref, SPEC, 1) == DT_OK &&
        dt_acts_create(&a, &ref, 0, ref.num_layers, rows, 1) == DT_OK &&
        dt_model_forward(&ref, a, x, NULL) == DT_OK && dt_model_loss(&ref, a, y, &loss, NULL) == DT_OK &&
        dt_model_backward(&ref, a, NULL, NULL, NULL, NULL) == DT_OK) {
        double d = 0, mx = 0;
        for (int c = 0; c < lp->v; c++) {
            size_t off, n;
            int s = lab_pipe_stage(lp, c);
            if (dt_model_layer_range(&ref, lp->first[s], lp->first[s + 1], &off, &n) != DT_OK)
                break;
            for (size_t i = off; i < off + n; i++)
                d = fmax(d, fabs((double)lp->model->grads[i] - ref.grads[i])),
                mx = fmax(mx, fabs((double)ref.grads[i]));
        }
        err = d / (mx > 0 ? mx : 1);
    }
    dt_acts_free(a);
    dt_model_free(&ref);
    return err;
}

static dt_result rank_fn(dt_comm *world, void *arg)
{
    job *j = arg;
    int rank = dt_comm_rank(world), p = j->s->ranks, v = j->s->chunks;
    size_t rows = (size_t)j->s->micro * j->B;
    dt_model m = {0};
    lab_pipe lp;
    dt_optim_config cfg = dt_sgd_config(0.05f, 0, 0);
    dt_mem_stats before, after;
    dt_stats st;
    float *x = malloc(rows * 64 * sizeof *x);
    int32_t *y = malloc(rows * sizeof *y);
    memset(&lp, 0, sizeof lp);
    dt_result r = x && y ? dt_model_create_spec(&m, j->spec, 1) : dt_fail(DT_ERR_NOMEM, "batch");
    if (r == DT_OK)
        r = lab_pipe_init(&lp, world, &m, p, v, j->B, &cfg, &j->cost);
    if (r == DT_OK)
        r = lab_pipe_set_schedule(&lp, j->s);
    if (r == DT_OK) {
        batch(rows, m.in_width, x, y);
        lp.timing = j->timing;
        j->out[rank].act_pair = pair_bytes(&lp);
        r = dt_comm_stats_reset(lp.pipe);
        dt_mem_stats_get(&before);
        dt_mem_reset_peak();
    }
    if (r == DT_OK)
        r = lab_pipe_step(&lp, x, y, NULL);
    if (r == DT_OK)
        r = dt_comm_stats(lp.pipe, &st);
    if (r == DT_OK) {
        dt_mem_stats_get(&after);
        j->out[rank].act_peak = after.peak[DT_MEM_ACT] - before.current[DT_MEM_ACT];
        j->out[rank].msgs = st.msgs_sent;
        j->out[rank].grad_err = grad_error(&lp, x, y, rows);
    }
    lab_pipe_free(&lp);
    dt_model_free(&m);
    free(x), free(y);
    return r;
}

/* Runs s on the modeled clock with equal stages (1 ms per step kind,
 * divided by v so that a rank's work is the same for every v) and fills
 * *t in ms (NULL: not kept). */
static int run_modeled(job *j, const dt_schedule *s, const char *net, const double *scale,
                       dt_sched_timing **t)
{
    double unit = 1e-3 / s->chunks;
    memset(j, 0, sizeof *j);
    j->s = s, j->spec = SPEC, j->net = net, j->B = MICRO_B;
    j->cost = (lab_pipe_cost){unit, unit, unit, scale};
    dt_result r = dt_sched_timing_create(s, &j->timing);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = s->ranks;
    o.backend = DT_BACKEND_THREAD;
    o.net = net;
    o.timeout_s = 30;
    if (r == DT_OK)
        r = dt_launch(&o, rank_fn, j);
    for (int k = 0; r == DT_OK && k < s->ranks; k++) /* to ms */
        for (int i = 0; i < s->nsteps[k]; i++)
            j->timing->start[k][i] *= 1e3, j->timing->end[k][i] *= 1e3;
    if (r == DT_OK)
        r = dt_sched_timing_finish(j->timing, s);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s: %s\n", dt_strerror(r), dt_last_error());
        dt_sched_timing_free(j->timing);
        return -1;
    }
    if (t)
        *t = j->timing;
    else
        dt_sched_timing_free(j->timing);
    j->timing = NULL;
    return 0;
}

/* ------------------------------------------------------------ the schedules */

enum { GPIPE, ONEF1B, INTERLEAVED, ZBH1, NUM_KINDS };
static const char *const kind_name[NUM_KINDS] = {"gpipe", "1f1b", "interleaved", "zbh1"};

static dt_result make(int kind, int p, int m, dt_schedule **s)
{
    switch (kind) {
    case GPIPE: return lab_sched_gpipe(s, p, m);
    case ONEF1B: return lab_sched_1f1b(s, p, m);
    case INTERLEAVED: return lab_sched_interleaved(s, p, 2, m);
    default: return lab_sched_zbh1(s, p, m);
    }
}

/* The chapter's formula of each kind, as idle over busy time. */
static double formula_ratio(int kind, int p, int m)
{
    return kind == INTERLEAVED ? (p - 1.0) / (2.0 * m) : kind == ZBH1 ? (p - 1.0) / (3.0 * m)
                                                                     : (p - 1.0) / m;
}

/* Whether the formula holds for (p, m): interleaved needs m a multiple of
 * p, ZB-H1's needs m >= p. */
static int formula_applies(int kind, int p, int m)
{
    return kind == INTERLEAVED ? m % p == 0 : kind == ZBH1 ? m >= p : 1;
}

static int timelines(int p, int m, const char *dir)
{
    printf("1. Timelines, p = %d, m = %d, measured on the modeled clock (one column: the "
           "shortest step; interleaved: v = 2, each chunk half a stage's time)\n", p, m);
    int failed = 0;
    for (int k = 0; k < NUM_KINDS; k++) {
        dt_schedule *s = NULL;
        dt_sched_timing *t = NULL;
        job j;
        if (!formula_applies(k, p, m)) {
            printf("\n   %s: not run (its formula needs %s)\n", kind_name[k],
                   k == INTERLEAVED ? "m a multiple of p" : "m >= p");
            continue;
        }
        dt_clear_error();
        dt_result r = make(k, p, m, &s);
        if (r != DT_OK) {
            printf("\n   %s: not run: lab_sched_%s returned %s%s%s\n", kind_name[k], kind_name[k],
                   dt_strerror(r), *dt_last_error() ? ": " : "", dt_last_error());
            /* interleaved and ZB-H1 are going further: not done yet is no failure */
            failed += k <= ONEF1B || r != DT_ERR_NOT_IMPLEMENTED;
            dt_sched_free(s);
            continue;
        }
        if (run_modeled(&j, s, "none", NULL, &t)) {
            printf("\n   %s: not run: the run failed (the reason is above)\n", kind_name[k]);
            failed++;
            dt_sched_free(s);
            continue;
        }
        char path[512], title[128];
        double g = 0;
        for (int r = 0; r < p; r++)
            g = fmax(g, j.out[r].grad_err);
        printf("\n   %s: bubble %.4f of the step (idle/busy %.4f, formula %.4f); gradients vs one "
               "rank: max rel. error %.1e\n", kind_name[k], t->bubble_fraction, t->bubble_ratio,
               formula_ratio(k, p, m), g);
        dt_sched_print(stdout, s, t);
        snprintf(path, sizeof path, "%s/06-%s.svg", dir, kind_name[k]);
        snprintf(title, sizeof title, "%s, p = %d, m = %d: bubble %.1f%% of the step",
                 kind_name[k], p, m, 100 * t->bubble_fraction);
        if (dt_sched_write_svg(s, t, title, "modeled time (ms)", path) == DT_OK)
            printf("   wrote %s\n", path);
        else
            fprintf(stderr, "run: %s: %s\n", path, dt_last_error()), failed++;
        dt_sched_timing_free(t);
        dt_sched_free(s);
    }
    return failed;
}

/* ------------------------------------------------------------ bubble and memory */

/* 1F1B with each W right after its B: the backward split, nothing moved. */
static dt_result split_1f1b(int p, int m, dt_schedule **out)
{
    dt_schedule *s = NULL;
    DT_CHECK(lab_sched_1f1b(&s, p, m));
    dt_result r = dt_sched_create(out, p, 1, m);
    for (int k = 0; r == DT_OK && k < p; k++)
        for (int i = 0; r == DT_OK && i < s->nsteps[k]; i++) {
            const dt_step *st = &s->steps[k][i];
            r = dt_sched_add(*out, st->stage, st->micro, st->kind);
            if (r == DT_OK && st->kind == DT_STEP_B)
                r = dt_sched_add(*out, st->stage, st->micro, DT_STEP_W);
        }
    dt_sched_free(s);
    return r;
}

/* Section 6's first consequence: the split alone shortens the drain to
 * (p-1)(T_F + T_B), idle over busy 2(p-1)/(3m) with equal times. */
static int split_alone(void)
{
    printf("   1F1B with each W right after its B (section 6, the split alone): measured / "
           "2(p-1)/(3m):");
    for (int p = 2; p <= 4; p += 2)
        for (int m = 4; m <= 8; m += 4) {
            dt_schedule *s = NULL;
            dt_sched_timing *t = NULL;
            job j;
            if (split_1f1b(p, m, &s) == DT_OK && !run_modeled(&j, s, "none", NULL, &t))
                printf("  p=%d m=%d %.4f / %.4f", p, m, t->bubble_ratio, 2.0 * (p - 1) / (3.0 * m));
            dt_sched_timing_free(t);
            dt_sched_free(s);
        }
    printf("\n");
    return 0;
}

static int bubble_table(void)
{
    static const int ms[] = {1, 2, 4, 8, 16, 32};
    printf("\n2. Bubble, measured (idle over busy time, modeled clock) / formula; '-' where the "
           "formula does not apply\n   %-3s %-4s", "p", "m");
    for (int k = 0; k < NUM_KINDS; k++)
        printf(" %-19s", kind_name[k]);
    printf(" %s\n", "fraction (p-1)/(m+p-1)");
    for (int p = 2; p <= 4; p += 2)
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            int m = ms[i];
            printf("   %-3d %-4d", p, m);
            for (int k = 0; k < NUM_KINDS; k++) {
                dt_schedule *s = NULL;
                dt_sched_timing *t = NULL;
                job j;
                if (!formula_applies(k, p, m) || make(k, p, m, &s) != DT_OK ||
                    run_modeled(&j, s, "none", NULL, &t))
                    printf(" %-19s", "-");
                else
                    printf(" %.4f / %-10.4f", t->bubble_ratio, formula_ratio(k, p, m));
                dt_sched_timing_free(t);
                dt_sched_free(s);
            }
            printf(" %.4f\n", (p - 1.0) / (m + p - 1.0));
        }
    return split_alone();
}

static int memory_table(int p)
{
    printf("\n3. Activations held at the peak (tag ACT), in micro-batches' worth, p = %d, ranks "
           "0 .. %d\n   %-4s", p, p - 1, "m");
    for (int k = 0; k < NUM_KINDS; k++)
        printf(" %-20s", kind_name[k]);
    printf("\n");
    for (int m = 1; m <= 32; m *= 2) {
        printf("   %-4d", m);
        for (int k = 0; k < NUM_KINDS; k++) {
            dt_schedule *s = NULL;
            job j;
            char cell[64] = "-";
            if (make(k, p, m, &s) == DT_OK && !run_modeled(&j, s, "none", NULL, NULL))
                for (int r = 0, n = 0; r < p; r++)
                    n += snprintf(cell + n, sizeof cell - (size_t)n, "%s%.3g", r ? " " : "",
                                  (double)j.out[r].act_peak / (double)j.out[r].act_pair);
            printf(" %-20s", cell);
            dt_sched_free(s);
        }
        printf("\n");
    }
    dt_schedule *s = NULL;
    dt_sched_report rep;
    if (lab_sched_interleaved(&s, p, 2, 8) == DT_OK && dt_sched_validate(s, &rep) == DT_OK) {
        printf("   interleaved counts chunks (v = 2), which differ in size; by the schedule's count "
               "of chunk activations / v, m = 8:");
        for (int r = 0; r < p; r++)
            printf(" %.3g", rep.peak_acts[r] / 2.0);
        printf("\n");
    }
    dt_sched_free(s);
    return 0;
}

/* ------------------------------------------------------------ messages */

static int messages_table(int p, int m, const char *net)
{
    double alpha, beta;
    if (dt_net_parse(net, &alpha, &beta) != DT_OK)
        return -1;
    double n = MICRO_B * 64 * 4.0; /* every cut of SPEC is 64 wide */
    printf("\n4. Messages, p = %d, m = %d: per step (all ranks) against 2(p-1)m and 2(vp-1)m; "
           "the modeled step with messages of t_c, against section 7 (T_F = 1 ms, T_B = 2 ms)\n",
           p, m);
    printf("   %-12s %-9s %-9s %-24s %-24s\n", "schedule", "messages", "formula",
           "t_c = 0.25 ms: measured", net);
    for (int k = 0; k < NUM_KINDS; k++) {
        dt_schedule *s = NULL;
        dt_sched_timing *t1 = NULL, *t2 = NULL;
        job j;
        if (!formula_applies(k, p, m) || make(k, p, m, &s) != DT_OK) {
            dt_sched_free(s);
            continue;
        }
        int v = s->chunks;
        uint64_t msgs = 0;
        if (run_modeled(&j, s, "alpha=250us", NULL, &t1) == 0)
            for (int r = 0; r < p; r++)
                msgs += j.out[r].msgs;
        if (t1 && run_modeled(&j, s, net, NULL, &t2) == 0)
            printf("   %-12s %-9llu %-9d %8.3f ms %15.3f ms\n", kind_name[k],
                   (unsigned long long)msgs, 2 * (v * p - 1) * m, t1->makespan, t2->makespan);
        dt_sched_timing_free(t1), dt_sched_timing_free(t2);
        dt_sched_free(s);
    }
    double tc = alpha + n / beta;
    printf("   GPipe, section 7: (m+p-1)(T_F+T_B) + 2(p-1) t_c = %.3f ms with t_c = 0.25 ms, "
           "%.3f ms on %s (t_c = %.1f us)\n", (m + p - 1) * 3.0 + 2 * (p - 1) * 0.25,
           (m + p - 1) * 3.0 + 2 * (p - 1) * tc * 1e3, net, tc * 1e6);
    return 0;
}

/* ------------------------------------------------------------ --schedule, --skew */

static int schedule_file(const char *path, const char *dir)
{
    dt_schedule *s = NULL;
    dt_sched_report rep;
    dt_sched_timing *t = NULL;
    job j;
    dt_result r = dt_sched_read(&s, path);
    if (r == DT_OK)
        r = dt_sched_validate(s, &rep);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s: %s\n", path, dt_last_error());
        dt_sched_free(s);
        return 1;
    }
    int p = s->ranks, m = s->micro, v = s->chunks;
    printf("%s: %d ranks, %d chunk(s) each, %d micro-batches%s: valid\n", path, p, v, m,
           rep.split_backward ? ", the backward split (W steps)" : "");
    int too_big = v * p > 10 || (p == 1 && v > 1);
    if (too_big)
        fprintf(stderr, "run: %s: not run: the lab runs at most 10 stages, and v = 1 when p = 1\n",
                path);
    if (too_big || run_modeled(&j, s, "none", NULL, &t)) { /* run_modeled says why */
        dt_sched_free(s);
        return 1;
    }
    dt_sched_print(stdout, s, t);
    printf("bubble: %.4f of the step, idle/busy %.4f (GPipe and 1F1B with these p and m: "
           "%.4f of the step)\n", t->bubble_fraction, t->bubble_ratio, (p - 1.0) / (m + p - 1.0));
    for (int k = 0; k < p; k++)
        printf("rank %d: idle %.1f%%, holds %d micro-batches' activations at its peak "
               "(measured: %.3g), gradients vs one rank: max rel. error %.1e\n", k,
               100 * t->rank_bubble[k], rep.peak_acts[k],
               (double)j.out[k].act_peak / (double)j.out[k].act_pair, j.out[k].grad_err);
    char svg[512];
    snprintf(svg, sizeof svg, "%s/06-schedule.svg", dir);
    if (dt_sched_write_svg(s, t, path, "modeled time (ms)", svg) == DT_OK)
        printf("wrote %s\n", svg);
    dt_sched_timing_free(t);
    dt_sched_free(s);
    return 0;
}

static int skew(int p, int m, const char *dir)
{
    double scale[MAX_RANKS] = {0}, sum = 0, worst = 0;
    for (int k = 0; k < p; k++) {
        scale[k] = k == p - 1 ? 1.5 : 1;
        sum += 3 * scale[k], worst = fmax(worst, 3 * scale[k]);
    }
    dt_schedule *s = NULL;
    dt_sched_timing *t = NULL;
    job j;
    dt_clear_error();
    dt_result r = lab_sched_1f1b(&s, p, m);
    if (r != DT_OK)
        fprintf(stderr, "run: --skew: lab_sched_1f1b returned %s%s%s\n", dt_strerror(r),
                *dt_last_error() ? ": " : "", dt_last_error());
    if (r != DT_OK || run_modeled(&j, s, "none", scale, &t)) { /* run_modeled says why */
        dt_sched_free(s);
        return 1;
    }
    printf("1F1B, p = %d, m = %d, the last stage 1.5 times slower (T_F = 1.5, T_B = 3 ms there)\n",
           p, m);
    dt_sched_print(stdout, s, t);
    for (int k = 0; k < p; k++)
        printf("rank %d: busy %.1f ms, idle %.1f ms (%.1f%%)\n", k, t->busy[k], t->idle[k],
               100 * t->rank_bubble[k]);
    printf("step %.2f ms; equal stages of the slowest: (m+p-1) x %.1f = %.2f ms; the first "
           "micro-batch through every stage, then m-1 at the slowest stage's pace: %.2f + %d x "
           "%.1f = %.2f ms\n", t->makespan, worst, (m + p - 1) * worst, sum, m - 1, worst,
           sum + (m - 1) * worst);
    char svg[512];
    snprintf(svg, sizeof svg, "%s/06-skew.svg", dir);
    if (dt_sched_write_svg(s, t, "1F1B, the last stage 1.5 times slower", "modeled time (ms)",
                           svg) == DT_OK)
        printf("wrote %s\n", svg);
    dt_sched_timing_free(t);
    dt_sched_free(s);
    return 0;
}

/* ------------------------------------------------------------ --measure */

static double median(double *v, int n)
{
    for (int i = 1; i < n; i++) /* insertion sort */
        for (int k = i; k > 0 && v[k] < v[k - 1]; k--) {
            double t = v[k];
            v[k] = v[k - 1], v[k - 1] = t;
        }
    return v[n / 2];
}

/* CPU seconds of the calling thread: what a computation costs itself, on
 * a machine whose other processes take turns on its cores. */
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The CPU time (s) of one micro-batch's forward and backward on each stage
 * of the lab's P-way cut of m, medians of 15 runs; the largest. */
static double slowest_stage(dt_model *m, int P)
{
    enum { REPS = 15 };
    int first[MAX_RANKS + 1];
    float x[WALL_B * 256], *g = malloc(WALL_B * 512 * sizeof *g);
    int32_t y[WALL_B];
    double worst = 0, t[REPS];
    batch(WALL_B, 256, x, y);
    lab_pipe_cut(m->num_layers, P, first);
    for (int i = 0; g && i < WALL_B * 512; i++)
        g[i] = 1e-3f * (float)(i % 7);
    for (int s = 0; g && s < P; s++) {
        dt_acts *a = NULL, *in = NULL;
        int last = first[s + 1] == m->num_layers;
        /* the stage's input: the first layers' output on x */
        dt_result r = first[s] ? dt_acts_create(&in, m, 0, first[s], WALL_B, 1) : DT_OK;
        if (r == DT_OK && in)
            r = dt_model_forward(m, in, x, NULL);
        if (r == DT_OK)
            r = dt_acts_create(&a, m, first[s], first[s + 1], WALL_B, 1);
        for (int k = 0; r == DT_OK && k < REPS; k++) {
            float loss;
            double t0 = cpu_now();
            r = dt_model_forward(m, a, in ? dt_acts_output(in) : x, NULL);
            if (r == DT_OK && last)
                r = dt_model_loss(m, a, y, &loss, NULL);
            if (r == DT_OK)
                r = dt_model_backward(m, a, last ? NULL : g, NULL, NULL, NULL);
            t[k] = cpu_now() - t0;
        }
        if (r == DT_OK)
            worst = fmax(worst, median(t, REPS));
        dt_acts_free(a), dt_acts_free(in);
    }
    free(g);
    return worst;
}

typedef struct {
    int m, steps, fd; /* rank 0 writes the seconds per step, wall and the busiest rank's CPU */
} wall_job;

static dt_result wall_rank(dt_comm *world, void *arg)
{
    const wall_job *w = arg;
    int P = dt_comm_size(world);
    size_t rows = (size_t)w->m * WALL_B;
    dt_model m = {0};
    lab_pipe lp;
    dt_schedule *s = NULL;
    dt_optim_config cfg = dt_sgd_config(0.01f, 0, 0);
    float *x = malloc(rows * 256 * sizeof *x);
    int32_t *y = malloc(rows * sizeof *y);
    memset(&lp, 0, sizeof lp);
    dt_result r = x && y ? dt_model_create_spec(&m, WALL_SPEC, 1) : dt_fail(DT_ERR_NOMEM, "batch");
    if (r == DT_OK)
        r = lab_pipe_init(&lp, world, &m, P, 1, WALL_B, &cfg, NULL);
    if (r == DT_OK)
        r = lab_sched_1f1b(&s, P, w->m);
    if (r == DT_OK)
        r = lab_pipe_set_schedule(&lp, s);
    if (r == DT_OK)
        batch(rows, 256, x, y);
    for (int i = 0; r == DT_OK && i < 2; i++) /* warm-up */
        r = lab_pipe_step(&lp, x, y, NULL);
    double t0 = 0, c0 = cpu_now();
    if (r == DT_OK && (r = dt_barrier(world)) == DT_OK)
        t0 = dt_now();
    for (int i = 0; r == DT_OK && i < w->steps; i++)
        r = lab_pipe_step(&lp, x, y, NULL);
    if (r == DT_OK)
        r = dt_barrier(world);
    float cpu = (float)((cpu_now() - c0) / w->steps), busiest = 0;
    double res[2] = {(dt_now() - t0) / w->steps, 0};
    if (r == DT_OK)
        r = dt_allreduce(&cpu, &busiest, 1, DT_F32, DT_MAX, world);
    res[1] = busiest;
    if (r == DT_OK && dt_comm_rank(world) == 0 && write(w->fd, res, sizeof res) < 0)
        r = dt_fail(DT_ERR_IO, "the result pipe");
    dt_sched_free(s);
    lab_pipe_free(&lp);
    dt_model_free(&m);
    free(x), free(y);
    return r;
}

static int wall_clock(int m)
{
    static const int ranks[3] = {1, 2, 4};
    double load[1] = {0}, base = 0, base_pred = 0;
    dt_model model = {0};
    int fd[2];
    if (getloadavg(load, 1) < 1)
        load[0] = -1;
    if (dt_model_create_spec(&model, WALL_SPEC, 1) != DT_OK || pipe(fd) != 0)
        return 1;
    printf("5. Wall clock: 1F1B of %s, m = %d micro-batches of %d, proc ranks, one BLAS thread "
           "each.\n   This machine: %ld cores, load average %.1f when it started: wall times "
           "change with the load, CPU times much less.\n", WALL_SPEC, m, WALL_B,
           sysconf(_SC_NPROCESSORS_ONLN), load[0]);
    printf("   %-5s %-18s %-15s %-14s %-15s %-20s %s\n", "ranks", "slowest stage F+B",
           "predicted step", "measured step", "busiest rank", "samples/s pred/meas",
           "speedup pred/meas");
    for (int i = 0; i < 3; i++) {
        int P = ranks[i];
        double stage = slowest_stage(&model, P), pred = (m + P - 1) * stage, res[2] = {0, 0};
        wall_job w = {m, 10, fd[1]};
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = P;
        o.backend = DT_BACKEND_PROC;
        o.timeout_s = 120;
        dt_result r = dt_launch(&o, wall_rank, &w);
        if (r != DT_OK || read(fd[0], res, sizeof res) != (ssize_t)sizeof res) {
            fprintf(stderr, "run: %d proc ranks: %s\n", P, dt_last_error());
            break;
        }
        double meas = res[0], G = (double)m * WALL_B;
        if (P == 1)
            base = meas, base_pred = pred;
        printf("   %-5d %11.2f ms %12.2f ms %11.2f ms %8.2f ms CPU %8.0f / %-9.0f %.2f / %.2f\n",
               P, stage * 1e3, pred * 1e3, meas * 1e3, res[1] * 1e3, G / pred, G / meas,
               base_pred / pred, base / meas);
    }
    close(fd[0]), close(fd[1]);
    dt_model_free(&model);
    printf("   predicted step: (m + p - 1) x the slowest stage's T_F + T_B (section 2's "
           "formula, the bubble included), each stage's CPU time measured alone (median of 15);\n"
           "   busiest rank: the most CPU time a rank spent per step (its compute, copies and "
           "waits that spin)\n");
    return 0;
}

/* ------------------------------------------------------------ options */

static int usage(const char *prog, const char *why)
{
    if (why)
        fprintf(stderr, "run: %s\n", why);
    fprintf(why ? stderr : stdout,
            "usage: %s [--ranks P (2..%d, default 4)] [--micro M (1..64, default 8)] "
            "[--net NAME (default eth10)] [--figures DIR (default $BUILD)]\n"
            "          [--schedule FILE | --skew | --measure]\n", prog, MAX_RANKS);
    return why ? 2 : 0;
}

/* An integer option's value in [lo, hi], or -1 with the reason in why. */
static int int_option(const char *name, const char *text, int lo, int hi, char *why, size_t n)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (*text && !*end && v >= lo && v <= hi)
        return (int)v;
    snprintf(why, n, "%s '%s': need an integer in %d..%d", name, text, lo, hi);
    return -1;
}

int main(int argc, char **argv)
{
    int p = 4, m = 8, measure = 0, skewed = 0, from_option = 0;
    const char *net = "eth10", *file = NULL, *dir = getenv("BUILD");
    char why[256];
    dir = dir && *dir ? dir : "build";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--measure")) {
            measure = 1;
        } else if (!strcmp(a, "--skew")) {
            skewed = 1;
        } else if (!strcmp(a, "--help")) {
            return usage(argv[0], NULL);
        } else if (!val) {
            snprintf(why, sizeof why, "unknown option '%s', or it lacks its value", a);
            return usage(argv[0], why);
        } else if (!strcmp(a, "--ranks") || !strcmp(a, "--micro")) {
            int *out = a[2] == 'r' ? &p : &m;
            if ((*out = int_option(a, val, a[2] == 'r' ? 2 : 1, a[2] == 'r' ? MAX_RANKS : 64, why,
                                   sizeof why)) < 0)
                return usage(argv[0], why);
            i++;
        } else if (!strcmp(a, "--net")) {
            double al, be;
            if (dt_net_parse(val, &al, &be) != DT_OK) {
                snprintf(why, sizeof why, "--net '%s': %s", val, dt_last_error());
                return usage(argv[0], why);
            }
            net = argv[++i];
        } else if (!strcmp(a, "--figures")) {
            dir = argv[++i];
            from_option = 1;
        } else if (!strcmp(a, "--schedule")) {
            file = argv[++i];
        } else {
            snprintf(why, sizeof why, "unknown option '%s'", a);
            return usage(argv[0], why);
        }
    }
    if ((file != NULL) + skewed + measure > 1)
        return usage(argv[0], "--schedule, --skew and --measure go one at a time");
    /* the figures' folder is checked before any table runs, not at the
     * first figure, after a page of tables */
    struct stat st;
    if (!measure && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(why, sizeof why, "%s '%s': no such folder", from_option ? "--figures" : "BUILD",
                 dir);
        return usage(argv[0], why);
    }
    if (file)
        return schedule_file(file, dir);
    if (skewed)
        return skew(p, m, dir);
    if (measure)
        return wall_clock(m);
    /* every table prints what the lab can run ('-' elsewhere); the status
     * says whether a required schedule (GPipe, 1F1B) or a run failed */
    int failed = timelines(p, m, dir);
    if (bubble_table() || memory_table(p) || messages_table(p, m, net) || failed)
        return 1;
    return 0;
}
