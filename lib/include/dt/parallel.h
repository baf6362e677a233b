/* dt/parallel.h - 3D parallelism. Part of the train layer: dt/train.h
 * includes it after its declarations; include dt/train.h, not this file.
 *
 * Data, tensor and pipeline parallelism together (chapter 13;
 * parallel.c). A world of D x P x T ranks is laid out TP innermost (the
 * fastest links: consecutive ranks, one node), PP next, DP outermost:
 *
 *   world rank w = (d P + p) T + t
 *   tp group:  the T ranks of the same (d, p)   - a layer's shards
 *   pp group:  the P ranks of the same (d, t)   - a pipeline, in stage order
 *   dp group:  the D ranks of the same (p, t)   - replicas of one shard of
 *                                                 one stage
 *
 * so there are D P tensor-parallel groups, D T pipelines and P T
 * data-parallel groups. Each rank holds the shard (over its tp group) of
 * its stages' layers; a step runs the pipeline's schedule, the layers'
 * collectives inside it, and averages each shard's gradients over its dp
 * group. */
#ifndef DT_PARALLEL_H
#define DT_PARALLEL_H

#include "dt/comm.h"
#include "dt/train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int T, P, D;               /* the group sizes: world = D P T */
    int tp_rank, pp_rank, dp_rank;
    dt_comm *tp, *pp, *dp;     /* owned (dt_groups_free) */
} dt_groups;

/* Splits world into the three groups of a layout of tp x pp ranks per
 * replica (D = world / (tp pp)). Collective over world. DT_ERR_INVALID_ARG,
 * naming the numbers, when tp or pp is below 1 or tp pp does not divide
 * the world's size; g is then zeroed. */
dt_result dt_groups_create(dt_groups *g, dt_comm *world, int tp, int pp);
void dt_groups_free(dt_groups *g);

/* A rank of a 3D run: its groups, its model (the shard of the whole model
 * over groups.tp: dt_tp_shard; a copy when T = 1) and a trainer on it whose
 * communicator is groups.dp (the sampler shards the data over the D
 * replicas only), with the pipeline runner over groups.pp when P > 1
 * (schedule: for P ranks; NULL when P = 1, where the sync is DDP's
 * allreduce over groups.dp). tc as dt_trainer_init's. Must stay where it
 * is until dt_parallel_free (the trainer points into it). Collective over
 * world; on failure x is left freed, with the first failure's message. */
typedef struct {
    dt_groups groups;
    dt_model model;
    dt_trainer trainer;
    int have_trainer;
} dt_parallel;

dt_result dt_parallel_init(dt_parallel *x, dt_comm *world, const dt_model *whole, int tp, int pp,
                           const dt_schedule *schedule, const dt_trainer_config *tc);
void dt_parallel_free(dt_parallel *x);

#ifdef __cplusplus
}
#endif

#endif /* DT_PARALLEL_H */
