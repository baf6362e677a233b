/* tp.h - lab 07: tensor parallelism (Megatron-LM) and sequence parallelism
 * on the tiny GPT. Read chapters/07-tensor-parallel.md first.
 *
 * t ranks share every layer of one model: each holds a 1/t slice of the
 * large weight matrices (and of the embedding and the LM head, split over
 * the vocabulary) and computes with it; collectives inside each layer glue
 * the slices into the result one rank with the whole model would compute.
 *
 * The tasks, in order (each one a section of the chapter):
 *   1. lab_column_*, lab_row_*          column- and row-parallel linear
 *                                       layers, forward and backward (2)
 *   2. lab_tp_mlp_*                     the Megatron MLP: column then row (3)
 *   3. lab_tp_shard_qkv,                attention split by heads (4)
 *      lab_tp_attention_*
 *   4. lab_vocab_embed_*,               vocabulary-parallel embedding and
 *      lab_vocab_xent_*                 cross-entropy (5)
 *   5. lab_tp_clip_grad_norm            gradient-norm clipping over sharded
 *                                       parameters (9)
 *   6. going further: sequence parallelism (7, 8): the functions of tasks
 *      1 and 4 when tp->sp is set, and lab_sp_allreduce_replicated_grads
 *   7. lab_tp_predict_step_bytes        predict, then measure: the bytes of
 *                                       a training step (6, 7)
 *
 * The code outside the fences (model.c, gpt.c) is given: it lays out a
 * rank's shard of the GPT, allocates its activations, composes your
 * functions into a transformer block and the whole model, and gives the
 * library's training loop the hooks that train it.
 *
 * Shapes. The whole model has vocabulary V, context T, L blocks, NH heads
 * and C channels (dt_gpt_config); a batch is B sequences of T tokens, so
 * N = B T rows. Matrices are row-major, a linear layer's weight is
 * (out, in) as in dt/nn.h. On this rank (index r of t):
 *   split by rows (column-parallel):  qkv (3C/t, C), fc (4C/t, C),
 *                                     lm_head and wte (V/t, C)
 *   split by columns (row-parallel):  proj (C, C/t), mproj (C, 4C/t)
 *   replicated (the same on every rank): the layernorms, wpe, and the
 *                                     biases of the row-parallel layers
 * Rows in the "replicated regions" (the layernorms, the residual stream,
 * the embedding's output): N on every rank, or with sequence parallelism
 * (tp->sp) this rank's Nl = N/t consecutive rows [r Nl, (r+1) Nl).
 *
 * Conventions, as dt/nn.h: a forward overwrites its outputs; a backward
 * ACCUMULATES (+=) into parameter gradients, but OVERWRITES the gradient of
 * its input (dx, dh), which is the result of a collective. A gradient
 * output given as NULL (a bias that does not exist) is skipped. Functions
 * return DT_OK or a dt_result with a message (dt_fail). Temporaries come
 * from lab_tp_scratch, never from malloc in a hot loop.
 *
 * Every function of the tasks but lab_tp_shard_qkv is collective on
 * tp->comm: all t ranks call it, in the same order, with the same sizes
 * (some need no communication, which is for you to find). The tests count
 * your collectives (dt_comm_stats) and read your memory (dt_mem_stats_get). */
#ifndef LAB_TP_H
#define LAB_TP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

/* ------------------------------------------------------------ the group */

/* lab_tp_scratch slots: 0 and 1 belong to the linear layers and the
 * vocabulary functions (tasks 1 and 4), 2 and 3 to the sub-blocks (tasks 2
 * and 3), so that a sub-block's temporaries survive the linear layers it
 * calls. */
enum { LAB_TP_SLOT_LINEAR0 = 0, LAB_TP_SLOT_LINEAR1, LAB_TP_SLOT_BLOCK0, LAB_TP_SLOT_BLOCK1,
       LAB_TP_SLOTS };

typedef struct {
    dt_comm *comm;          /* the tensor-parallel group (not owned) */
    int t, rank;            /* its size, and this rank's index in it */
    int sp;                 /* 1: sequence parallelism (task 6) */
    dt_gpt_config cfg;      /* the WHOLE model's sizes */
    size_t B, T;            /* a batch: B sequences of T tokens */
    size_t N;               /* B T rows */
    size_t Nl;              /* rows of the replicated regions here: N, or N/t with sp */
    float *scratch[LAB_TP_SLOTS]; /* lab_tp_scratch's buffers (tag COMM) */
    size_t scratch_floats[LAB_TP_SLOTS];
} lab_tp;

/* Sets up tp for the model cfg on comm (all its ranks form the group) and
 * batches of B x T. Fails with DT_ERR_INVALID_ARG, naming the numbers,
 * when the vocabulary does not split over t ranks, T exceeds the context,
 * or, with sp, the N rows do not split over t ranks. (Heads: task 3.) */
dt_result lab_tp_init(lab_tp *tp, dt_comm *comm, const dt_gpt_config *cfg, size_t B, size_t T,
                      int sp);
void lab_tp_free(lab_tp *tp);

/* A buffer of at least `floats` floats for slot (LAB_TP_SLOT_*), kept in tp
 * and grown as needed (tag COMM, the buffer Megatron keeps for gathered
 * tensors). Its contents are undefined; different slots never overlap.
 * NULL (with a message) on a bad slot or out of memory. */
float *lab_tp_scratch(lab_tp *tp, int slot, size_t floats);

/* ------------------------------------------------------------ the shard */

/* Pointers to one block's parameters (or their gradients) on this rank,
 * with this rank's shapes (see the top of this file). */
typedef struct {
    float *ln1_w, *ln1_b;   /* (C), (C)            replicated */
    float *qkv_w, *qkv_b;   /* (3C/t, C), (3C/t)   this rank's heads, q | k | v */
    float *proj_w, *proj_b; /* (C, C/t), (C)       row-parallel; bias replicated */
    float *ln2_w, *ln2_b;   /* (C), (C)            replicated */
    float *fc_w, *fc_b;     /* (4C/t, C), (4C/t)   column-parallel */
    float *mproj_w, *mproj_b; /* (C, 4C/t), (C)    row-parallel; bias replicated */
} lab_tp_block_w;

/* Where each tensor of the shard lies in params and grads (offsets in
 * floats). The replicated tensors come first, [0, num_replicated), then
 * this rank's slices of the split ones: an allreduce or a norm of "the
 * replicated part" is one range. */
typedef struct {
    size_t ln1_w, ln1_b, proj_b, ln2_w, ln2_b, mproj_b; /* replicated */
    size_t qkv_w, qkv_b, proj_w, fc_w, fc_b, mproj_w;   /* split */
} lab_tp_block_at;

typedef struct {
    float *params, *grads;  /* num_params floats each, tags PARAM and GRAD */
    size_t num_params;
    size_t num_replicated;  /* [0, num_replicated): the same on every rank */
    size_t split_whole;     /* floats of the split tensors in the whole model:
                               this rank holds split_whole / t of them */
    size_t layers;          /* L */
    size_t wpe, lnf_w, lnf_b, wte, lm_head; /* wpe (T, C), lnf (C), wte and lm_head (V/t, C) */
    lab_tp_block_at *block; /* L entries */
} lab_tp_model;

/* This rank's shard of `whole` (a dt_gpt_create model of tp->cfg): every
 * replicated tensor copied, every split one sliced as above (qkv through
 * your lab_tp_shard_qkv). Gradients zeroed. */
dt_result lab_tp_model_create(lab_tp_model *m, const lab_tp *tp, const dt_model *whole);
void lab_tp_model_free(lab_tp_model *m);

/* Block l's tensors in buf (m->params or m->grads). */
lab_tp_block_w lab_tp_block(const lab_tp_model *m, float *buf, size_t l);

/* ------------------------------------------------------------ activations */

/* What one block keeps for its backward on this rank (tag ACT, one
 * allocation per block): section 8 counts these. */
typedef struct {
    float *ln1, *mean1, *rstd1; /* (Nl, C), (Nl), (Nl): ln1's output and statistics */
    float *qkv;                 /* (N, 3C/t): this rank's heads' q | k | v */
    float *att;                 /* (B, NH/t, T, T): their attention weights */
    float *atty;                /* (N, C/t): the attention output of those heads */
    float *res2;                /* (Nl, C): x + attention */
    float *ln2, *mean2, *rstd2; /* (Nl, C), (Nl), (Nl) */
    float *fch, *fchg;          /* (N, 4C/t): the MLP's first layer, before and after GELU */
    float *out;                 /* (Nl, C): the block's output */
    float *base;                /* the one allocation all of the above lie in */
} lab_tp_block_acts;

typedef struct {
    size_t layers;
    int32_t *tokens;            /* (N) the batch's tokens, all rows on every rank */
    float *emb;                 /* (Nl, C) the embedding's output */
    lab_tp_block_acts *blocks;  /* L */
    float *lnf, *meanf, *rstdf; /* (Nl, C), (Nl), (Nl) */
    float *logits, *probs;      /* (N, V/t): this rank's slice of the vocabulary */
    /* backward temporaries (not kept between steps' phases) */
    float *dlogits;             /* (N, V/t) */
    float *d[4];                /* (Nl, C) each: gradients of the residual stream */
} lab_tp_acts;

/* One block's record, alone (the tests measure one layer with it). */
dt_result lab_tp_block_acts_create(lab_tp_block_acts *a, const lab_tp *tp);
void lab_tp_block_acts_free(lab_tp_block_acts *a);

dt_result lab_tp_acts_create(lab_tp_acts *a, const lab_tp *tp, size_t layers);
void lab_tp_acts_free(lab_tp_acts *a);

/* ------------------------------------------------------------ the model (given) */

/* One block: x (Nl, C) -> a->out (Nl, C):
 *   res2 = x + attention(ln1(x));  out = res2 + mlp(ln2(res2)) */
dt_result lab_tp_block_forward(lab_tp *tp, lab_tp_block_acts *a, const float *x,
                               const lab_tp_block_w *p);
/* Its backward: dy (Nl, C) -> dx (Nl, C, overwritten), parameter gradients
 * accumulated into g; work0 and work1: (Nl, C) each. */
dt_result lab_tp_block_backward(lab_tp *tp, float *dx, const lab_tp_block_w *g, const float *dy,
                                const float *x, const lab_tp_block_acts *a,
                                const lab_tp_block_w *p, float *work0, float *work1);

/* The whole model on tokens (N) against labels (N), both the same on every
 * rank and in [0, V) (checked first, naming the row): *loss gets the mean
 * cross-entropy. */
dt_result lab_tp_forward(lab_tp *tp, const lab_tp_model *m, lab_tp_acts *a,
                         const int32_t *tokens, const int32_t *labels, float *loss);
/* Its backward, accumulating into m->grads (zero them first). */
dt_result lab_tp_backward(lab_tp *tp, lab_tp_model *m, lab_tp_acts *a, const int32_t *labels);

/* Training with the library's loop (dt/train.h): dt_train_step(&s->trainer,
 * batch) and dt_train(&s->trainer, ...) run
 *   zero the gradients; forward, backward (the model above, on each
 *   micro-batch of the group's B x T); sync: with sp the replicated
 *   gradients' allreduce (task 6), the micro-batches' mean, the clip to
 *   max_norm when max_norm > 0 (task 5); update: opt over the whole shard.
 * The trainer has no communicator: its data-parallel group is this rank
 * alone, and every rank of the TP group takes the same batch (dt_train's
 * sampler gives them the same order). */
typedef struct {
    dt_trainer trainer;
    lab_tp *tp;
    lab_tp_model *m;
    lab_tp_acts *a;
    dt_model view;          /* the shard as the loop sees it: params, grads, no layers */
    float max_norm;
    float norm;             /* the last clip's norm (before clipping) */
} lab_tp_train;

dt_result lab_tp_train_init(lab_tp_train *s, lab_tp *tp, lab_tp_model *m, lab_tp_acts *a,
                            const dt_optim_config *opt, float max_norm);
void lab_tp_train_free(lab_tp_train *s);

/* ------------------------------------------------------------ task 1 (section 2) */

/* Column-parallel linear layer: the whole layer is Y = X W^T + b with W
 * (OC, C); this rank holds the rows [r OCl, (r+1) OCl) of W, as w (OCl, C),
 * and of b (OCl; NULL: no bias), and computes y (N, OCl), the same columns
 * of Y. x is the layer's whole input (N, C), the same on every rank; with
 * tp->sp, this rank's N/t rows of it, and the rest comes from the others.
 * Forward: no communication without sp. */
dt_result lab_column_forward(lab_tp *tp, float *y, const float *x, const float *w,
                             const float *b, size_t N, size_t C, size_t OCl);
/* dx (N, C; with sp this rank's N/t rows), overwritten, = the gradient of
 * the loss with respect to the layer's input, summed over the ranks' slices
 * (the same on every rank); dw (OCl, C) += dy^T x; db (OCl; may be NULL)
 * += the column sums of dy. */
dt_result lab_column_backward(lab_tp *tp, float *dx, float *dw, float *db, const float *dy,
                              const float *x, const float *w, size_t N, size_t C, size_t OCl);

/* Row-parallel linear layer: the whole layer is Y = X W^T + b with W (OC,
 * C); this rank holds the columns [r Cl, (r+1) Cl) of W, as w (OC, Cl), and
 * gets x (N, Cl), the same columns of X (a column-parallel layer's
 * output). y (N, OC) = Y, the same on every rank; with tp->sp, this rank's
 * N/t rows of Y. b (OC; may be NULL) is replicated. */
dt_result lab_row_forward(lab_tp *tp, float *y, const float *x, const float *w, const float *b,
                          size_t N, size_t Cl, size_t OC);
/* dy: the gradient of Y (N, OC; with sp this rank's N/t rows).
 * dx (N, Cl), overwritten, = the gradient of this rank's x; dw (OC, Cl) +=
 * its weight gradient; db (OC; may be NULL) += the column sums of the rows
 * of dy this rank holds. */
dt_result lab_row_backward(lab_tp *tp, float *dx, float *dw, float *db, const float *dy,
                           const float *x, const float *w, size_t N, size_t Cl, size_t OC);

/* ------------------------------------------------------------ task 2 (section 3) */

/* The block's MLP on this rank: from a->ln2 (Nl, C), fc (column-parallel,
 * C -> 4C), GELU, mproj (row-parallel, 4C -> C) with its bias: y (Nl, C).
 * Keeps a->fch and a->fchg for the backward. */
dt_result lab_tp_mlp_forward(lab_tp *tp, float *y, lab_tp_block_acts *a, const lab_tp_block_w *p);
/* dy (Nl, C), the gradient of the MLP's output -> dh (Nl, C, overwritten),
 * the gradient of a->ln2; the MLP's parameter gradients accumulated into g. */
dt_result lab_tp_mlp_backward(lab_tp *tp, float *dh, const lab_tp_block_w *g, const float *dy,
                              const lab_tp_block_acts *a, const lab_tp_block_w *p);

/* ------------------------------------------------------------ task 3 (section 4) */

/* This rank's slice of the whole qkv layer (w (3C, C) = [Wq; Wk; Wv], b
 * (3C) alike, as dt_gpt_create lays it out): w_r (3C/t, C) and b_r (3C/t)
 * hold the q, k and v rows of heads [r NH/t, (r+1) NH/t), in the order
 * q | k | v, so that (N, 3C/t) = x w_r^T + b_r is what dt_attention_forward
 * expects for C/t channels and NH/t heads. b and b_r may both be NULL.
 * NH % t != 0 fails with DT_ERR_INVALID_ARG, with a message that names
 * both numbers. */
dt_result lab_tp_shard_qkv(float *w_r, float *b_r, const float *w, const float *b, size_t C,
                           size_t NH, int t, int r);

/* The block's attention on this rank: from a->ln1 (Nl, C), qkv
 * (column-parallel), causal attention over this rank's NH/t heads, proj
 * (row-parallel) with its bias: y (Nl, C). Keeps a->qkv, a->att, a->atty. */
dt_result lab_tp_attention_forward(lab_tp *tp, float *y, lab_tp_block_acts *a,
                                   const lab_tp_block_w *p);
/* dy (Nl, C) -> dh (Nl, C, overwritten), the gradient of a->ln1; the
 * attention's parameter gradients accumulated into g. */
dt_result lab_tp_attention_backward(lab_tp *tp, float *dh, const lab_tp_block_w *g,
                                    const float *dy, const lab_tp_block_acts *a,
                                    const lab_tp_block_w *p);

/* ------------------------------------------------------------ task 4 (section 5) */

/* out (Nl, C) = wte[tokens[i]] + wpe[i mod T] for the rows this rank holds
 * (all N, or with sp its N/t), the same values one rank with the whole wte
 * gives. wte_r (V/t, C) holds rows [r V/t, (r+1) V/t) of wte; wpe (T, C)
 * is replicated; tokens (N) are the whole batch's, in [0, V). */
dt_result lab_vocab_embed_forward(lab_tp *tp, float *out, const float *wte_r, const float *wpe,
                                  const int32_t *tokens);
/* dout (Nl, C): dwte_r (V/t, C) += the rows of the whole wte's gradient
 * that this rank holds; dwpe (T, C; may be NULL) += the gradient of wpe
 * from the rows this rank holds. */
dt_result lab_vocab_embed_backward(lab_tp *tp, float *dwte_r, float *dwpe, const float *dout,
                                   const int32_t *tokens);

/* Softmax cross-entropy over the whole vocabulary, from this rank's slice
 * of the logits (N, V/t; columns [r V/t, (r+1) V/t) of the whole (N, V)):
 * probs_r (N, V/t) = the same slice of softmax(whole row); *loss = the mean
 * over the N rows of -log p[label]. labels (N) in [0, V), the same on every
 * rank (lab_tp_forward checks them). Logits as large as 1e4 must not
 * overflow. */
dt_result lab_vocab_xent_forward(lab_tp *tp, float *probs_r, float *loss, const float *logits_r,
                                 const int32_t *labels);
/* dlogits_r (N, V/t) += scale * (probs_r - the slice of onehot(label)). */
dt_result lab_vocab_xent_backward(lab_tp *tp, float *dlogits_r, const float *probs_r,
                                  const int32_t *labels, float scale);

/* ------------------------------------------------------------ task 5 (section 9) */

/* Clips the gradient of the WHOLE model to norm max_norm (> 0), as
 * torch.nn.utils.clip_grad_norm_ does on one rank:
 *   total = sum over every parameter of the whole model of g^2
 *   *norm = sqrtf(total)        (norm may be NULL)
 *   coef  = max_norm / (*norm + 1e-6f); when coef < 1, every gradient *= coef
 * In this order of operations: each rank sums the squares of its part in
 * double (dt_vec_sumsq) and rounds it to one float; the t floats are
 * summed with ONE allreduce (DT_F32); each parameter of the whole model
 * is counted exactly once. Every rank ends with the same norm and scales
 * all of its gradients, the replicated ones included. */
dt_result lab_tp_clip_grad_norm(lab_tp *tp, lab_tp_model *m, float max_norm, float *norm);

/* ------------------------------------------------------------ task 6 (sections 7, 8) */

/* With sequence parallelism each rank's gradients of the replicated
 * tensors cover only its own rows. Makes them the whole batch's, the same
 * on every rank, with ONE allreduce. The loop's sync calls it when tp->sp. */
dt_result lab_sp_allreduce_replicated_grads(lab_tp *tp, lab_tp_model *m);

/* ------------------------------------------------------------ task 7: predict, then measure */

/* Your prediction, from sections 2 to 7, of the bytes each rank sends in
 * one training step of the model cfg (lab_tp_train: forward, backward and
 * the sync, one micro-batch of B sequences of T tokens, no clipping:
 * max_norm 0) on t ranks, with sequence parallelism when sp: every
 * collective your functions of tasks 1 to 4 and 6 make, each the ring of
 * chapter 02 (an allreduce sends 2(t-1)/t of its buffer, a reduce-scatter
 * or an allgather (t-1)/t of the whole). The tests compare *bytes with the
 * formulas and with dt_comm_stats after a step of your code, on models the
 * chapter does not work out. DT_ERR_INVALID_ARG (*bytes untouched) for a
 * NULL argument, t < 1, or sizes that do not split evenly over t (the
 * vocabulary, the heads, the channels, or the B T rows): with uneven ring
 * blocks the ranks would send different bytes. */
dt_result lab_tp_predict_step_bytes(const dt_gpt_config *cfg, size_t B, size_t T, int t, int sp,
                                    uint64_t *bytes);

#endif /* LAB_TP_H */
