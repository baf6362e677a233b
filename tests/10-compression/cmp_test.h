/* cmp_test.h - what the tests of lab 10 share: exactly representable
 * gradients, a reference of each exchange written here (independent of
 * the lab), a launcher, and training runs on the digits. */
#ifndef CMP_TEST_H
#define CMP_TEST_H

#include "compress.h"

#define CMP_MAX_RANKS 8

/* The exchange tests' model: mlp:15,4 has n = 64 parameters, so that the
 * 1-bit blocks of K = 1, 2, 4 and 8 ranks hold 64 / K values, a power of
 * two: every mean of them is exact in float. */
#define CMP_SPEC "mlp:15,4"

/* x[i] = an integer in [-range, range] divided by den, a function of
 * (seed, rank, i): dyadic values whose sums and means by a power of two are
 * exact in float. */
void cmp_fill(float *x, size_t n, uint64_t seed, int rank, int range, float den);

/* The exchange tests' inputs of rank r: its initial residual e, multiples
 * of 1/16 in [-1/2, 1/2]; its gradient g of step `step`, multiples of
 * 1/16 in [-2, 2]. For int8 with K ranks, rank 0's g is set so that its
 * v = g + e (e: its residual now) has one entry of magnitude levels / 4,
 * the largest of all ranks, and the shared scale is exactly 1/4 (with at
 * least 6 values). */
void cmp_exchange_error(lab_method m, int r, size_t n, float *e);
void cmp_exchange_grad(lab_method m, int K, int r, int step, size_t n, const float *e, float *g);

/* One exchange on K ranks, computed here from every rank's g and e (arrays
 * of K x n), as compress.h specifies it: out (n) the mean every rank gets,
 * sent and e_new (K x n) each rank's C(v) and new residual; for LAB_SIGN
 * also the server residuals se (K x block length; in: old, out: new).
 * e NULL: without feedback. cc gives the density of top-k. */
dt_result cmp_reference(const lab_compress_config *cc, int K, size_t n, const float *g,
                        const float *e, float *out, float *sent, float *e_new, float *se);

/* The first index where a and b differ in their bits, or -1. */
long cmp_first_diff(const float *a, const float *b, size_t n);

/* dt_launch on K thread ranks with the ring algorithm, on net (NULL: none). */
dt_result cmp_launch(int K, const char *net, dt_rank_fn fn, void *arg);

/* ---------------------------------------------------------------- training */

/* Training on the digits (80/20 split, seed 1), mlp:64,64,10 from seed 7,
 * K ranks with batch 32 each (sampler seed 3), plain SGD lr 0.1, for
 * `steps` steps; then rank 0 evaluates the test set. */
typedef struct {
    lab_compress_config cc;
    int K;
    long steps;
    float accuracy;          /* out: on the test set */
    double bytes_per_step;   /* out: rank 0's mean */
} cmp_digits_run;

dt_result cmp_train_digits(cmp_digits_run *run);

/* The convergence tests' runs: 20 epochs of the digits on 4 ranks. */
#define CMP_DIGITS_RANKS 4
#define CMP_DIGITS_STEPS 220

/* Trains the uncompressed baseline and `method` (with feedback) and checks
 * that the method's accuracy is at most 2 points below the baseline's;
 * *dense and *with_ef get both (either may be NULL). */
void cmp_expect_within_two_points(lab_compress_config cc, float *dense, float *with_ef);

/* The checkpoint tests' runs: mlp:12,16,4 from model_seed on 256 blobs,
 * batch 8 per rank (sampler seed 4), the update's optimizer opt; loads the
 * checkpoint `load` first and saves to `save` at the end (NULL: neither),
 * training up to step `until`. m gets the model (the caller frees it). */
dt_result cmp_train_until(dt_comm *w, const lab_compress_config *cc, dt_optim_config opt,
                          uint64_t model_seed, const char *load, const char *save, long until,
                          dt_model *m);

/* ---------------------------------------------------------------- checkpoints
 * (cmp_ckpt.c) A run saved in one process and resumed in another: the
 * test's process trains `steps` straight, then `saved_at` steps from the
 * same start and saves each rank's checkpoint, which it checks against
 * compress.h's list of records; a NEW PROCESS (a fresh exec of the test
 * binary) loads the files into models made from another seed and trains
 * on to `steps`; the two runs' parameters must be the same bits. Nothing
 * kept in the first process's memory can reach the second. */
typedef struct {
    lab_compress_config cc;
    dt_optim_config opt;
    long saved_at, steps;
} cmp_ckpt_run;

/* Runs every one of runs[0 .. n) on 2 ranks as above, failing the test
 * with the method, the record or the parameter at fault. `test` is the
 * calling test's name: the fresh process runs it again, and this call
 * then does the resume side of the run named in its environment. */
void cmp_ckpt_resume_test(const char *test, const cmp_ckpt_run *runs, int n);

/* DT_OK when the file at path is rank `rank`'s checkpoint of a lab_cdp
 * like c (its configs, ranks and buffers) after `steps` steps, as
 * compress.h lists its records: a shard of (rank, ranks), exactly the
 * records of c's configuration with their types and shapes, step and
 * optimizer.step equal to steps, the optimizer's range [0, n), and params
 * bit for bit equal to params. Else DT_ERR_MISMATCH naming the record. */
dt_result cmp_ckpt_check(const char *path, const lab_cdp *c, const dt_optim_config *opt,
                         long steps, const float *params);

#endif /* CMP_TEST_H */
