/* pipe_test.h - what the tests of lab 06 share: the batch, a reference
 * trainer on one rank (independent of the lab), the formulas of chapter 06
 * written here, and a rank function that runs a schedule with the lab and
 * checks itself. */
#ifndef PIPE_TEST_H
#define PIPE_TEST_H

#include "pipe.h"

#define PIPE_MODEL_SEED 5

/* Where a run's schedule comes from. */
typedef enum {
    PIPE_GPIPE = 0,   /* lab_sched_gpipe */
    PIPE_1F1B,        /* lab_sched_1f1b */
    PIPE_INTERLEAVED, /* lab_sched_interleaved */
    PIPE_ZBH1,        /* lab_sched_zbh1 */
    PIPE_TEXT         /* written by hand: pipe_run.text, through dt_sched_parse */
} pipe_sched_kind;

/* One pipeline run, checked inside the ranks (so that it works with the
 * proc backend too). */
typedef struct {
    const char *spec;       /* an MLP of at least v p layers */
    pipe_sched_kind kind;
    const char *text;       /* PIPE_TEXT: the schedule's text table */
    int p, v, d, m;         /* ranks per pipeline, chunks, replicas, micro-batches */
    size_t B;               /* samples per micro-batch */
    int steps;              /* 1: gradients (and loss) are compared; more: parameters */
    double tol;             /* relative, against one rank */
    /* > 0: the modeled clock with t_f = t_b = t_w = 1 ms per stage and a
     * free network: the measured idle over busy time must be this within
     * 2% (relative) */
    double want_ratio;
    int check_memory;       /* each rank's peak ACT bytes in its first step = the largest
                               sum, walking its steps in order, of the pairs in flight
                               (from F to the last backward step), each its chunk's bytes */
    dt_backend backend;
    int library;            /* 1: the library's schedule of this kind (dt_sched_named), run by
                               the lab's runner */
    double ratio_tol;       /* relative, for want_ratio (0: 2%) */
    const char *want_is;    /* what want_ratio is, for a failure (NULL: "the formula") */
} pipe_run;

/* The name of a kind, for messages. */
const char *pipe_kind_name(pipe_sched_kind k);

/* The schedule of run (the lab's generator, or the parsed text). */
dt_result pipe_make_schedule(const pipe_run *run, dt_schedule **out);

/* Integer-based inputs and labels: rows [first, first + n) of the global
 * batch of step t. */
void pipe_batch(size_t first, size_t n, size_t in, size_t classes, int t, float *x, int32_t *y);

/* The rank function: runs the schedule with the lab for run->steps steps
 * and checks, on this rank's layers, the gradients (one step; and the loss
 * on the last stage when d = 1) or the parameters against one rank on the
 * global batch; that the d replicas of a stage hold the same parameters;
 * the bubble (want_ratio) and the activation memory (check_memory). */
dt_result pipe_check_rank(dt_comm *world, void *arg);

/* dt_launch of pipe_check_rank on p d ranks. */
dt_result pipe_launch(const pipe_run *run);

/* A schedule's shape against the formulas: valid, the right steps per
 * rank, the bubble ratio of equal stages (t_f, t_b, t_w given) equal to
 * want_ratio (1e-9), and peak_acts[r] (pairs in flight) equal to
 * want_peak(p, v, m, r) when given; `peak_rule` (the formula, for the
 * message) says where it comes from. Frees s. */
typedef int (*pipe_peak_fn)(int p, int v, int m, int r);
void pipe_expect_schedule(dt_schedule *s, const char *what, double t_f, double t_b, double t_w,
                          double want_ratio, pipe_peak_fn want_peak, const char *peak_rule);

#endif /* PIPE_TEST_H */
