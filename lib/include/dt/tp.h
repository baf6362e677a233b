/* dt/tp.h - tensor parallelism (Megatron-LM), the reference of chapter 07:
 * the layers of the tiny GPT split over the t ranks of a group, and a
 * rank's shard of the model as a model of its own.
 *
 * Part of the nn layer (it uses comm, below it). t ranks share every layer
 * of one model: each holds a 1/t slice of the large weight matrices and
 * computes with it; collectives inside the layers glue the slices into
 * what one rank with the whole model computes (chapter 07, sections 2-5).
 *
 * The two conjugate operators (section 3) live inside the linear layers:
 *   f  identity forward, allreduce backward: where a replicated tensor
 *      enters a parallel region (the column-parallel layer's input);
 *   g  allreduce forward, identity backward: where the partial results
 *      leave it (the row-parallel layer's output).
 *
 * Shapes. The whole layer is Y = X W^T + b with W (OC, C), as dt/nn.h; N
 * rows. On rank r of t:
 *   column-parallel   w (OCl, C) = rows [r OCl, (r+1) OCl) of W, OCl = OC/t;
 *                     y (N, OCl) = the same columns of Y; b split alike
 *   row-parallel      w (OC, Cl) = columns [r Cl, (r+1) Cl) of W, Cl = C/t;
 *                     x (N, Cl) = the same columns of X; y (N, OC) = Y,
 *                     on every rank; b (OC) replicated, added once
 * In the GPT: qkv (by heads), fc, the embedding and the LM head (by the
 * vocabulary) are column-parallel; proj and mproj row-parallel; the layer
 * norms, wpe and the row-parallel layers' biases replicated.
 *
 * Conventions, as dt/nn.h (outputs first, explicit sizes, shapes in the
 * comments), with one difference: a backward ACCUMULATES (+=) into
 * parameter gradients but OVERWRITES the gradient of its input, which is
 * the result of a collective. Every function is collective on tp: the t
 * ranks call it in the same order with the same sizes. tp NULL (or of one
 * rank) is one rank with the whole layer: the calls of layers.c and
 * nothing else, so a whole model runs the same code. Sequence parallelism
 * (section 7) and the clipping of section 9 are the lab's, not here.
 * The clock: the collectives charge the modeled network as any call does;
 * inside a compute region (dt_compute_begin, a trainer's DT_CLOCK_MEASURED)
 * their wall time is counted as compute as well, so modeled figures of a
 * tensor-parallel run come from DT_CLOCK_MODELED. */
#ifndef DT_TP_H
#define DT_TP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ linear layers (section 2) */

/* Column-parallel: y (N, OCl) = x (N, C) w^T + b, x the whole input (the
 * same on every rank), b (OCl) or NULL. No communication (f's forward). */
dt_result dt_tp_column_forward(dt_comm *tp, float *y, const float *x, const float *w,
                               const float *b, size_t N, size_t C, size_t OCl);
/* dx (N, C) := sum over the ranks of dy_r w_r, the whole input's gradient,
 * the same on every rank (f's backward: one allreduce of N C floats);
 * dw (OCl, C) += dy^T x; db (OCl; may be NULL) += the column sums of dy. */
dt_result dt_tp_column_backward(dt_comm *tp, float *dx, float *dw, float *db, const float *dy,
                                const float *x, const float *w, size_t N, size_t C, size_t OCl);

/* Row-parallel: y (N, OC) = sum over the ranks of x_r w_r^T, then + b (OC;
 * may be NULL) once (g's forward: one allreduce of N OC floats). */
dt_result dt_tp_row_forward(dt_comm *tp, float *y, const float *x, const float *w,
                            const float *b, size_t N, size_t Cl, size_t OC);
/* dy (N, OC) the same on every rank: dx (N, Cl) := dy w; dw (OC, Cl) +=
 * dy^T x; db (OC; may be NULL) += the column sums of dy, the same on every
 * rank as the replicated bias needs. No communication (g's backward). */
dt_result dt_tp_row_backward(dt_comm *tp, float *dx, float *dw, float *db, const float *dy,
                             const float *x, const float *w, size_t N, size_t Cl, size_t OC);

/* ================================================================ the MLP (section 3) */

/* y (N, C) = mproj(gelu(fc(x))) + mproj_b, on every rank: fc column-parallel
 * (fc_w (Hl, C), fc_b (Hl)), mproj row-parallel (mproj_w (C, Hl), mproj_b
 * (C), replicated); Hl = 4C/t. Keeps fch (N, Hl) and fchg (N, Hl), fc's
 * output before and after GELU. One allreduce. */
dt_result dt_tp_mlp_forward(dt_comm *tp, float *y, float *fch, float *fchg, const float *x,
                            const float *fc_w, const float *fc_b, const float *mproj_w,
                            const float *mproj_b, size_t N, size_t C, size_t Hl);
/* dy (N, C) -> dx (N, C, overwritten); the four parameter gradients +=;
 * work (2 N Hl floats) the backward's temporaries. One allreduce. */
dt_result dt_tp_mlp_backward(dt_comm *tp, float *dx, float *dfc_w, float *dfc_b,
                             float *dmproj_w, float *dmproj_b, float *work, const float *dy,
                             const float *x, const float *fch, const float *fchg,
                             const float *fc_w, const float *mproj_w, size_t N, size_t C,
                             size_t Hl);

/* ================================================================ attention (section 4) */

/* y (N, C) = proj(attention(qkv(x))) + proj_b, on every rank, N = B T, NH
 * heads of C/NH channels in the WHOLE layer; this rank runs heads
 * [r NH/t, (r+1) NH/t): qkv_w (3C/t, C) and qkv_b (3C/t) hold their q | k
 * | v rows (dt_tp_shard_qkv), proj_w (C, C/t) the same columns of proj.
 * Keeps qkv (N, 3C/t), att (B, NH/t, T, T) and atty (N, C/t). One
 * allreduce. NH % t != 0 fails, naming both numbers. */
dt_result dt_tp_attention_forward(dt_comm *tp, float *y, float *qkv, float *att, float *atty,
                                  const float *x, const float *qkv_w, const float *qkv_b,
                                  const float *proj_w, const float *proj_b, size_t B, size_t T,
                                  size_t C, size_t NH);
/* dy (N, C) -> dx (N, C, overwritten); the four parameter gradients +=;
 * work (4 N C/t floats) the backward's temporaries. One allreduce. */
dt_result dt_tp_attention_backward(dt_comm *tp, float *dx, float *dqkv_w, float *dqkv_b,
                                   float *dproj_w, float *dproj_b, float *work, const float *dy,
                                   const float *x, const float *qkv, const float *att,
                                   const float *atty, const float *qkv_w, const float *proj_w,
                                   size_t B, size_t T, size_t C, size_t NH);

/* Rank r's slice of the whole qkv layer, w (3C, C) = [Wq; Wk; Wv] and b
 * (3C) or NULL, as dt_gpt_create lays it out: w_r (3C/t, C) and b_r
 * (3C/t) = the q, k and v rows of heads [r NH/t, (r+1) NH/t), in the order
 * q | k | v. Either pair may be NULL (a bias alone, a weight alone). Not
 * collective. */
dt_result dt_tp_shard_qkv(float *w_r, float *b_r, const float *w, const float *b, size_t C,
                          size_t NH, int t, int r);

/* ================================================================ the vocabulary (section 5) */

/* out (B T, C) = wte[token] + wpe[t], what one rank with the whole wte
 * computes, bit for bit: wte_r (V/t, C) holds rows [r V/t, (r+1) V/t);
 * each rank writes its tokens' rows and zeros, one allreduce sums them,
 * wpe (T, C; may be NULL, replicated) is added after. V the WHOLE
 * vocabulary; tokens in [0, V), the same on every rank. */
dt_result dt_tp_embedding_forward(dt_comm *tp, float *out, const int32_t *tokens,
                                  const float *wte_r, const float *wpe, size_t B, size_t T,
                                  size_t C, size_t V);
/* dout the same on every rank: dwte_r += the rows of wte's gradient this
 * rank holds; dwpe (may be NULL) += wpe's. No communication. */
dt_result dt_tp_embedding_backward(dt_comm *tp, float *dwte_r, float *dwpe, const float *dout,
                                   const int32_t *tokens, size_t B, size_t T, size_t C,
                                   size_t V);

/* Softmax cross-entropy over the whole vocabulary from this rank's slice
 * of the logits, logits_r (N, V/t) = columns [r V/t, (r+1) V/t) of (N, V):
 *   m_i = max over ranks and columns (allreduce MAX of N floats),
 *   S_i = sum of e^(l - m_i), and the label's l - m_i from the rank that
 *   holds it (one allreduce SUM of 2N floats),
 *   probs_r (N, V/t) = e^(l - m_i) / S_i, losses[i] = log S_i - (l_y - m_i).
 * losses (N) and mean_loss may be NULL; argmax (N; may be NULL) gets each
 * row's first largest column of the whole row (one more allreduce, MIN of
 * N int32). labels (N) in [0, V), the same on every rank (a label out of
 * range fails, naming its row). */
dt_result dt_tp_xent_forward(dt_comm *tp, float *probs_r, float *losses, double *mean_loss,
                             int32_t *argmax, const float *logits_r, const int32_t *labels,
                             size_t N, size_t V);
/* dlogits_r (N, V/t) += scale (probs_r - this rank's slice of
 * onehot(label)). No communication. */
dt_result dt_tp_xent_backward(dt_comm *tp, float *dlogits_r, const float *probs_r,
                              const int32_t *labels, float scale, size_t N, size_t V);

/* ================================================================ a rank's shard of the model */

/* How the shard holds a parameter view of a GPT (its dt_*_view k of a
 * layer of that kind): whole, a block of its rows, a block of its columns,
 * or the q, k, v rows of this rank's heads. */
typedef enum { DT_TP_REPLICATED = 0, DT_TP_ROWS, DT_TP_COLS, DT_TP_HEADS } dt_tp_split;
dt_tp_split dt_tp_view_split(dt_layer_kind kind, int k);

/* shard := rank dt_comm_rank(tp)'s shard of whole over the t ranks of tp:
 * a model with its own flat buffer of the same layers and named views,
 * each view the slice above (replicated ones copied), its gradients
 * zeroed. Its layers run through dt_model_forward, dt_model_loss and
 * dt_model_backward as any model's, the collectives inside (the stage
 * code calls the functions above with shard->tp), so the training loop,
 * its data-parallel sync, ZeRO and the pipeline runner take a shard like a
 * whole model. The shard's logits are its V/t columns; num_classes stays V
 * (what the labels range over). t = 1: a copy of any model. Else whole
 * must be a GPT (DT_ERR_UNSUPPORTED otherwise) whose heads and vocabulary
 * split over t ranks, and not a shard itself (DT_ERR_INVALID_ARG naming
 * the numbers). tp is not owned and must outlive the shard. Not
 * collective. */
dt_result dt_tp_shard(dt_model *shard, const dt_model *whole, dt_comm *tp);

#ifdef __cplusplus
}
#endif

#endif /* DT_TP_H */
