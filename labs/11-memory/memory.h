/* memory.h - lab 11: mixed precision with dynamic loss scaling, and
 * activation checkpointing (chapter 11). The contract of the functions
 * you write (scaler.c, mixed.c, ckpt.c, plan.c) and of the given code
 * around them.
 *
 * Part A, mixed precision (chapter 11, sections 1 to 5). The MLP's fp32
 * parameters (model->params) are the MASTER weights. A step stores, in a
 * 16-bit format (fp16 or bf16), exactly what a real mixed-precision step
 * stores:
 *     w16    the master weights rounded, read by the forward and backward  PARAM
 *     act    each layer's input and output                                 ACT
 *     dact   the gradients flowing between layers                          ACT
 *     g16    the parameters' gradients, scaled by the loss scale S         GRAD
 * Every matrix product reads 16-bit operands and accumulates in fp32, as a
 * tensor core does; its result is rounded once, into its 16-bit home. The
 * fp32 scratch buffers below stand in for the tensor core's registers (a
 * CPU has no 16-bit matrix product); they are charged to OTHER, not ACT,
 * because a GPU would not hold them. The loss (softmax cross-entropy) runs
 * in fp32 on the widened logits, as PyTorch's autocast runs it. The
 * update reads g16, divides by S in fp32 and moves the fp32 master
 * weights, a chunk at a time, so that no fp32 gradient buffer exists.
 *
 * Part B, activation checkpointing (sections 6 and 7), on the deep MLP
 * stack: a PLAN says which layer outputs the forward keeps; the others
 * are freed as soon as the next layer has read them and recomputed, with
 * their run of dropped layers, when the backward needs them. The
 * executor's memory schedule is section 6's, and the tests measure it
 * with the library's memory accounting (tag ACT).
 *
 * Conventions: every function returns a dt_result; a bad argument is
 * DT_ERR_INVALID_ARG with a message naming it (dt_fail). */
#ifndef LAB_MEMORY_H
#define LAB_MEMORY_H

#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/tensor.h"
#include "dt/train.h"

/* ================================================================ part A: the loss scaler */

typedef struct {
    float init_scale;     /* S at the start; > 0 */
    float growth_factor;  /* > 1: S *= growth_factor after growth_interval clean steps */
    float backoff_factor; /* in (0, 1): S *= backoff_factor when an overflow backs S off */
    long growth_interval; /* >= 1 */
    int hysteresis;       /* >= 1: overflows, counted since S last grew, before S backs off;
                             1 backs off at every overflow (GradScaler) */
    float min_scale;      /* >= 0, <= init_scale: S never backs off below it; 0: no floor */
    int dynamic;          /* 0: S stays init_scale (a constant scaler; steps are still
                             skipped on overflow) */
} lab_scaler_config;

/* torch.amp.GradScaler's defaults: 2^16, x2, x0.5, every 2000 steps. */
lab_scaler_config lab_gradscaler_config(void);
/* Megatron-LM's: 2^32, x2, x0.5, every 1000 steps, hysteresis 2, floor 1. */
lab_scaler_config lab_megatron_config(void);
/* A constant S (bf16 trains with S = 1). */
lab_scaler_config lab_constant_config(float scale);

typedef struct {
    lab_scaler_config cfg;
    float scale;          /* S */
    long growth_tracker;  /* clean steps since S last changed or since the last overflow */
    int hysteresis_left;  /* overflows still tolerated before S backs off (cfg.hysteresis
                             after init and after each growth) */
    long steps, skipped;  /* updates seen by lab_scaler_update; those that overflowed */
} lab_scaler;

/* Checks cfg (a field out of range fails, naming it and its value) and
 * starts the scaler: S = init_scale, trackers at their start. (given) */
dt_result lab_scaler_init(lab_scaler *s, const lab_scaler_config *cfg);

/* Task 1 (section 4): the scale after a step whose gradients did
 * (found_inf = 1) or did not (0) hold an inf or a nan. */
dt_result lab_scaler_update(lab_scaler *s, int found_inf);

/* ================================================================ part A: the 16-bit step */

typedef struct {
    dt_model *model;      /* an MLP (linear layers); params: the fp32 master weights. Its
                             fp32 gradient buffer is freed by lab_mp_create */
    dt_dtype dtype;       /* DT_F16 or DT_BF16 */
    size_t rows;          /* samples per step */
    dt_optim_config optim;/* plain SGD with momentum and weight decay, on the master weights */
    float *momentum;      /* num_params floats, OPTIM; NULL without momentum */
    uint16_t *w16;        /* num_params, PARAM: the layout of model->params */
    uint16_t *g16;        /* num_params, GRAD: the layout of model->params */
    uint16_t **act;       /* act[0]: rows x in_width, the input; act[i + 1]: rows x out_width of
                             layer i; ACT */
    uint16_t *dact[2];    /* rows x widest layer each, ACT */
    float *probs;         /* rows x classes, fp32, ACT: the softmax of the loss */
    /* fp32 scratch, OTHER: a tensor core's registers */
    float *wa, *wb, *wc;  /* rows x widest layer each */
    float *ww, *wg;       /* the largest layer's parameter count each (weight, then bias);
                             wg is also the update's chunk: LAB_MP_CHUNK floats at least */
    size_t widest, layer_params;
} lab_mp;

enum { LAB_MP_CHUNK = 4096 };

/* The 16-bit buffers of m for batches of `rows`, and the update's
 * momentum; frees m->grads (dt_model_alloc_grads gives it back). m must be
 * an MLP, dtype f16 or bf16, optim plain SGD. (given) */
dt_result lab_mp_create(lab_mp *mp, dt_model *m, dt_dtype dtype, size_t rows,
                        const dt_optim_config *optim);
void lab_mp_free(lab_mp *mp);

/* Task 2 (sections 1 and 2). x: rows x in_width fp32, labels: rows.
 * Postcondition: w16 = the master weights rounded to mp->dtype; act[0] =
 * x rounded; act[i + 1] = layer i's output (ReLU but on the last layer),
 * each element the fp32 sum of products of 16-bit operands plus the 16-bit
 * bias, rounded once; probs, *loss (the mean cross-entropy) and *correct
 * (rows whose largest logit is the label; may be NULL) computed in fp32
 * from the widened logits. */
dt_result lab_mp_forward(lab_mp *mp, const float *x, const int32_t *labels, float *loss,
                         size_t *correct);

/* Task 2 (sections 2 and 3), after lab_mp_forward on the same labels.
 * Postcondition: g16 (overwritten) = the gradient of scale x the mean loss
 * with respect to every parameter, with the gradient of the logits formed
 * in fp32, scaled, and rounded to mp->dtype, and every later gradient
 * (weights, biases, inputs of layers) an fp32 sum of 16-bit operands
 * rounded once into g16 or dact. An overflow shows as inf in g16: it is
 * not an error. scale > 0. */
dt_result lab_mp_backward(lab_mp *mp, const int32_t *labels, float scale);

/* Task 1 (sections 3 and 4), after lab_mp_backward with s->scale.
 * Postcondition: if any element of g16 is inf or nan, the master weights
 * and the momentum are unchanged (the step is skipped); otherwise they
 * are those of dt_sgd_update with mp->optim on the gradient g16 / S,
 * computed in fp32. Then the scaler is updated with what was found.
 * *skipped (may be NULL) = 1 when the step was skipped. */
dt_result lab_mp_step(lab_mp *mp, lab_scaler *s, int *skipped);

/* A trainer (dt/train.h) whose step is lab_mp_forward, lab_mp_backward
 * with s->scale and lab_mp_step: no fp32 gradients, no sync. t must come
 * from dt_trainer_init on mp->model with no communicator; mp and s outlive
 * t. Its state between steps (the scaler: scale, growth_tracker,
 * hysteresis_left, steps, skipped; the momentum) is given to the trainer,
 * so that dt_train_state saves and loads it with the master weights.
 * (given) */
dt_result lab_mp_use_in_trainer(dt_trainer *t, lab_mp *mp, lab_scaler *s);

/* ================================================================ part B: plans */

/* keep[i] = 1: layer i's output is kept from the forward until layer i's
 * backward; 0: dropped once layer i + 1 has read it, recomputed when the
 * backward needs it. The last layer's output (the logits) is always kept. */
typedef struct {
    int num_layers;
    unsigned char *keep;
} lab_plan;

/* A plan of L >= 1 layers keeping every output; free. (given) */
dt_result lab_plan_init(lab_plan *p, int L);
void lab_plan_free(lab_plan *p);

/* Task 3 (section 6): the plan of `segments` segments in
 * checkpoint_sequential's cut (the first segments - 1 of floor(L /
 * segments) layers, the last of the rest): a segment keeps only its last
 * output, except the last segment, which keeps all of its outputs. 1 <=
 * segments <= L, else DT_ERR_INVALID_ARG naming both numbers. */
dt_result lab_plan_segments(lab_plan *p, int segments);

/* A chain as the planner sees it: per layer, the bytes of its output and
 * the FLOPs of its forward; the bytes every plan holds (fixed). */
typedef struct {
    int num_layers;
    size_t *out_bytes;    /* num_layers */
    double *flops;        /* num_layers */
    size_t fixed_bytes;
} lab_chain;

/* The chain of an executor's model and batch (lab_ckpt_create): out_bytes
 * = 4 rows x out_width, flops = 2 rows x in_width x out_width, fixed the
 * executor's working set. lab_chain_alloc makes an empty one of L layers
 * for a test or a table to fill. (given) */
dt_result lab_chain_alloc(lab_chain *c, int L);
void lab_chain_free(lab_chain *c);

typedef struct {
    size_t peak_bytes;     /* the executor's peak: fixed + layer outputs alive at once */
    int recomputed_layers; /* layers run a second time */
    double recompute_flops;/* their forward FLOPs */
} lab_plan_cost;

/* Task 3 (section 6): what the executor holds at its peak and recomputes
 * when it runs plan p on chain c (p and c of the same length). */
dt_result lab_plan_cost_of(const lab_chain *c, const lab_plan *p, lab_plan_cost *out);

/* Task 4 (section 7): a plan whose peak is at most budget bytes and whose
 * recompute FLOPs are the fewest any such plan has. A budget no plan
 * fits is DT_ERR_INVALID_ARG naming it. p must have c's length. */
dt_result lab_plan_select(const lab_chain *c, size_t budget, lab_plan *p);

/* Task 5 (section 6): predict, then measure. For a chain of L layers
 * whose outputs all have the same size, run by the executor with the plan
 * of lab_plan_segments(k): *peak := the layer outputs it holds at its
 * peak, beyond the fixed working set, and *recomputed := the layers it
 * runs a second time; worked out from section 6's formulas, without
 * building a plan or running a step. The tests then run that plan and
 * compare, exactly. 1 <= k <= L, else DT_ERR_INVALID_ARG naming both. */
dt_result lab_predict_segments(int L, int k, int *peak, int *recomputed);

/* ================================================================ part B: the executor */

typedef struct {
    dt_model *model;      /* a deep MLP stack (linear layers) */
    size_t rows;
    int num_layers;
    float *input;         /* rows x in_width: the batch, ACT */
    float **out;          /* out[i]: rows x out_width of layer i, ACT; NULL while not in memory */
    float *dbuf[2];       /* rows x widest layer each: the gradients between layers, ACT */
    float *probs;         /* rows x classes: the softmax, ACT */
    int cur;              /* dbuf[cur] holds the gradient of the output of the layer whose
                             backward is next */
    long layers_run;      /* lab_ckpt_layer_forward calls since the last lab_ckpt_step */
    lab_chain chain;      /* this model and batch, as the planner sees them */
} lab_ckpt;

/* The executor of m for batches of `rows`: allocates the fixed working
 * set (input, dbuf, probs), no layer output yet. (given) */
dt_result lab_ckpt_create(lab_ckpt *c, dt_model *m, size_t rows);
void lab_ckpt_free(lab_ckpt *c);

/* Given, for your forward and backward. Layer i's forward: out[i]
 * (allocated when NULL) from its input, out[i - 1] or the input for layer
 * 0, which must be in memory; counts layers_run. */
dt_result lab_ckpt_layer_forward(lab_ckpt *c, int i);
/* Frees out[i] (nothing when it is not in memory). */
void lab_ckpt_drop(lab_ckpt *c, int i);
/* Layer i's backward: the gradient of its output in dbuf[cur] -> the
 * gradient of its input in the other buffer (then cur flips), and its
 * parameters' gradients added into model->grads. Needs out[i] and layer
 * i's input in memory (DT_ERR_STATE naming what is missing). */
dt_result lab_ckpt_layer_backward(lab_ckpt *c, int i);

/* Task 3 (section 6). x: rows x in_width. Postcondition: the input holds
 * x; out[i] is in memory exactly for the layers p keeps; no other layer
 * output was ever in memory at once with more than one other dropped one
 * (a dropped output is freed as soon as the next layer has read it). */
dt_result lab_ckpt_forward(lab_ckpt *c, const lab_plan *p, const float *x);

/* Task 3 (section 6), after lab_ckpt_forward with the same plan and
 * lab_ckpt_loss. Postcondition: model->grads += the gradients of the mean
 * loss, bit for bit those of dt_model_backward; no layer output left in
 * memory; each dropped layer recomputed exactly once, its run brought back
 * only when the backward needs its last output, so that the ACT peak is
 * lab_plan_cost_of's. */
dt_result lab_ckpt_backward(lab_ckpt *c, const lab_plan *p);

/* The loss after the forward: softmax cross-entropy of out[L - 1] against
 * labels (rows), the gradient of the logits into dbuf[cur]. (given) */
dt_result lab_ckpt_loss(lab_ckpt *c, const int32_t *labels, float *loss);

/* One step: layers_run = 0, lab_ckpt_forward, lab_ckpt_loss,
 * lab_ckpt_backward (model->grads accumulate: zero them first for one
 * step's gradient). (given) */
dt_result lab_ckpt_step(lab_ckpt *c, const lab_plan *p, const float *x, const int32_t *labels,
                        float *loss);

/* The seed's rule of section 7, for comparison (given): starting from
 * keeping everything, drop the layer whose recompute FLOPs per byte of
 * output are the fewest, one at a time, until the kept outputs' bytes
 * (plus fixed) fit the budget. */
dt_result lab_plan_greedy(const lab_chain *c, size_t budget, lab_plan *p);

#endif /* LAB_MEMORY_H */
