/* net.c - dtsim's network mode: the cost of each collective algorithm for
 * one link, buffer size and rank count, as a table (the network model of
 * dt/net.h); optionally a data-parallel step and a pipeline bubble
 * (dt/sim.h). main.c sends here every command line that is not the
 * planner's.
 *
 *     dtsim --alpha 5us --bw 25GB/s [--gamma 0.1ns] --bytes 256M --ranks 8
 *           [--comp 0.2] [--stages 4 --micro 16]
 *     dtsim --net ib100 --bytes 256M --ranks 8
 *
 * Times and rates are the network model's (DT_NET's alpha=5us, bw=25GB/s:
 * rates in powers of 1000, as links are quoted); sizes are every tool's
 * (dt_parse_bytes: 256M = 256Mi = 2^28 bytes, 1e9 decimal). */
#include "dtsim.h"

#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    dt_net link;
    const char *net;
    size_t bytes;
    double comp;
    int ranks, stages, micro;
} options;

#define MAX_COUNT 1000000000 /* ranks, stages, micro-batches */
#define NUM_OPTS 9

/* The mode's options on o's variables, and its command line: the parse
 * and --help (main.c's too) read the same table. */
static dt_cli net_cli(options *o, dt_opt opts[NUM_OPTS])
{
    const dt_opt table[NUM_OPTS] = {
        {"--alpha", DT_OPT_SECONDS, &o->link.alpha, .help = "link latency",
         .flags = DT_OPT_NO_DEFAULT},
        {"--bw", DT_OPT_RATE, &o->link.beta, .help = "link bandwidth, bytes/s (e.g. 25GB/s)",
         .flags = DT_OPT_NO_DEFAULT},
        {"--gamma", DT_OPT_SECONDS, &o->link.gamma, .help = "seconds to reduce one byte"},
        {"--net", DT_OPT_NET, &o->net, .help = "the link as DT_NET takes it, instead of --alpha, "
         "--bw and --gamma"},
        {"--bytes", DT_OPT_BYTES, &o->bytes, .help = "buffer size n", .flags = DT_OPT_NO_DEFAULT},
        {"--ranks", DT_OPT_INT, &o->ranks, .help = "ranks K", .lo = 1, .hi = MAX_COUNT,
         .flags = DT_OPT_NO_DEFAULT},
        {"--comp", DT_OPT_SECONDS, &o->comp, .help = "compute time of a data-parallel step: adds "
         "that step with a ring allreduce of --bytes of gradients, serial and overlapped",
         .flags = DT_OPT_NO_DEFAULT},
        {"--stages", DT_OPT_INT, &o->stages, .help = "pipeline stages p (with --micro: the "
         "bubble)", .lo = 1, .hi = MAX_COUNT, .flags = DT_OPT_NO_DEFAULT},
        {"--micro", DT_OPT_INT, &o->micro, .help = "micro-batches m", .lo = 1, .hi = MAX_COUNT,
         .flags = DT_OPT_NO_DEFAULT},
    };
    memcpy(opts, table, sizeof table);
    return (dt_cli){.prog = "dtsim", .opts = opts, .nopts = NUM_OPTS,
                    .synopsis = "--alpha TIME --bw RATE [--gamma TIME] --bytes SIZE --ranks K\n"
                                "             [--comp TIME] [--stages P --micro M]\n"
                                "       dtsim --net NET --bytes SIZE --ranks K [...]",
                    .about = "Prints the cost T of each collective algorithm for an n-byte "
                             "buffer on K ranks\nover links of latency alpha and bandwidth beta "
                             "(the network model of dt/net.h:\nboth ends' ports), with its "
                             "algorithm and bus bandwidth (nccl-tests' algbw and\nbusbw)."};
}

void dtsim_net_usage(FILE *out)
{
    options o = {.link = {0, INFINITY, 0}};
    dt_opt opts[NUM_OPTS];
    dt_cli cli = net_cli(&o, opts);
    dt_cli_usage(&cli, out);
}

/* Fills o from argv: DT_CLI_GO, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, options *o)
{
    *o = (options){.link = {0, INFINITY, 0}};
    dt_opt opts[NUM_OPTS];
    dt_cli cli = net_cli(o, opts);
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    int have_alpha = dt_cli_given(&cli, &o->link.alpha), have_bw = dt_cli_given(&cli, &o->link.beta);
    if (o->net && (have_alpha || have_bw || dt_cli_given(&cli, &o->link.gamma)))
        return dt_cli_fail(&cli, "--net replaces --alpha, --bw and --gamma: give one or the "
                           "others");
    if ((!o->net && (!have_alpha || !have_bw)) || !dt_cli_given(&cli, &o->bytes) ||
        !o->ranks)
        return dt_cli_fail(&cli, "--alpha and --bw (or --net), --bytes and --ranks are all "
                           "needed");
    if ((o->stages > 0) != (o->micro > 0))
        return dt_cli_fail(&cli, "--stages and --micro go together");
    if (!dt_cli_given(&cli, &o->comp))
        o->comp = -1;
    if (o->net)
        dt_net_link(o->net, &o->link); /* checked by the parse */
    return DT_CLI_GO;
}

static void print_table(const options *o)
{
    printf("network model: alpha %g us, beta %g GB/s, gamma %g ns/B, n %zu bytes, K %d ranks\n\n",
           o->link.alpha * 1e6, o->link.beta / 1e9, o->link.gamma * 1e9, o->bytes, o->ranks);
    printf("%-30s %-15s %14s %13s %13s\n", "algorithm", "collective", "time (us)", "algbw (GB/s)",
           "busbw (GB/s)");
    for (int i = 0; i < DT_NET_NUM_ALGOS; i++) {
        dt_net_algo algo = (dt_net_algo)i;
        dt_coll_kind c = dt_net_algo_collective(algo);
        double t = dt_net_cost(algo, &o->link, o->bytes, o->ranks);
        printf("%-30s %-15s %14.3f", dt_net_algo_name(algo), dt_coll_name(c), t * 1e6);
        if (t > 0)
            printf(" %13.3f %13.3f\n", dt_net_algbw(o->bytes, t) / 1e9,
                   dt_net_busbw(c, o->bytes, t, o->ranks) / 1e9);
        else
            printf(" %13s %13s\n", "-", "-"); /* nothing moves: no bandwidth to speak of */
    }
}

static void print_step(const options *o)
{
    double comm = dt_net_ring_allreduce(&o->link, o->bytes, o->ranks);
    double serial = dt_sim_step_serial(o->comp, comm);
    double overlapped = dt_sim_step_overlapped(o->comp, comm);
    printf("\ndata-parallel step, ring allreduce of the gradients:\n");
    printf("  T_comp %.6f s, T_comm %.6f s\n", o->comp, comm);
    printf("  serial     T_comp + T_comm      = %.6f s\n", serial);
    printf("  overlapped max(T_comp, T_comm)  = %.6f s\n", overlapped);
    if (serial > 0)
        printf("  communication efficiency T_comp / (T_comp + T_comm) = %.4f\n",
               dt_comm_efficiency(o->comp, comm));
}

int dtsim_net_main(int argc, char **argv)
{
    options o;
    int st = parse_args(argc, argv, &o);
    if (st != DT_CLI_GO)
        return st;
    print_table(&o);
    if (o.comp >= 0) print_step(&o);
    if (o.stages > 0)
        printf("\npipeline bubble (p - 1) / (m + p - 1) with p = %d, m = %d: %.4f\n", o.stages,
               o.micro, dt_sim_bubble_fraction(o.stages, o.micro));
    return 0;
}
