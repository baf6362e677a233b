/* run_measure.c - lab 06's program, --measure: the wall clock of 1F1B on
 * a deep MLP on 1, 2 and 4 proc ranks, against the prediction from each
 * stage's CPU time measured alone (chapter 06, section 10). */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
            double t0 = dt_thread_cpu();
            r = dt_model_forward(m, a, in ? dt_acts_output(in) : x, NULL);
            if (r == DT_OK && last)
                r = dt_model_loss(m, a, y, &loss, NULL);
            if (r == DT_OK)
                r = dt_model_backward(m, a, last ? NULL : g, NULL, NULL, NULL);
            t[k] = dt_thread_cpu() - t0;
        }
        if (r == DT_OK)
            worst = fmax(worst, dt_median(t, REPS));
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
    double t0 = 0, c0 = dt_thread_cpu();
    if (r == DT_OK && (r = dt_barrier(world)) == DT_OK)
        t0 = dt_now();
    for (int i = 0; r == DT_OK && i < w->steps; i++)
        r = lab_pipe_step(&lp, x, y, NULL);
    if (r == DT_OK)
        r = dt_barrier(world);
    float cpu = (float)((dt_thread_cpu() - c0) / w->steps), busiest = 0;
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

int wall_clock(int m)
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
