/* tp_test.h - what the tests of lab 07 share: the test GPT and its data,
 * a launcher, a reference run of the whole model on one rank, and the
 * shard of any whole-model buffer by the rules of chapter 07 (written
 * here, independent of the lab's code), with comparisons that name the
 * tensor that differs. */
#ifndef TP_TEST_H
#define TP_TEST_H

#include "dt/sim.h"
#include "tp.h"

#define TPT_SEED 1234     /* of the whole model's parameters */
#define TPT_DATA_SEED 77  /* of the tokens, labels and test tensors */
#define TPT_B 2           /* sequences per batch */
#define TPT_T 8           /* tokens per sequence: N = 16 rows */
#define TPT_TOL 1e-5      /* relative, against one rank with the whole model */

/* The test GPT: vocabulary 32, context 8, `layers` blocks, 4 heads of 8
 * channels (C = 32): it splits over 1, 2 and 4 ranks. */
dt_gpt_config tpt_config(size_t layers);

/* Value i of stream s: an integer in [-k, k] (exact in any sum the tests
 * make), or a normal number times scale. */
float tpt_int(uint64_t s, size_t i, int k);
void tpt_fill_int(float *x, size_t n, uint64_t s, int k);
void tpt_fill_normal(float *x, size_t n, uint64_t s, float scale);

/* tokens and labels (N each) in [0, V), from seed. */
void tpt_batch(int32_t *tokens, int32_t *labels, size_t N, size_t V, uint64_t seed);

/* fn on t ranks of backend b: the ring algorithm (so that the bytes of a
 * collective are the ring's), no network cost, debug checks on. */
dt_result tpt_launch(int t, dt_backend b, dt_rank_fn fn, void *arg);

/* tpt_launch on 1, 2 and 4 thread ranks in turn; the first failure. */
dt_result tpt_launch_1_2_4(dt_rank_fn fn, void *arg);

/* Bytes one rank sends in a ring allreduce / reduce-scatter / allgather of
 * n floats in all on t ranks: 2(t-1)/t 4n, (t-1)/t 4n, (t-1)/t 4n. */
uint64_t tpt_ring_allreduce_bytes(size_t n, int t);
uint64_t tpt_ring_half_bytes(size_t n, int t);

/* Fails, naming what, unless comm's stats since the last reset show
 * exactly the calls of each kind listed (the others 0) and bytes_sent
 * bytes; then resets them. */
typedef struct {
    long allreduce, reduce_scatter, allgather;
    uint64_t bytes_sent;
} tpt_calls;
dt_result tpt_expect_calls(dt_comm *comm, const char *what, tpt_calls want);

/* The whole test GPT of cfg: dt_gpt_create's parameters from TPT_SEED,
 * then the biases and norm gains (0 and 1 at creation) moved by normal
 * numbers of deviation 0.1, so that a bias added twice, or a gain applied
 * on the wrong rows, shows from the first step. */
dt_result tpt_gpt_create(dt_model *m, const dt_gpt_config *cfg);

/* One rank with the whole model: forward, loss and backward on a batch. */
typedef struct {
    dt_model model;
    dt_acts *acts;
    float loss;
} tpt_ref;
dt_result tpt_ref_run(tpt_ref *ref, const dt_gpt_config *cfg, const int32_t *tokens,
                      const int32_t *labels);
void tpt_ref_free(tpt_ref *ref);

/* out (m->num_params) = the shard of rank r of t of buf, a buffer of the
 * whole model's layout (its params or grads), by the chapter's rules. */
dt_result tpt_shard(const lab_tp_model *m, const dt_model *whole, const float *buf, int t,
                    int r, float *out);

/* Compares got (a shard buffer) with want tensor by tensor; fails with
 * the first tensor whose max |got - want| exceeds tol times its largest
 * |want|, naming it, the element and `what`. */
dt_result tpt_compare_shard(const lab_tp_model *m, const dt_model *whole, const float *got,
                            const float *want, int t, double tol, const char *what);

/* Fails, naming what and the worst element, unless got (n) is within
 * TPT_TOL of want (relative to want's largest magnitude). */
dt_result tpt_compare(const char *what, const float *got, const float *want, size_t n);

/* max |a - b| / max |b| (NaN counts as infinite); *worst: where. */
double tpt_rel_diff(const float *a, const float *b, size_t n, size_t *worst);

/* 1 when the integer n appears in text as a whole number. */
int tpt_mentions(const char *text, long n);

/* The activation bytes of one block: measured by creating a record. */
size_t tpt_block_act_bytes(const lab_tp *tp);

/* The linear-layer tests' rank function (tp_test_linear.c): arg points to
 * int {row, backward, sp}: which layer, which pass, sequence parallel. */
dt_result tpt_linear_rank(dt_comm *world, void *arg);

/* The sub-block tests' rank function (tp_test_blocks.c): arg points to
 * int {attention, sp}: the MLP (0) or the attention (1) of block 1. */
dt_result tpt_sub_rank(dt_comm *world, void *arg);

/* The block and whole-model tests' rank functions (tp_test_model.c).
 * tpt_block_rank: arg points to int sp; block 1 of a 1-layer GPT, its
 * output, input gradient, parameter gradients and collectives.
 * tpt_gpt_rank: arg points to int {layers, sp}; the whole model's loss,
 * logits and every gradient. */
dt_result tpt_block_rank(dt_comm *world, void *arg);
dt_result tpt_gpt_rank(dt_comm *world, void *arg);

/* The vocabulary-parallel tests' rank function (tp_test_vocab.c): arg
 * points to int {xent, sp}: the embedding (0) or the cross-entropy (1). */
dt_result tpt_vocab_rank(dt_comm *world, void *arg);

/* The memory tests' rank function (tp_test_model.c): arg points to int
 * sp. The shard's PARAM bytes (replicated + split / t), one block's ACT
 * bytes against dt_sim_act_bytes_layer within 5%, and the block run. */
dt_result tpt_memory_rank(dt_comm *world, void *arg);

/* Predict, then measure (tp_test_model.c): arg points to int {layers,
 * sp}; one step of lab_tp_train on the test GPT (no clipping), this
 * rank's bytes (dt_comm_stats) against lab_tp_predict_step_bytes. */
dt_result tpt_step_bytes_rank(dt_comm *world, void *arg);

#endif /* TP_TEST_H */
