/* fsdp_test.h - what the tests of lab 09 share: data for the deep MLP and
 * the tiny GPT, and a rank function that trains with the lab, checks its
 * memory, bytes and calls, compares its parameters with the library's data
 * parallelism (dt_trainer's allreduce and AdamW) on the same batches, and
 * reports rank 0's modeled step time. */
#ifndef FSDP_TEST_H
#define FSDP_TEST_H

#include "fsdp.h"

#define FT_MLP "deep:12,24,4,5"    /* 312 + 4 x 600 + 125 = 2837 parameters, six layers */
#define FT_GPT "gpt:11,5,2,2,6"    /* embed 96, two blocks of 510, head 78 */
#define FT_BIG "deep:64,256,4,10"  /* blocks of 65792: all-gathers worth hiding */
#define FT_SEED 9

enum {
    FT_PARAMS = 1,  /* the parameters equal DDP's within 1e-5, every rank rank 0's bits */
    FT_PEAK2 = 2,   /* peak PARAM and GRAD <= the shards + 2 largest units (+5%) */
    FT_FULL = 4,    /* peak PARAM within 5% of the shards + every unit (resharding off) */
    FT_BYTES = 8,   /* bytes sent per step within 5% of 3 psi (K-1)/K, 2 psi without resharding */
    FT_CALLS = 16,  /* per step: 2U all-gathers (U without resharding), U reduce-scatters */
    FT_MEAN = 32,   /* after the first step every unit's grad_shard is the mean over the
                       ranks of their gradients, within 1e-5 of the unit's largest */
};

typedef struct {
    const char *spec;
    size_t min_unit_params;
    int prefetch, reshard;
    double fwd_s, bwd_s;   /* modeled compute per layer; 0: none */
    size_t B;              /* samples per rank per step */
    int steps;
    int checks;            /* FT_* flags */
    const char *trace;     /* the job's trace file, or NULL */
    double step_s;         /* out: rank 0's modeled time of the last step */
    int units;             /* out: how many units the wrap made */
} fsdp_run;

/* The data set of a model: blobs for an MLP, sequences for a GPT. */
dt_result ft_data(dt_dataset *d, const dt_model *m);

/* ceil(count / K), the test's own. */
size_t ft_shard(size_t count, int K);

/* Rank r's batch of step t into b (buffers of B samples), for m. */
dt_result ft_batch(const dt_dataset *d, const dt_model *m, int K, int r, int t, size_t B,
                   float *x, int32_t *tok, int32_t *y, dt_batch *b);

dt_result ft_check_rank(dt_comm *world, void *arg);

/* A region [s, e) of rank 0's modeled timeline in a trace file, in us. */
typedef struct {
    double s, e;
} ft_span;

/* Rank 0's modeled spans named `name` on its track `lane` (0: its own
 * timeline, where a wait for an asynchronous operation shows too; 1: its
 * asynchronous operations), in the order they end (all-gathers issued
 * together may start together; they complete in the order issued).
 * Returns how many (at most cap), -1 without a readable file. */
int ft_trace_spans(const char *path, const char *name, int lane, ft_span *out, int cap);

/* dt_launch of ft_check_rank on K ranks of backend b over net (ring
 * algorithm; run->trace, if set, gets the job's trace). */
dt_result ft_launch(int K, dt_backend b, const char *net, fsdp_run *run);

/* ---------------------------------------------------------------- predict, then measure */

/* A model whose two largest units (1230 and 180 parameters, one layer
 * each) are not neighbours: layers of 1230, 155, 180, 155. */
#define FT_UNEVEN "mlp:40,30,5,30,5"

/* The peak bytes of PARAM and GRAD of one rank over a step, worked out
 * here from the wrap policy and section 3: the shards, and beside them
 * the padded units held whole at once (the largest pair of neighbours with
 * prefetch, the largest unit without, every unit without resharding; for
 * the gradients the largest pair of neighbours). *units gets how many. */
dt_result ft_peak_formula(const char *spec, size_t min_unit_params, int prefetch, int reshard,
                          int K, size_t *param, size_t *grad, int *units);

/* lab_fsdp_predict_peak for one configuration against ft_peak_formula,
 * then against every rank's peaks measured over the second step of the
 * lab's FSDP (thread ranks): byte for byte. Fails the test naming the
 * configuration and the three figures. */
void ft_expect_peak_prediction(const char *spec, size_t min_unit_params, int prefetch,
                               int reshard, int K);

#endif /* FSDP_TEST_H */
