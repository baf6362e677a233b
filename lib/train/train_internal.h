/* train_internal.h - what the files of lib/train share: the default sync
 * and update hooks (sync.c, update.c) and the scale of a step's
 * micro-batches. Not a public header. */
#ifndef DT_TRAIN_INTERNAL_H
#define DT_TRAIN_INTERNAL_H

#include "dt/train.h"

/* sync "local" (one rank, no communicator) and "allreduce" (DDP). */
dt_hook train_sync_local(void);
dt_hook train_sync_allreduce(void);

/* Sets *slot to the update "optimizer" over every parameter. */
dt_result train_update_optimizer(dt_trainer *t, dt_hook *slot);

/* grads[offset, +count) *= 1/m when the step ran m > 1 micro-batches: the
 * backward summed m micro-batch means. */
dt_result train_scale_micro(dt_trainer *t, size_t offset, size_t count);

/* dt_train_compute_begin and _end on the clock of comm, another
 * communicator of the rank than t->comm (the pipeline's, pipeline.c). */
dt_result train_compute_begin_on(const dt_trainer *t, dt_comm *comm);
dt_result train_compute_end_on(const dt_trainer *t, dt_comm *comm, double modeled_s);

/* The modeled time of the forward of layers [first, last) (trainer.c). */
double train_forward_cost(const dt_trainer *t, int first, int last);

/* The update that does nothing (its work was done elsewhere). */
dt_hook train_update_none(const char *name);

/* The state given (dt_train_set_state) for the hook now in *slot, one of
 * t's five; NULL when none holds (state.c). For a hook that takes another
 * over, with its state (the pipeline's update runs own_layers'). */
const dt_hook_state *train_state_given(dt_trainer *t, const dt_hook *slot);

#endif /* DT_TRAIN_INTERNAL_H */
