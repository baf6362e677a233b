/* pipe.h - lab 06: pipeline parallelism. Read
 * chapters/06-pipeline-parallel.md first.
 *
 * A model of L layers is cut into S = v p contiguous stages; stage s runs
 * on pipeline rank s mod p, so each rank runs v stages, its CHUNKS (v = 1:
 * one stage per rank; chunk c of rank r is stage c p + r). A step cuts this
 * rank's batch into m micro-batches. A SCHEDULE (dt/sched.h) says, per
 * rank, in which order its steps run: F (forward), B (backward; with a
 * split backward only the input gradient) and W (the weight gradients of a
 * split backward), each of one (stage, micro-batch) pair.
 *
 * The step is the library's training loop (dt/train.h) run in the
 * schedule's order: for each step of this rank it calls lab_pipe_forward,
 * lab_pipe_backward or lab_pipe_weight (yours) with the step's chunk and
 * micro-batch, then lab_pipe_sync (yours), then the optimizer on this
 * rank's layers. With p d ranks in the world, d pipelines run side by side
 * on their own share of the batch (data parallelism): ranks d' p .. d' p +
 * p - 1 form pipeline d', and the d ranks of one pipeline position hold
 * the same stages (lp->dp).
 *
 * The tasks, in order (the chapter's section 9 names the section that
 * derives each):
 *   1. lab_sched_gpipe          GPipe as a schedule (schedules.c)
 *   2. lab_sched_1f1b           1F1B (schedules.c)
 *   3. lab_pipe_forward, lab_pipe_backward    run any schedule (pipe.c)
 *   4. lab_pipe_sync            the micro-batches' mean, and data
 *                               parallelism around the pipeline
 *   5. (going further, graded) lab_sched_interleaved, lab_sched_zbh1 and
 *      lab_pipe_weight
 *   6. lab_pipe_predict_bubble  predict, then measure: the bubble of a
 *                               schedule, from the formulas (schedules.c)
 * The code outside the fences is given: the stages, the schedule as the
 * loop's order, the step, and the functions that run a stage's compute on
 * a micro-batch and charge its modeled time. */
#ifndef LAB_PIPE_H
#define LAB_PIPE_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/sched.h"
#include "dt/train.h"

#define LAB_PIPE_MAX_STAGES 64

/* ------------------------------------------------------------ schedules.c */

/* Each returns a new schedule in *out (free it with dt_sched_free) that
 * dt_sched_validate accepts, for p ranks and m micro-batches (1 <= p <= 64,
 * 1 <= m <= 1024; else DT_ERR_INVALID_ARG). */

/* GPipe (section 2): each rank all its forwards, then all its backwards.
 * Every rank holds m micro-batches' activations at its peak; the bubble is
 * (p-1)/(m+p-1) of the step. */
dt_result lab_sched_gpipe(dt_schedule **out, int p, int m);

/* 1F1B (section 4): the same bubble as GPipe's, with rank r holding at
 * most min(p - r, m) micro-batches' activations. */
dt_result lab_sched_1f1b(dt_schedule **out, int p, int m);

/* Interleaved 1F1B (section 5): v chunks per rank (2 <= v <= 16), m a
 * multiple of p; idle time over busy time (p-1)/(v m) with equal stages. */
dt_result lab_sched_interleaved(dt_schedule **out, int p, int v, int m);

/* ZB-H1 (section 6): the backward split into B and W; with T_F = T_B =
 * T_W and m >= p, idle over busy time (p-1)/(3m), and rank r holding at
 * most p micro-batches' activations (from F to W). */
dt_result lab_sched_zbh1(dt_schedule **out, int p, int m);

/* Predict, then measure: your prediction, from sections 2 to 6, of the
 * bubble of `schedule` ("gpipe", "1f1b", "interleaved" or "zbh1") on p
 * ranks with v chunks each (1 except for "interleaved") and m
 * micro-batches: the idle time over the busy time of the ranks, with every
 * stage equal (T_F = T_B = T_W, an unsplit backward T_B + T_W) and a free
 * network. The tests compare *ratio with the formulas and with the
 * modeled clock of your runner on configurations the chapter does not
 * work out. DT_ERR_INVALID_ARG (*ratio untouched) for a NULL argument, an
 * unknown schedule, p or m below 1, v other than 1 for a schedule without
 * chunks, and the cases the chapter's formulas do not cover: interleaved
 * with v < 2 or m not a multiple of p, ZB-H1 with m < p. */
dt_result lab_pipe_predict_bubble(const char *schedule, int p, int v, int m, double *ratio);

/* ------------------------------------------------------------ pipe.c */

/* One (chunk, micro-batch) pair of this rank during a step. */
typedef struct {
    dt_acts *acts;     /* its activations (made by lab_pipe_run_forward), until you free them */
    dt_wgrad *wgrad;   /* a split backward's output gradients, from B to W (made with acts) */
    float *dinp;       /* the gradient of the stage's input, written by lab_pipe_run_backward
                          (stage > 0); the given code frees it once its send is done */
    dt_request *send;  /* the send in flight from this pair, or NULL: its forward's
                          output, then its input gradient, one at a time (the
                          given code waits for it at the end of the step) */
} lab_mb;

/* Modeled compute of one stage on one micro-batch, charged to the rank's
 * modeled clock by lab_pipe_run_*; a whole (unsplit) backward costs
 * t_b + t_w. */
typedef struct {
    double t_f, t_b, t_w;
    const double *stage_scale; /* S entries: stage s costs that many times more (NULL: 1) */
} lab_pipe_cost;

typedef struct {
    dt_comm *pipe;            /* the p ranks of this pipeline; rank = position */
    dt_comm *dp;              /* the d ranks holding the same stages (NULL when d = 1) */
    dt_model *model;          /* not owned: the whole model, the same on every rank */
    int p, v, S, d;           /* pipeline ranks, chunks per rank, stages, replicas */
    int rank;                 /* in pipe */
    int first[LAB_PIPE_MAX_STAGES + 1]; /* stage s is layers [first[s], first[s+1]) */
    size_t B;                 /* samples per micro-batch */
    lab_pipe_cost cost;
    /* the schedule in use (lab_pipe_set_schedule) */
    dt_schedule *sched;       /* a copy */
    int m, split;             /* micro-batches; the schedule has W steps */
    dt_train_op *ops;         /* this rank's steps in the loop's terms */
    int *step_index;          /* of each (kind, chunk, micro) in this rank's list */
    lab_mb *mb;               /* v x m pairs: lab_pipe_mb */
    float *recv;              /* a receive buffer of B rows of the widest cut */
    dt_trainer trainer;
    const float *x;           /* the step's m x B rows (this replica's) */
    const int32_t *labels;
    dt_sched_timing *timing;  /* NULL, or where lab_pipe_run_* record each step's
                                 modeled start and end (row `rank`) */
} lab_pipe;

/* ------------------------------------------------------------ given code */

/* Sets up lp for model m (a deep MLP or MLP of at least v p layers) on
 * world, whose size must be a multiple d of p: cuts the layers into
 * S = v p stages of equal counts (the first L mod S one layer more),
 * makes the pipeline and data-parallel communicators, and the loop with an
 * optimizer of cfg on this rank's layers. B samples per micro-batch; cost
 * may be NULL (no modeled time). lp must stay where it is until
 * lab_pipe_free. On failure lp is left freed. Collective over world. */
dt_result lab_pipe_init(lab_pipe *lp, dt_comm *world, dt_model *m, int p, int v, size_t B,
                        const dt_optim_config *cfg, const lab_pipe_cost *cost);
void lab_pipe_free(lab_pipe *lp);

/* Runs s from the next step on: s must be valid (dt_sched_validate; its
 * message is returned) and made for p ranks and v chunks. s is copied. */
dt_result lab_pipe_set_schedule(lab_pipe *lp, const dt_schedule *s);

/* One training step on this replica's batch of m micro-batches of B
 * samples (x: m B rows, labels m B entries, micro-batch j first at row
 * j B). *loss (may be NULL) gets the mean loss of the micro-batches on the
 * rank of the last stage, 0 elsewhere. Collective over world. */
dt_result lab_pipe_step(lab_pipe *lp, const float *x, const int32_t *labels, float *loss);

/* The cut of L layers into S stages that lab_pipe_init makes: stage s is
 * layers [first[s], first[s+1]), L / S each, the first L mod S one more
 * (first: S + 1 entries). */
void lab_pipe_cut(int L, int S, int *first);

/* The stage of this rank's chunk c, the pipeline rank of stage s, the pair
 * (c, j), and the first input row of micro-batch j. */
int lab_pipe_stage(const lab_pipe *lp, int chunk);
int lab_pipe_rank_of(const lab_pipe *lp, int stage);
lab_mb *lab_pipe_mb(lab_pipe *lp, int chunk, int micro);
const float *lab_pipe_micro_x(const lab_pipe *lp, int micro);

/* The floats of one message across the cut before stage s (s > 0): B rows
 * of the width of layer first[s]'s input. */
size_t lab_pipe_cut_count(const lab_pipe *lp, int stage);

/* The compute of one step, charged to the modeled clock:
 *  run_forward  makes the pair's acts (and wgrad when the schedule splits
 *               the backward), runs the stage forward on in (B rows), and
 *               on the last stage the loss of the micro-batch;
 *  run_backward from dout (the gradient of the stage's output; NULL on
 *               the last stage: the loss's), the whole backward, or only
 *               the input gradient when split; writes the input gradient
 *               into the pair's dinp (stage > 0);
 *  run_weight   the weight gradients of a split backward.
 * Each fails with DT_ERR_STATE when the pair is not in the state it needs
 * (acts already made, no acts, no B before W). */
dt_result lab_pipe_run_forward(lab_pipe *lp, int chunk, int micro, const float *in);
dt_result lab_pipe_run_backward(lab_pipe *lp, int chunk, int micro, const float *dout);
dt_result lab_pipe_run_weight(lab_pipe *lp, int chunk, int micro);

/* ------------------------------------------------------------ tasks 3 to 5 */

/* F of (chunk, micro) (section 3): its input (the micro-batch on stage 0,
 * else the activation the previous stage's rank sends) through the stage;
 * its output on its way to the next stage's rank without waiting for it to
 * be received (dt_isend: a rank that waits for its send while the other
 * waits for its own deadlocks, section 3). Postcondition: the pair holds
 * its activations. */
dt_result lab_pipe_forward(lab_pipe *lp, int chunk, int micro);

/* B of (chunk, micro) (sections 3 and 6): from the gradient of the
 * stage's output (the loss's on the last stage, else sent by the next
 * stage's rank) to the gradient of its input, on its way to the previous
 * stage's rank. Postcondition: the pair holds its activations only while a
 * W step still needs them (memory: section 4); no buffer is freed while a
 * send from it is in flight. */
dt_result lab_pipe_backward(lab_pipe *lp, int chunk, int micro);

/* W of (chunk, micro) (section 6), for schedules that split the
 * backward: its weight gradients; then the pair holds nothing. */
dt_result lab_pipe_weight(lab_pipe *lp, int chunk, int micro);

/* Once per step, after every backward step (section 8): on entry this
 * rank's layers' gradients are the sum over the micro_steps micro-batches
 * of each one's mean; on return they are the mean gradient of the GLOBAL
 * batch (d replicas x micro_steps micro-batches), the same on the d ranks
 * that hold these stages. Collective over lp->dp. */
dt_result lab_pipe_sync(lab_pipe *lp, int micro_steps);

#endif /* LAB_PIPE_H */
