/* dt/train.h - the training loop, once, and the hooks that make it
 * single-rank training, data parallelism (chapter 03), ZeRO (chapter 08)
 * and the later chapters' strategies.
 *
 * One step (dt_train_step), on every rank:
 *
 *   zero model->grads                                  (t->zero_grads)
 *   for each micro-batch j, in the schedule's order (default F0 B0 F1 B1 ...):
 *     forward(j)    run micro-batch j; add its mean loss to t->loss_sum
 *     backward(j)   ACCUMULATE (+=) its gradients into model->grads; as each
 *                   layer's are complete, dt_train_layer_ready -> sync.layer
 *   sync            model->grads := the mean gradient of the GLOBAL batch
 *   update          the parameters from the gradients
 *
 * Each of the four is a hook: a function and the state it works on, in
 * llm.c's plain style (dt_hook). A strategy is a choice of hooks:
 *
 *   strategy         forward, backward      sync                        update
 *   one rank         the model's (default)  x 1/m over m micro-batches  the optimizer, every parameter
 *   DDP, chapter 03  the model's            allreduce (average)         the optimizer, every parameter
 *   ZeRO-1, ch. 08   the model's            the allreduce's first half: the optimizer on the shard,
 *                                           this rank's shard of the    then the second half on
 *                                           mean                        the parameters
 *   fused SGD        backward writes        none                        none: the backward was it
 *                    -lr x gradient into the weights (fused_sgd.c)
 *
 * and the ones later chapters add, with the same loop:
 *   ZeRO-3, FSDP     the units runner (units.c): forward and backward gather a unit's
 *   (fsdp.c)         parameters before it runs and free them after, reduce-scattering its
 *                    gradients in the backward; the update works on the shard only. Without
 *                    resharding after the forward, FSDP keeps ZeRO-2's memory of parameters
 *   ZeRO-2           (lab 08) the units runner with buckets as units: each bucket's gradients
 *                    reduce-scattered into the shard as soon as its backward is done, and
 *                    freed; update as ZeRO-1
 *   compression      sync compresses, exchanges and decompresses with error feedback
 *   mixed precision  a backward that scales the loss gradient by S and an update that unscales,
 *                    skips the step on inf or nan and adapts S, each wrapping the plain hook
 *   pipeline         forward and backward of micro-batch j on this rank's stage (receive, run,
 *                    send), in the order of a schedule (GPipe, 1F1B: t->schedule); the
 *                    operation's chunk names the stage when a rank runs several (interleaved
 *                    1F1B), and the weight hook runs the W operations of a split backward
 *                    (ZB-H1); sync and update on this rank's layers (dt_train_use_own_layers)
 *
 * dt_train runs steps over a data set with the distributed sampler, and
 * times them. The library never prints: progress goes to a callback. */
#ifndef DT_TRAIN_H
#define DT_TRAIN_H

#include "dt/ckpt.h"
#include "dt/comm.h"
#include "dt/core.h"
#include "dt/data.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/sched.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_trainer dt_trainer;

/* A hook. run is its phase of the step; layer (sync hooks; NULL: not
 * interested) hears that a layer's gradients are complete, during the
 * backward of micro-batch t->micro (every micro-batch: a hook that
 * reduces once per step acts on the last one, t->micro + 1 ==
 * t->batch->micro_steps); release frees self (dt_train_set_hook and
 * dt_trainer_free call it; NULL: nothing to free; two hooks that share a
 * state give release to one of them). */
typedef struct {
    const char *name; /* what it does, for reports: "allreduce", "zero1", "fused_sgd", ... */
    dt_result (*run)(dt_trainer *t, void *self);
    dt_result (*layer)(dt_trainer *t, void *self, int layer, size_t offset, size_t count);
    void (*release)(void *self);
    void *self;
} dt_hook;

/* This rank's batch of one step: micro_steps micro-batches of B samples of
 * T rows each, one after another in each array. */
typedef struct {
    const float *x;         /* micro_steps x B x T rows of the model's input width (MLPs) */
    const int32_t *tokens;  /* micro_steps x B x T tokens (GPT) */
    const int32_t *labels;  /* micro_steps x B x T */
    size_t B, T;            /* T = 1 for the MLPs */
    int micro_steps;        /* >= 1 */
} dt_batch;

/* What compute costs on the communicator's modeled clock (chapter 00):
 * nothing, its measured wall time (dt_compute_begin/end), or a given time. */
typedef enum { DT_CLOCK_NONE = 0, DT_CLOCK_MEASURED, DT_CLOCK_MODELED } dt_compute_clock;

typedef struct {
    dt_optim_config optim;   /* the update's optimizer */
    dt_nn_path path;         /* the activations of the model's forward and backward:
                                DT_NN_REFERENCE (the default) or DT_NN_FAST */
    dt_compute_clock clock;  /* charged by the model's forward and backward */
    double forward_s;        /* DT_CLOCK_MODELED: one micro-batch's forward */
    const double *forward_layer_s; /* DT_CLOCK_MODELED: each layer's forward (num_layers
                                entries, not copied), for the units of dt_train_use_units;
                                when given, the forward costs their sum, not forward_s */
    const double *backward_s;/* DT_CLOCK_MODELED: each layer's backward (num_layers
                                entries, not copied; NULL: none) */
    const double *weight_s;  /* DT_CLOCK_MODELED, pipelines: each layer's weight-gradient
                                half, a W step of a split backward (num_layers entries, not
                                copied; NULL: 0); an unsplit backward costs backward_s +
                                weight_s */
} dt_trainer_config;

/* Order of a step's micro-batches: F j or B j, and for pipelines (chapter
 * 06) on which of this rank's model chunks (interleaved 1F1B: v stages per
 * rank), and W j, the weight-gradient half of a backward split in two
 * (ZB-H1: B then computes only the input gradient). */
typedef enum { DT_TRAIN_FORWARD = 0, DT_TRAIN_BACKWARD, DT_TRAIN_WEIGHT } dt_train_op_kind;
typedef struct {
    int micro;
    dt_train_op_kind kind;
    int chunk;               /* 0 .. chunks-1; 0 without chunks */
} dt_train_op;

/* Wall seconds of each phase of one step, summed over its micro-batches,
 * and what this rank sent during the step. */
typedef struct {
    double forward_s, backward_s, sync_s, update_s, step_s;
    uint64_t bytes_sent;
} dt_train_times;

/* What a hook keeps from one step to the next, for checkpoints
 * (dt_train_set_state, dt_train_state): both may be NULL. */
typedef struct {
    /* visits the hook's state through io (dt/ckpt.h), the same code saving
       and loading; NULL: the hook keeps nothing between steps */
    dt_result (*visit)(dt_trainer *t, void *self, dt_ckpt_io *io);
    /* writes up to max of the optimizers the hook steps into o, and how
       many it has into *n (dt_train_optimizers) */
    dt_result (*optimizers)(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n);
} dt_hook_state;

enum { DT_TRAIN_SLOTS = 5 }; /* forward, backward, sync, update, weight */

struct dt_trainer {
    dt_model *model;         /* not owned */
    dt_comm *comm;           /* NULL: one rank without a communicator */
    int rank, ranks;
    dt_trainer_config cfg;
    dt_hook forward, backward, sync, update;
    dt_hook weight;          /* W operations of a schedule (none by default) */
    int zero_grads;          /* the loop zeroes model->grads before each step (1) */
    /* The order of a step's operations (not copied); NULL: F0 B0 F1 B1 ...
     * With C chunks (1 + the largest chunk named) it holds, for each chunk
     * and micro-batch, one F, then one B, and one W after the B either for
     * every pair or for none: 2 C micro_steps or 3 C micro_steps operations
     * (checked at each step, naming the operation at fault). */
    const dt_train_op *schedule;
    int schedule_len;
    /* the step in progress, for the hooks */
    const dt_batch *batch;
    int micro;               /* the micro-batch being run */
    int chunk;               /* and its chunk (the operation's; 0 without a schedule) */
    double loss_sum;         /* forward hooks add each micro-batch's mean loss */
    size_t correct;          /* and the rows whose argmax was the label */
    /* after a step */
    long step;               /* steps done */
    float loss;              /* the last step's mean loss over its micro-batches */
    dt_train_times times;    /* of the last step */
    /* the model's activations: one dt_acts per micro-batch in flight
       (dt_train_acts), all of the last batch's shape */
    dt_acts **acts;
    int *acts_busy;          /* acts[i] holds micro-batch acts_busy[i] - 1; 0: free */
    int num_acts;
    size_t acts_B, acts_T;
    /* the hooks' states, by slot (dt_train_set_state): each holds while
       the slot keeps the hook (its run and self) it was given for */
    struct {
        dt_result (*run)(dt_trainer *t, void *self);
        void *self;
        dt_hook_state state;
    } states[DT_TRAIN_SLOTS];
};

/* A trainer for m on comm (NULL: one rank) with the default hooks: the
 * model's forward and backward, the sync "allreduce" with a communicator
 * (else "local": x 1/m), the update "optimizer" (its state is allocated
 * at the first update, so that a strategy that replaces it never holds
 * it). c NULL: plain SGD lr 0.1, reference path, no clock. */
dt_result dt_trainer_init(dt_trainer *t, dt_model *m, dt_comm *comm, const dt_trainer_config *c);
void dt_trainer_free(dt_trainer *t);

/* Replaces *slot (one of t's hooks) by h, releasing the old hook's state. */
void dt_train_set_hook(dt_hook *slot, dt_hook h);

/* One step on this rank's batch (every rank calls it: the sync and the
 * update are collective). t->loss gets the step's mean loss. */
dt_result dt_train_step(dt_trainer *t, const dt_batch *b);

/* ---------------------------------------------------------------- strategies
 * Each replaces some of t's hooks; call before the first step. */

/* ZeRO stage 1 (chapter 08; lib/train/zero1.c): rank r keeps the optimizer
 * state of only its shard of the P parameters, block r of the cut of
 * dt_block (about P/K). sync runs the first half of DDP's allreduce
 * (average, dt_allreduce_scatter), so r holds the mean of its shard;
 * update steps the shard and runs the second half on the parameters
 * (dt_allreduce_gather). With the ring the same bytes as one allreduce,
 * 2 (K-1)/K P floats per rank; with every algorithm the same parameters
 * as DDP, bit for bit. */
dt_result dt_train_use_zero1(dt_trainer *t);

/* Model parallelism and pipelines (chapters 05, 06; own_layers.c): this
 * rank runs only the layers l with own[l] != 0 (num_layers entries, read
 * now). sync scales their gradients by 1/m (no communication: no other rank
 * holds them); update steps the optimizer on their parameters only, one
 * optimizer per run of consecutive owned layers, its state sized to it.
 * The other layers' parameters never change on this rank. */
dt_result dt_train_use_own_layers(dt_trainer *t, const unsigned char *own);

/* ---------------------------------------------------------------- pipelines
 * Pipeline parallelism (chapter 06; pipeline.c), the reference lab 06 has
 * students write: the model's layers cut into S = v p stages, stage s on
 * rank s % p of the pipeline (v chunks per rank), run in the order of a
 * schedule (dt/sched.h: GPipe, 1F1B, interleaved 1F1B, ZB-H1 or one read
 * from text). The runner replaces t's forward, backward, weight, sync and
 * update hooks; for each step of this rank, in the schedule's order:
 *
 *   F (stage s, micro j)  the input: micro-batch j on stage 0, else the
 *                         activation received from stage s-1's rank; the
 *                         stage's forward (its activations kept), the loss
 *                         on the last stage; the output sent on to stage
 *                         s+1's rank without waiting (dt_isend)
 *   B                     the gradient of the output: the loss's on the last
 *                         stage, else received from stage s+1's rank; the
 *                         backward (or with a split backward only its input
 *                         gradient), the input gradient sent back; the
 *                         activations freed unless a W still needs them
 *   W                     the weight gradients of a split backward; then
 *                         the pair holds nothing
 *   sync                  the sends still in flight completed; each owned
 *                         stage's gradients averaged over t->comm (the
 *                         DATA-PARALLEL group: the ranks that hold the same
 *                         stages in other pipelines; NULL or one rank: none)
 *                         and over the m micro-batches: the mean gradient of
 *                         the global batch; the step's loss broadcast from
 *                         the last stage's rank, so that t->loss is the
 *                         step's on every rank of the pipeline
 *   update                the optimizer on this rank's stages' layers only
 *                         (as dt_train_use_own_layers)
 *
 * Messages carry B T rows of the cut's width (a GPT's stage boundary is C
 * channels per token). Every rank of the pipeline (and of a tensor-parallel
 * group inside a stage, whose model is a shard: dt/tp.h) runs the same
 * batch: dt_train's sampler shards the data over t->comm only. The step's
 * micro_steps must be the schedule's m (dt_train_step names the mismatch).
 * Compute is charged to the clock of c->pipe: DT_CLOCK_MEASURED measures
 * each step, DT_CLOCK_MODELED charges the stage's layers' forward_layer_s
 * (required), backward_s and weight_s. */
typedef struct {
    dt_comm *pipe;               /* the p ranks of this pipeline; rank i runs stages i,
                                    i + p, ... (not owned) */
    const dt_schedule *schedule; /* valid, for p ranks; copied */
    const int *first;            /* S + 1 entries: stage s is layers [first[s], first[s+1]),
                                    first[0] = 0, first[S] = num_layers, increasing; NULL:
                                    dt_pipe_cut's */
    dt_sched_timing *timing;     /* NULL, or made by dt_sched_timing_create for the
                                    schedule: this rank writes the modeled start and end of
                                    each of its steps into its row (its rank in pipe) */
} dt_pipe_config;

/* The cut of L layers into S stages of equal counts, the first L mod S one
 * layer more: stage s is layers [first[s], first[s+1]) (S + 1 entries). */
void dt_pipe_cut(int L, int S, int *first);

/* Makes t a pipeline rank. Fails, leaving t unchanged, with
 * DT_ERR_INVALID_ARG naming what is wrong: a schedule for another number
 * of ranks than pipe's, an invalid one (dt_sched_validate's message), more
 * stages than layers, several chunks on one rank (p = 1, v > 1), a cut
 * that is not increasing, a modeled clock without forward_layer_s; and
 * DT_ERR_UNSUPPORTED when the schedule splits the backward (W steps) and a
 * stage of this rank holds a layer that is not linear (dt_wgrad_create:
 * the split backward runs MLP stages only). Collective over nothing;
 * every rank of the pipeline must call it with the same schedule. */
dt_result dt_train_use_pipeline(dt_trainer *t, const dt_pipe_config *c);

/* ---------------------------------------------------------------- units
 * ZeRO-2 and -3 and FSDP (chapters 08, 09; lib/train/units.c) run the
 * model as consecutive groups of layers, units, and keep each unit's
 * parameters and gradients where they choose: gathered just before the
 * unit runs and freed after, a gradient buffer per unit that lives only
 * until it is reduced. The units runner replaces t's forward and backward
 * hooks: for each micro-batch it runs
 *
 *   forward    for u = 0 .. n-1:  pre_forward(u) -> the unit's parameters;
 *                                 the unit's layers; post_forward(u)
 *              (the loss on the last unit)
 *   backward   for u = n-1 .. 0:  pre_backward(u) -> its parameters and a
 *                                 gradient buffer; the unit's layers'
 *                                 backward, ACCUMULATING (+=) into that
 *                                 buffer; post_backward(u)
 *
 * A unit's parameters (and gradients) are handed over as a buffer of its
 * own: element i is parameter offset + i of the model's flat layout, for
 * i < count. The hooks run outside the compute regions of the modeled
 * clock, so that what they communicate is charged as communication. The
 * runner keeps the activations of one micro-batch at a time (F0 B0 F1 B1
 * ...), and the per-layer gradient hook (t->sync.layer) still hears each
 * layer, with its offset in the model's flat layout. */
typedef struct {
    int first, last;       /* layers [first, last) */
    size_t offset, count;  /* their parameters: [offset, +count) of the flat layout */
} dt_unit;

/* The unit of layers [first, last) of m (0 <= first < last <= num_layers). */
dt_result dt_unit_of(const dt_model *m, int first, int last, dt_unit *out);

typedef struct {
    const char *name;      /* for messages: "zero3", "fsdp", ... */
    dt_result (*pre_forward)(dt_trainer *t, void *self, int u, float **params);
    dt_result (*post_forward)(dt_trainer *t, void *self, int u);
    dt_result (*pre_backward)(dt_trainer *t, void *self, int u, float **params, float **grads);
    dt_result (*post_backward)(dt_trainer *t, void *self, int u);
    void *self;            /* not owned by the runner */
} dt_unit_hooks;

/* Replaces t's forward and backward with the units runner over units[0..n)
 * (copied): consecutive, from layer 0 to the last, each the dt_unit_of its
 * layers. Every hook of h must be set. With DT_CLOCK_MODELED a unit's
 * forward costs its layers' entries of t->cfg.forward_layer_s (a forward_s
 * for the whole model cannot be split: DT_ERR_INVALID_ARG). Leaves t
 * unchanged on failure. */
dt_result dt_train_use_units(dt_trainer *t, const dt_unit *units, int n, const dt_unit_hooks *h);

/* FSDP (chapter 09; lib/train/fsdp.c): ZeRO-3 by units. The layers are
 * wrapped into units (a unit closes once it holds min_unit_params
 * parameters; 0: one layer each); rank r keeps only its shard of each
 * unit (padded to K shards), the mean gradient of it and its optimizer
 * state. The forward gathers each unit (asynchronous all-gather) and,
 * with reshard_after_forward, frees it after; the backward gathers it
 * again, reduce-scatters (average) its gradients into the shard and frees
 * both; with prefetch the next unit's all-gather starts before this unit
 * computes. Per step: 3 psi (K-1)/K floats sent per rank, 2 psi without
 * resharding; at most two units gathered at once. Takes over the model's
 * parameters: m->params and m->grads (dt_mem blocks, as the model's
 * constructors make them) are freed and NULL; dt_train_fsdp_params gives
 * them back. One micro-batch a step (else the step fails,
 * DT_ERR_UNSUPPORTED). Needs a communicator; t unchanged on failure. */
typedef struct {
    size_t min_unit_params;
    int prefetch;
    int reshard_after_forward;
    /* may be NULL: called after each unit's forward ("f") and backward
       ("b"), and after the sync and the update (unit -1), e.g. to read
       the memory accounting over a step */
    void (*probe)(void *arg, const char *event, int unit);
    void *probe_arg;
} dt_fsdp_config;

dt_result dt_train_use_fsdp(dt_trainer *t, const dt_fsdp_config *c);

/* out (num_params floats) := the whole model's parameters, on every rank
 * of an FSDP trainer. Collective. */
dt_result dt_train_fsdp_params(dt_trainer *t, float *out);

/* SGD folded into the backward's weight-gradient product (fused_sgd.c).
 * Applies to plain SGD (no momentum, no weight decay, lr > 0) of a model
 * of linear layers on one rank, one micro-batch a step; otherwise fails
 * with DT_ERR_UNSUPPORTED saying which condition does not hold, and t is
 * unchanged. The same parameters as the reference (backward, then
 * dt_sgd_update) up to float rounding. */
dt_result dt_train_fused_sgd_applies(const dt_trainer *t);
dt_result dt_train_use_fused_sgd(dt_trainer *t);

/* ---------------------------------------------------------------- for hooks */

/* A backward hook calls this as each layer's gradients are complete: it
 * passes them to t->sync.layer. */
dt_result dt_train_layer_ready(dt_trainer *t, int layer, size_t offset, size_t count);

/* Compute done by a hook, charged to the modeled clock as t->cfg.clock
 * says: begin/end measure it (DT_CLOCK_MEASURED), or end advances the
 * clock by modeled_s (DT_CLOCK_MODELED). */
dt_result dt_train_compute_begin(dt_trainer *t);
dt_result dt_train_compute_end(dt_trainer *t, double modeled_s);

/* The activations of micro-batch t->micro: dt_train_acts_take in its
 * forward (a free dt_acts of the batch's shape, made if none is free),
 * dt_train_acts_of in its backward, dt_train_acts_give after it. */
dt_result dt_train_acts_take(dt_trainer *t, dt_acts **a);
dt_acts *dt_train_acts_of(const dt_trainer *t);
void dt_train_acts_give(dt_trainer *t);

/* ---------------------------------------------------------------- training runs */

#define DT_TRAIN_EVERY_EPOCH (-1L)

typedef struct {
    long step, steps;        /* steps done, of */
    long epoch;              /* epochs done (whole) */
    float loss;              /* mean training loss since the last report, over the ranks */
    float accuracy;          /* on the test set, -1 without one */
    double samples_per_s;    /* since the last report, all ranks together */
    double bytes_per_step;   /* sent by rank 0, mean since the last report */
} dt_train_progress;

typedef struct {
    size_t batch;            /* samples per rank per step */
    int micro_steps;         /* micro-batches per step, dividing batch (0 or 1: one) */
    long steps;              /* steps to run, when epochs is 0 */
    long epochs;             /* > 0: that many epochs of this rank's shard instead */
    uint64_t seed;           /* the data order (the sampler's shuffle) */
    double time_budget_s;    /* one rank only: stop once this much time has gone (0: none) */
    long report_every;       /* steps between reports, and after the last step;
                                DT_TRAIN_EVERY_EPOCH: at each epoch's end; 0: none */
    const dt_dataset *test;  /* evaluated by rank 0 at each report and at the end; may be NULL */
    void (*progress)(void *arg, const dt_train_progress *p); /* rank 0; may be NULL */
    void *progress_arg;
} dt_train_config;

typedef struct {
    long steps;
    double seconds;          /* wall time of the steps, from a barrier of the ranks */
    double report_s;         /* of seconds, the reports' (the loss averaged over the ranks;
                                rank 0's evaluation of the test set): seconds - report_s is
                                the steps' own time, that of the progress lines together */
    double modeled_s;        /* the modeled clock over the same (0 without a communicator) */
    double step_ms_median;   /* wall time of a step (forward to update) */
    double step_cpu_ms_median; /* CPU time of the calling thread in a step: what the step
                                  itself costs on a shared machine (with one BLAS thread) */
    double forward_ms_median, backward_ms_median, sync_ms_median, update_ms_median;
    double samples_per_s;    /* global batch (all ranks) / median step time */
    double bytes_per_step;   /* sent by this rank, mean over the steps */
    float final_loss;        /* this rank's mean loss over the last (up to) 10 steps */
    float accuracy;          /* rank 0: on the test set after the last step; -1 without one
                                or on other ranks */
} dt_train_result;

/* batch 32, 100 steps, seed 1, reports every 100 steps, no test set. */
dt_train_config dt_train_defaults(void);

/* Trains t's model on train, this rank's shard of each epoch from the
 * distributed sampler (shuffled from seed, drop_last: every rank runs the
 * same number of steps, each epoch's batches are full). A classification
 * set for the MLPs, a sequence set for GPT. Collective on t->comm. */
dt_result dt_train(dt_trainer *t, const dt_dataset *train, const dt_train_config *c,
                   dt_train_result *res);

/* Accuracy (fraction of rows whose argmax is the label) and mean loss of m
 * on d, in batches of `batch`, on the reference path; either output may be
 * NULL. */
dt_result dt_evaluate(dt_model *m, const dt_dataset *d, size_t batch, float *accuracy,
                      float *loss);

#ifdef __cplusplus
}
#endif

/* A trainer's state for checkpoints, and data, tensor and pipeline
 * parallelism together (chapter 13). */
#include "dt/train_state.h"
#include "dt/parallel.h"

#endif /* DT_TRAIN_H */
