/* ft.h - lab 14: fault tolerance. Read chapters/14-fault-tolerance.md first.
 *
 * A data-parallel run (DDP, or ZeRO-1: chapter 08) that checkpoints every
 * few steps, is killed at a named phase (dt_failure_point, dt/comm.h),
 * and resumes from its last committed checkpoint in a new process, to the
 * same bits as a run that never stopped; and a ZeRO-1 checkpoint of N
 * ranks resumed on M.
 *
 * A checkpoint of step s is a folder ROOT/step-%08ld (lab_ckpt_dir) of
 * dt/ckpt.h's files: one shard per rank, rank-%05d.dtck, and a manifest,
 * manifest.dtck, written by rank 0. ROOT/latest (a small file holding the
 * folder's name, "step-00000006") names the checkpoint a resume reads.
 *
 * The tasks, in order (the chapter's section 11 says which section
 * derives each):
 *   1. ckpt.c     lab_shard_state, lab_global_state   what a resume needs
 *   2. ckpt.c     lab_save                            the commit protocol
 *   3. ckpt.c     lab_load                            a resume, or a refusal
 *   4. reshard.c  lab_reshard_load                    ZeRO-1 from N ranks to M
 *   5. quorum.c   lab_quorum_step                     training through a failure
 *   6. straggler.c lab_straggler_batches,             a batch per worker's speed
 *                 lab_straggler_weight                and the gradient's weights
 *
 * The records (the tests read them):
 *   a shard, kind DT_CKPT_SHARD, rank r of ranks: exactly dt_train_state's
 *     records of the rank's trainer (dt/train.h: trainer.step, model.params,
 *     SLOT.hook, update.*)
 *   the manifest, kind DT_CKPT_MANIFEST, ranks the world size:
 *     shards.bytes     u64 [ranks]  each shard's size          (the first
 *     shards.checksum  u32 [ranks]  each shard's checksum       two: dt/ckpt.h)
 *     step             i64          the steps done
 *     fingerprint      u64          lab_fingerprint: must match on load
 *     sampler.*        dt_sampler_state of the run's sampler and position
 *     augment          dt_ckpt_io_rng of the run's augmentation stream
 * The code outside the fences (train.c: the run, its steps, its failure
 * points in the step, and the training loop that saves) is given. */
#ifndef LAB_FT_H
#define LAB_FT_H

#include "dt/ckpt.h"
#include "dt/comm.h"
#include "dt/failure.h"
#include "dt/core.h"
#include "dt/data.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

/* LAB_DDP_EF: DDP whose sync sends each rank's gradient compressed with
 * error feedback (chapter 10, section 7): v = g + e, sent c = mean|v| sign(v)
 * (1-bit, as 1-bit Adam's), residual e := v - c kept by the rank for its
 * next step. The residuals are the sync hook's state (sync.residual). */
typedef enum { LAB_DDP = 0, LAB_ZERO1 = 1, LAB_DDP_EF = 2 } lab_strategy;

#define LAB_SPEC "mlp:6,10,8,3" /* 185 parameters: uneven ZeRO-1 blocks on 2, 3, 4 ranks */
#define LAB_GLOBAL_BATCH 12     /* samples per step, all ranks together: B = 12 / ranks */
#define LAB_DATA_N 48           /* samples: an epoch is 4 steps on 1, 2, 3, 4, 6 ranks */
#define LAB_INPUTS 6
#define LAB_PATH 4096

struct lab_run;

/* The sync hook in the trainer: the library's (allreduce or ZeRO-1's),
 * called after the after-backward failure point. */
typedef struct {
    dt_hook inner;
    struct lab_run *run;
} lab_guard;

typedef struct lab_run {
    dt_comm *comm;
    int rank, ranks;
    lab_strategy strategy;
    dt_model model;
    dt_trainer trainer;      /* its step: steps done */
    dt_dataset data;
    dt_sampler sampler;      /* LAB_DATA_N samples over the ranks, shuffled, drop_last */
    dt_sampler_pos pos;      /* global: the same on every rank */
    dt_rng augment;          /* one stream, the same on every rank: each step draws
                                LAB_GLOBAL_BATCH x LAB_INPUTS normal values, and the
                                sample at global position j of the step gets row j */
    const dt_failure *fail;  /* the failure plan (NULL: none) */
    lab_guard guard;
    float *residual;         /* LAB_DDP_EF: this rank's error-feedback residual e */
} lab_run;

/* ---------------------------------------------------------------- given (train.c) */

/* A run on comm: the model from model_seed, the strategy's trainer (DDP
 * and DDP_EF: SGD with momentum 0.9; ZeRO-1: AdamW), step 0. ranks must divide
 * LAB_GLOBAL_BATCH and LAB_DATA_N. */
dt_result lab_run_init(lab_run *r, dt_comm *comm, lab_strategy s, uint64_t model_seed,
                       const dt_failure *fail);
void lab_run_free(lab_run *r);

/* One step, with the failure points mid-allreduce (armed before it) and
 * after-backward (in the sync hook). */
dt_result lab_run_step(lab_run *r);

/* Steps until the trainer's step is `until`, with lab_save(r, root) after
 * every step that is a multiple of every (every 0: never); each step and
 * save a region of the job's trace ("step 7", "save step 6"; dt/comm.h's
 * dt_trace_begin). */
dt_result lab_train(lab_run *r, const char *root, long until, long every);

/* What a checkpoint must agree with to be loaded into r: the strategy, the
 * model's layers and the optimizer's kind (not the world size: see
 * lab_reshard_load). */
uint64_t lab_fingerprint(const lab_run *r);

/* out := ROOT/step-%08ld, and ROOT/latest. DT_ERR_INVALID_ARG when it does
 * not fit in cap bytes. */
dt_result lab_ckpt_dir(char *out, size_t cap, const char *root, long step);
dt_result lab_latest_path(char *out, size_t cap, const char *root);

/* Reads ROOT/latest into out: the folder it names, ROOT/NAME.
 * DT_ERR_IO naming ROOT/latest when it is missing or unreadable;
 * DT_ERR_INVALID_ARG when it names no step-%08ld. */
dt_result lab_read_latest(char *out, size_t cap, const char *root);

/* Removes the folder dir and the files in it (a checkpoint's). */
dt_result lab_remove_dir(const char *dir);

/* ================================================================ task 1 (ckpt.c) */

/* Visits this rank's shard: dt_train_state of r's trainer, nothing else. */
dt_result lab_shard_state(lab_run *r, dt_ckpt_io *io);

/* Visits the manifest's records after the shard table (the header's list,
 * from "step" on): step, fingerprint, the sampler's position and the
 * augmentation stream, at the addresses given (r's own when saving; a
 * load's temporaries when loading, so that a refused load changes
 * nothing). The fingerprint is lab_fingerprint(r) and must match. */
dt_result lab_global_state(lab_run *r, long *step, dt_sampler_pos *pos, dt_rng *augment,
                           dt_ckpt_io *io);

/* ================================================================ task 2 (ckpt.c) */

/* Collective. Commits r's state at its step as the checkpoint
 * lab_ckpt_dir(root, step) and makes it ROOT/latest; then removes the
 * checkpoint ROOT/latest named before. A crash (a kill at any phase) at
 * any moment leaves ROOT/latest naming a whole checkpoint, the new or the
 * old. Calls dt_failure_point(comm, r->fail, step, PHASE) at each of:
 *   DT_PHASE_MID_SAVE         this rank's shard committed, the others' unknown
 *   DT_PHASE_BEFORE_MANIFEST  every rank's shard committed, no manifest
 *   DT_PHASE_BEFORE_RENAME    the manifest committed, ROOT/latest not moved */
dt_result lab_save(lab_run *r, const char *root);

/* ================================================================ task 3 (ckpt.c) */

/* Collective. Loads the checkpoint ROOT/latest names into r, which has the
 * same world size, strategy and model (any parameters, any step). Every
 * file is checked (its own checksums, the manifest's entry for each
 * shard, the fingerprint, the world size) before anything is copied; if
 * any rank refuses, every rank returns an error and r is unchanged on
 * every rank. A refusal names the file: DT_ERR_IO for a missing one,
 * DT_ERR_INVALID_ARG for a damaged, truncated or foreign one; a rank that
 * refuses returns its own reason even when a peer has ended the job first
 * (a peer's failure must not replace the message naming its file). */
dt_result lab_load(lab_run *r, const char *root);

/* ================================================================ task 4 (reshard.c) */

/* Collective. Loads a ZeRO-1 checkpoint of N ranks (any N) into r, a
 * ZeRO-1 run of M ranks: every rank gets the parameters, the step, the
 * sampler's position and the augmentation stream, and the AdamW state of
 * its own block (dt_block of the parameters over M) cut from the N saved
 * blocks, each placed where its range says. So the M ranks go on with the
 * same global sample order and the same optimizer state. A DDP run or
 * checkpoint is refused (DT_ERR_UNSUPPORTED, saying why); checks and
 * refusals as lab_load. */
dt_result lab_reshard_load(lab_run *r, const char *root);

/* ---------------------------------------------------------------- given (replica.c)
 * Replica groups (chapter 14, section 8): LAB_REPLICAS replicas of a DDP
 * model (SGD, momentum 0.9), rank j of comm playing replica ids[j]. The
 * batch of replica k at step s is samples (s R + k) B + i mod LAB_DATA_N,
 * i < LAB_REPLICA_BATCH: it depends on the replica, not on the world, so
 * 2 ranks playing replicas 0 and 1 compute what those two compute among 3.
 * The sync hook allgathers every rank's gradient and sets each rank's to
 *     g = (1 / size) x sum over the members k of the quorum, in the order
 *         of the ranks, of g_k
 * (q->member and q->size, which lab_quorum_step sets before the step). */
enum { LAB_REPLICAS = 3, LAB_REPLICA_BATCH = 4 };

typedef struct {
    dt_comm *comm;
    int rank, ranks;
    int ids[LAB_REPLICAS];      /* the replica rank j plays */
    int member[LAB_REPLICAS];   /* the quorum of the last step (1: in), by replica */
    int size;                   /* and its size */
    dt_model model;
    dt_trainer trainer;         /* its step: steps done */
    dt_dataset data;
    float *all;                 /* ranks x num_params: the gathered gradients */
} lab_replica;

/* ranks (1 to LAB_REPLICAS) ranks, rank j playing replica ids[j] (distinct,
 * below LAB_REPLICAS); every replica in the quorum of "step 0". */
dt_result lab_replica_init(lab_replica *q, dt_comm *comm, const int *ids, uint64_t model_seed);
void lab_replica_free(lab_replica *q);

/* The batch of this rank's replica at the trainer's step, then
 * dt_train_step (the sync hook above). */
dt_result lab_replica_train_step(lab_replica *q);

/* ================================================================ task 5 (quorum.c) */

/* Collective: one step of the replica group. alive[k] (k < LAB_REPLICAS,
 * the same on every rank: the failure plan's view of who answers) says
 * whether replica k is up for this step. The step's quorum is the alive
 * replicas; it trains on, its mean over its own members (q->member,
 * q->size, then lab_replica_train_step). A replica that is alive but was
 * not in the last quorum (it healed) first takes the state of a live
 * peer of the last quorum by broadcast: the parameters, the optimizer's
 * state and step, and the trainer's step. A replica that is down runs the
 * step too (the emulator's ranks stay in the collectives) but its state
 * counts for nothing until it rejoins. No replica alive, or none alive
 * that was in the last quorum to heal from: DT_ERR_PEER_DIED, saying so. */
dt_result lab_quorum_step(lab_replica *q, const int *alive);

/* ================================================================ task 6 (straggler.c) */

/* Detection and the adaptive batch (chapter 14, section 9). t[i] is rank
 * i's compute time of its last step on b_prev[i] samples (i < ranks, each
 * > 0). *imbalance := (max t - min t) / mean t. When it exceeds threshold,
 * b[i] := B speed_i / sum_j speed_j with speed_i = b_prev[i] / t[i],
 * rounded to integers that sum to B, each at least 1 (the largest
 * remainders round up; ties to the lower rank); else b := b_prev.
 * DT_ERR_INVALID_ARG naming the value for t <= 0, b_prev < 1, B < ranks. */
dt_result lab_straggler_batches(const double *t, const int *b_prev, int ranks, int B,
                                double threshold, int *b, double *imbalance);

/* The factor w_i by which rank i multiplies its gradient (the mean over
 * its b_i samples) before the ranks' gradients are summed, so that the sum
 * is the mean over all B = sum_j b_j samples of the step. */
double lab_straggler_weight(int b_i, int B, int ranks);

#endif /* LAB_FT_H */
