/* dt/optim.h - optimizers over a flat range of parameters.
 *
 * A model's parameters and gradients are flat buffers (dt/nn.h), so an
 * optimizer only ever sees a range [offset, offset + count) of them: the
 * whole model, one layer, or the shard a ZeRO rank owns. Its state (tag
 * OPTIM) covers exactly that range and nothing else:
 *   SGD with momentum: 1 float per parameter (none without momentum)
 *   AdamW:             2 floats per parameter (first and second moments)
 *
 * The update rules are PyTorch's (torch.optim.SGD with dampening 0, and
 * torch.optim.AdamW), so a run can be compared number for number. */
#ifndef DT_OPTIM_H
#define DT_OPTIM_H

#include "dt/ckpt.h"
#include "dt/core.h"
#include "dt/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DT_OPTIM_SGD = 0, DT_OPTIM_ADAMW } dt_optim_kind;

typedef struct {
    dt_optim_kind kind;
    float lr;
    float weight_decay; /* SGD: added to the gradient (L2); AdamW: decoupled */
    float momentum;     /* SGD only; 0: plain SGD, no state */
    float beta1, beta2; /* AdamW only */
    float eps;          /* AdamW only */
} dt_optim_config;

/* PyTorch's defaults: SGD(lr) with no momentum and no decay; AdamW(lr) with
 * betas (0.9, 0.999), eps 1e-8, weight decay 0.01. */
dt_optim_config dt_sgd_config(float lr, float momentum, float weight_decay);
dt_optim_config dt_adamw_config(float lr);

/* ---------------------------------------------------------------- the rules
 * On a range given by pointers to its first element, count elements each.
 * step is 1 for the first update. NULL is refused unless count is 0. */

/* g = grad + wd p;  buf = momentum buf + g (buf starts at 0);  p -= lr buf
 * (without momentum: p -= lr g; buf may be NULL). */
dt_result dt_sgd_update(const dt_optim_config *cfg, float *params, const float *grads,
                        float *momentum_buf, size_t count);

/* p -= lr wd p;  m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
 * p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps). */
dt_result dt_adamw_update(const dt_optim_config *cfg, float *params, const float *grads,
                          float *m, float *v, size_t count, long step);

/* ---------------------------------------------------------------- the object */

typedef struct {
    dt_optim_config cfg;
    size_t offset, count; /* the flat range it updates */
    float *state;         /* slots * count floats, tag OPTIM; NULL when none */
    int slots;            /* floats of state per parameter: 0, 1 or 2 */
    long step;            /* updates done */
} dt_optimizer;

/* An optimizer for the range [offset, offset + count) of a flat buffer, its
 * state zeroed. count 0 (an empty shard) is allowed and steps do nothing. */
dt_result dt_optim_init(dt_optimizer *o, const dt_optim_config *cfg, size_t offset,
                        size_t count);
void dt_optim_free(dt_optimizer *o);

/* One update of the range. params and grads are the FULL flat buffers: the
 * range is read and written at [offset, offset + count). */
dt_result dt_optim_step(dt_optimizer *o, float *params, const float *grads);

/* The same when params and grads hold only the range (a shard): their
 * element 0 is flat index offset. */
dt_result dt_optim_step_shard(dt_optimizer *o, float *params_shard, const float *grads_shard);

/* Bytes of state per parameter of a config (8 for AdamW, 4 or 0 for SGD). */
size_t dt_optim_state_bytes_per_param(const dt_optim_config *cfg);

/* The optimizer's state in a checkpoint (dt/ckpt.h), saved or loaded as io
 * is, under name:
 *     NAME.range  u64 [2]             offset and count: must match on load
 *     NAME.step   i64                 updates done
 *     NAME.state  f32 [slots, count]  momentum, or Adam's m then v
 * Loading needs an optimizer made for the same range and kind (its slots);
 * the configuration (lr, ...) is not saved: a resumed run may change it. */
dt_result dt_optim_state(dt_optimizer *o, dt_ckpt_io *io, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DT_OPTIM_H */
