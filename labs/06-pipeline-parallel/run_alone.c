/* run_alone.c - lab 06's program, the runs that go alone: --schedule FILE
 * (a schedule written by hand: checked, timed and run) and --skew (1F1B
 * with a last stage 1.5 times slower, exercise 3). */
#include "run.h"

#include <math.h>
#include <stdio.h>

int schedule_file(const char *path, const char *dir)
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

int skew(int p, int m, const char *dir)
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
