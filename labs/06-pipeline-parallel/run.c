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
 * --skew           1F1B with a last stage 1.5 times slower (exercise 3)
 *                  (both in run_alone.c);
 * --measure        the wall clock: 1F1B of a deep MLP on 1, 2 and 4 proc
 *                  ranks, samples/s, against the prediction from each
 *                  stage's measured time (run_measure.c).
 * `run --help` lists the options. */#include "run.h"

#include "dt/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void batch(size_t rows, size_t in, float *x, int32_t *y)
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
int run_modeled(job *j, const dt_schedule *s, const char *net, const double *scale,
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
/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int p = 4, m = 8, measure = 0, skewed = 0;
    const char *net = "eth10", *file = NULL, *dir = dt_cli_build_dir();
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &p, .help = "pipeline ranks p", .arg = "P", .lo = 2,
         .hi = MAX_RANKS},
        {"--micro", DT_OPT_INT, &m, .help = "micro-batches m", .arg = "M", .lo = 1, .hi = 64},
        {"--net", DT_OPT_NET, &net, .help = "the link of table 4's step"},
        {"--figures", DT_OPT_DIR, &dir, .help = "where the Gantt charts go "
         "(DIR/06-<schedule>.svg)"},
        {"--schedule", DT_OPT_TEXT, &file, .help = "only check, time and run a schedule written "
         "by hand", .arg = "FILE"},
        {"--skew", DT_OPT_FLAG, &skewed, .help = "only 1F1B with a last stage 1.5 times slower "
         "(exercise 3)"},
        {"--measure", DT_OPT_FLAG, &measure, .help = "only the wall clock: 1F1B of a deep MLP on "
         "1, 2 and 4 proc ranks, samples/s, against the prediction from each stage's measured "
         "time"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 06: your schedules (schedules.c) with your runner (pipe.c), "
                           "and the measurements that confirm chapter 06's formulas: "
                           "timelines, bubble, activations, messages."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if ((file != NULL) + skewed + measure > 1)
        return dt_cli_fail(&cli, "--schedule, --skew and --measure go one at a time");
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
