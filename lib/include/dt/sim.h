/* dt/sim.h - the cost model above the collectives: how long a
 * data-parallel step or a pipeline takes, from the time of its compute and
 * of its communication; and how many bytes of activations a transformer
 * layer keeps, and what activation recomputation keeps and recomputes.
 * What a message or a collective algorithm costs on a link is
 * the network model's (dt/net.h: dt_net_ring_allreduce, ..., dt_net_busbw);
 * this layer combines those figures with compute.
 *
 * As in dt/metrics.h, a formula given an argument outside its domain returns
 * NaN and records why (dt_last_error). */
#ifndef DT_SIM_H
#define DT_SIM_H

#include "dt/core.h"
#include "dt/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- steps */

/* A data-parallel step: compute then communicate, T = T_comp + T_comm. */
double dt_sim_step_serial(double t_comp, double t_comm);

/* The same step with the gradient communication fully overlapped with the
 * backward pass: T = max(T_comp, T_comm) (the bound that bucketing nears). */
double dt_sim_step_overlapped(double t_comp, double t_comm);

/* The pipeline bubble of a GPipe or 1F1B schedule with p >= 1 stages and
 * m >= 1 micro-batches: the fraction of the time a stage idles,
 * (p - 1) / (m + p - 1). */
double dt_sim_bubble_fraction(int stages, int microbatches);

/* ---------------------------------------------------------------- memory */

/* Bytes of activations one transformer layer keeps for its backward
 * (Korthikanti et al. 2022): sequence length s, micro-batch b, hidden size
 * h, a heads, t tensor-parallel ranks (1: none), sp 1 with sequence
 * parallelism, e bytes per activation element, dropout 1 when the layer
 * has dropout (1-byte masks, and the attention dropout's output). With
 * e = 2 and dropout, the paper's
 *     TP:       sbh (10 + 24/t + 5as/(ht))
 *     TP + SP:  (sbh/t) (34 + 5as/h)
 * and in general sbh (4e + 2d) / (sp ? t : 1) + 12 e sbh / t
 * + a s^2 b (e + d (1 + e)) / t (d = dropout). NaN for a size <= 0, t < 1,
 * e <= 0, or sp or dropout other than 0 and 1. */
double dt_sim_act_bytes_layer(double s, double b, double h, double a, int t, int sp, double e,
                              int dropout);

/* ---------------------------------------------------------------- activation recomputation
 * (the literature's "activation checkpointing"; in libdt a checkpoint is
 * saved training state, dt/ckpt.h)
 *
 * A chain of L layers whose outputs all have the same size (chapter 11's
 * deep MLP stack), run by chapter 11's executor: a KEPT output stays in
 * memory from the forward until its layer's backward; a DROPPED one is
 * freed as soon as the next layer has read it and recomputed, once, with
 * the rest of its run of dropped layers, when the backward first needs
 * it. The last layer's output (the logits) is always kept. Figures count
 * layer outputs at the peak, in units of one output, beyond the working
 * set every plan holds (the input, the gradients between layers, the
 * loss's buffers). With a kept outputs in all and runs of dropped layers
 * the peak is
 *     max(a, max over runs of (kept outputs before the run + its length + 1))
 * (the 1: the kept output right after the run, still waiting for its own
 * backward while the run is recomputed). */
typedef struct {
    double peak;       /* layer outputs held at the peak */
    double recomputed; /* layers run a second time, in the backward */
} dt_sim_recompute;

/* k segments, as torch.utils.checkpoint.checkpoint_sequential cuts them:
 * the first k - 1 of s = floor(L / k) layers, the last of the rest; each
 * segment but the last keeps only its last output, the last keeps all of
 * them. Then
 *     recomputed = (k - 1)(s - 1),  peak = k - 1 + L - (k - 1) s = L - recomputed,
 * which for k dividing L is peak = k - 1 + L/k, least at k = sqrt(L):
 * 2 sqrt(L) - 1. k = 1 keeps everything (peak L, nothing recomputed).
 * NaN in both for L < 1 or k outside [1, L]. */
dt_sim_recompute dt_sim_recompute_segments(int L, int k);

/* The least peak any plan reaches on L layers: the smallest M with
 * M (M + 1) / 2 >= L (runs of M - 1, M - 2, ..., 1 dropped layers, each
 * followed by one kept output), about sqrt(2 L); 0 for L < 1. */
int dt_sim_recompute_min_peak(int L);

/* The fewest layers any plan recomputes within a peak of M outputs:
 * max(0, L - M) when M >= dt_sim_recompute_min_peak(L) (each output of memory
 * saves one layer of recomputation); NaN when no plan fits (M below the
 * least peak) or L < 1. */
double dt_sim_recompute_min_layers(int L, double M);

/* The share of a training step spent recomputing: the forward of
 * `recomputed` of L equal layers on top of a step of one forward and a
 * backward that takes bwd_over_fwd times a forward,
 *     overhead = (recomputed / L) / (1 + bwd_over_fwd),
 * 1/3 for one whole extra forward with a backward twice the forward. NaN
 * for L < 1, recomputed outside [0, L] or bwd_over_fwd < 0. */
double dt_sim_recompute_overhead(double recomputed, int L, double bwd_over_fwd);

/* ---------------------------------------------------------------- memory (chapters 08, 09)
 *
 * The model states of data parallelism and of ZeRO's stages (Rajbhandari,
 * Rasley, Ruwase and He, "ZeRO: Memory Optimizations Toward Training
 * Trillion Parameter Models", SC 2020). A convention says what one
 * parameter costs in bytes: p for the copy the forward and backward read,
 * g for its gradient, k for the optimizer's state (with mixed precision k
 * holds the fp32 master copy too). Every figure names its convention:
 *   the paper's mixed precision with Adam   p = 2, g = 2, k = 12   (16 in all)
 *   fp32 with Adam (this workbook's labs)   p = 4, g = 4, k = 8    (16 in all)
 * Buffers, activations and fragmentation are left out, as in the paper. */
typedef struct {
    double p, g, k;
} dt_sim_state_bytes;

dt_sim_state_bytes dt_sim_mixed_precision_adam(void); /* 2, 2, 12 */
dt_sim_state_bytes dt_sim_fp32_adam(void);            /* 4, 4, 8 */

/* Bytes per device of each part of the model states of psi parameters on
 * n devices; total is their sum. */
typedef struct {
    double params, grads, optim, total;
} dt_sim_memory;

/* Stage 0 is data parallelism (every state on every device); stage s
 * partitions the first s of optimizer state, gradients, parameters:
 *   stage 0   (p + g + k) psi
 *   stage 1   (p + g) psi + k psi / n
 *   stage 2   p psi + (g + k) psi / n
 *   stage 3   (p + g + k) psi / n
 * A stage outside 0..3, psi < 0, n < 1 or a negative byte count gives
 * NaN in every field and records why. */
dt_sim_memory dt_sim_zero_memory(int stage, double psi, int n, dt_sim_state_bytes b);

/* Elements of the parameters' size each device sends per step with ring
 * collectives, the unit of the paper's section 7: stages 0 to 2 move
 * 2 psi (n - 1) / n (an allreduce, or a reduce-scatter of the gradients
 * and an allgather of the parameters), stage 3 3 psi (n - 1) / n (the
 * parameters gathered for the forward and again for the backward, and a
 * reduce-scatter of the gradients). Times the element size for bytes. NaN
 * as above. */
double dt_sim_zero_comm_elems(int stage, double psi, int n);

#ifdef __cplusplus
}
#endif

#endif /* DT_SIM_H */
