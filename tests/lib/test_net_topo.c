/* test_net_topo.c - a job's network as a topology (dt/net.h): its strings
 * and presets, the link that prices a group, and the communicator's clock
 * on it: a tensor-parallel-like group inside a node and a data-parallel-like
 * group across nodes priced by their own links in one job, a ring across
 * nodes at its slowest hop, splits that inherit their links, the shortcuts'
 * replays equal to the messages, and flat networks as they were. Every
 * launch takes its backend from DT_BACKEND. */
#include "test_comm_util.h"

#include "dt/net.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>

static int same_link(const dt_net *a, const dt_net *b)
{
    return a->alpha == b->alpha && a->beta == b->beta && a->gamma == b->gamma;
}

static dt_net link_of(const char *spec)
{
    dt_net l = {0, 0, 0};
    EXPECT_OK(dt_net_link(spec, &l));
    return l;
}

/* ---------------------------------------------------------------- strings */

/* Every flat string reads as it always did: one node, the same link. */
TEST(net_topo_flat_strings_unchanged, 1)
{
    const char *flat[] = {"none", "nvlink", "nvlink4", "pcie4", "ib100", "ib200", "ib400",
                          "eth1", "eth10", "eth100", "shm", "alpha=2us,bw=10GB/s",
                          "ib100,gamma=1ns", "eth10,alpha=5us", "bw=100Gb/s", ""};
    for (int i = 0; i < (int)(sizeof flat / sizeof flat[0]); i++) {
        dt_net_topo t;
        EXPECT_OK(dt_net_topo_parse(flat[i], &t));
        dt_net l = link_of(flat[i]);
        EXPECT(t.per_node == 0 && t.nodes == 0, "'%s': a flat network is one node", flat[i]);
        EXPECT(same_link(&t.intra, &l) && same_link(&t.inter, &l),
               "'%s': both links are dt_net_link's (%g s, %g B/s)", flat[i], l.alpha, l.beta);
    }
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse(NULL, &t));
    EXPECT(t.intra.alpha == 0 && isinf(t.intra.beta), "NULL: none");
    /* the presets of before keep their figures */
    EXPECT(link_of("ib100").alpha == 1.5e-6 && link_of("ib100").beta == 12.5e9, "ib100");
    EXPECT(link_of("nvlink").alpha == 1e-6 && link_of("nvlink").beta == 300e9, "nvlink");
    EXPECT(link_of("eth10").alpha == 30e-6 && link_of("eth10").beta == 1.25e9, "eth10");
}

/* The presets, against the vendors' figures (topo.c and link.c give the
 * sources): one direction of one GPU's links. */
TEST(net_topo_presets_are_the_vendors_figures, 1)
{
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse("dgx-a100", &t));
    EXPECT(t.per_node == 8 && t.nodes == 0, "DGX A100: 8 GPUs a node");
    EXPECT(t.intra.beta == 600e9 / 2, "NVLink 3: 600 GB/s both ways: %g", t.intra.beta);
    EXPECT(t.inter.beta == 200e9 / 8, "HDR InfiniBand, 200 Gb/s: %g", t.inter.beta);
    EXPECT_OK(dt_net_topo_parse("dgx-h100", &t));
    EXPECT(t.per_node == 8, "DGX H100: 8 GPUs a node");
    EXPECT(t.intra.beta == 900e9 / 2, "NVLink 4: 900 GB/s both ways: %g", t.intra.beta);
    EXPECT(t.inter.beta == 400e9 / 8, "NDR InfiniBand, 400 Gb/s: %g", t.inter.beta);
    EXPECT(t.intra.alpha < t.inter.alpha && t.intra.gamma == 0, "alpha %g %g", t.intra.alpha,
           t.inter.alpha);
    EXPECT_OK(dt_net_topo_parse("laptop", &t));
    EXPECT(t.per_node == 8 && t.inter.beta == 1e9 / 8, "gigabit Ethernet between laptops");
    EXPECT(t.intra.beta == 89.6e9 / 16, "DDR5-5600 dual channel shared by 8 copies");
    /* a preset is a string of the language: the same as its spelled-out form */
    dt_net_topo s;
    EXPECT_OK(dt_net_topo_parse("per_node=8,intra=nvlink4,inter=ib400", &s));
    EXPECT_OK(dt_net_topo_parse("DGX-H100", &t));
    EXPECT(s.per_node == t.per_node && same_link(&s.intra, &t.intra) &&
               same_link(&s.inter, &t.inter), "dgx-h100 spelled out");
}

TEST(net_topo_strings, 1)
{
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse("nodes=2,per_node=4,intra=nvlink,inter=ib100", &t));
    dt_net nv = link_of("nvlink"), ib = link_of("ib100");
    EXPECT(t.nodes == 2 && t.per_node == 4 && same_link(&t.intra, &nv) &&
               same_link(&t.inter, &ib), "nodes %d per_node %d", t.nodes, t.per_node);
    EXPECT_OK(dt_net_topo_parse("dgx-h100,nodes=2,gamma=0.5ns", &t));
    EXPECT(t.nodes == 2 && t.per_node == 8, "a preset, then its node count");
    EXPECT(fabs(t.intra.gamma - 0.5e-9) < 1e-21 && t.intra.gamma == t.inter.gamma,
           "gamma is both links' (the ranks reduce at one speed)");
    /* parts apply in order: a preset's link, then one figure of it */
    EXPECT_OK(dt_net_topo_parse("per_node=2,intra=shm,inter=eth10,inter.alpha=50us,"
                                "intra.bw=8GB/s", &t));
    EXPECT(t.per_node == 2 && t.intra.beta == 8e9 && t.intra.alpha == 0.3e-6, "intra %g %g",
           t.intra.alpha, t.intra.beta);
    EXPECT(fabs(t.inter.alpha - 50e-6) < 1e-18 && t.inter.beta == 1.25e9, "inter %g %g",
           t.inter.alpha, t.inter.beta);
    EXPECT_OK(dt_net_topo_parse("per_node=3,intra.alpha=1us,intra.bw=100GB/s,inter.alpha=5us,"
                                "inter.bw=10Gb/s", &t));
    EXPECT(t.per_node == 3 && t.nodes == 0 && t.intra.beta == 100e9 && t.inter.beta == 1.25e9,
           "links from their figures: %g %g", t.intra.beta, t.inter.beta);
    /* rank r on node r / per_node; each pair its link */
    EXPECT(dt_net_topo_node(&t, 0) == 0 && dt_net_topo_node(&t, 2) == 0 &&
               dt_net_topo_node(&t, 3) == 1 && dt_net_topo_node(&t, 7) == 2, "block placement");
    EXPECT(dt_net_topo_pair(&t, 1, 2) == &t.intra && dt_net_topo_pair(&t, 2, 3) == &t.inter &&
               dt_net_topo_pair(&t, 4, 4) == &t.intra, "pairs");
}

static dt_result nop_rank(dt_comm *c, void *arg)
{
    (void)c;
    (void)arg;
    return DT_OK;
}

/* A bad string names itself and the part that is wrong. */
TEST(net_topo_parse_errors_name_what_is_wrong, 1)
{
    static const struct {
        const char *spec, *names;
    } bad[] = {
        {"nodes=2,intra=nvlink,inter=ib100", "per_node"},
        {"per_node=4,inter=ib100", "the link inside a node"},
        {"per_node=4,intra=nvlink", "the link between nodes"},
        {"per_node=0,intra=nvlink,inter=ib100", "'per_node=0'"},
        {"per_node=four,intra=nvlink,inter=ib100", "'per_node=four'"},
        {"nodes=2.5,per_node=4,intra=nvlink,inter=ib100", "'nodes=2.5'"},
        {"per_node=4,intra=warp,inter=ib100", "'intra=warp': expected a link preset"},
        {"per_node=4,intra=nvlink,inter=ib100,alpha=1us", "'alpha=1us': a flat link's key"},
        {"ib100,nodes=2", "'ib100': one link for every pair"},
        {"dgx-h100,speed=fast", "'speed=fast': unknown key"},
        {"dgx-h100,,nodes=2", "an empty part"},
        {"dgx-h100,", "an empty part"},
        {"nodes=2,dgx-a100", "'dgx-a100': a preset's name comes first"},
        {"per_node=4,intra.alpha=-1us,intra.bw=1GB/s,inter=ib100", "'intra.alpha=-1us'"},
        {"per_node=4,intra=nvlink,inter.bw=0GB/s", "'inter.bw=0GB/s': expected a rate"},
        {"dgx-h100,gamma=1GB/s", "'gamma=1GB/s'"},
        {"dgx-h200", "dgx-a100, dgx-h100, laptop"},
    };
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        dt_net_topo t;
        dt_clear_error();
        EXPECT_ERR(dt_net_topo_parse(bad[i].spec, &t), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i].spec) && strstr(dt_last_error(), bad[i].names),
               "'%s': the message names it and '%s': '%s'", bad[i].spec, bad[i].names,
               dt_last_error());
    }
    dt_net l;
    EXPECT_ERR(dt_net_link("dgx-h100", &l), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "topology"), "one link asked for: '%s'", dt_last_error());
    EXPECT_ERR(dt_net_topo_parse("ib100", NULL), DT_ERR_INVALID_ARG);
    /* the job must fit the nodes it was given */
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse("nodes=2,per_node=4,intra=nvlink,inter=ib100", &t));
    EXPECT_OK(dt_net_topo_check(&t, 8));
    EXPECT_OK(dt_net_topo_check(&t, 5));
    EXPECT_ERR(dt_net_topo_check(&t, 9), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "2 nodes of 4 ranks") && strstr(dt_last_error(), "9 ranks"),
           "'%s'", dt_last_error());
    t.inter.beta = 0;
    EXPECT_ERR(dt_net_topo_check(&t, 8), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "inter-node"), "'%s'", dt_last_error());
    /* ... at launch, by its option or its variable */
    dt_launch_opts o = tc_opts(9, DT_ALGO_AUTO);
    o.net = "nodes=2,per_node=4,intra=nvlink,inter=ib100";
    EXPECT_ERR(dt_launch(&o, nop_rank, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), o.net) && strstr(dt_last_error(), "the job 9 ranks"),
           "'%s'", dt_last_error());
    o.nranks = 8;
    EXPECT_OK(dt_launch(&o, nop_rank, NULL));
    setenv("DT_NET", "per_node=4,intra=nvlink", 1);
    EXPECT_ERR(dt_launch_opts_init(&o), DT_ERR_INVALID_ARG);
    unsetenv("DT_NET");
    EXPECT(strstr(o.env_error, "DT_NET") && strstr(o.env_error, "the link between nodes"),
           "'%s'", o.env_error);
}

/* ---------------------------------------------------------------- groups */

TEST(net_topo_group_link_is_the_slowest_hop, 1)
{
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse("nodes=2,per_node=4,intra=nvlink,inter=ib100", &t));
    const int node0[] = {0, 1, 2, 3}, pair[] = {1, 5}, mixed[] = {0, 2, 4, 6},
              across[] = {3, 0, 5, 6, 4, 1, 7, 2};
    dt_net l;
    EXPECT_OK(dt_net_group_link(&t, node0, 4, &l));
    EXPECT(same_link(&l, &t.intra), "inside a node: the intra-node link");
    EXPECT_OK(dt_net_group_link(&t, pair, 2, &l));
    EXPECT(same_link(&l, &t.inter), "one rank a node: the inter-node link");
    EXPECT_OK(dt_net_group_link(&t, mixed, 4, &l));
    EXPECT(same_link(&l, &t.inter), "both: the slower, InfiniBand");
    EXPECT_OK(dt_net_group_link(&t, pair, 1, &l));
    EXPECT(same_link(&l, &t.intra), "one rank: no hop crosses a node");
    /* a ring across nodes costs the ring on its slowest hop */
    double n = 1 << 24;
    EXPECT(dt_net_group_cost(DT_NET_RING_ALLREDUCE, &t, across, 8, n) ==
               dt_net_ring_allreduce(&t.inter, n, 8), "ring on 8 ranks across 2 nodes");
    EXPECT(dt_net_group_cost(DT_NET_RING_ALLREDUCE, &t, node0, 4, n) ==
               dt_net_ring_allreduce(&t.intra, n, 4), "ring inside a node");
    /* neither link slower in both figures: the slowest of each */
    dt_net_topo odd = {0, 4, {5e-6, 100e9, 0}, {1e-6, 10e9, 0}};
    EXPECT_OK(dt_net_group_link(&odd, mixed, 4, &l));
    EXPECT(l.alpha == 5e-6 && l.beta == 10e9, "alpha %g beta %g", l.alpha, l.beta);
    /* flat: every group pays the one link */
    EXPECT_OK(dt_net_topo_parse("eth10", &t));
    EXPECT_OK(dt_net_group_link(&t, across, 8, &l));
    EXPECT(same_link(&l, &t.intra) && l.alpha == 30e-6, "flat");
    EXPECT_ERR(dt_net_group_link(&t, across, 0, &l), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_net_group_link(&t, NULL, 2, &l), DT_ERR_INVALID_ARG);
    EXPECT(isnan(dt_net_group_cost(DT_NET_RING_ALLREDUCE, NULL, across, 8, n)), "no topology");
}

/* ---------------------------------------------------------------- the clock */

/* 2 nodes of 4 ranks: NVLink inside, InfiniBand between, a reduction cost. */
#define TOPO "nodes=2,per_node=4,intra=nvlink,inter=ib100,gamma=0.25ns"
#define COUNT (1 << 18) /* 1 MiB of floats: chunks above the eager limit */

typedef struct {
    double tp, dp, world, tp_tiny, world_tiny; /* each allreduce's modeled time */
    double send_near, send_far;                /* a message inside, across nodes */
    double barrier_tp;
    dt_net tp_link, dp_link, world_link;
} topo_out;

/* The time of one allreduce of count floats on c, from clocks levelled by
 * a barrier of the world. */
static double timed_allreduce(dt_comm *world, dt_comm *c, float *x, size_t count)
{
    EXPECT_OK(dt_barrier(world));
    double t0 = dt_clock(world);
    EXPECT_OK(dt_allreduce(x, x, count, DT_F32, DT_SUM, c));
    return dt_clock(world) - t0;
}

/* The algorithms of the large allreduces and of the tiny ones. */
typedef struct {
    dt_algo large, tiny;
} topo_algos;

static void set_algo(dt_comm *const *comms, dt_algo algo)
{
    for (int i = 0; i < 3; i++)
        EXPECT_OK(dt_comm_set_algo(comms[i], algo));
}

/* TP: the 4 ranks of a node (color r / 4); DP: one rank of each node
 * (color r % 4), as a 2-way data-parallel by 4-way tensor-parallel layout. */
static dt_result topo_rank(dt_comm *world, void *argp)
{
    const topo_algos *algo = argp;
    topo_out *out = tc_mine(world);
    int r = dt_comm_rank(world);
    dt_comm *tp, *dp;
    EXPECT_OK(dt_comm_split(world, r / 4, r, &tp));
    EXPECT_OK(dt_comm_split(world, r % 4, r, &dp));
    dt_comm *comms[3] = {tp, dp, world};
    set_algo(comms, algo->large);
    EXPECT_OK(dt_comm_link(tp, &out->tp_link));
    EXPECT_OK(dt_comm_link(dp, &out->dp_link));
    EXPECT_OK(dt_comm_link(world, &out->world_link));
    float *x = calloc(COUNT, sizeof *x);
    EXPECT(x != NULL, "out of memory");
    out->tp = timed_allreduce(world, tp, x, COUNT);
    out->dp = timed_allreduce(world, dp, x, COUNT);
    out->world = timed_allreduce(world, world, x, COUNT);
    set_algo(comms, algo->tiny);
    out->tp_tiny = timed_allreduce(world, tp, x, 4);
    out->world_tiny = timed_allreduce(world, world, x, 4);
    /* one message from rank 0 to rank 1 (its node), then to rank 4 */
    EXPECT_OK(dt_barrier(world));
    double t0 = dt_clock(world);
    if (r == 0) {
        EXPECT_OK(dt_send(x, COUNT, DT_F32, 1, world));
        out->send_near = dt_clock(world) - t0;
        EXPECT_OK(dt_send(x, COUNT, DT_F32, 4, world));
    } else if (r == 1 || r == 4) {
        EXPECT_OK(dt_recv(x, COUNT, DT_F32, 0, world));
        if (r == 1)
            out->send_near = dt_clock(world) - t0;
        else
            out->send_far = dt_clock(world) - t0;
    }
    EXPECT_OK(dt_barrier(world));
    t0 = dt_clock(world);
    EXPECT_OK(dt_barrier(tp));
    out->barrier_tp = dt_clock(world) - t0;
    free(x);
    EXPECT_OK(dt_comm_free(tp));
    EXPECT_OK(dt_comm_free(dp));
    return DT_OK;
}

static void run_topo(const char *net, dt_algo large, dt_algo tiny, topo_out out[8])
{
    topo_algos algo = {large, tiny};
    dt_launch_opts o = tc_opts(8, DT_ALGO_AUTO);
    o.net = net;
    o.debug = 0;
    memset(out, 0, 8 * sizeof *out);
    tc_out(&o, out, sizeof *out);
    EXPECT_OK(dt_launch(&o, topo_rank, &algo));
}

static double max_over(const topo_out *a, size_t field)
{
    double m = 0;
    for (int r = 0; r < 8; r++) {
        double v = *(const double *)((const char *)&a[r] + field);
        m = v > m ? v : m;
    }
    return m;
}

/* In one job, the allreduce of a TP-like group inside a node pays NVLink
 * and that of a DP-like group across nodes pays InfiniBand: each the ring's
 * closed form on its own link, on every member; the world's ring crosses
 * the nodes and takes the closed form on InfiniBand, its slowest hop, on
 * the ranks that receive across it. A message pays its pair's link. */
TEST_T(comm_topo_groups_priced_by_their_links, 3, 120)
{
    topo_out a[8];
    run_topo(TOPO, DT_ALGO_RING, DT_ALGO_TREE, a);
    dt_net_topo t;
    EXPECT_OK(dt_net_topo_parse(TOPO, &t));
    double n = (double)COUNT * 4;
    double tp = dt_net_ring_allreduce(&t.intra, n, 4), dp = dt_net_ring_allreduce(&t.inter, n, 2);
    double world = dt_net_ring_allreduce(&t.inter, n, 8);
    EXPECT(tp < dp && dp < world, "the ring inside a node is the fastest: %g %g %g", tp, dp,
           world);
    for (int r = 0; r < 8; r++) {
        EXPECT(same_link(&a[r].tp_link, &t.intra), "rank %d: the TP group's link is NVLink", r);
        EXPECT(same_link(&a[r].dp_link, &t.inter), "rank %d: the DP group's link is IB", r);
        EXPECT(same_link(&a[r].world_link, &t.inter), "rank %d: the world's, its slowest", r);
        EXPECT_NEAR(a[r].tp, tp, 1e-9);
        EXPECT_NEAR(a[r].dp, dp, 1e-9);
        EXPECT(a[r].world <= world * (1 + 1e-9), "rank %d: %.9g s past the slowest hop's "
               "%.9g s", r, a[r].world, world);
    }
    /* ranks 0 and 4 receive across the nodes at every step */
    EXPECT_NEAR(a[0].world, world, 1e-9);
    EXPECT_NEAR(a[4].world, world, 1e-9);
    EXPECT_NEAR(max_over(a, offsetof(topo_out, world)), world, 1e-9);
    EXPECT(a[1].world > dt_net_ring_allreduce(&t.intra, n, 8), "rank 1 waits for the slow hop "
           "too: %g", a[1].world);
    /* a message: alpha + n / beta of its pair's link; rank 0's second send
     * leaves once its send port has put out the first (n / beta on NVLink) */
    EXPECT_NEAR(a[1].send_near, dt_net_p2p(&t.intra, n), 1e-9);
    EXPECT_NEAR(a[0].send_near, dt_net_wire(&t.intra, n), 1e-9);
    EXPECT_NEAR(a[4].send_far, dt_net_wire(&t.intra, n) + dt_net_p2p(&t.inter, n), 1e-9);
    /* the barrier of a node's group: 2 rounds of NVLink's alpha */
    EXPECT_NEAR(a[5].barrier_tp, 2 * t.intra.alpha, 1e-9);
    /* recursive doubling (tiny, tree): the node's group costs its rounds on NVLink */
    for (int r = 0; r < 8; r++)
        EXPECT_NEAR(a[r].tp_tiny, dt_net_recursive_doubling_allreduce(&t.intra, 16, 4), 1e-9);
    /* across nodes, rounds 1 and 2 stay inside a node and round 3 crosses:
     * two rounds of NVLink and one of InfiniBand, less than the closed form
     * on the slowest link (three of InfiniBand: for a tree, a bound) */
    double rd = max_over(a, offsetof(topo_out, world_tiny));
    EXPECT_NEAR(rd, 2 * dt_net_p2p(&t.intra, 16) + dt_net_p2p(&t.inter, 16) +
                        3 * 16 * t.inter.gamma, 1e-9);
    EXPECT(rd < dt_net_recursive_doubling_allreduce(&t.inter, 16, 8), "tree: an upper bound");
}

/* The shortcuts (AUTO: the one-pass ring, the tiny allreduce) charge what
 * their algorithm's messages cost on the topology, to the bit. */
TEST_T(comm_topo_shortcuts_replay_each_pairs_link, 2, 120)
{
    topo_out ring[8], fast[8];
    run_topo(TOPO, DT_ALGO_RING, DT_ALGO_TREE, ring); /* messages */
    run_topo(TOPO, DT_ALGO_AUTO, DT_ALGO_AUTO, fast); /* shared memory, replayed */
    for (int r = 0; r < 8; r++) {
        EXPECT(fast[r].tp == ring[r].tp && fast[r].dp == ring[r].dp &&
                   fast[r].world == ring[r].world,
               "rank %d: the one-pass allreduce %.12g %.12g %.12g, the ring %.12g %.12g %.12g",
               r, fast[r].tp, fast[r].dp, fast[r].world, ring[r].tp, ring[r].dp, ring[r].world);
        EXPECT(fast[r].tp_tiny == ring[r].tp_tiny && fast[r].world_tiny == ring[r].world_tiny,
               "rank %d: the tiny allreduce %a %a, recursive doubling %a %a", r,
               fast[r].tp_tiny, fast[r].world_tiny, ring[r].tp_tiny, ring[r].world_tiny);
    }
}

/* A topology whose two links are the same link prices everything as the
 * flat network of that link, to the bit. */
TEST_T(comm_topo_flat_networks_unchanged, 1, 120)
{
    topo_out flat[8], same[8];
    run_topo("ib100,gamma=0.25ns", DT_ALGO_AUTO, DT_ALGO_AUTO, flat);
    run_topo("per_node=4,intra=ib100,inter=ib100,gamma=0.25ns", DT_ALGO_AUTO, DT_ALGO_AUTO,
             same);
    dt_net ib = link_of("ib100,gamma=0.25ns");
    for (int r = 0; r < 8; r++) {
        EXPECT(memcmp(&flat[r], &same[r], sizeof flat[r]) == 0, "rank %d: a flat network and "
               "its one-link topology differ", r);
        EXPECT(same_link(&flat[r].tp_link, &ib) && same_link(&flat[r].world_link, &ib),
               "rank %d: every communicator has the one link", r);
    }
    EXPECT_NEAR(flat[0].dp, dt_net_ring_allreduce(&ib, (double)COUNT * 4, 2), 1e-9);
}

/* ---------------------------------------------------------------- splits */

typedef struct {
    dt_net half, pairs, evens, world;
    dt_net_topo topo;
    int world_of[4];
    double alpha, beta;
} split_out;

/* A split of a split inherits the links its members span. */
static dt_result split_rank(dt_comm *world, void *argp)
{
    (void)argp;
    split_out *out = tc_mine(world);
    int r = dt_comm_rank(world);
    dt_comm *half, *pairs, *evens;
    EXPECT_OK(dt_comm_split(world, r / 4, -r, &half)); /* a node, in reverse order */
    EXPECT_OK(dt_comm_split(half, dt_comm_rank(half) / 2, 0, &pairs));
    EXPECT_OK(dt_comm_split(world, r % 2 == 0 ? 0 : DT_COLOR_NONE, 0, &evens));
    EXPECT_OK(dt_comm_link(half, &out->half));
    EXPECT_OK(dt_comm_link(pairs, &out->pairs));
    EXPECT_OK(dt_comm_link(world, &out->world));
    EXPECT_OK(dt_comm_topo(half, &out->topo));
    EXPECT_OK(dt_comm_net(pairs, &out->alpha, &out->beta));
    for (int i = 0; i < 4; i++)
        out->world_of[i] = dt_comm_world_rank(half, i);
    EXPECT(dt_comm_world_rank(half, 4) == -1 && strstr(dt_last_error(), "rank 4"),
           "a rank out of range: '%s'", dt_last_error());
    if (evens) {
        EXPECT_OK(dt_comm_link(evens, &out->evens));
        EXPECT_OK(dt_comm_free(evens));
    }
    EXPECT_OK(dt_comm_free(pairs));
    EXPECT_OK(dt_comm_free(half));
    return DT_OK;
}

TEST_T(comm_topo_split_inherits_links, 1, 60)
{
    dt_launch_opts o = tc_opts(8, DT_ALGO_AUTO);
    o.net = "dgx-a100,intra=nvlink,inter=eth10,per_node=4";
    split_out a[8];
    memset(a, 0, sizeof a);
    tc_out(&o, a, sizeof a[0]);
    EXPECT_OK(dt_launch(&o, split_rank, NULL));
    dt_net nv = link_of("nvlink"), eth = link_of("eth10");
    for (int r = 0; r < 8; r++) {
        EXPECT(same_link(&a[r].half, &nv) && same_link(&a[r].pairs, &nv),
               "rank %d: a node's group and its halves pay NVLink", r);
        EXPECT(a[r].alpha == nv.alpha && a[r].beta == nv.beta, "rank %d: dt_comm_net", r);
        EXPECT(same_link(&a[r].world, &eth), "rank %d: the world crosses Ethernet", r);
        if (r % 2 == 0)
            EXPECT(same_link(&a[r].evens, &eth), "rank %d: 0, 2, 4, 6 span both nodes", r);
        EXPECT(a[r].topo.per_node == 4 && same_link(&a[r].topo.inter, &eth),
               "rank %d: dt_comm_topo is the job's network", r);
        int base = r / 4 * 4;
        for (int i = 0; i < 4; i++)
            EXPECT(a[r].world_of[i] == base + 3 - i, "rank %d: member %d of its node's group "
                   "is world rank %d, expected %d", r, i, a[r].world_of[i], base + 3 - i);
    }
}
