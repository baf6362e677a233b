/* model_internal.h - what model.c offers the rest of lib/nn: building a
 * GPT's tables with the shapes of a tensor-parallel shard (tp_model.c).
 * Not a public header. */
#ifndef DT_NN_MODEL_INTERNAL_H
#define DT_NN_MODEL_INTERNAL_H

#include "dt/nn.h"

/* A GPT's sizes, and t: 1 for the whole model, else the shapes of a shard
 * over t ranks (dt/tp.h: column-parallel tensors keep 1/t of their rows,
 * row-parallel weights 1/t of their columns). */
typedef struct {
    dt_gpt_config g;
    size_t t;
} nn_gpt_shape;

/* m := a GPT of cfg's layers and named views with t's shapes, parameters
 * initialised from seed (a shard's are then copied from the whole), as
 * dt_gpt_create does for t = 1. cfg is checked by the caller; t divides
 * its heads and vocabulary. */
dt_result nn_gpt_build(dt_model *m, const dt_gpt_config *cfg, size_t t, uint64_t seed);

#endif /* DT_NN_MODEL_INTERNAL_H */
