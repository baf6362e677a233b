/* dt/train_state.h - a trainer's state for checkpoints.
 * Part of the train layer: dt/train.h includes it after its
 * declarations; include dt/train.h, not this file.
 *
 * Everything the next steps depend on, saved and loaded through a
 * dt_ckpt_io (dt/ckpt.h) by one call, dt_train_state. Its records:
 *
 *   trainer.step       i64              steps done
 *   model.params       f32 [num_params] when the model holds them (not under FSDP)
 *   SLOT.hook          u8 [len]         the hook's name, checked on load
 *   SLOT.*             the hook's state, for each slot (forward, backward,
 *                      sync, update, weight) whose hook keeps one:
 *     update "sgd", "adamw"  update.optimizer.*   (dt_optim_state)
 *     update "zero1"         update.shard.*: the optimizer of this rank's block
 *     update "fsdp"          update.units (u64 [n, 2], each unit's offset and
 *                            count, checked), update.unitI.params (f32 [c],
 *                            this rank's shard), update.unitI.optimizer.*
 *     update "own_layers"    update.runI.* for each run of owned layers
 *     update "pipeline"      update.runI.*: the own-layers update it runs (the
 *                            pipeline keeps nothing else between steps)
 *     forward "units"        (nothing between steps)
 *
 * A hook whose self is NULL keeps nothing. A hook with a self must have a
 * state (dt_train_set_state), or share its self with a slot that has one
 * (ZeRO-1's sync and update): otherwise dt_train_state fails, naming it,
 * rather than write a checkpoint that silently lacks what the hook keeps
 * (chapter 10, section 7: error-feedback residuals lost on a resume).
 * What lies outside the trainer (the sampler's position, RNG streams) the
 * caller adds to the same io: dt_sampler_state, dt_ckpt_io_rng. */
#ifndef DT_TRAIN_STATE_H
#define DT_TRAIN_STATE_H

#include "dt/ckpt.h"
#include "dt/train.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Gives the hook now in *slot (one of t's five) its state s (copied). It
 * holds while the slot keeps that hook (the same run and self); another
 * call for the slot replaces it. */
dt_result dt_train_set_state(dt_trainer *t, const dt_hook *slot, const dt_hook_state *s);

/* Visits t's state through io: saves it, or loads it (all or nothing: the
 * values land at dt_ckpt_io_end, and a failed load changes nothing).
 * Between steps; every rank of a collective strategy on its own file
 * (chapter 14 adds the manifest). Loading needs a trainer set up as the
 * saved one was (model, strategy, ranks, optimizer kind). */
dt_result dt_train_state(dt_trainer *t, dt_ckpt_io *io);

/* The optimizers t's update steps, for a checkpoint or a look at their
 * state: up to max of them into o, *n how many there are. The default
 * update: 1 over every parameter, made at once if no update has run (a
 * zeroed state, step 0, as the first update would make it); ZeRO-1: 1
 * (over this rank's block of the allreduce's cut); FSDP: one per
 * unit, over this rank's shard of it; own layers and a pipeline: one per
 * run of this rank's layers; fused SGD and a hook whose self is NULL: 0.
 * An update that keeps state and has none given (dt_train_set_state) is
 * DT_ERR_UNSUPPORTED, naming it. */
dt_result dt_train_optimizers(dt_trainer *t, dt_optimizer **o, int max, int *n);

/* The optimizer of the default update (the optimizer over every
 * parameter): its state (o->slots x o->count floats, momentum or Adam's
 * moments) and its step count may be read and written between steps.
 * Before the first update the state is made now, zeroed at step 0, as
 * that update would make it. DT_ERR_UNSUPPORTED when t's update is another
 * hook: dt_train_optimizers gives those of every update of the library. */
dt_result dt_train_optimizer(dt_trainer *t, dt_optimizer **o);

#ifdef __cplusplus
}
#endif

#endif /* DT_TRAIN_STATE_H */
