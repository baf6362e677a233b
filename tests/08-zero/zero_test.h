/* zero_test.h - what the tests of lab 08 share: a data set, the figures
 * each stage must show (worked out here from the chapter's formulas, not
 * from the lab), and a rank function that trains with the lab, checks its
 * memory, bytes and calls, and compares its parameters with the library's
 * data parallelism (dt_trainer's allreduce and AdamW) on the same batches. */
#ifndef ZERO_TEST_H
#define ZERO_TEST_H

#include "zero.h"

#define ZT_SPEC "mlp:20,31,17,5" /* layers of 651, 544 and 90 parameters: 1285 = 5 x 257,
                                    divisible by none of 2, 3, 4 */
#define ZT_SEED 7                /* of the model, the same on every rank */
#define ZT_DATA_N 240

enum {
    ZT_PARAMS = 1,  /* the parameters equal DDP's within 1e-5 (relative to the largest) */
    ZT_MEMORY = 2,  /* peak PARAM, GRAD, OPTIM per rank within 5% of section 2's formulas */
    ZT_BYTES = 4,   /* bytes sent per step within 5% of section 7's 2, 2, 2, 3 psi */
    ZT_CALLS = 8,   /* the collectives of each step, counted exactly */
    ZT_MEAN = 16,   /* after the first step's reduction (the probe's "sync") each rank's
                       gradient shard is the mean over the ranks of their gradients,
                       within 1e-5 of the unit's largest, its padding 0 */
};

typedef struct {
    const char *spec;
    lab_zero_stage stage;
    size_t bucket_bytes;
    size_t B;        /* samples per rank per step */
    int steps;
    int checks;      /* ZT_* flags */
    int sgd;         /* 0: AdamW (lr 0.01); 1: SGD, lr 0.05, momentum 0.9, weight decay
                        1e-3, where a sum in place of the mean moves K times as far */
} zero_run;

/* The optimizer of a run. */
dt_optim_config zt_optim(const zero_run *run);

/* "DDP (stage 0)", "ZeRO-1", "ZeRO-2", "ZeRO-3". */
const char *zt_stage_name(lab_zero_stage s);

/* The shared data set: blobs of the model's input width and classes. */
dt_result zt_data(dt_dataset *d, const dt_model *m);

/* ceil(count / K), the test's own. */
size_t zt_shard(size_t count, int K);

/* Per-tag bytes (PARAM, GRAD, OPTIM) that a rank of z's stage holds
 * between steps, exactly, with each unit padded to K shards; and the
 * peaks of a step by the chapter's formulas (no padding):
 *   stage 0  4 psi, 4 psi, 8 psi             stage 2  4 psi, 4 psi/K + 4 B, 8 psi/K
 *   stage 1  4 psi, 4 psi, 8 psi/K           stage 3  4 psi/K + 4 L, 4 psi/K + 4 L, 8 psi/K
 * with B the largest unit of stage 2 (a bucket), L that of stage 3 (a layer);
 * 8 is AdamW's state per parameter (SGD with momentum: 4). */
void zt_kept_bytes(const lab_zero *z, size_t out[3]);
void zt_peak_formula(const lab_zero *z, size_t psi, double out[3]);

/* The rank function: trains with the lab as run says and checks what
 * run->checks asks; fails with a message naming what differs. */
dt_result zt_check_rank(dt_comm *world, void *arg);

/* dt_launch of zt_check_rank on K ranks of backend b (ring algorithm, so
 * that bytes follow the formulas). */
dt_result zt_launch(int K, dt_backend b, const zero_run *run);

/* ---------------------------------------------------------------- predict, then measure */

/* One step's communication of one rank, as the tests work it out or
 * measure it. */
typedef struct {
    double bytes;   /* bytes sent */
    double comm_s;  /* modeled seconds in collectives */
} zt_cost;

/* Section 7's formulas for one step of `stage` (1 to 3) of model spec on K
 * ranks over the link net (a preset with gamma 0), ring algorithm, with
 * the units the lab runs (one; buckets closed at bucket_bytes walking from
 * the last layer; one per layer) each padded to K shards: per unit of
 * shard c, a reduce-scatter and one allgather (stage 3: two) of 4 K c
 * bytes, each (K - 1) (alpha + 4 c / beta) and (K - 1) 4 c bytes sent.
 * Worked out here, not by the lab. *units gets how many units. */
dt_result zt_cost_formula(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                          const char *net, zt_cost *out, int *units);

/* Runs two steps of the lab's stage (AdamW) on K thread ranks over net,
 * ring algorithm, and gives each rank's bytes sent and modeled seconds in
 * collectives during the second: out has K entries. */
dt_result zt_cost_measured(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                           const char *net, zt_cost *out);

/* The whole check of lab_zero_predict for one configuration: the
 * prediction against zt_cost_formula, then against the measured step of
 * every rank; bytes exactly, seconds within 1e-9 relative. Fails the test
 * naming the configuration and all three figures. */
void zt_expect_prediction(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                          const char *net);

#endif /* ZERO_TEST_H */
