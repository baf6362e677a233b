/* dt/nn.h - layers as forward/backward pairs, and three models built from
 * them, in the manner of llm.c.
 *
 * Layers: plain functions with explicit sizes, outputs first, shapes in the
 * comments (N rows, C input channels, OC output channels; B batch, T time,
 * NH heads). A forward overwrites its outputs; a backward ACCUMULATES (+=)
 * into its gradient outputs, so gradients of a tensor used twice, or of
 * several micro-batches, add up. A gradient output given as NULL is not
 * computed. Every call checks for NULL buffers and zero sizes and returns
 * DT_ERR_INVALID_ARG with a message naming the argument.
 *
 * Models: every parameter lives in ONE contiguous float buffer (model.params,
 * tag PARAM), carved into named views (name, offset, shape) laid out layer
 * after layer; the gradients live in a buffer of the same layout
 * (model.grads, tag GRAD). A layer's parameters are the contiguous range
 * [layer.param_offset, +param_count), so flattening for allreduce and
 * sharding for ZeRO or FSDP are slices, never copies.
 *
 * A stage is layers [first, last) of a model. Its activations live in a
 * dt_acts (tag ACT) created for one batch shape; a pipeline keeps one per
 * micro-batch in flight. dt_model_forward runs a stage from its input
 * activation, dt_model_loss puts the loss on the last layer's output, and
 * dt_model_backward goes back through the stage, accumulating parameter
 * gradients, calling a hook as each layer's gradients become complete, and
 * returning the gradient with respect to the stage's input.
 *
 * The stage code a reader meets (stage.c, gpt_block.c, layers.c) is the
 * reference: batch-major, one layer function after another, as the
 * chapters describe it. A faster layout of the same computation lives in
 * its own file (feature_major.c) and runs only when asked for
 * (dt_acts_create_path with DT_NN_FAST); tests/lib/test_nn_fast.c holds it
 * equal to the reference. */
#ifndef DT_NN_H
#define DT_NN_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ layers */

/* out (N, OC) = inp (N, C) @ weight^T + bias; weight (OC, C), bias (OC) or NULL. */
dt_result dt_linear_forward(float *out, const float *inp, const float *weight,
                            const float *bias, size_t N, size_t C, size_t OC);
/* dinp (N, C) += dout (N, OC) @ weight; dweight (OC, C) += dout^T @ inp;
 * dbias (OC) += sum over rows of dout. */
dt_result dt_linear_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                             const float *inp, const float *weight, size_t N, size_t C,
                             size_t OC);
/* The same with the parameter gradients scaled as they are accumulated:
 * dweight += scale * dout^T @ inp, dbias += scale * (sum over rows of dout).
 * dinp is computed first, so dweight and dbias may be weight and bias
 * themselves: with scale = -lr this is a step of plain SGD folded into the
 * weight-gradient product (lib/train/fused_sgd.c). */
dt_result dt_linear_backward_scaled(float *dinp, float *dweight, float *dbias, const float *dout,
                                    const float *inp, const float *weight, float scale, size_t N,
                                    size_t C, size_t OC);

/* out (n) = max(inp, 0). In place (out == inp) allowed. */
dt_result dt_relu_forward(float *out, const float *inp, size_t n);
/* dinp (n) += dout where out > 0 (out: the forward's output). */
dt_result dt_relu_backward(float *dinp, const float *dout, const float *out, size_t n);

/* out (n) = GELU(inp), tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
dt_result dt_gelu_forward(float *out, const float *inp, size_t n);
dt_result dt_gelu_backward(float *dinp, const float *dout, const float *inp, size_t n);

/* out (n) = a + b; backward: da += dout, db += dout (either may be NULL). */
dt_result dt_residual_forward(float *out, const float *a, const float *b, size_t n);
dt_result dt_residual_backward(float *da, float *db, const float *dout, size_t n);

/* Layer normalisation of each row of inp (N, C):
 *   out = (x - mean) * rstd * weight + bias, rstd = 1 / sqrt(var + 1e-5),
 * saving mean (N) and rstd (N) for the backward. */
dt_result dt_layernorm_forward(float *out, float *mean, float *rstd, const float *inp,
                               const float *weight, const float *bias, size_t N, size_t C);
dt_result dt_layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                                const float *inp, const float *weight, const float *mean,
                                const float *rstd, size_t N, size_t C);

/* Softmax cross-entropy over rows of logits (N, V) with labels (N) in [0, V):
 * probs (N, V) = softmax (max subtracted first, so large logits do not
 * overflow); losses (N) = -log probs[label] (may be NULL); *mean_loss (may
 * be NULL) = their mean. A label out of range fails, naming its row. */
dt_result dt_softmax_xent_forward(float *probs, float *losses, double *mean_loss,
                                  const float *logits, const int32_t *labels, size_t N,
                                  size_t V);
/* dlogits (N, V) += scale * (probs - onehot(label)); scale = 1/N for a mean. */
dt_result dt_softmax_xent_backward(float *dlogits, const float *probs, const int32_t *labels,
                                   float scale, size_t N, size_t V);

/* out (B, T, C) = wte[tokens[b, t]] + wpe[t]; wte (V, C), wpe (T, C) or NULL. */
dt_result dt_embedding_forward(float *out, const int32_t *tokens, const float *wte,
                               const float *wpe, size_t B, size_t T, size_t C, size_t V);
/* dwte[tokens[b, t]] += dout[b, t]; dwpe[t] += dout[b, t] (either may be NULL). */
dt_result dt_embedding_backward(float *dwte, float *dwpe, const float *dout,
                                const int32_t *tokens, size_t B, size_t T, size_t C, size_t V);

/* Multi-head causal self-attention on qkv (B, T, 3C) = [q | k | v], each of
 * NH heads of size hs = C / NH (C % NH == 0):
 *   att[b, h, t, t2] = softmax over t2 <= t of q_t . k_t2 / sqrt(hs), 0 for t2 > t
 *   out (B, T, C)[b, t, h*hs + i] = sum over t2 of att * v_t2
 * att (B, NH, T, T) is saved for the backward. */
dt_result dt_attention_forward(float *out, float *att, const float *qkv, size_t B, size_t T,
                               size_t C, size_t NH);
/* dqkv (B, T, 3C) += the gradient through the attention. */
dt_result dt_attention_backward(float *dqkv, const float *dout, const float *qkv,
                                const float *att, size_t B, size_t T, size_t C, size_t NH);

/* ================================================================ models */

typedef enum {
    DT_MODEL_MLP = 0,  /* widths w0 -> w1 -> ... -> wn, ReLU between, logits wn */
    DT_MODEL_DEEP_MLP, /* in -> width, `blocks` equal width -> width layers, -> classes */
    DT_MODEL_GPT       /* token+position embedding, transformer blocks, final norm + head */
} dt_model_kind;

typedef enum {
    DT_LAYER_LINEAR = 0,  /* out = W x + b (the logits layer of an MLP) */
    DT_LAYER_LINEAR_RELU, /* out = relu(W x + b) */
    DT_LAYER_EMBED,       /* tokens -> wte[token] + wpe[t] */
    DT_LAYER_BLOCK,       /* x + attn(ln1(x)), then + mlp(ln2(.)) */
    DT_LAYER_HEAD         /* logits = lm_head(lnf(x)), no bias */
} dt_layer_kind;

/* The views of each layer kind, by name: view k of a layer is
 * views[layer.first_view + k] (dt_model_view). model.c adds a layer's views
 * in exactly this order and fails if it does not, so the names here are
 * the layout of the buffer. */
typedef enum { DT_LINEAR_WEIGHT = 0, DT_LINEAR_BIAS, DT_LINEAR_VIEWS } dt_linear_view;
typedef enum { DT_EMBED_WTE = 0, DT_EMBED_WPE, DT_EMBED_VIEWS } dt_embed_view;
typedef enum {
    DT_BLOCK_LN1_WEIGHT = 0, DT_BLOCK_LN1_BIAS,
    DT_BLOCK_QKV_WEIGHT, DT_BLOCK_QKV_BIAS,       /* attention's C -> 3C (q, k, v) */
    DT_BLOCK_PROJ_WEIGHT, DT_BLOCK_PROJ_BIAS,     /* attention's output C -> C */
    DT_BLOCK_LN2_WEIGHT, DT_BLOCK_LN2_BIAS,
    DT_BLOCK_FC_WEIGHT, DT_BLOCK_FC_BIAS,         /* the MLP's C -> 4C */
    DT_BLOCK_MPROJ_WEIGHT, DT_BLOCK_MPROJ_BIAS,   /* the MLP's 4C -> C */
    DT_BLOCK_VIEWS
} dt_block_view;
typedef enum { DT_HEAD_LNF_WEIGHT = 0, DT_HEAD_LNF_BIAS, DT_HEAD_LM_WEIGHT, DT_HEAD_VIEWS } dt_head_view;

typedef struct {
    char name[48];           /* e.g. "fc1.weight", "block2.attn.qkv.weight" */
    size_t offset;           /* in floats, into model.params and model.grads */
    size_t count;            /* = product of shape */
    int ndim;
    size_t shape[DT_MAX_DIMS];
    int layer;               /* the layer that owns it */
    float init_std;          /* initial values: normal(0, init_std) when > 0, */
    float init_value;        /* else all init_value (1 for norm gains, 0 for biases) */
} dt_param_view;

typedef struct {
    dt_layer_kind kind;
    char name[32];
    size_t in_width;         /* floats per row of the input; 0: the input is tokens */
    size_t out_width;        /* floats per row of the output */
    size_t param_offset;     /* the layer's parameters: [param_offset, +param_count) */
    size_t param_count;
    int first_view, num_views;
} dt_layer;

typedef struct {
    size_t vocab;     /* V */
    size_t context;   /* T, the longest sequence */
    size_t layers;    /* transformer blocks */
    size_t heads;     /* NH, dividing channels */
    size_t channels;  /* C */
} dt_gpt_config;

#define DT_MLP_MAX_WIDTHS 16

typedef struct {
    dt_model_kind kind;
    int num_layers;
    dt_layer *layers;
    int num_views;
    dt_param_view *views;
    size_t num_params;
    float *params;        /* num_params floats, tag PARAM */
    float *grads;         /* num_params floats, tag GRAD, same layout; may be NULL */
    size_t in_width;      /* floats per input row (0 for GPT: tokens) */
    size_t num_classes;   /* width of the logits */
    size_t max_seq;       /* T: 1 for the MLPs, the context for GPT */
    dt_gpt_config gpt;    /* GPT only: the WHOLE model's sizes, a shard's too */
    uint64_t seed;        /* of the initial parameters */
    /* A tensor-parallel shard (dt_tp_shard, dt/tp.h): the group its layers
     * communicate in (not owned), its size t and this rank's index; a
     * whole model has NULL, 1 and 0. The views then hold this rank's
     * slices, and the GPT's layers run the functions of dt/tp.h. */
    dt_comm *tp;
    int tp_size, tp_rank;
} dt_model;

/* MLP classifier: widths[0] inputs, widths[n-1] classes, n in 2..16; every
 * linear layer but the last is followed by ReLU. Layer i is "fc<i+1>". */
dt_result dt_mlp_create(dt_model *m, const size_t *widths, int n, uint64_t seed);
/* Deep MLP stack: layer 0 "in" (in -> width), layers 1..blocks "block<i>"
 * (width -> width, all equal), layer blocks+1 "out" (width -> classes);
 * ReLU after every layer but the last. */
dt_result dt_deep_mlp_create(dt_model *m, size_t in, size_t width, size_t blocks,
                             size_t classes, uint64_t seed);
/* Tiny GPT: layer 0 "embed", layers 1..L "block<i>", layer L+1 "head". */
dt_result dt_gpt_create(dt_model *m, const dt_gpt_config *cfg, uint64_t seed);
/* From a text spec: "mlp:784,1024,1024,10", "deep:in,width,blocks,classes",
 * "gpt:vocab,context,layers,heads,channels". Errors name the bad part. */
dt_result dt_model_create_spec(dt_model *m, const char *spec, uint64_t seed);

/* Frees the buffers and tables; m is zeroed. NULL is ignored. */
void dt_model_free(dt_model *m);

/* Allocates (zeroed) or frees the gradient buffer, for chapters that keep
 * only a shard of it. dt_model_*_create allocate it. */
dt_result dt_model_alloc_grads(dt_model *m);
void dt_model_free_grads(dt_model *m);
dt_result dt_model_zero_grads(dt_model *m);

/* Rewrites the initial parameters of every view from (seed, view index):
 * the same seed gives the same model on every rank. */
dt_result dt_model_init_params(dt_model *m, uint64_t seed);

/* The view named name, or NULL. */
const dt_param_view *dt_model_find_view(const dt_model *m, const char *name);

/* The first float of view k (a dt_*_view name) of layer `layer` in buf:
 * m->params, m->grads or any buffer of their layout. The caller passes a
 * layer and a view that exist (no check: this is the inner loop's lookup). */
static inline float *dt_model_view(const dt_model *m, float *buf, int layer, int k)
{
    return buf + m->views[m->layers[layer].first_view + k].offset;
}

/* The flat range of the parameters of layers [first, last). */
dt_result dt_model_layer_range(const dt_model *m, int first, int last, size_t *offset,
                               size_t *count);

/* Forward and backward FLOPs of one sample (a sequence for GPT), counting
 * 2 per multiply-add of the matrix products: for benchmarks and the cost
 * model. */
double dt_model_flops_per_sample(const dt_model *m);

/* ================================================================ stages */

/* Which code runs a stage (dt_acts_create_path). */
typedef enum {
    DT_NN_REFERENCE = 0, /* stage.c, gpt_block.c, layers.c: batch-major, layer by layer */
    DT_NN_FAST           /* the feature-major layout (feature_major.c) where it applies, a
                            stage of linear layers on a batch thinner than its widest layer;
                            elsewhere the reference. The same sums in another order: equal
                            to the reference up to float rounding (bit for bit when every
                            sum is exact), tests/lib/test_nn_fast.c */
} dt_nn_path;

struct dt_acts_fm; /* the feature-major path's copies (feature_major.c) */

/* Activations of layers [first, last) for a batch of B samples of T rows
 * each (T = 1 for the MLPs, T <= context for GPT), tag ACT. Read-only for
 * callers, except through the functions below. */
typedef struct {
    const dt_model *model;
    int first, last;
    size_t B, T, rows;       /* rows = B * T */
    float *input;            /* rows x in_width of layer first (a copy of x) */
    int32_t *tokens;         /* rows, when layer first is the embedding */
    float **out;             /* out[i - first]: rows x out_width of layer i */
    float **saved;           /* per layer: what its backward needs beyond in/out */
    float *dbuf[2];          /* gradients flowing between layers */
    float *scratch;          /* backward temporaries of a transformer block */
    float *probs;            /* rows x classes, after dt_model_loss */
    int has_loss_grad;       /* dt_model_loss left dlogits in dbuf[0] */
    int forward_done;
    struct dt_acts_fm *fm;   /* non-NULL when the feature-major path runs this
                                stage; input and out above are filled all the same */
} dt_acts;

/* The reference path: dt_acts_create_path(..., DT_NN_REFERENCE). */
dt_result dt_acts_create(dt_acts **out, const dt_model *m, int first, int last, size_t B,
                         size_t T);
dt_result dt_acts_create_path(dt_acts **out, const dt_model *m, int first, int last, size_t B,
                              size_t T, dt_nn_path path);
void dt_acts_free(dt_acts *a);
/* The stage's output (rows x out_width of layer last-1), after a forward. */
const float *dt_acts_output(const dt_acts *a);
size_t dt_acts_output_width(const dt_acts *a);

/* Runs layers [first, last): x (rows x in_width of layer first) when it
 * takes floats, tokens (rows, each in [0, vocab)) when it is the embedding;
 * the other is ignored and may be NULL. The input is copied. */
dt_result dt_model_forward(dt_model *m, dt_acts *a, const float *x, const int32_t *tokens);

/* Softmax cross-entropy on the output of the model's LAST layer (the stage
 * must end there) against labels (rows, in [0, classes)). Writes the mean
 * loss, and the number of rows whose argmax is the label (correct may be
 * NULL), and keeps dlogits = (probs - onehot) / rows for the backward. */
dt_result dt_model_loss(dt_model *m, dt_acts *a, const int32_t *labels, float *loss,
                        size_t *correct);

/* Called by the backward as soon as layer `layer`'s parameter gradients are
 * complete: they are grads[offset .. offset+count). Layers come last to
 * first. A result other than DT_OK stops the backward and is returned. */
typedef dt_result (*dt_grad_hook)(void *arg, int layer, size_t offset, size_t count);

/* Backward through layers [first, last), last to first. dout is the
 * gradient w.r.t. the stage's output (rows x out_width); NULL takes the one
 * dt_model_loss left. Parameter gradients are ACCUMULATED into m->grads
 * (zero them per step with dt_model_zero_grads). dinp (rows x in_width of
 * layer first) receives (overwritten) the gradient w.r.t. the stage input;
 * NULL skips it; it must be NULL when layer first is the embedding. hook
 * may be NULL. */
dt_result dt_model_backward(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                            dt_grad_hook hook, void *hook_arg);

/* The same backward with the parameter gradients accumulated as
 *     grads += scale * dL/dparams
 * into grads, a buffer of the parameters' layout (dt_model_backward is
 * grads = m->grads, scale = 1). A linear layer computes its input gradient
 * before it writes its parameters' gradients, so for a stage of linear
 * layers grads may be m->params itself: with scale = -lr the backward is
 * then a step of plain SGD that never stores a gradient
 * (lib/train/fused_sgd.c). Other layer kinds read their parameters after
 * writing gradients: they take scale 1 and a buffer apart from m->params
 * (DT_ERR_UNSUPPORTED otherwise). */
dt_result dt_model_backward_into(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                                 dt_grad_hook hook, void *hook_arg, float *grads, float scale);

/* ================================================================ split backward */

/* Zero-bubble pipelines (chapter 06, section 6) split a stage's backward in
 * two (split_backward.c): B, the gradient w.r.t. the stage's input, which
 * the previous stage waits for, and W, the parameter gradients, which wait
 * for nothing but the update. B keeps each layer's output gradient for W
 * in a dt_wgrad (rows x out_width floats per layer, tag ACT). B then W
 * accumulates the same gradients as dt_model_backward, bit for bit. Stages
 * of linear layers only (the MLPs; DT_ERR_UNSUPPORTED naming the layer
 * otherwise). */
typedef struct dt_wgrad dt_wgrad;

/* What a split backward of a's stage keeps between its halves; a must
 * outlive it. Free with dt_wgrad_free (NULL is ignored). */
dt_result dt_wgrad_create(dt_wgrad **out, const dt_acts *a);
void dt_wgrad_free(dt_wgrad *w);

/* B: as dt_model_backward's dinp (dout NULL: the loss's gradient), and the
 * layers' output gradients kept in w. Computes no parameter gradient and
 * calls no hook. DT_ERR_STATE when w's last B has not had its W. */
dt_result dt_model_backward_input(dt_model *m, dt_acts *a, const float *dout, float *dinp,
                                  dt_wgrad *w);

/* W: accumulates (+=) the parameter gradients of a's layers into m->grads
 * from what B kept, calling hook (may be NULL) as each layer's are
 * complete, last layer first. DT_ERR_STATE when B has not run. */
dt_result dt_model_backward_weight(dt_model *m, dt_acts *a, dt_wgrad *w, dt_grad_hook hook,
                                   void *hook_arg);

#ifdef __cplusplus
}
#endif

#endif /* DT_NN_H */
