/* dt/sim.h - the cost model: how long a message, a collective algorithm, a
 * data-parallel step or a pipeline takes, from the alpha-beta model of a
 * link.
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
