/* dt/sim.h - the cost model: how long a message, a collective algorithm, a
 * data-parallel step or a pipeline takes, from the alpha-beta model of a
 * link; how many bytes of activations a transformer layer keeps; and what
 * activation checkpointing keeps and recomputes.
 *
 * The alpha-beta (latency-bandwidth, "Hockney") model: sending n bytes over
 * one link takes alpha + n / beta, with alpha the latency in seconds and
 * beta the bandwidth in bytes per second. Each collective algorithm is a
 * number of such steps, and its cost is the sum over the steps of the
 * slowest link in each; the time to apply the reduction operator is left
 * out (it is small next to the transfer on every network the chapters use).
 *
 * The parameters are plain numbers: alpha >= 0 seconds, beta > 0 bytes/s,
 * n >= 0 bytes (the whole buffer, as NCCL counts it: for allgather the
 * gathered result, for reduce-scatter the input), k >= 1 ranks. As in
 * dt/metrics.h, a formula given an argument outside its domain returns NaN
 * and records why (dt_last_error). Named networks (NVLink, InfiniBand, ...)
 * are defined by the communicator; pass their alpha and beta here.
 */
#ifndef DT_SIM_H
#define DT_SIM_H

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- algorithms */

/* One message of n bytes: T = alpha + n / beta. */
double dt_sim_p2p(double alpha, double beta, double n);

/* Ring allreduce: a reduce-scatter then an allgather around the ring, each
 * K - 1 steps moving a block of n / K bytes:
 * T = 2 (K - 1) (alpha + n / (K beta)). */
double dt_sim_ring_allreduce(double alpha, double beta, double n, int k);

/* Ring reduce-scatter, and ring allgather: K - 1 steps of n / K bytes:
 * T = (K - 1) (alpha + n / (K beta)). */
double dt_sim_ring_reduce_scatter(double alpha, double beta, double n, int k);
double dt_sim_ring_allgather(double alpha, double beta, double n, int k);

/* Tree allreduce: a binomial-tree reduce to rank 0, then a binomial-tree
 * broadcast, each ceil(log2 K) rounds moving the whole buffer:
 * T = 2 ceil(log2 K) (alpha + n / beta). Any K: the last round of a
 * non-power of two is partly empty but still costs a full round. */
double dt_sim_tree_allreduce(double alpha, double beta, double n, int k);

/* Recursive-doubling allreduce: in round r each rank exchanges the whole
 * buffer with the rank whose id differs in bit r, so a power of two takes
 * log2 K rounds: T = log2(K) (alpha + n / beta). For other K, with
 * P = 2^floor(log2 K): the K - P extra ranks first hand their buffer to a
 * partner among the P (one round), the P ranks run recursive doubling, and
 * the partners send the result back (one round):
 * T = (floor(log2 K) + 2) (alpha + n / beta). */
double dt_sim_recursive_doubling_allreduce(double alpha, double beta, double n, int k);

/* Naive allreduce: every rank sends its buffer to the root, which reduces
 * and sends the result to each rank, one message at a time:
 * T = 2 (K - 1) (alpha + n / beta). */
double dt_sim_naive_allreduce(double alpha, double beta, double n, int k);

/* Binomial-tree broadcast: the ranks holding the data double each round:
 * T = ceil(log2 K) (alpha + n / beta). */
double dt_sim_binomial_broadcast(double alpha, double beta, double n, int k);

/* Linear broadcast: the root sends to each other rank in turn:
 * T = (K - 1) (alpha + n / beta). */
double dt_sim_linear_broadcast(double alpha, double beta, double n, int k);

/* Pairwise all-to-all: K - 1 rounds, each rank sending the n / K bytes
 * meant for one peer: T = (K - 1) (alpha + n / (K beta)). */
double dt_sim_pairwise_alltoall(double alpha, double beta, double n, int k);

/* The algorithms above as data, for tables and command lines. */
typedef enum {
    DT_SIM_P2P = 0,
    DT_SIM_RING_ALLREDUCE,
    DT_SIM_RING_REDUCE_SCATTER,
    DT_SIM_RING_ALLGATHER,
    DT_SIM_TREE_ALLREDUCE,
    DT_SIM_RECURSIVE_DOUBLING_ALLREDUCE,
    DT_SIM_NAIVE_ALLREDUCE,
    DT_SIM_BINOMIAL_BROADCAST,
    DT_SIM_LINEAR_BROADCAST,
    DT_SIM_PAIRWISE_ALLTOALL,
    DT_SIM_NUM_ALGOS
} dt_sim_algo;

/* What an algorithm computes, for its bus-bandwidth factor. */
typedef enum {
    DT_SIM_SENDRECV = 0,
    DT_SIM_ALLREDUCE,
    DT_SIM_REDUCE_SCATTER,
    DT_SIM_ALLGATHER,
    DT_SIM_ALLTOALL,
    DT_SIM_BROADCAST,
    DT_SIM_REDUCE,
    DT_SIM_NUM_COLLECTIVES
} dt_sim_collective;

/* The cost of algo (one of the functions above; p2p ignores k). NaN for an
 * unknown algo or bad argument. */
double dt_sim_cost(dt_sim_algo algo, double alpha, double beta, double n, int k);

/* "ring_allreduce", ...; "?" when unknown. */
const char *dt_sim_algo_name(dt_sim_algo algo);

/* The collective an algorithm computes (DT_SIM_NUM_COLLECTIVES when unknown). */
dt_sim_collective dt_sim_algo_collective(dt_sim_algo algo);

/* "allreduce", ...; "?" when unknown. */
const char *dt_sim_collective_name(dt_sim_collective c);

/* ---------------------------------------------------------------- bandwidths */

/* The bus-bandwidth factor of nccl-tests: busbw = algbw * factor makes the
 * figure comparable with the link's bandwidth whatever the collective:
 * allreduce 2 (K - 1) / K; reduce-scatter, allgather, all-to-all (K - 1) / K;
 * broadcast, reduce and send/recv 1. */
double dt_sim_busbw_factor(dt_sim_collective c, int k);

/* Algorithm bandwidth n / seconds, in bytes/s; n >= 0, seconds > 0. */
double dt_sim_algbw(double n, double seconds);

/* Bus bandwidth: dt_sim_algbw(n, seconds) * dt_sim_busbw_factor(c, k). A
 * ring allreduce costed by this model with alpha = 0 has busbw = beta. */
double dt_sim_busbw(dt_sim_collective c, double n, double seconds, int k);

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

/* ---------------------------------------------------------------- activation checkpointing
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
} dt_sim_ckpt;

/* k segments, as torch.utils.checkpoint.checkpoint_sequential cuts them:
 * the first k - 1 of s = floor(L / k) layers, the last of the rest; each
 * segment but the last keeps only its last output, the last keeps all of
 * them. Then
 *     recomputed = (k - 1)(s - 1),  peak = k - 1 + L - (k - 1) s = L - recomputed,
 * which for k dividing L is peak = k - 1 + L/k, least at k = sqrt(L):
 * 2 sqrt(L) - 1. k = 1 keeps everything (peak L, nothing recomputed).
 * NaN in both for L < 1 or k outside [1, L]. */
dt_sim_ckpt dt_sim_ckpt_segments(int L, int k);

/* The least peak any plan reaches on L layers: the smallest M with
 * M (M + 1) / 2 >= L (runs of M - 1, M - 2, ..., 1 dropped layers, each
 * followed by one kept output), about sqrt(2 L); 0 for L < 1. */
int dt_sim_ckpt_min_peak(int L);

/* The fewest layers any plan recomputes within a peak of M outputs:
 * max(0, L - M) when M >= dt_sim_ckpt_min_peak(L) (each output of memory
 * saves one layer of recomputation); NaN when no plan fits (M below the
 * least peak) or L < 1. */
double dt_sim_ckpt_min_recomputed(int L, double M);

/* The share of a training step spent recomputing: the forward of
 * `recomputed` of L equal layers on top of a step of one forward and a
 * backward that takes bwd_over_fwd times a forward,
 *     overhead = (recomputed / L) / (1 + bwd_over_fwd),
 * 1/3 for one whole extra forward with a backward twice the forward. NaN
 * for L < 1, recomputed outside [0, L] or bwd_over_fwd < 0. */
double dt_sim_ckpt_overhead(double recomputed, int L, double bwd_over_fwd);

#ifdef __cplusplus
}
#endif

#endif /* DT_SIM_H */
