/* memory_test.h - what the tests of lab 11 share: the models and data, a
 * mixed-precision step written here from the chapter's rules (independent
 * of the lab's code), tolerances in units of the 16-bit formats, and the
 * executor's peak worked out by walking a plan through it. */
#ifndef MEMORY_TEST_H
#define MEMORY_TEST_H

#include "memory.h"

#define MT_SEED 2024     /* of the models' parameters */
#define MT_DATA_SEED 7   /* of inputs and labels */

/* ---------------------------------------------------------------- part A */

/* The MLP of the 16-bit tests: 64 inputs, 48 hidden, 10 classes (the
 * digits' shape), and a batch of `rows` inputs in [0, 1) with labels. */
dt_result mt_mlp(dt_model *m);
void mt_batch(float *x, int32_t *labels, size_t rows, size_t in, size_t classes, uint64_t seed);

/* v rounded to dtype and back (the library's converters). */
float mt_round(dt_dtype t, float v);
/* 2^-10 for fp16 (its unit in the last place at 1), 2^-7 for bf16. */
double mt_eps(dt_dtype t);

/* The chapter's mixed-precision step, written here with plain loops:
 * w16 = round(master); act[0] = round(x); act[i+1] = round(relu(b16 +
 * sum x16 w16)) in fp32; the loss in fp32 on the widened logits;
 * dlogits = round(S (p - onehot) / rows); then per layer, from the last,
 * dW, db, dx summed in fp32 from 16-bit operands and rounded once.
 * Every buffer is fp32 holding values of the 16-bit format. */
typedef struct {
    float *w16;       /* num_params */
    float **act;      /* num_layers + 1 */
    float *g16;       /* num_params: the scaled gradients, as stored */
    float loss;
    size_t correct;
} mt_mp_ref;
dt_result mt_mp_reference(mt_mp_ref *ref, const dt_model *m, dt_dtype t, const float *x,
                          const int32_t *labels, size_t rows, float scale);
void mt_mp_ref_free(mt_mp_ref *ref, const dt_model *m);

/* Fails, naming what and the worst element, unless every |got - want| <=
 * tol x max |want| (a tensor's own scale: rounding errors of its larger
 * elements set it). got is read through dtype when t is f16 or bf16. */
dt_result mt_compare16(const char *what, dt_dtype t, const uint16_t *got, const float *want,
                       size_t n, double tol);
dt_result mt_compare32(const char *what, const float *got, const float *want, size_t n,
                       double tol);

/* The model's fp32 gradients of the mean loss on (x, labels), by the
 * library's reference path: into grads (num_params). */
dt_result mt_fp32_grads(dt_model *m, const float *x, const int32_t *labels, size_t rows,
                        float *grads);

/* GradScaler's and Megatron's rule written here: the expected scaler after
 * one more step (the chapter's section 4). */
typedef struct {
    double scale;
    long tracker;
    int hyst;
} mt_scaler;
void mt_scaler_step(mt_scaler *s, const lab_scaler_config *c, int found_inf);

/* ---------------------------------------------------------------- part B */

/* A deep MLP stack of L layers, every width w (input, hidden, classes). */
dt_result mt_deep(dt_model *m, int L, size_t w);

/* The executor's peak and recomputed layers for plan keep[] on chain c,
 * by walking the plan through it allocation by allocation. */
void mt_walk(const lab_chain *c, const unsigned char *keep, size_t *peak, int *recomputed,
             double *flops);

/* The measured peak of ACT bytes of one lab_ckpt_step (the model's
 * gradients zeroed first) and the layers it recomputed. Fails when a
 * layer output is left in memory after the step. */
dt_result mt_ckpt_measure(lab_ckpt *c, const lab_plan *p, const float *x,
                          const int32_t *labels, size_t *peak, long *recomputed);

/* Predict, then measure (task 5): lab_predict_segments(L, k) against
 * section 6's formulas, then against the executor running
 * lab_plan_segments(k) on the deep MLP of L equal layers, exactly. Fails
 * the test naming L, k and every figure. */
void mt_expect_segments_prediction(int L, int k);

#endif /* MEMORY_TEST_H */
