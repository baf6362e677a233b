/* cost.c - the closed form of each collective algorithm's time (dt/net.h
 * lists them with their derivation in words).
 *
 * Every algorithm is a count of rounds times the cost of one round, and a
 * round moving b bytes over a link costs alpha + b / beta. The two shapes:
 *
 *   whole-buffer rounds (tree, recursive doubling, broadcast):
 *       rounds * (alpha + n / beta)
 *   block rounds (ring, pairwise all-to-all): each round moves n / K bytes,
 *       rounds * (alpha + n / (K beta))
 *
 * The ring is why large allreduces are bandwidth-optimal: its 2 (K - 1)
 * rounds move 2 (K - 1) / K * n bytes per rank, under 2n whatever K. Where
 * a rank's port serves several messages in a row (the naive allreduce's
 * root, a linear broadcast's root), the port's time adds up instead. */
#include "dt/net.h"

#include <math.h>

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

/* 1 when link, n and k make a link and a job; else records why. */
static int valid(const dt_net *l, double n, int k)
{
    if (!l) return domain_error("link (NULL)", 0), 0;
    if (!(isfinite(l->alpha) && l->alpha >= 0)) return domain_error("alpha (seconds)", l->alpha), 0;
    if (!(l->beta > 0)) return domain_error("beta (bytes/s)", l->beta), 0;
    if (!(isfinite(l->gamma) && l->gamma >= 0)) return domain_error("gamma (s/byte)", l->gamma), 0;
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

/* One round moving b bytes: alpha + b / beta. */
static double round_time(const dt_net *l, double b) { return l->alpha + dt_net_wire(l, b); }

double dt_net_p2p(const dt_net *link, double n)
{
    if (!valid(link, n, 1)) return NAN;
    return round_time(link, n);
}

double dt_net_ring_reduce_scatter(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    return (k - 1) * (round_time(link, n / k) + dt_net_reduce_time(link, n / k));
}

double dt_net_ring_allgather(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    return (k - 1) * round_time(link, n / k);
}

double dt_net_ring_allreduce(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    /* 2 (K-1) (alpha + n/(K beta)) + (K-1)/K n gamma */
    return dt_net_ring_reduce_scatter(link, n, k) + dt_net_ring_allgather(link, n, k);
}

double dt_net_tree_allreduce(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    int rounds = ceil_log2(k); /* a non-power of two's last round is partly empty */
    return 2.0 * rounds * round_time(link, n) + rounds * dt_net_reduce_time(link, n);
}

double dt_net_recursive_doubling_allreduce(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    int rounds = floor_log2(k), reductions = rounds;
    if ((k & (k - 1)) != 0) {
        rounds += 2;     /* fold the extra ranks in, then out */
        reductions += 1; /* the fold is reduced */
    }
    return rounds * round_time(link, n) + reductions * dt_net_reduce_time(link, n);
}

double dt_net_naive_allreduce(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    if (k == 1) return 0;
    double w = dt_net_wire(link, n), g = dt_net_reduce_time(link, n);
    /* the j-th buffer arrives at alpha + j w; reducing it ends at
     * max(previous end, arrival) + g: the latest of alpha + j w + (k-j) g */
    double gather = link->alpha + fmax((k - 1) * w + g, w + (k - 1) * g);
    return gather + link->alpha + (k - 1) * w;
}

double dt_net_naive_allreduce_in_turn(const dt_net *link, double n, int k)
{
    double t = dt_net_naive_allreduce(link, n, k); /* NaN for a bad argument */
    return !isnan(t) && n > DT_NET_EAGER_MAX && k > 2 ? t + (k - 2) * link->alpha : t;
}

double dt_net_binomial_broadcast(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    return ceil_log2(k) * round_time(link, n);
}

double dt_net_linear_broadcast(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    if (k == 1) return 0;
    /* the root's port sends k-1 messages in a row; the last arrives alpha later */
    return link->alpha + (k - 1) * dt_net_wire(link, n);
}

double dt_net_pairwise_alltoall(const dt_net *link, double n, int k)
{
    if (!valid(link, n, k)) return NAN;
    return (k - 1) * round_time(link, n / k);
}

/* ---------------------------------------------------------------- as data */

typedef struct {
    const char *name;
    dt_coll_kind collective;
    double (*cost)(const dt_net *link, double n, int k);
} algo_info;

static double p2p_k(const dt_net *link, double n, int k)
{
    if (k < 1) return domain_error("K (ranks)", k);
    return dt_net_p2p(link, n);
}

static const algo_info algos[DT_NET_NUM_ALGOS] = {
    [DT_NET_P2P] = {"p2p", DT_COLL_SENDRECV, p2p_k},
    [DT_NET_RING_ALLREDUCE] = {"ring_allreduce", DT_COLL_ALLREDUCE, dt_net_ring_allreduce},
    [DT_NET_RING_REDUCE_SCATTER] = {"ring_reduce_scatter", DT_COLL_REDUCE_SCATTER,
                                    dt_net_ring_reduce_scatter},
    [DT_NET_RING_ALLGATHER] = {"ring_allgather", DT_COLL_ALLGATHER, dt_net_ring_allgather},
    [DT_NET_TREE_ALLREDUCE] = {"tree_allreduce", DT_COLL_ALLREDUCE, dt_net_tree_allreduce},
    [DT_NET_RECURSIVE_DOUBLING_ALLREDUCE] = {"recursive_doubling_allreduce", DT_COLL_ALLREDUCE,
                                             dt_net_recursive_doubling_allreduce},
    [DT_NET_NAIVE_ALLREDUCE] = {"naive_allreduce", DT_COLL_ALLREDUCE, dt_net_naive_allreduce},
    [DT_NET_BINOMIAL_BROADCAST] = {"binomial_broadcast", DT_COLL_BROADCAST,
                                   dt_net_binomial_broadcast},
    [DT_NET_LINEAR_BROADCAST] = {"linear_broadcast", DT_COLL_BROADCAST, dt_net_linear_broadcast},
    [DT_NET_PAIRWISE_ALLTOALL] = {"pairwise_alltoall", DT_COLL_ALLTOALL,
                                  dt_net_pairwise_alltoall},
};

static int algo_known(dt_net_algo algo) { return (unsigned)algo < DT_NET_NUM_ALGOS; }

double dt_net_cost(dt_net_algo algo, const dt_net *link, double n, int k)
{
    if (!algo_known(algo)) return domain_error("algorithm", (double)algo);
    return algos[algo].cost(link, n, k);
}

const char *dt_net_algo_name(dt_net_algo algo)
{
    return algo_known(algo) ? algos[algo].name : "?";
}

dt_coll_kind dt_net_algo_collective(dt_net_algo algo)
{
    return algo_known(algo) ? algos[algo].collective : DT_NUM_COLLS;
}
