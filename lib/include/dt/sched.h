/* dt/sched.h - pipeline schedules as data: built step by step or read from
 * a text table, checked, timed on a model of the run, printed and drawn.
 *
 * A model cut into S stages runs on p ranks; with v stages per rank (the
 * interleaved schedule's "virtual stages" or model chunks) S = v * p and
 * stage s runs on rank s % p, so chunk c of rank r is stage c * p + r. With
 * v = 1, stage s runs on rank s. A batch is cut into m micro-batches. Every
 * (stage, micro-batch) pair is computed by three kinds of step:
 *
 *   F  the forward of the stage on the micro-batch;
 *   B  its backward: the gradient w.r.t. the stage's input, and, unless the
 *      schedule splits the backward, the weight gradients too;
 *   W  the weight gradients alone, when the backward is split (a schedule
 *      that holds any W step must hold one for every pair, after its B).
 *
 * A schedule is, per rank, the list of the steps that rank runs, in order.
 * Nothing else: when each step starts follows from the order and from the
 * data each step needs (chapter 06, section 3).
 *
 * The run a schedule describes. Each rank runs its steps in order. F of
 * stage s > 0 receives stage s-1's activation, and B of stage s < S-1
 * receives stage s+1's gradient, from the rank that ran it; F sends its
 * activation to the next stage's rank, B its input gradient to the previous
 * stage's rank (W sends nothing). Sends do not block (dt_isend); receives
 * block until the message is there; between two ranks messages arrive in
 * the order they were sent and carry no tag (as dt_send's, NCCL's). When
 * consecutive stages share a rank (p = 1, or the last chunk's wrap), the
 * data stays on the rank and no message is sent.
 *
 * Conventions are those of every layer (dt/core.h): calls return a
 * dt_result and record a message on failure; outputs are untouched on
 * failure. Times are in seconds or any unit, as long as it is one unit.
 */
#ifndef DT_SCHED_H
#define DT_SCHED_H

#include <stdio.h>

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits of a schedule, so that every table below has a fixed size. */
#define DT_SCHED_MAX_RANKS 64
#define DT_SCHED_MAX_CHUNKS 16
#define DT_SCHED_MAX_MICRO 1024

typedef enum {
    DT_STEP_F = 0, /* forward */
    DT_STEP_B,     /* backward: the input gradient (and the weight gradient unless split) */
    DT_STEP_W,     /* weight gradient of a split backward */
    DT_NUM_STEP_KINDS
} dt_step_kind;

/* "F", "B", "W"; "?" out of range. */
const char *dt_step_kind_name(dt_step_kind k);

typedef struct {
    int stage;         /* 0 .. stages-1 */
    int micro;         /* the micro-batch, 0 .. micro-1 */
    dt_step_kind kind;
} dt_step;

/* Read-only for callers: change it through dt_sched_add. */
typedef struct {
    int ranks;     /* p */
    int chunks;    /* v, stages per rank */
    int stages;    /* S = v * p */
    int micro;     /* m */
    int *nsteps;   /* nsteps[r]: steps of rank r so far */
    dt_step **steps; /* steps[r][i], i < nsteps[r]: rank r's i-th step */
    int capacity;  /* steps a rank can hold: 3 * v * m */
} dt_schedule;

/* An empty schedule for ranks p in 1..DT_SCHED_MAX_RANKS, chunks v in
 * 1..DT_SCHED_MAX_CHUNKS and micro m in 1..DT_SCHED_MAX_MICRO. Free it with
 * dt_sched_free (NULL is ignored). */
dt_result dt_sched_create(dt_schedule **out, int ranks, int chunks, int micro);
void dt_sched_free(dt_schedule *s);

/* The rank that runs stage (stage % ranks); -1 out of range. */
int dt_sched_rank_of(const dt_schedule *s, int stage);

/* Appends (stage, micro, kind) to the steps of the rank that runs stage.
 * Fails, naming the value, when stage, micro or kind is out of range, or
 * when the rank already holds 3 v m steps (there cannot be more in a valid
 * schedule). Order and completeness are checked by dt_sched_validate. */
dt_result dt_sched_add(dt_schedule *s, int stage, int micro, dt_step_kind kind);

/* ---------------------------------------------------------------- generators */

/* The schedules of chapter 06 (generate.c), the reference lab 06 has
 * students write: each returns a new schedule in *out (free it with
 * dt_sched_free) that dt_sched_validate accepts, for p ranks in
 * 1..DT_SCHED_MAX_RANKS and m micro-batches in 1..DT_SCHED_MAX_MICRO, or
 * DT_ERR_INVALID_ARG naming the values (*out NULL).
 *   gpipe        each rank all its forwards, then all its backwards
 *                (section 2): peak m pairs, bubble (p-1)/(m+p-1)
 *   1f1b         the same bubble, rank r holding min(p-r, m) (section 4)
 *   interleaved  v chunks per rank (2 <= v <= DT_SCHED_MAX_CHUNKS), m a
 *                multiple of p: idle over busy (p-1)/(v m) (section 5)
 *   zbh1         the backward split into B and W: idle over busy
 *                (p-1)/(3m) with T_F = T_B = T_W and m >= p, rank r
 *                holding at most p pairs from F to W (section 6) */
dt_result dt_sched_gpipe(dt_schedule **out, int p, int m);
dt_result dt_sched_1f1b(dt_schedule **out, int p, int m);
dt_result dt_sched_interleaved(dt_schedule **out, int p, int v, int m);
dt_result dt_sched_zbh1(dt_schedule **out, int p, int m);
/* The one named "gpipe", "1f1b", "interleaved" (v chunks) or "zbh1" (v
 * must be 1); an unknown name fails, listing the four. */
dt_result dt_sched_named(dt_schedule **out, const char *name, int p, int v, int m);

/* ---------------------------------------------------------------- checking */

/* What dt_sched_validate finds out about a valid schedule. */
typedef struct {
    int split_backward;  /* 1 when the schedule has W steps */
    /* Activations in flight: the most (stage, micro-batch) pairs of rank r
     * whose F has run and whose last backward step (B, or W when split)
     * has not; with v = 1 this is in micro-batches. A pair holds what its
     * backward will need: the stage's activations for that micro-batch. */
    int peak_acts[DT_SCHED_MAX_RANKS];
    /* Messages rank r sends in one pass of the schedule: activations and
     * gradients to the ranks of the neighbouring stages. */
    int msgs_sent[DT_SCHED_MAX_RANKS];
} dt_sched_report;

/* Checks, in this order, and fails at the first problem with
 * DT_ERR_INVALID_ARG and a message that names the step, as
 * "rank 1 step 4 (B stage 1 mb 2): ...":
 *  1. every (stage, micro) has exactly one F and one B, and one W either
 *     for every pair or for none;
 *  2. on its rank, each F comes after the F of the previous stage when that
 *     stage is on the same rank, each B after its own F and after the B of
 *     the next stage when that is on the same rank, each W after its B;
 *  3. between two ranks, the receiver takes the messages in the order the
 *     sender sends them (no tags: a different order would hand a step
 *     another micro-batch's data);
 *  4. no deadlock: replaying the run above (receives block, sends do not)
 *     finishes; else the message lists what each stuck rank waits for.
 * On success fills *report (may be NULL). */
dt_result dt_sched_validate(const dt_schedule *s, dt_sched_report *report);

/* ---------------------------------------------------------------- timing */

/* What a step costs. Per stage when the arrays are given (length stages),
 * else the same for every stage. t_w is used only by W steps. t_msg is the
 * time a message takes from the end of the step that sends it to the start
 * of the step that receives it (0: a free network); e.g. the alpha-beta
 * time alpha + bytes / beta of one micro-batch's activation. */
typedef struct {
    double t_f, t_b, t_w;
    const double *stage_f, *stage_b, *stage_w; /* NULL: t_f, t_b, t_w */
    double t_msg;
} dt_sched_costs;

/* When each step runs, and the bubble. */
typedef struct {
    int ranks;
    double **start, **end;  /* [rank][step], parallel to schedule->steps */
    double makespan;        /* end of the last step; the first starts at 0 */
    double busy[DT_SCHED_MAX_RANKS]; /* sum of rank r's step costs */
    double idle[DT_SCHED_MAX_RANKS]; /* makespan - busy[r] */
    /* The two ways the literature states the bubble:
     *  bubble_fraction = sum idle / (p * makespan), the share of the
     *    ranks' time spent idle (GPipe's (p-1)/(m+p-1));
     *  bubble_ratio = sum idle / sum busy, the idle time over the ideal
     *    time (Megatron-LM's (p-1)/m, (p-1)/(v m); ZB-H1's (p-1)/(3m)).
     * Either gives the other: ratio = fraction / (1 - fraction). */
    double bubble_fraction;
    double bubble_ratio;
    double rank_bubble[DT_SCHED_MAX_RANKS]; /* idle[r] / makespan */
} dt_sched_timing;

/* Validates s (as dt_sched_validate, same messages), then replays it: a
 * step starts when its rank is free and the data it needs is there (the
 * end of the step it depends on, plus t_msg when that step ran on another
 * rank), and lasts its cost. Every cost must be finite and >= 0, t_w too
 * when the schedule has W steps. *out is new; free it with
 * dt_sched_timing_free (NULL is ignored). */
dt_result dt_sched_simulate(const dt_schedule *s, const dt_sched_costs *costs,
                            dt_sched_timing **out);
void dt_sched_timing_free(dt_sched_timing *t);

/* The same figures for a run that measures its own steps (chapter 06's
 * lab, on the modeled clock): dt_sched_timing_create makes the tables for
 * s, the run writes start[r][i] and end[r][i] of every step from any one
 * origin (the compute of the step, not its wait), and
 * dt_sched_timing_finish moves the origin to the earliest start and fills
 * busy (each rank's steps summed), the makespan (the latest end), idle
 * and the bubble as dt_sched_simulate does; DT_ERR_INVALID_ARG when a
 * step ends before it starts. Draw and print it as a simulated one. */
dt_result dt_sched_timing_create(const dt_schedule *s, dt_sched_timing **out);
dt_result dt_sched_timing_finish(dt_sched_timing *t, const dt_schedule *s);

/* ---------------------------------------------------------------- drawing */

/* The label of a step: kind and micro-batch ("F3"), with the chunk after a
 * dot when v > 1 ("F3.1"). Returns the length snprintf would. */
int dt_sched_step_label(const dt_schedule *s, const dt_step *st, char *buf, size_t size);

/* Writes one line per rank, "rank 0 | F0 F1 B0 B1", in order (t NULL), or
 * on a time axis (t from dt_sched_simulate of s): one column per unit of
 * the shortest step, a step spanning its columns ("B0----"), idle columns
 * as ".". DT_ERR_IO when writing fails. */
dt_result dt_sched_print(FILE *f, const dt_schedule *s, const dt_sched_timing *t);

/* Writes the timed schedule as an SVG Gantt chart (dt/metrics.h): one row
 * per rank, one box per step coloured by kind (and by chunk when v > 1),
 * labelled with its micro-batch; xlabel names the time axis with the unit
 * of the costs (NULL: "time"). Steps of cost 0 are not drawn. */
dt_result dt_sched_write_svg(const dt_schedule *s, const dt_sched_timing *t,
                             const char *title, const char *xlabel, const char *path);

/* ---------------------------------------------------------------- text table */

/* The text form, for writing a schedule by hand:
 *
 *     # anything after '#' is a comment; blank lines are skipped
 *     schedule ranks=2 chunks=1 micro=2
 *     # rank stage micro kind
 *     0 0 0 F
 *     0 0 1 F
 *     1 1 0 F
 *     ...
 *
 * The header line comes first; then one line per step. A rank's steps run
 * in the order of its lines; lines of different ranks may interleave. The
 * rank column must be the rank that runs the stage (a check for the
 * writer). dt_sched_parse reads text (name is used in messages, as
 * "name:7: ..."), dt_sched_read a file; neither validates the order
 * (dt_sched_validate does). dt_sched_write writes the rank-by-rank form
 * that dt_sched_read reads back into the same schedule. */
dt_result dt_sched_parse(dt_schedule **out, const char *text, const char *name);
dt_result dt_sched_read(dt_schedule **out, const char *path);
dt_result dt_sched_write(const dt_schedule *s, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* DT_SCHED_H */
