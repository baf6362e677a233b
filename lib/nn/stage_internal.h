/* stage_internal.h - what the stage code of lib/nn shares between its
 * files: the transformer layers' part (gpt_block.c) and the feature-major
 * path (feature_major.c), both called from stage.c. Not a public header. */
#ifndef DT_NN_STAGE_INTERNAL_H
#define DT_NN_STAGE_INTERNAL_H

#include "dt/nn.h"

/* floats of activation memory (tag ACT), NULL for 0 */
float *nn_act_alloc(size_t floats);

/* ---------------------------------------------------------------- gpt_block.c */

/* Floats a block (DT_LAYER_BLOCK) of m keeps for its backward (saved) and
 * uses as temporaries in it (scratch), for r = B * T rows (a
 * tensor-parallel shard's heads and hidden units are 1/t of the whole's);
 * the head (DT_LAYER_HEAD) keeps lnf, mean, rstd and uses r * C floats of
 * scratch. */
size_t nn_block_saved_floats(const dt_model *m, size_t B, size_t T);
size_t nn_block_scratch_floats(const dt_model *m, size_t rows);
size_t nn_head_saved_floats(size_t rows, size_t C);

/* Layer `layer` of a's stage: y (rows x C) from x, keeping what the
 * backward needs in sv (a->saved of the layer). */
dt_result nn_block_forward(const dt_model *m, dt_acts *a, int layer, float *sv, const float *x,
                           float *y);
dt_result nn_head_forward(const dt_model *m, dt_acts *a, int layer, float *sv, const float *x,
                          float *y);
/* dy -> dx (+=), parameter gradients accumulated into G (a buffer of the
 * parameters' layout, not the parameters themselves). */
dt_result nn_block_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                            const float *x, const float *dy, float *dx, float *G);
dt_result nn_head_backward(const dt_model *m, dt_acts *a, int layer, const float *sv,
                           const float *x, const float *dy, float *dx, float *G);

/* ---------------------------------------------------------------- feature_major.c */

/* Whether the feature-major layout applies to layers [first, last) with
 * this many rows: all linear, and rows below the widest layer. */
int nn_fm_applies(const dt_model *m, int first, int last, size_t rows);
/* Allocates a->fm for a's stage (a's reference buffers exist). */
dt_result nn_fm_create(dt_acts *a);
void nn_fm_free(dt_acts *a);
/* The forward from a->input, filling a->out as the reference does. */
dt_result nn_fm_forward(const dt_model *m, dt_acts *a);
/* The backward from dy in a->dbuf[0] (rows x out_width, batch-major), as
 * dt_model_backward_into. */
dt_result nn_fm_backward(dt_model *m, dt_acts *a, float *dinp, dt_grad_hook hook, void *hook_arg,
                         float *grads, float scale);

#endif /* DT_NN_STAGE_INTERNAL_H */
