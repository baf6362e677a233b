/* run.h - what the files of lab 06's program share: run.c (the options,
 * the modeled runs and the tables), run_alone.c (--schedule, --skew),
 * run_measure.c (--measure). The program's files, not the lab's: none of
 * this is linked into the graded tests. */
#ifndef LAB06_RUN_H
#define LAB06_RUN_H

#include "pipe.h"

#define SPEC "deep:32,64,8,10"       /* 10 layers: the modeled runs */
#define WALL_SPEC "deep:256,512,8,10" /* 10 layers, 2.3 M parameters: --measure */
#define MICRO_B 4                     /* samples per micro-batch, modeled runs */
#define WALL_B 16                     /* --measure */
#define MAX_RANKS 8

/* One modeled run's job: what the ranks run, and what each reports. */
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

/* A batch of rows x in inputs and its labels: the same on every rank. */
void batch(size_t rows, size_t in, float *x, int32_t *y);

/* Runs s on the modeled clock with equal stages (1 ms per step kind,
 * divided by v so that a rank's work is the same for every v) and fills
 * *t in ms (NULL: not kept). 0, or -1 after saying why on stderr. */
int run_modeled(job *j, const dt_schedule *s, const char *net, const double *scale,
                dt_sched_timing **t);

/* --schedule FILE, --skew, --measure: each alone; exit statuses. */
int schedule_file(const char *path, const char *dir);
int skew(int p, int m, const char *dir);
int wall_clock(int m);

#endif /* LAB06_RUN_H */
