/* net.c - dtsim's network mode: the cost of each collective algorithm for
 * one link, buffer size and rank count, as a table (the network model of
 * dt/net.h); optionally a data-parallel step and a pipeline bubble
 * (dt/sim.h). main.c sends here every command line that is not the
 * planner's.
 *
 *     dtsim --alpha 5us --bw 25G [--gamma 0.1ns] --bytes 256Mi --ranks 8
 *           [--comp 0.2] [--stages 4 --micro 16]
 *     dtsim --net ib100 --bytes 256Mi --ranks 8
 */
#include "dtsim.h"

#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void dtsim_net_usage(FILE *out)
{
    fprintf(out,
            "usage: dtsim --alpha SECONDS --bw BYTES_PER_S [--gamma S_PER_BYTE]\n"
            "             --bytes N --ranks K [--comp SECONDS] [--stages P --micro M]\n"
            "       dtsim --net SPEC --bytes N --ranks K [...]\n"
            "\n"
            "Prints the cost T of each collective algorithm for an n-byte buffer on\n"
            "K ranks over links of latency alpha and bandwidth beta (the network model\n"
            "of dt/net.h: both ends' ports), with its algorithm and bus bandwidth\n"
            "(nccl-tests' algbw and busbw).\n"
            "  --alpha   link latency in seconds; takes s, ms, us, ns (e.g. 5us)\n"
            "  --bw      link bandwidth in bytes/s (e.g. 25G = 25e9, 16Gi = 16*2^30)\n"
            "  --gamma   seconds to reduce one byte (default 0); takes s, ms, us, ns\n"
            "  --net     a network as DT_NET takes it, instead of --alpha, --bw and\n"
            "            --gamma: a preset (nvlink, pcie4, ib100, ib400, eth10, eth100)\n"
            "            or alpha=2us,bw=10GB/s,gamma=0.1ns\n"
            "  --bytes   buffer size in bytes (e.g. 256Mi, 1e9)\n"
            "  --ranks   number of ranks K >= 1\n"
            "  --comp    compute time of a data-parallel step: adds that step with a\n"
            "            ring allreduce of --bytes of gradients, serial and overlapped\n"
            "  --stages, --micro   pipeline stages p and micro-batches m: the bubble\n"
            "Sizes take k M G T (powers of 1000) or Ki Mi Gi Ti (powers of 1024).\n");
}

/* Parses a number with an optional unit suffix; 0 if it does not parse. */
static int parse_number(const char *s, int is_time, double *out)
{
    static const struct { const char *suffix; double scale; int time; } units[] = {
        {"", 1, 0},      {"", 1, 1},       {"k", 1e3, 0},  {"K", 1e3, 0},
        {"M", 1e6, 0},   {"G", 1e9, 0},    {"T", 1e12, 0}, {"Ki", 1024.0, 0},
        {"Mi", 1048576.0, 0}, {"Gi", 1073741824.0, 0}, {"Ti", 1099511627776.0, 0},
        {"s", 1, 1},     {"ms", 1e-3, 1},  {"us", 1e-6, 1}, {"ns", 1e-9, 1},
    };
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v)) return 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].time == is_time && strcmp(end, units[i].suffix) == 0) {
            *out = v * units[i].scale;
            return 1;
        }
    return 0;
}

#define MAX_COUNT 1e9 /* ranks, stages, micro-batches */

typedef struct {
    dt_net link;
    double bytes, comp;
    int ranks, stages, micro;
    int have_alpha, have_beta, have_gamma, have_net, have_bytes, have_ranks;
} options;

static int known_option(const char *name)
{
    static const char *const names[] = {"--alpha", "--bw", "--gamma", "--net", "--bytes",
                                        "--ranks", "--comp", "--stages", "--micro"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

/* Fills opts from argv; 0 with a message on stderr when something is wrong. */
static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->comp = -1;
    o->link = (dt_net){0, INFINITY, 0};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        char name[32];
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (len >= sizeof name) len = sizeof name - 1;
        memcpy(name, arg, len);
        name[len] = '\0';
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        if (!known_option(name))
            return fprintf(stderr, "dtsim: unknown option '%s'\n", name), 0;
        if (!val) return fprintf(stderr, "dtsim: %s needs a value\n", name), 0;
        if (!strcmp(name, "--net")) {
            if (dt_net_link(val, &o->link) != DT_OK)
                return fprintf(stderr, "dtsim: --net: %s\n", dt_last_error()), 0;
            o->have_net = 1;
            continue;
        }
        double v;
        int is_time = !strcmp(name, "--alpha") || !strcmp(name, "--comp") ||
                      !strcmp(name, "--gamma");
        if (!parse_number(val, is_time, &v))
            return fprintf(stderr, "dtsim: %s '%s': expected %s\n", name, val,
                           is_time ? "a time such as 5us (units s, ms, us, ns)"
                                   : "a number, with an optional k M G T or Ki Mi Gi Ti"), 0;
        if (!strcmp(name, "--bw") && v <= 0)
            return fprintf(stderr, "dtsim: --bw '%s': must be > 0\n", val), 0;
        if (v < 0) /* every quantity here is a size, a time or a count */
            return fprintf(stderr, "dtsim: %s '%s': must be >= 0\n", name, val), 0;
        if (!strcmp(name, "--alpha")) o->link.alpha = v, o->have_alpha = 1;
        else if (!strcmp(name, "--bw")) o->link.beta = v, o->have_beta = 1;
        else if (!strcmp(name, "--gamma")) o->link.gamma = v, o->have_gamma = 1;
        else if (!strcmp(name, "--bytes")) o->bytes = v, o->have_bytes = 1;
        else if (!strcmp(name, "--comp")) o->comp = v;
        else if (!strcmp(name, "--ranks") || !strcmp(name, "--stages") || !strcmp(name, "--micro")) {
            if (v != floor(v) || v < 1 || v > MAX_COUNT)
                return fprintf(stderr, "dtsim: %s '%s': must be a whole number from 1 to %g\n",
                               name, val, MAX_COUNT), 0;
            if (!strcmp(name, "--ranks")) o->ranks = (int)v, o->have_ranks = 1;
            else if (!strcmp(name, "--stages")) o->stages = (int)v;
            else o->micro = (int)v;
        }
    }
    if (o->have_net && (o->have_alpha || o->have_beta || o->have_gamma))
        return fprintf(stderr, "dtsim: --net replaces --alpha, --bw and --gamma: give one or "
                       "the others\n"), 0;
    if ((!o->have_net && (!o->have_alpha || !o->have_beta)) || !o->have_bytes || !o->have_ranks)
        return fprintf(stderr, "dtsim: --alpha and --bw (or --net), --bytes and --ranks are "
                       "all needed\n"), 0;
    if ((o->stages > 0) != (o->micro > 0))
        return fprintf(stderr, "dtsim: --stages and --micro go together\n"), 0;
    return 1;
}

static void print_table(const options *o)
{
    printf("network model: alpha %g us, beta %g GB/s, gamma %g ns/B, n %.0f bytes, K %d ranks\n\n",
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
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            dtsim_net_usage(stdout);
            return 0;
        }
    options o;
    if (!parse_args(argc, argv, &o)) {
        dtsim_net_usage(stderr);
        return 2;
    }
    print_table(&o);
    if (o.comp >= 0) print_step(&o);
    if (o.stages > 0)
        printf("\npipeline bubble (p - 1) / (m + p - 1) with p = %d, m = %d: %.4f\n", o.stages,
               o.micro, dt_sim_bubble_fraction(o.stages, o.micro));
    return 0;
}
