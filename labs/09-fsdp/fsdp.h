/* fsdp.h - lab 09: fully sharded data parallelism (FSDP), ZeRO-3 organised
 * by units. Read chapters/09-fsdp.md first (and chapter 08 before it).
 *
 * The model is wrapped into units, groups of consecutive layers (a
 * transformer block, a few layers of an MLP). Between steps each rank
 * holds only its shard of each unit's parameters (padded to K shards, as
 * in lab 08), its shard of the mean gradient, and the optimizer state of
 * its shards. In a step, for each unit:
 *
 *   forward    all-gather the unit's parameters, run it, free them
 *              (unless resharding after the forward is off)
 *   backward   all-gather them again (if freed), run the unit's backward,
 *              reduce-scatter its gradients into the shard, free both
 *
 * What makes it fast is prefetching: the all-gather of the unit that runs
 * next starts before this unit computes, so that the network works while
 * the processor does. The collectives are asynchronous (dt_iallgather,
 * dt_ireduce_scatter: a dt_request per unit); the modeled clock charges
 * only what the compute does not hide (dt/comm.h, "async").
 *
 * The tasks, in order (the chapter's section 8 says which section derives
 * each):
 *   1. lab_fsdp_wrap                      units from the model's layers
 *   2. lab_fsdp_unshard_start,            a unit's parameters gathered
 *      lab_fsdp_unshard_wait,               (asynchronously) and freed
 *      lab_fsdp_reshard
 *   3. lab_fsdp_reduce_start,             a unit's gradients reduce-scattered
 *      lab_fsdp_reduce_wait                 into the shard (asynchronously), freed
 *   4. lab_fsdp_pre_forward, _post_forward,   the schedule: when each unit is
 *      lab_fsdp_pre_backward, _post_backward  gathered, prefetched, freed, reduced
 *   5. lab_fsdp_predict_peak              predict, then measure: the memory
 *                                           a step of the schedule holds
 *
 * The code outside the fences of fsdp.c (lab_fsdp_init, lab_fsdp_step,
 * lab_fsdp_params, lab_fsdp_free, the loop's hooks and the update) is
 * given. Memory is charged with dt_mem_alloc (tags PARAM, GRAD, OPTIM):
 * the tests read those figures. */
#ifndef LAB_FSDP_H
#define LAB_FSDP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

typedef struct {
    dt_optim_config optim;
    size_t min_unit_params;  /* the wrap policy (task 1): a unit closes once it holds
                                at least this many parameters; 0: one layer each */
    int prefetch;            /* 1: start the all-gather of the unit that runs next
                                before this one computes (forward and backward) */
    int reshard_after_forward; /* 1: free a unit's parameters after its forward and
                                gather them again for its backward (ZeRO-3); 0:
                                keep them until its backward is done */
    const double *forward_layer_s; /* modeled compute of each layer's forward and */
    const double *backward_s;      /* backward (num_layers entries each, not copied),
                                      charged to the modeled clock; NULL: none */
} lab_fsdp_config;

/* One unit and what this rank holds of it. NULL: not held now. */
typedef struct {
    dt_unit unit;            /* layers [first, last), parameters [offset, +count) */
    size_t shard;            /* elements per rank: the smallest with K shard >= count */
    float *param_shard;      /* shard floats, PARAM: this rank's shard [r shard, +shard)
                                of the padded parameters, the only copy between steps */
    float *grad_shard;       /* shard floats, GRAD: the mean gradient of that shard */
    float *params;           /* K shard floats, PARAM: the whole (padded) parameters,
                                from the start of their all-gather until resharded */
    float *grads;            /* K shard floats, GRAD: this rank's gradients of the unit,
                                from its backward until their reduce-scatter is done */
    dt_request *gather;      /* the all-gather into params in flight, or NULL */
    dt_request *reduce;      /* the reduce-scatter of grads in flight, or NULL */
    dt_optimizer opt;        /* over the shard */
} lab_fsdp_unit;

typedef struct {
    dt_comm *comm;
    int rank, ranks;         /* r and K */
    lab_fsdp_config cfg;
    int num_units;
    lab_fsdp_unit *units;
    dt_trainer trainer;      /* the loop: the units runner and the hooks of fsdp.c */
    dt_model *model;         /* not owned; its params and grads are freed by
                                lab_fsdp_init: the units hold the parameters */
} lab_fsdp;

/* ------------------------------------------------------------ given code */

/* Sets up f for model m (the same parameters on every rank) on comm: the
 * units of lab_fsdp_wrap, each rank's shards, the optimizer of each shard,
 * and the training loop (the units runner, dt/train.h) whose hooks call
 * task 4's functions; frees m->params and m->grads. f must stay where it
 * is until lab_fsdp_free. On failure f is left freed and m untouched.
 * Collective. */
dt_result lab_fsdp_init(lab_fsdp *f, dt_comm *comm, dt_model *m, const lab_fsdp_config *cfg);
void lab_fsdp_free(lab_fsdp *f);

/* One step on this rank's batch (one micro-batch: b->micro_steps = 1).
 * *loss (may be NULL) gets this rank's mean loss. Collective. */
dt_result lab_fsdp_step(lab_fsdp *f, const dt_batch *b, float *loss);

/* out (the model's num_params floats) := the whole model's parameters, on
 * every rank. Collective. */
dt_result lab_fsdp_params(lab_fsdp *f, float *out);

/* ------------------------------------------------------------ task 1 */

/* The wrap policy: m's layers, first to last, grouped into consecutive
 * units; a unit closes as soon as it holds at least min_params
 * parameters; the last unit takes the layers left. Writes the units (each
 * dt_unit_of its layers) to units (room for m->num_layers) and their
 * number to *n. */
dt_result lab_fsdp_wrap(const dt_model *m, size_t min_params, dt_unit *units, int *n);

/* ------------------------------------------------------------ task 2 */

/* Starts gathering unit u's parameters: afterwards params is allocated
 * (K shard floats, PARAM) and an all-gather of every rank's param_shard
 * into it is in flight (gather), unless the unit is gathered or being
 * gathered already (then nothing happens). Collective (every rank starts
 * the same all-gathers in the same order). */
dt_result lab_fsdp_unshard_start(lab_fsdp *f, int u);

/* Afterwards unit u's params hold its whole parameters and no gather is
 * in flight (starting one first if none was). Collective. */
dt_result lab_fsdp_unshard_wait(lab_fsdp *f, int u);

/* Frees unit u's gathered parameters (params NULL). */
dt_result lab_fsdp_reshard(lab_fsdp *f, int u);

/* ------------------------------------------------------------ task 3 */

/* Unit u's backward is done (grads holds this rank's gradients): starts
 * the reduce-scatter that leaves in grad_shard the mean over the ranks of
 * this rank's shard of them. Collective. */
dt_result lab_fsdp_reduce_start(lab_fsdp *f, int u);

/* Afterwards unit u's reduce-scatter (if one is in flight) is done and
 * its full gradients are freed (grads NULL). */
dt_result lab_fsdp_reduce_wait(lab_fsdp *f, int u);

/* ------------------------------------------------------------ task 4 */

/* The schedule, called by the given hooks around each unit u of the
 * units runner (dt/train.h): forward u = 0 .. n-1, backward u = n-1 .. 0.
 * Postconditions:
 *   pre_forward    u's params hold its whole parameters; with prefetch
 *                  the gather of the next unit to run is in flight
 *   post_forward   with reshard_after_forward u's params are freed
 *   pre_backward   u's params hold its parameters and its grads (K shard
 *                  floats, GRAD, zeroed) are allocated; with prefetch the
 *                  gather of the next unit to run is in flight
 *   post_backward  u's reduce-scatter is started and its params freed; at
 *                  most the gradients of u and of the unit before it in
 *                  the backward are held in full
 * and the ranks issue the same collectives in the same order. After the
 * backward the given sync waits for every reduce-scatter. */
dt_result lab_fsdp_pre_forward(lab_fsdp *f, int u);
dt_result lab_fsdp_post_forward(lab_fsdp *f, int u);
dt_result lab_fsdp_pre_backward(lab_fsdp *f, int u);
dt_result lab_fsdp_post_backward(lab_fsdp *f, int u);

/* ------------------------------------------------------------ task 5 */

/* Predict, then measure (sections 1, 3 and 5): *param and *grad := the
 * peak bytes of PARAM and of GRAD one rank holds over a step of
 * lab_fsdp_step (the shards included) for model m on `ranks` ranks with
 * cfg's wrap policy, prefetch and reshard_after_forward, under task 4's
 * schedule: worked out from the units and their padding, without running
 * a step. The tests then run that step and compare, byte for byte. ranks
 * < 1 or a NULL argument: DT_ERR_INVALID_ARG. */
dt_result lab_fsdp_predict_peak(const dt_model *m, const lab_fsdp_config *cfg, int ranks,
                                size_t *param, size_t *grad);

#endif /* LAB_FSDP_H */
