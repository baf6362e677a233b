/* zero.h - lab 08: ZeRO, stages 1 to 3. Read chapters/08-zero.md first.
 *
 * Data parallelism (chapter 03) keeps the whole model on every rank: the
 * parameters, their gradients and the optimizer's state, 16 bytes per
 * parameter with fp32 and AdamW. ZeRO removes the copies, one kind after
 * another: stage 1 partitions the optimizer state across the K ranks,
 * stage 2 the gradients too, stage 3 the parameters as well. Each rank
 * then owns 1/K of every partitioned state, its SHARD, and the ranks
 * communicate what a step needs from the others.
 *
 * The model runs unit by unit (dt_train_use_units, dt/train.h): a unit is
 * a group of consecutive layers, and its parameters, seen as one flat
 * range of `count` floats, are padded with zeros to K * shard floats, so
 * that every rank owns exactly `shard` of them: rank r owns elements
 * [r * shard, (r + 1) * shard) of the padded unit. The units are
 *   stages 0 and 1   one unit, the whole model
 *   stage 2          buckets of layers (their gradients are reduced together)
 *   stage 3          one unit per layer (each layer gathered on its own)
 *
 * The tasks, in order (the chapter's section 9 says which section derives
 * each):
 *   1. lab_zero_shard_size          the padded shard of a unit
 *   2. lab_zero_setup_unit          what each stage keeps, and where
 *   3. lab_zero1_reduce_scatter,    ZeRO-1: each rank the mean gradient of its
 *      lab_zero_update                shard; the optimizer on the shard; the
 *                                     parameters whole again on every rank
 *   4. lab_zero_reduce_unit         ZeRO-2: a unit's gradients reduced into the
 *                                     shard as soon as the backward made them
 *   5. lab_zero_gather,             ZeRO-3: a unit's parameters whole only while
 *      lab_zero_release               it runs
 *   6. lab_zero_predict             predict, then measure: what a step of a stage
 *                                     sends and how long it takes on a network
 *
 * The code outside the fences of zero.c (lab_zero_init, lab_zero_step,
 * lab_zero_params, lab_zero_free and the hooks they give the training
 * loop) is given. Memory is charged to the rank with dt_mem_alloc (tags
 * PARAM, GRAD, OPTIM): the tests read those figures. */
#ifndef LAB_ZERO_H
#define LAB_ZERO_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/net.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

typedef enum {
    LAB_ZERO_DDP = 0, /* stage 0: data parallelism, every state in full on every rank */
    LAB_ZERO_1,       /* the optimizer state partitioned */
    LAB_ZERO_2,       /* and the gradients */
    LAB_ZERO_3        /* and the parameters */
} lab_zero_stage;

/* One unit and what this rank holds of it. NULL means "not held now". Which
 * of the four buffers a stage holds, how many floats and when, is for you
 * to work out from the chapter (section 2: what a stage keeps between
 * steps; sections 4 and 5: what it holds for a while during a step;
 * section 6: the padding); the tests read each buffer of a stage and its
 * bytes under its tag (PARAM for parameters, GRAD for gradients, OPTIM for
 * the optimizer's state). */
typedef struct {
    dt_unit unit;         /* layers [first, last), parameters [offset, +count) of
                             the model's flat layout (dt/train.h) */
    size_t shard;         /* the elements each rank owns of the padded unit (task 1);
                             stage 0 does not partition: shard = count, nothing
                             padded */
    float *params;        /* the unit's whole parameters, in the padded layout the
                             collectives see (section 6) */
    float *grads;         /* this rank's gradients of the whole unit, in that layout */
    float *param_shard;   /* this rank's shard of the parameters: element i is element
                             r * shard + i of the padded unit */
    float *grad_shard;    /* this rank's shard of the mean gradient, indexed the same */
    dt_optimizer opt;     /* the optimizer of what this rank updates */
} lab_zero_unit;

/* Called by the given hooks after each event of a step, for run.c's
 * memory timeline: event is "f" / "b" (a unit's forward / backward
 * done), "sync" or "update"; unit is -1 for the last two. */
typedef void (*lab_zero_probe)(void *arg, const char *event, int unit);

typedef struct {
    lab_zero_stage stage;
    dt_optim_config optim;
    size_t bucket_bytes;  /* stage 2: walking the layers from the last, a bucket
                             closes once it holds at least this many bytes of
                             gradients (chapter 03, section 6); 0: one layer each */
    lab_zero_probe probe; /* may be NULL */
    void *probe_arg;
} lab_zero_config;

typedef struct {
    dt_comm *comm;
    int rank, ranks;      /* r and K */
    lab_zero_config cfg;
    int num_units;
    lab_zero_unit *units;
    dt_trainer trainer;   /* the loop: the units runner and the hooks of zero.c */
    dt_model *model;      /* not owned; its params and grads are freed by
                             lab_zero_init: the units hold the parameters */
} lab_zero;

/* ------------------------------------------------------------ given code */

/* Sets up z for model m on comm: the units of the stage, each set up by
 * lab_zero_setup_unit from m's parameters (the same on every rank: the
 * caller made m from one seed), and the training loop with the hooks of
 * zero.c. Then frees m->params and m->grads (NULL): from here on the
 * parameters live in the units. z must stay where it is until
 * lab_zero_free. On failure z is left freed (and m untouched). Collective. */
dt_result lab_zero_init(lab_zero *z, dt_comm *comm, dt_model *m, const lab_zero_config *cfg);
void lab_zero_free(lab_zero *z);

/* One step on this rank's batch of B samples (x: B rows of the model's
 * input width, labels B entries). *loss (may be NULL) gets this rank's
 * mean loss. Collective. */
dt_result lab_zero_step(lab_zero *z, const float *x, const int32_t *labels, size_t B,
                        float *loss);

/* out (the model's num_params floats) := the whole model's parameters, on
 * every rank. Collective (stage 3 gathers them with lab_zero_gather). */
dt_result lab_zero_params(lab_zero *z, float *out);

/* ------------------------------------------------------------ task 1 */

/* *shard := the smallest number with ranks * shard >= count: every rank
 * owns as many elements, the last ones padding (0 when count is 0).
 * ranks < 1 or shard NULL: DT_ERR_INVALID_ARG. */
dt_result lab_zero_shard_size(size_t count, int ranks, size_t *shard);

/* ------------------------------------------------------------ task 2 */

/* Fills the shard, buffers and optimizer of z->units[u] (its unit field
 * is set) for stage z->cfg.stage, from init (the model's parameters in
 * its flat layout): allocates (dt_mem_alloc, under the buffer's tag)
 * exactly what the stage keeps between steps (section 2's table, with
 * section 6's padding), holding the initial parameters, the padding 0,
 * and sets up an optimizer of z->cfg.optim over what this rank updates.
 * Leaves NULL what the stage does not keep. On failure what it allocated
 * may stay in the unit (lab_zero_free frees it). */
dt_result lab_zero_setup_unit(lab_zero *z, int u, const float *init);

/* ------------------------------------------------------------ task 3 */

/* Stage 1's synchronisation, once per step after the backward: for every
 * unit, this rank's shard of grads (elements [r * shard, +shard)) becomes
 * the mean over the ranks of that shard. Only the shard needs to be
 * right afterwards. Collective. */
dt_result lab_zero1_reduce_scatter(lab_zero *z);

/* The update, once per step after the synchronisation, every stage: one
 * step of each unit's optimizer on what this rank updates, with the mean
 * gradient; afterwards stages 0 to 2 hold the whole updated parameters
 * (params) on every rank, stage 3 its updated shard (param_shard).
 * Collective. */
dt_result lab_zero_update(lab_zero *z);

/* ------------------------------------------------------------ task 4 */

/* Stages 2 and 3, called by the given hook right after unit u's backward
 * (grads holds this rank's gradients of the unit): afterwards grad_shard
 * holds the mean over the ranks of this rank's shard of them, and the
 * rank holds no other gradients of the unit (grads NULL): section 4.
 * Collective. */
dt_result lab_zero_reduce_unit(lab_zero *z, int u);

/* ------------------------------------------------------------ task 5 */

/* Stage 3: afterwards unit u's params hold its whole parameters (the
 * padded unit, every rank's shard in its place) and are charged to PARAM
 * while held. Called before the unit's forward and before its backward.
 * A unit gathered already is the caller's bug: DT_ERR_STATE. Collective. */
dt_result lab_zero_gather(lab_zero *z, int u);

/* Stage 3: afterwards the rank holds no whole parameters of unit u
 * (params NULL). Called after the unit's forward and after its backward. */
dt_result lab_zero_release(lab_zero *z, int u);

/* ------------------------------------------------------------ task 6 */

/* What one step costs a rank in communication. */
typedef struct {
    double bytes_sent; /* bytes the rank sends in the step (every rank the same) */
    double comm_s;     /* seconds of the step's collectives on the modeled clock */
} lab_zero_cost;

/* Predict, then measure (sections 6, 7 and 9): *out := the bytes each rank
 * sends and the modeled time of the collectives in one step of stage
 * cfg->stage (1, 2 or 3; bucket_bytes as cfg says) of lab_zero_step for
 * model m on `ranks` ranks, ring algorithm, over link: worked out from
 * the chapter's formulas, with this lab's units and padding, without
 * running a step. The tests then run that step and compare, exactly.
 * Stage 0, ranks < 1 or a NULL argument: DT_ERR_INVALID_ARG. */
dt_result lab_zero_predict(const dt_model *m, const lab_zero_config *cfg, int ranks,
                           const dt_net *link, lab_zero_cost *out);

#endif /* LAB_ZERO_H */
