/* test_par_util.h - what libdt's tests of tensor parallelism, the pipeline
 * runner and their composition share (test_tp*.c, test_train_pipeline.c,
 * test_train_3d.c): a launcher, the test GPT, data, and the shard of a
 * whole-model buffer by chapter 07's rules, written here again so that the
 * tests do not trust the library's own slicing. */
#ifndef TEST_PAR_UTIL_H
#define TEST_PAR_UTIL_H

#include "dt/tp.h"
#include "dt/train.h"

#define PAR_SEED 1234 /* of the whole model's parameters */
#define PAR_TOL 1e-5  /* relative to the largest magnitude: the labs' tolerance */

/* fn on n thread ranks: the ring algorithm, no network cost, debug checks. */
dt_result par_launch(int n, dt_rank_fn fn, void *arg);

/* Vocabulary 32, context 8, `layers` blocks, 4 heads of 8 channels
 * (C = 32): it splits over 1, 2 and 4 ranks. */
dt_gpt_config par_gpt_config(size_t layers);

/* The whole test GPT: dt_gpt_create's parameters from PAR_SEED, then the
 * biases and norm gains (0 and 1 at creation) moved by normal numbers of
 * deviation 0.1, so that a bias added twice shows from the first step. */
dt_result par_gpt_create(dt_model *m, const dt_gpt_config *cfg);

/* n values of stream s: integers in [-k, k] (exact in every sum), or
 * normal numbers times scale; tokens and labels in [0, V). */
void par_fill_int(float *x, size_t n, uint64_t s, int k);
void par_fill_normal(float *x, size_t n, uint64_t s, float scale);
void par_batch(int32_t *tokens, int32_t *labels, size_t N, size_t V, uint64_t seed);

/* max |a - b| / max |b| over n (NaN: infinite); *worst (may be NULL): where. */
double par_rel_diff(const float *a, const float *b, size_t n, size_t *worst);

/* dst := rank r of t's slice of view v of whole, read from src (a buffer
 * of whole's layout): by the view's name, as chapter 07 splits it. */
void par_slice(const dt_model *whole, int v, const float *src, int t, int r, float *dst);

/* Compares each view of shard's buffer got with the slice of whole's
 * buffer want; DT_ERR_MISMATCH naming the first view off by more than tol
 * (relative to the slice's largest magnitude), the element and what. */
dt_result par_compare_shard(const dt_model *shard, const dt_model *whole, const float *got,
                            const float *want, double tol, const char *what);
/* The same for the views of layers [first, last) only. */
dt_result par_compare_layers(const dt_model *shard, const dt_model *whole, const float *got,
                             const float *want, int first, int last, double tol,
                             const char *what);

#endif /* TEST_PAR_UTIL_H */
