/* threed.h - lab 13: data, tensor and pipeline parallelism together.
 * Read chapters/13-3d-parallel.md first.
 *
 * A world of D x P x T ranks is laid out TP innermost (consecutive ranks:
 * one node, the fastest links), PP next, DP outermost (section 1):
 *
 *     world rank w = (d P + p) T + t
 *
 * Task (a), groups.c: the three groups of a layout, from dt_comm_split.
 * Task (b), rank.c:   a rank of a 3D run: the shard, the trainer whose
 *                     gradients are averaged over the right group, the
 *                     pipeline runner. The tests train the tiny GPT on
 *                     2 x 2 x 2 = 8 ranks against one rank.
 * Task (c), cost.c:   the cost model's core terms for a layout (the
 *                     bubble, memory per device, bytes each group sends).
 * Task (d), predict.c: the emulator's modeled step time of a small 3D run
 *                     on a two-level topology, from the formulas.
 *
 * Functions return DT_OK, or DT_ERR_INVALID_ARG (through dt_fail, naming
 * what is wrong) for a NULL pointer or a value outside the domain given
 * beside them; the doubles of task (c) are NaN then. */
#ifndef LAB_THREED_H
#define LAB_THREED_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/net.h"
#include "dt/sched.h"
#include "dt/sim.h"
#include "dt/tp.h"
#include "dt/train.h"

/* ---------------------------------------------------------------- task (a): groups */

typedef struct {
    int T, P, D;                   /* group sizes: world = D P T */
    int tp_rank, pp_rank, dp_rank; /* this rank's t, p, d */
    dt_comm *tp;  /* the T ranks of the same (d, p), in order of t */
    dt_comm *pp;  /* the P ranks of the same (d, t), in order of p (stage order) */
    dt_comm *dp;  /* the D ranks of the same (p, t), in order of d */
} lab_groups;

/* Splits world (collective over it) into this rank's three groups, each
 * made with dt_comm_split, ranked as above. tp >= 1, pp >= 1, tp pp
 * dividing the world's size; on failure *g is zeroed (nothing to free). */
dt_result lab_groups_create(lab_groups *g, dt_comm *world, int tp, int pp);

/* Given: frees the three communicators (g may be zeroed). */
void lab_groups_free(lab_groups *g);

/* ---------------------------------------------------------------- task (b): a rank */

typedef struct {
    lab_groups g;
    dt_model model;      /* this rank's shard of the whole model over g.tp */
    dt_trainer trainer;  /* on model; its communicator averages the gradients */
    int have_trainer;
} lab_rank;

/* Collective over world: the groups (task a), the shard of whole over the
 * tensor-parallel group (dt_tp_shard), a trainer whose sync averages each
 * gradient over the ranks that hold the same parameters in other
 * replicas (dt_trainer_init with tc), and when pp > 1 the pipeline runner
 * over the pipeline group with schedule (dt_train_use_pipeline; schedule
 * NULL when pp = 1). On failure *x is left freed. */
dt_result lab_rank_init(lab_rank *x, dt_comm *world, const dt_model *whole, int tp, int pp,
                        const dt_schedule *schedule, const dt_trainer_config *tc);

/* Given: frees what lab_rank_init made (x may be zeroed). */
void lab_rank_free(lab_rank *x);

/* ---------------------------------------------------------------- task (c): cost terms
 * Of a transformer m (dt_sim_model) in layout l (dt_sim_layout), as
 * lib/sim's planner reads them: l->global_batch sequences per step in
 * micro-batches of l->micro_batch, so m_mb = global_batch / (dp
 * micro_batch) micro-batches per pipeline; n = seq micro_batch hidden e
 * bytes of one micro-batch's activation (e = 2 for bf16 and fp16, 4 for
 * fp32). Arguments must pass dt_sim_plan_eval's checks; only the 1F1B
 * schedule (interleaved when vpp > 1), no sequence parallelism. */

/* The bubble of a pipeline of p ranks, v model chunks each, m
 * micro-batches, as a fraction of the ideal time (section 5). p, v,
 * m >= 1. */
double lab_bubble(int p, int v, int m);

typedef struct {
    double params, grads, optim, acts; /* bytes */
    double total;                      /* their sum */
} lab_memory;

/* Bytes on a device of the FIRST pipeline stage (pipeline rank 0) at its
 * peak (section 3): its parameters (its l / pp layers' shard, the
 * embedding V h / t and the positions s h; when pp = 1 also the last
 * layernorm 2h, the output layer being the embedding itself), the model
 * states of dt_sim_mixed_precision_adam (16-bit types) or
 * dt_sim_fp32_adam (fp32) under l->zero, and the activations of the
 * layer-micro-batches it holds (dt_sim_act_bytes_layer_ffn per layer,
 * less the scores with selective recomputation, e sbh with full plus one
 * layer rebuilt whole), with the embedding's dropout mask when the model
 * has dropout and the output layer's when pp = 1. */
dt_result lab_memory_first_stage(const dt_sim_model *m, const dt_sim_layout *l, lab_memory *out);

typedef struct {
    double tp, pp, dp; /* bytes one rank sends in that group per step */
} lab_group_bytes;

/* Bytes one rank sends per step with ring collectives (section 1): in its
 * tensor-parallel group, the allreduces of n, 2 forward and 2 backward a
 * layer (2 more recomputed with full recomputation), for each of its
 * l / pp layers and each micro-batch; in its pipeline (a rank inside the
 * pipeline, pp > 1), per micro-batch and model chunk an activation
 * forward and a gradient back, n / t each; in its data-parallel group,
 * the stage's gradients (the first stage's parameters, g bytes each)
 * allreduced once per step (ZeRO 0; ZeRO 1: a reduce-scatter of them and
 * an allgather of the p-byte parameters; other stages are refused). A
 * group of one rank sends 0. */
dt_result lab_group_bytes_per_step(const dt_sim_model *m, const dt_sim_layout *l,
                                   lab_group_bytes *out);

/* ---------------------------------------------------------------- task (d): the step time */

enum { LAB_MAX_LAYERS = 16 };

/* A small 3D run on the emulator (given; lab_step_work_gpt fills it for
 * the library's GPT): the model's layers, and for each what a rank of a
 * tensor-parallel group of t spends on it per micro-batch on the modeled
 * clock (forward_s, backward_s: the same whatever t), the floats of its
 * parameters on that rank, and the allreduces its TP layers make per
 * micro-batch (forward and backward together): tp_calls, tp_bytes in all. */
typedef struct {
    int layers;
    int micro;               /* micro-batches per step, m */
    double act_bytes;        /* the activation a stage sends on, one micro-batch */
    double forward_s[LAB_MAX_LAYERS], backward_s[LAB_MAX_LAYERS];
    double params[LAB_MAX_LAYERS];  /* floats on one TP rank */
    int tp_calls[LAB_MAX_LAYERS];
    double tp_bytes[LAB_MAX_LAYERS];
} lab_step_work;

/* Given: the library's GPT cfg split over t TP ranks, micro-batches of B
 * sequences, m of them, each layer's forward and backward times. */
dt_result lab_step_work_gpt(lab_step_work *w, const dt_gpt_config *cfg, int t, size_t B, int m,
                            const double *forward_s, const double *backward_s);

/* The modeled time of one step of w on tp x pp x dp ranks of topo (dt/net.h:
 * nodes of per_node ranks, ranks placed by block), the collectives run by
 * the ring algorithm, the 1F1B schedule over stages cut by dt_pipe_cut
 * (section 9): the pipeline's time (its slowest stage m - 1 times, every
 * stage once), each stage's micro-batch counting its layers' compute and
 * TP allreduces, the sends of the fill and the drain (each boundary
 * once each way, on the link between its two ranks: dt_net_topo_pair),
 * and the gradient allreduce of the stage with the most parameters over
 * the DP group. Each collective on its group's link (dt_net_group_link)
 * of rank 0's groups. tp pp dp <=
 * the topology's ranks, pp <= layers. *seconds > 0. */
dt_result lab_predict_step(const lab_step_work *w, int tp, int pp, int dp,
                           const dt_net_topo *topo, double *seconds);

/* Given: runs 3 steps of the GPT of w's shape on the emulator (threads,
 * the ring algorithm, network spec net), the ranks built by
 * lab_rank_init, modeled compute, tp pp dp ranks; *seconds = the third step's modeled
 * time (the largest over the ranks), *wall_s its wall time. */
dt_result lab_measure_step(const dt_gpt_config *cfg, size_t B, int m, const double *forward_s,
                           const double *backward_s, int tp, int pp, int dp, const char *net,
                           double *seconds, double *wall_s);

#endif /* LAB_THREED_H */
