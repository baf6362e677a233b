/* alpha_beta.c - the alpha-beta cost of each collective algorithm.
 *
 * Every algorithm is a count of rounds times the cost of one round, and a
 * round moving b bytes over a link costs alpha + b / beta. The two shapes:
 *
 *   whole-buffer rounds (tree, recursive doubling, naive, broadcast):
 *       rounds * (alpha + n / beta)
 *   block rounds (ring, pairwise all-to-all): each round moves n / K bytes,
 *       rounds * (alpha + n / (K beta))
 *
 * The ring is why large allreduces are bandwidth-optimal: its 2 (K - 1)
 * rounds move 2 (K - 1) / K * n bytes per rank, under 2n whatever K. */
#include "dt/sim.h"

#include <math.h>

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

/* 1 when alpha, beta, n and k make a link and a job; else records why. */
static int valid(double alpha, double beta, double n, int k)
{
    if (!(isfinite(alpha) && alpha >= 0)) return domain_error("alpha (seconds)", alpha), 0;
    if (!(isfinite(beta) && beta > 0)) return domain_error("beta (bytes/s)", beta), 0;
    if (!(isfinite(n) && n >= 0)) return domain_error("n (bytes)", n), 0;
    if (k < 1) return domain_error("K (ranks)", k), 0;
    return 1;
}

/* ceil(log2 k) and floor(log2 k) for k >= 1, exactly, in integers. */
static int ceil_log2(int k)
{
    int r = 0;
    while ((1L << r) < k) r++;
    return r;
}

static int floor_log2(int k)
{
    int r = 0;
    while ((1L << (r + 1)) <= k) r++;
    return r;
}

double dt_sim_p2p(double alpha, double beta, double n)
{
    if (!valid(alpha, beta, n, 1)) return NAN;
    return alpha + n / beta;
}

double dt_sim_ring_allreduce(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return 2.0 * (k - 1) * (alpha + n / (k * beta));
}

double dt_sim_ring_reduce_scatter(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return (k - 1) * (alpha + n / (k * beta));
}

double dt_sim_ring_allgather(double alpha, double beta, double n, int k)
{
    return dt_sim_ring_reduce_scatter(alpha, beta, n, k); /* the same rounds, reversed */
}

double dt_sim_tree_allreduce(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return 2.0 * ceil_log2(k) * (alpha + n / beta);
}

double dt_sim_recursive_doubling_allreduce(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    int rounds = floor_log2(k);
    if ((k & (k - 1)) != 0) rounds += 2; /* fold the extra ranks in, then out */
    return rounds * (alpha + n / beta);
}

double dt_sim_naive_allreduce(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return 2.0 * (k - 1) * (alpha + n / beta);
}

double dt_sim_binomial_broadcast(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return ceil_log2(k) * (alpha + n / beta);
}

double dt_sim_linear_broadcast(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return (k - 1) * (alpha + n / beta);
}

double dt_sim_pairwise_alltoall(double alpha, double beta, double n, int k)
{
    if (!valid(alpha, beta, n, k)) return NAN;
    return (k - 1) * (alpha + n / (k * beta));
}

/* ---------------------------------------------------------------- as data */

typedef struct {
    const char *name;
    dt_sim_collective collective;
    double (*cost)(double alpha, double beta, double n, int k);
} algo_info;

static double p2p_k(double alpha, double beta, double n, int k)
{
    if (k < 1) return domain_error("K (ranks)", k);
    return dt_sim_p2p(alpha, beta, n);
}

static const algo_info algos[DT_SIM_NUM_ALGOS] = {
    [DT_SIM_P2P] = {"p2p", DT_SIM_SENDRECV, p2p_k},
    [DT_SIM_RING_ALLREDUCE] = {"ring_allreduce", DT_SIM_ALLREDUCE, dt_sim_ring_allreduce},
    [DT_SIM_RING_REDUCE_SCATTER] = {"ring_reduce_scatter", DT_SIM_REDUCE_SCATTER,
                                    dt_sim_ring_reduce_scatter},
    [DT_SIM_RING_ALLGATHER] = {"ring_allgather", DT_SIM_ALLGATHER, dt_sim_ring_allgather},
    [DT_SIM_TREE_ALLREDUCE] = {"tree_allreduce", DT_SIM_ALLREDUCE, dt_sim_tree_allreduce},
    [DT_SIM_RECURSIVE_DOUBLING_ALLREDUCE] = {"recursive_doubling_allreduce", DT_SIM_ALLREDUCE,
                                             dt_sim_recursive_doubling_allreduce},
    [DT_SIM_NAIVE_ALLREDUCE] = {"naive_allreduce", DT_SIM_ALLREDUCE, dt_sim_naive_allreduce},
    [DT_SIM_BINOMIAL_BROADCAST] = {"binomial_broadcast", DT_SIM_BROADCAST, dt_sim_binomial_broadcast},
    [DT_SIM_LINEAR_BROADCAST] = {"linear_broadcast", DT_SIM_BROADCAST, dt_sim_linear_broadcast},
    [DT_SIM_PAIRWISE_ALLTOALL] = {"pairwise_alltoall", DT_SIM_ALLTOALL, dt_sim_pairwise_alltoall},
};

static int algo_known(dt_sim_algo algo) { return (unsigned)algo < DT_SIM_NUM_ALGOS; }

double dt_sim_cost(dt_sim_algo algo, double alpha, double beta, double n, int k)
{
    if (!algo_known(algo)) return domain_error("algorithm", (double)algo);
    return algos[algo].cost(alpha, beta, n, k);
}

const char *dt_sim_algo_name(dt_sim_algo algo)
{
    return algo_known(algo) ? algos[algo].name : "?";
}

dt_sim_collective dt_sim_algo_collective(dt_sim_algo algo)
{
    return algo_known(algo) ? algos[algo].collective : DT_SIM_NUM_COLLECTIVES;
}
