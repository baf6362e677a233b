/* dt/net.h - the network model, written once: what a link costs, when one
 * message arrives, what each collective algorithm costs, and the bus
 * bandwidth of nccl-tests. The communicator's modeled clock (messages and
 * shared-memory shortcuts alike), dt/sim.h, dtbench, dtsim and the labs'
 * programs all take their figures from here.
 *
 * A LINK is three numbers (dt_net):
 *   alpha  latency of one message, seconds
 *   beta   bandwidth of one direction of a rank's link, bytes per second
 *          (INFINITY: sending costs no time). Note: Hockney, Thakur et al.
 *          and MPICH write beta for the time per byte, 1 / beta here.
 *   gamma  seconds per byte to combine two operands of a reduction (0: free)
 *
 * THE RULE. Every rank has two ports on each of its timelines (dt_net_ports,
 * full duplex): a send port and a receive port. A message of n bytes,
 * w = n / beta, posted by a sender whose clock reads t_s:
 *   1. leaves the sender's send port at  d = max(t_s, send_free);
 *      the send port is busy until d + w (send_free = d + w): a rank's
 *      sends go out one after another, in the order it posts them;
 *   2. above the eager limit (DT_NET_EAGER_MAX bytes) it cannot start
 *      before the receiver posted its receive, at t_r:  d' = max(d, t_r)
 *      (d' = d for an eager message, which the receiver buffers);
 *   3. is taken by the receiver's receive port at  s = max(d', recv_free),
 *      which is busy until s + w (recv_free = s + w): a rank receives one
 *      message at a time, in the order its program completes receives;
 *   4. arrives at  s + alpha + w: the receiver's clock becomes at least that;
 *   5. and the sender's send completes at  d' + w: its clock becomes at
 *      least that when it waits for the send.
 * Every figure depends only on the ranks' program order and modeled times,
 * never on the wall-time order in which the ranks ran: the clock is
 * deterministic. A reduction of n bytes (two operands into one) adds
 * gamma * n to the clock of the rank that computes it.
 *
 * Worked example (a parameter server's bottleneck): K workers each send n
 * bytes to rank 0 at time 0; rank 0 has posted its K receives at time 0.
 * Every message leaves its sender at d = 0 (step 1); rank 0's receive port
 * takes them at 0, w, 2w, ... (step 3); the last one arrives at
 * (K-1) w + alpha + w = alpha + K n / beta. Each worker's send completes at
 * n / beta (step 5): the senders do not see the queue, the receiver does.
 * A ring step is the other extreme: every rank sends one block to its right
 * and receives one from its left at the same clock t; no port is shared, so
 * the step ends at t + alpha + w on every rank.
 *
 * A JOB'S NETWORK is a topology (dt_net_topo): its ranks sit on nodes of
 * per_node ranks each, by block (rank r on node r / per_node); a message
 * between two ranks of one node crosses the link inside a node (intra),
 * one between two nodes the link between nodes (inter). THE RULE prices
 * each message by its pair's link. A flat network, one link for every pair
 * (the presets below, "alpha=2us,bw=10GB/s"), is the topology with a
 * single node. A collective on a group of ranks is priced by the slowest
 * link between two of them (dt_net_group_link): a group inside one node
 * pays the intra-node link, one that spans nodes the inter-node link.
 *
 * As in dt/metrics.h, a formula given an argument outside its domain returns
 * NaN and records why (dt_last_error); a parser returns DT_ERR_INVALID_ARG. */
#ifndef DT_NET_H
#define DT_NET_H

#include "dt/core.h"

#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- links */

typedef struct {
    double alpha; /* seconds */
    double beta;  /* bytes per second; INFINITY for none */
    double gamma; /* seconds per byte reduced; 0 for none */
} dt_net;

/* Presets (one direction of one link; gamma 0 in every preset: a reduction
 * costs modeled time only when the string gives gamma=):
 *   none     0        inf         no modeled communication cost
 *   nvlink   1 us     300 GB/s    NVLink 3, A100 (12 links x 25 GB/s)
 *   nvlink4  1 us     450 GB/s    NVLink 4, H100 (18 links x 25 GB/s)
 *   pcie4    2 us     25 GB/s     PCIe 4.0 x16 (31.5 GB/s raw, ~80% usable)
 *   ib100    1.5 us   12.5 GB/s   InfiniBand EDR 100 Gb/s
 *   ib200    1.5 us   25 GB/s     InfiniBand HDR 200 Gb/s
 *   ib400    1.5 us   50 GB/s     InfiniBand NDR 400 Gb/s
 *   eth1     30 us    125 MB/s    1 Gb Ethernet, TCP through the kernel
 *   eth10    30 us    1.25 GB/s   10 Gb Ethernet, TCP through the kernel
 *   eth100   10 us    12.5 GB/s   100 Gb Ethernet, TCP
 *   shm      0.3 us   5.6 GB/s    a laptop's memory shared by 8 ranks
 * (link.c gives the source of each figure.)
 * A spec is a preset name, or "alpha=<time>,bw=<rate>,gamma=<time per
 * byte>" (any part may be left out: alpha and gamma default to 0, bw to
 * infinite; a preset name may come first, e.g. "ib100,gamma=0.1ns"), with
 * time units s, ms, us, ns and rate units B/s, KB/s, MB/s, GB/s, TB/s
 * (powers of 10) or Mb/s, Gb/s (bits), e.g. "alpha=2us,bw=10GB/s". NULL or
 * "" is "none". DT_ERR_INVALID_ARG names a bad spec (a topology's name or
 * keys among them: one link is asked for here). */
dt_result dt_net_link(const char *spec, dt_net *link);

/* The same, giving only alpha and beta (either pointer may be NULL). */
dt_result dt_net_parse(const char *spec, double *alpha, double *beta);

/* A preset by name only (no "alpha=..." strings). */
dt_result dt_net_preset(const char *name, double *alpha, double *beta);

/* ---------------------------------------------------------------- topologies */

/* A job's network: nodes of per_node ranks, rank r on node r / per_node
 * (block placement), a link inside a node and a link between nodes.
 * per_node 0 is a flat network: every rank on one node, intra == inter. */
typedef struct {
    int nodes;    /* 0: as many as the job's ranks fill; else at most
                     nodes * per_node ranks (checked at launch) */
    int per_node; /* ranks per node; 0: flat (one node) */
    dt_net intra; /* between two ranks of one node */
    dt_net inter; /* between two ranks of different nodes */
} dt_net_topo;

/* Presets (per_node 8, nodes as many as the ranks fill):
 *   dgx-a100   intra nvlink  (NVLink 3 through NVSwitch, 300 GB/s a way)
 *              inter ib200   (8 x HDR 200 Gb/s InfiniBand, one per GPU)
 *   dgx-h100   intra nvlink4 (NVLink 4 through NVSwitch, 450 GB/s a way)
 *              inter ib400   (8 x NDR 400 Gb/s InfiniBand, one per GPU)
 *   laptop     intra shm     (8 ranks in one laptop's memory)
 *              inter eth1    (laptops joined by gigabit Ethernet)
 * (topo.c gives the sources.) A spec is what dt_net_link takes (a flat
 * network, per_node 0), or a topology: a preset above and/or parts
 * "nodes=<N>", "per_node=<N>", "intra=<link preset>", "inter=<link
 * preset>", "intra.alpha=<time>", "intra.bw=<rate>", "inter.alpha=",
 * "inter.bw=", "gamma=<time per byte>" (both links: the ranks reduce at
 * one speed), applied in order, e.g. "nodes=2,per_node=4,intra=nvlink,
 * inter=ib100", "dgx-h100,nodes=2", "per_node=2,intra=shm,inter=eth10,
 * inter.alpha=50us". A topology names per_node and both of its links; a
 * flat link's alpha= or bw= does not mix with them. DT_NET, dt_launch_opts.net
 * and the tools' --net take these strings. DT_ERR_INVALID_ARG names the
 * spec and the part that is wrong. */
dt_result dt_net_topo_parse(const char *spec, dt_net_topo *topo);

/* Whether topo holds a job of nranks ranks (its links valid, per_node and
 * nodes >= 0, nranks <= nodes * per_node when nodes > 0); DT_ERR_INVALID_ARG
 * says why not. */
dt_result dt_net_topo_check(const dt_net_topo *topo, int nranks);

/* The node of a rank (its world rank): r / per_node, 0 on a flat network. */
static inline int dt_net_topo_node(const dt_net_topo *t, int rank)
{
    return t->per_node > 0 ? rank / t->per_node : 0;
}

/* The link a message between ranks a and b crosses (world ranks). */
static inline const dt_net *dt_net_topo_pair(const dt_net_topo *t, int a, int b)
{
    return dt_net_topo_node(t, a) == dt_net_topo_node(t, b) ? &t->intra : &t->inter;
}

/* The slower of two links in each figure: the larger alpha and gamma, the
 * smaller beta. */
dt_net dt_net_slowest(const dt_net *a, const dt_net *b);

/* The link that prices a collective on the k ranks ranks[0..k) (world
 * ranks): the slowest link between two of them. intra when all sit on one
 * node, inter when no two share a node, else dt_net_slowest of both. Every
 * step of a ring that crosses nodes waits for its slowest hop, so the
 * ring's closed form on this link is what THE RULE gives (exactly, when one
 * link is slower in alpha and in beta, as in every preset). A tree's rounds
 * inside a node are faster: on a group that mixes both links its closed
 * form here is an upper bound. k >= 1; DT_ERR_INVALID_ARG otherwise. */
dt_result dt_net_group_link(const dt_net_topo *topo, const int *ranks, int k, dt_net *link);

/* ---------------------------------------------------------------- one message */

/* Messages of at most this many bytes are eager (THE RULE, step 2). */
#define DT_NET_EAGER_MAX 16384

/* A rank's two ports on one timeline: when each is next free. */
typedef struct {
    double send_free, recv_free;
} dt_net_ports;

/* The functions of THE RULE are inline: the communicator calls them for
 * every message it moves and every one a shortcut replays. */

/* n / beta: the time a port is busy with n bytes (0 when beta is infinite). */
static inline double dt_net_wire(const dt_net *link, double bytes)
{
    return link->beta == INFINITY ? 0.0 : bytes / link->beta;
}

/* gamma * bytes: the time to reduce bytes (two operands into one). */
static inline double dt_net_reduce_time(const dt_net *link, double bytes)
{
    return link->gamma * bytes;
}

static inline double dt_net_max_(double a, double b) { return a > b ? a : b; }

/* Step 1: a sender whose clock reads t_send posts bytes; returns the
 * departure d = max(t_send, send_free) and marks its send port busy until
 * d + w. */
static inline double dt_net_depart(const dt_net *link, dt_net_ports *sender, double t_send,
                                   double bytes)
{
    double d = dt_net_max_(t_send, sender->send_free);
    sender->send_free = d + dt_net_wire(link, bytes);
    return d;
}

/* Step 5: when the send of a message that departed at d completes, given
 * the time t_posted at which its receive was posted (ignored for an eager
 * message): d' + w, d' = max(d, t_posted) above the eager limit, else d. */
static inline double dt_net_sent(const dt_net *link, double depart, double t_posted,
                                 double bytes)
{
    double d = bytes > DT_NET_EAGER_MAX ? dt_net_max_(depart, t_posted) : depart;
    return d + dt_net_wire(link, bytes);
}

/* Steps 2 to 4: the receiver takes a message that departed at d, its
 * receive having been posted at t_posted: the receive port takes it at
 * s = max(d', recv_free) and is busy until s + w; it arrives at
 * s + alpha + w (the return). */
static inline double dt_net_arrive(const dt_net *link, dt_net_ports *receiver, double depart,
                                   double t_posted, double bytes)
{
    double d = bytes > DT_NET_EAGER_MAX ? dt_net_max_(depart, t_posted) : depart;
    double s = dt_net_max_(d, receiver->recv_free), w = dt_net_wire(link, bytes);
    receiver->recv_free = s + w;
    return s + link->alpha + w;
}

/* ---------------------------------------------------------------- collectives */

/* The operations of a communicator (dt/comm.h counts its calls by them). */
typedef enum {
    DT_COLL_ALLREDUCE = 0,
    DT_COLL_BROADCAST,
    DT_COLL_REDUCE,
    DT_COLL_ALLGATHER,
    DT_COLL_REDUCE_SCATTER,
    DT_COLL_ALLTOALL,
    DT_COLL_BARRIER,
    DT_COLL_SEND,
    DT_COLL_RECV,
    DT_COLL_SENDRECV,
    DT_NUM_COLLS
} dt_coll_kind;

/* "allreduce", "broadcast", "reduce", "allgather", "reduce_scatter",
 * "alltoall", "barrier", "send", "recv", "sendrecv"; "?" out of range. */
const char *dt_coll_name(dt_coll_kind k);

/* Closed forms of each algorithm on k ranks that start together (equal
 * clocks, idle ports), n the whole buffer in bytes as NCCL counts it (the
 * allgather's output, the reduce-scatter's input), w(x) = x / beta. Each is
 * what THE RULE gives; the communicator's clock shows it (tests/lib and
 * the chapters' labs measure each one).
 *   ring allreduce        2 (k-1) (alpha + n/(k beta)) + (k-1)/k n gamma
 *   ring reduce-scatter   (k-1) (alpha + n/(k beta)) + (k-1)/k n gamma
 *   ring allgather        (k-1) (alpha + n/(k beta))
 *   tree allreduce        binomial trees, a reduce to rank 0 then a
 *                         broadcast: 2 L (alpha + n/beta) + L n gamma,
 *                         L = ceil(log2 k) (exact for a power of two; less
 *                         otherwise: the last rounds are partly empty)
 *   recursive doubling    log2 k rounds of a whole-buffer exchange:
 *                         log2 k (alpha + n/beta + n gamma) for a power of
 *                         two; otherwise the k - p extra ranks (p =
 *                         2^floor(log2 k)) hand their buffer in first and get
 *                         the result last: (floor(log2 k) + 2)(alpha + n/beta)
 *                         + (floor(log2 k) + 1) n gamma (whole-buffer
 *                         messages above the eager limit)
 *   naive allreduce       the k-1 buffers queue at rank 0's receive port
 *                         (arriving at alpha + j n/beta, j = 1 .. k-1), rank 0
 *                         reduces each while the next one comes in, then
 *                         sends k-1 results through its send port:
 *                         2 alpha + (k-1) n/beta
 *                           + max((k-1) n/beta + n gamma, n/beta + (k-1) n gamma)
 *                         = 2 alpha + 2 (k-1) n/beta when gamma = 0 (rank 0's
 *                         receives posted before the buffers come: eager
 *                         messages, or receives posted all at once)
 *   binomial broadcast    ceil(log2 k) (alpha + n/beta) (as the tree)
 *   linear broadcast      the root sends k-1 messages one after another:
 *                         alpha + (k-1) n/beta
 *   pairwise all-to-all   (k-1) (alpha + n/(k beta))
 * One rank costs 0. Arguments: link alpha >= 0, beta > 0 (may be infinite),
 * gamma >= 0; n >= 0 bytes; k >= 1. */
double dt_net_p2p(const dt_net *link, double n);
double dt_net_ring_allreduce(const dt_net *link, double n, int k);
double dt_net_ring_reduce_scatter(const dt_net *link, double n, int k);
double dt_net_ring_allgather(const dt_net *link, double n, int k);
double dt_net_tree_allreduce(const dt_net *link, double n, int k);
double dt_net_recursive_doubling_allreduce(const dt_net *link, double n, int k);
double dt_net_naive_allreduce(const dt_net *link, double n, int k);
/* The naive allreduce whose rank 0 posts each receive only after the
 * previous buffer came (lab 02's, chapter 02 section 4): above the eager
 * limit a buffer waits for its receive (THE RULE, step 2), so each of the
 * k-2 buffers after the first pays alpha once more:
 *   dt_net_naive_allreduce + (k-2) alpha  when n > DT_NET_EAGER_MAX, k > 2
 *   (k alpha + 2 (k-1) n/beta when gamma = 0), dt_net_naive_allreduce else. */
double dt_net_naive_allreduce_in_turn(const dt_net *link, double n, int k);
double dt_net_binomial_broadcast(const dt_net *link, double n, int k);
double dt_net_linear_broadcast(const dt_net *link, double n, int k);
double dt_net_pairwise_alltoall(const dt_net *link, double n, int k);

/* The algorithms above as data, for tables and command lines. */
typedef enum {
    DT_NET_P2P = 0,
    DT_NET_RING_ALLREDUCE,
    DT_NET_RING_REDUCE_SCATTER,
    DT_NET_RING_ALLGATHER,
    DT_NET_TREE_ALLREDUCE,
    DT_NET_RECURSIVE_DOUBLING_ALLREDUCE,
    DT_NET_NAIVE_ALLREDUCE,
    DT_NET_BINOMIAL_BROADCAST,
    DT_NET_LINEAR_BROADCAST,
    DT_NET_PAIRWISE_ALLTOALL,
    DT_NET_NUM_ALGOS
} dt_net_algo;

/* The cost of algo (p2p ignores k); NaN for an unknown algo or argument. */
double dt_net_cost(dt_net_algo algo, const dt_net *link, double n, int k);
/* The cost of algo on the group ranks[0..k) of a topology: on its link,
 * dt_net_group_link (a ring that crosses nodes at its slowest hop). */
double dt_net_group_cost(dt_net_algo algo, const dt_net_topo *topo, const int *ranks, int k,
                         double n);
/* "ring_allreduce", ...; "?" when unknown. */
const char *dt_net_algo_name(dt_net_algo algo);
/* What it computes (DT_COLL_SENDRECV for p2p; DT_NUM_COLLS when unknown). */
dt_coll_kind dt_net_algo_collective(dt_net_algo algo);

/* ---------------------------------------------------------------- bandwidths */

/* The bus-bandwidth factor of nccl-tests: busbw = algbw * factor makes the
 * figure comparable with the link's bandwidth whatever the collective, for
 * algorithms built from point-to-point messages: allreduce 2 (k-1)/k;
 * reduce-scatter, allgather, all-to-all (k-1)/k; broadcast, reduce, send,
 * recv and sendrecv 1; barrier 0 (it moves no data). (Reductions inside the
 * network, as SHARP does, beat the point-to-point bound; nccl-tests gives
 * them another factor.) NaN for k < 1 or an unknown kind. */
double dt_net_busbw_factor(dt_coll_kind c, int k);

/* Algorithm bandwidth n / seconds, in bytes/s; n >= 0, seconds > 0. */
double dt_net_algbw(double n, double seconds);

/* Bus bandwidth: dt_net_algbw(n, seconds) * dt_net_busbw_factor(c, k). A
 * ring allreduce on a link with alpha = gamma = 0 has busbw = beta. */
double dt_net_busbw(dt_coll_kind c, double n, double seconds, int k);

#ifdef __cplusplus
}
#endif

#endif /* DT_NET_H */
