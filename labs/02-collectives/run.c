/* run.c - lab 02's program: `make run-lab LAB=02 ARGS="..."`.
 *
 * Runs your three allreduce algorithms, the library's binomial tree
 * (dt_allreduce under DT_ALGO_BINOMIAL: a reduce to rank 0, then a
 * broadcast, chapter 02 section 6) and the library's dt_allreduce on K
 * ranks for message sizes from --min to --max bytes (f32, doubling), and
 * prints for each: the wall time of one call on this machine, its algorithm
 * and bus bandwidth, the modeled time of one call on the network --net, the
 * alpha-beta formula's prediction, and the modeled bus bandwidth. Writes
 * two SVG plots of bus bandwidth against size: modeled (--svg) and wall
 * (--wall-svg).
 *
 *   --ranks K         ranks (default 8)
 *   --net NAME        network preset or "alpha=..,bw=.." (default ib100)
 *   --min SIZE        smallest message (default 1K); sizes as every tool
 *   --max SIZE        largest message (default 4M)   (K, M: powers of 1024)
 *   --svg FILE        modeled busbw plot (default $BUILD/02-busbw.svg, where
 *                     make run-lab sets BUILD: build/ unless told otherwise)
 *   --wall-svg FILE   wall-clock busbw plot (default $BUILD/02-busbw-wall.svg)
 * The old spellings -n, -net, -min, -max, -o, -wall are refused, naming
 * these.
 *
 * algbw = n / t and busbw = algbw * 2 (K-1) / K (chapter 02, section 7).
 * The ranks are threads (thread backend): the table is built in this
 * process from what rank 0 reports. */
#include "collectives.h"
#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALG_NAIVE, ALG_RING, ALG_RD, ALG_TREE, ALG_LIBRARY, NUM_ALG };
static const char *alg_names[NUM_ALG] = {"naive", "ring", "rec-doubling", "binomial-tree",
                                         "dt_allreduce"};

#define MAX_SIZES 40

typedef struct {
    int alg;
    size_t count;     /* f32 elements */
    int iters;        /* wall-clock repetitions */
    dt_result status; /* of rank 0's calls */
    char err[160];
    double model_s;   /* modeled time of the first call: the largest clock */
    double wall_s;    /* wall time of one call, slowest rank, mean over iters */
} job;

static dt_result call(int alg, const float *send, float *recv, size_t count, dt_comm *c)
{
    switch (alg) {
    case ALG_NAIVE: return lab_naive_allreduce(send, recv, count, DT_F32, DT_SUM, c);
    case ALG_RING: return lab_ring_allreduce(send, recv, count, DT_F32, DT_SUM, c);
    case ALG_RD: return lab_recursive_doubling_allreduce(send, recv, count, DT_F32, DT_SUM, c);
    case ALG_TREE: {
        dt_algo was = dt_comm_get_algo(c);
        dt_result r = dt_comm_set_algo(c, DT_ALGO_BINOMIAL);
        if (r == DT_OK)
            r = dt_allreduce(send, recv, count, DT_F32, DT_SUM, c);
        dt_comm_set_algo(c, was);
        return r;
    }
    default: return dt_allreduce(send, recv, count, DT_F32, DT_SUM, c);
    }
}

/* A call that fails on one rank may leave the others waiting: they return
 * too (at the deadline or when the failed rank's function returns), and
 * rank 0 reports the first failure it saw. */
static dt_result bench_rank(dt_comm *world, void *argp)
{
    job *j = argp;
    int rank = dt_comm_rank(world);
    size_t n = j->count;
    float *send = dt_mem_alloc(DT_MEM_COMM, n * sizeof(float));
    float *recv = dt_mem_alloc(DT_MEM_COMM, n * sizeof(float));
    if (!send || !recv) {
        dt_mem_free(send);
        dt_mem_free(recv);
        return DT_ERR_NOMEM;
    }
    for (size_t i = 0; i < n; i++)
        send[i] = (float)((rank + i) % 7);
    /* Modeled: the first call, from clocks at 0. */
    dt_result r = call(j->alg, send, recv, n, world);
    float t = (float)dt_clock(world), tmax = t;
    if (r == DT_OK)
        r = dt_allreduce(&t, &tmax, 1, DT_F32, DT_MAX, world);
    /* Wall: iters calls between barriers; the slowest rank counts. */
    double t0 = dt_now();
    for (int it = 0; it < j->iters && r == DT_OK; it++)
        r = call(j->alg, send, recv, n, world);
    float w = (float)((dt_now() - t0) / j->iters), wmax = w;
    if (r == DT_OK)
        r = dt_allreduce(&w, &wmax, 1, DT_F32, DT_MAX, world);
    if (rank == 0) {
        j->status = r;
        snprintf(j->err, sizeof j->err, "%s", r == DT_OK ? "" : dt_last_error());
        j->model_s = tmax;
        j->wall_s = wmax;
    }
    dt_mem_free(send);
    dt_mem_free(recv);
    return r;
}

/* The network model's time for each algorithm (dt/net.h, chapter 02):
 *   naive  2 alpha + 2 (K-1) n / beta (rank 0's ports take the K-1 buffers
 *          and the K-1 results one after another), and K-2 latencies more
 *          above the eager limit: rank 0 posts its receives one at a time,
 *          and each buffer waits for its receive;
 *   ring   2 (K-1) (alpha + n / (K beta));
 *   rd     log2 K (alpha + n / beta), or at most (floor(log2 K) + 2) rounds;
 *   tree   2 ceil(log2 K) (alpha + n / beta) (exact for a power of two);
 *   dt_allreduce (auto): recursive doubling up to DT_ALGO_AUTO_TREE_MAX
 *          bytes (32 KiB), ring above. */
static double predict(int alg, const dt_net *link, double n, int k)
{
    switch (alg) {
    case ALG_NAIVE: return dt_net_naive_allreduce_in_turn(link, n, k);
    case ALG_RING: return dt_net_ring_allreduce(link, n, k);
    case ALG_RD: return dt_net_recursive_doubling_allreduce(link, n, k);
    case ALG_TREE: return dt_net_tree_allreduce(link, n, k);
    default:
        return n <= DT_ALGO_AUTO_TREE_MAX ? dt_net_recursive_doubling_allreduce(link, n, k)
                                          : dt_net_ring_allreduce(link, n, k);
    }
}

static double flat(double x, void *ctx)
{
    (void)x;
    return *(const double *)ctx;
}

/* x in bytes, plotted in KiB (shorter tick labels); beta_gbs > 0 adds the
 * link's bandwidth as a line, the ceiling of a ring's bus bandwidth. */
static dt_result write_plot(const char *path, const char *title, size_t nsizes,
                            const double *x, double y[NUM_ALG][MAX_SIZES], const int *ok,
                            double beta_gbs)
{
    double kib[MAX_SIZES];
    for (size_t s = 0; s < nsizes; s++)
        kib[s] = x[s] / 1024;
    dt_plot *p;
    DT_CHECK(dt_plot_create(&p, title, "message size (KiB)", "bus bandwidth (GB/s)"));
    dt_result r = dt_plot_set_size(p, 760, 440);
    if (r == DT_OK)
        r = dt_plot_set_xscale(p, DT_AXIS_LOG2);
    for (int a = 0; a < NUM_ALG && r == DT_OK; a++)
        if (ok[a])
            r = dt_plot_add_series(p, alg_names[a], kib, y[a], nsizes, DT_SERIES_POINTS_AND_LINE);
    if (r == DT_OK && beta_gbs > 0)
        r = dt_plot_add_function(p, "link beta", flat, &beta_gbs, kib[0], kib[nsizes - 1], 2);
    if (r == DT_OK)
        r = dt_plot_write_svg(p, path);
    dt_plot_free(p);
    return r;
}

int main(int argc, char **argv)
{
    int k = 8;
    char svg_default[4096], wall_default[4096];
    snprintf(svg_default, sizeof svg_default, "%s/02-busbw.svg", dt_cli_build_dir());
    snprintf(wall_default, sizeof wall_default, "%s/02-busbw-wall.svg", dt_cli_build_dir());
    const char *net = "ib100", *svg = svg_default, *wall_svg = wall_default;
    size_t min_b = 1024, max_b = 4u << 20;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &k, .help = "ranks (threads)", .lo = 1, .hi = 64},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--min", DT_OPT_BYTES, &min_b, .help = "smallest message", .lo = 4, .hi = 1 << 30},
        {"--max", DT_OPT_BYTES, &max_b, .help = "largest message (sizes double up to it)",
         .lo = 4, .hi = 1 << 30},
        {"--svg", DT_OPT_FILE, &svg, .help = "the modeled bus bandwidth's plot"},
        {"--wall-svg", DT_OPT_FILE, &wall_svg, .help = "the wall clock's"},
        {"-n", DT_OPT_RENAMED, NULL, .arg = "--ranks"},
        {"-net", DT_OPT_RENAMED, NULL, .arg = "--net"},
        {"-min", DT_OPT_RENAMED, NULL, .arg = "--min"},
        {"-max", DT_OPT_RENAMED, NULL, .arg = "--max"},
        {"-o", DT_OPT_RENAMED, NULL, .arg = "--svg"},
        {"-wall", DT_OPT_RENAMED, NULL, .arg = "--wall-svg"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 02: your allreduce algorithms beside the library's, per message "
                           "size:\nwall time, modeled time, the formula, bus bandwidth."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (max_b < min_b)
        return dt_cli_fail(&cli, "--max %zu is below --min %zu", max_b, min_b);
    dt_net link;
    dt_net_link(net, &link); /* checked by the parse */

    double x[MAX_SIZES], busbw_model[NUM_ALG][MAX_SIZES], busbw_wall[NUM_ALG][MAX_SIZES];
    int ok[NUM_ALG];
    size_t nsizes = 0;
    for (size_t b = min_b; b <= max_b && nsizes < MAX_SIZES; b *= 2)
        x[nsizes++] = (double)(b / 4 * 4);
    double factor = dt_net_busbw_factor(DT_COLL_ALLREDUCE, k); /* busbw / algbw */

    printf("allreduce of f32 on K = %d ranks; modeled network %s (alpha %.3g us, beta %.3g GB/s)\n",
           k, net, link.alpha * 1e6, link.beta / 1e9);
    printf("wall: this machine (ranks are threads); model: libdt's alpha-beta clock\n\n");
    printf("%-14s %10s %11s %10s %10s %11s %11s %6s %10s\n", "algorithm", "bytes", "wall_us",
           "algbw", "busbw", "model_us", "formula_us", "err%", "busbw_mod");
    printf("%-14s %10s %11s %10s %10s %11s %11s %6s %10s\n", "", "", "", "GB/s", "GB/s", "", "",
           "", "GB/s");
    for (int a = 0; a < NUM_ALG; a++) {
        ok[a] = 1;
        for (size_t s = 0; s < nsizes && ok[a]; s++) {
            job j = {a, (size_t)x[s] / 4, 0, DT_OK, "", 0, 0};
            j.iters = (int)fmin(50, fmax(3, 8e6 / x[s]));
            dt_launch_opts o;
            dt_launch_opts_init(&o);
            o.nranks = k;
            o.net = net;
            o.backend = DT_BACKEND_THREAD;
            o.timeout_s = 20;
            dt_result r = dt_launch(&o, bench_rank, &j);
            if (r != DT_OK || j.status != DT_OK) {
                dt_result why = j.status != DT_OK ? j.status : r;
                if (why == DT_ERR_NOT_IMPLEMENTED || r == DT_ERR_NOT_IMPLEMENTED)
                    printf("%-14s %10s  not implemented yet\n", alg_names[a], "-");
                else
                    printf("%-14s %10.0f  %s: %s\n", alg_names[a], x[s], dt_strerror(why),
                           j.err[0] ? j.err : dt_last_error());
                ok[a] = 0;
                break;
            }
            double n = x[s], pred = predict(a, &link, n, k);
            double algbw = n / j.wall_s, busbw = algbw * factor;
            double err = pred > 0 ? 100.0 * (j.model_s - pred) / pred : 0;
            busbw_wall[a][s] = busbw / 1e9;
            busbw_model[a][s] = j.model_s > 0 ? n / j.model_s * factor / 1e9 : 0;
            printf("%-14s %10.0f %11.1f %10.3f %10.3f %11.2f %11.2f %6.1f %10.3f\n", alg_names[a],
                   n, j.wall_s * 1e6, algbw / 1e9, busbw / 1e9, j.model_s * 1e6, pred * 1e6, err,
                   busbw_model[a][s]);
        }
    }
    if (k == 1 || isinf(link.beta)) {
        printf("\nno plot: one rank, or a network of no cost, has no modeled bandwidth\n");
        return 0;
    }
    char title[160];
    snprintf(title, sizeof title, "allreduce bus bandwidth, K = %d, modeled %s", k, net);
    dt_result r = write_plot(svg, title, nsizes, x, busbw_model, ok, link.beta / 1e9);
    snprintf(title, sizeof title, "allreduce bus bandwidth, K = %d, wall clock (threads)", k);
    if (r == DT_OK)
        r = write_plot(wall_svg, title, nsizes, x, busbw_wall, ok, 0);
    if (r != DT_OK) {
        fprintf(stderr, "plot: %s: %s\n", dt_strerror(r), dt_last_error());
        return 1;
    }
    printf("\nwrote %s (modeled) and %s (wall)\n", svg, wall_svg);
    return 0;
}
