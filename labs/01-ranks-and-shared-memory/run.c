/* run.c - lab 01's program: `make run-lab LAB=01 ARGS="..."`.
 *
 * Runs your barrier, broadcasts and ring pass on N ranks (threads) over a
 * modeled network and prints what each rank did: messages and bytes it
 * sent and received, and its modeled clock at the end, next to what the
 * alpha-beta model predicts. Options:
 *
 *   --ranks N      ranks (default 8)
 *   --root R       root of the broadcasts (default 0)
 *   --count C      f32 elements per message (default 1048576: 4 MiB)
 *   --net NAME     network preset or "alpha=..,bw=.." (default ib100)
 *   --barriers K   barriers in a row for the barrier timing (default 10000)
 *   --spin P       polls spent spinning before yielding (default LAB_SPIN_POLLS)
 *   --yield P      polls spent yielding before napping (default LAB_YIELD_POLLS)
 *   --svg FILE     also sweep N = 1..16 and write an SVG plot of the modeled
 *                  broadcast time against N, measured and predicted
 * (run --help lists them with their ranges.)
 */
#include "ranks.h"

#include "dt/cli.h"
#include "dt/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { RUN_BARRIER, RUN_LINEAR, RUN_TREE, RUN_RING } run_kind;
static const char *kind_name[] = {"barrier", "linear broadcast", "tree broadcast",
                                  "ring pass"};

typedef struct {
    run_kind kind;
    int root;
    size_t count;
    int barriers;
    uint64_t spin_polls, yield_polls;
    int quiet;         /* 1: print nothing (the plot sweep) */
    double completion; /* out: the largest modeled clock over the ranks */
} run_args;

/* What one rank did, gathered on every rank by an allgather of bytes. */
typedef struct {
    uint64_t msgs_sent, msgs_recv, bytes_sent, bytes_recv, coll_calls;
    uint64_t polls, yields, sleeps;
    double clock, wall;
    int early; /* barrier: times this rank saw an arrival missing */
} rank_record;

static dt_result run_barrier(dt_comm *world, run_args *a, rank_record *rec)
{
    lab_barrier b;
    DT_CHECK(lab_barrier_init(&b, world, 30.0));
    if (a->spin_polls != UINT64_MAX)
        b.spin_polls = a->spin_polls;
    if (a->yield_polls != UINT64_MAX)
        b.yield_polls = a->yield_polls;
    /* A shared counter in a second window: every rank adds 1 before each
     * barrier, and after barrier i it must read at least (i+1) N. */
    void *base;
    dt_win *win;
    DT_CHECK(dt_win_allocate(world, sizeof(atomic_llong), &base, &win));
    atomic_llong *arrivals = base;
    long long n = dt_comm_size(world);
    DT_CHECK(lab_barrier_wait(&b));
    double t0 = dt_now();
    for (int i = 0; i < a->barriers; i++) {
        atomic_fetch_add_explicit(arrivals, 1, memory_order_relaxed);
        dt_result r = lab_barrier_wait(&b);
        if (r != DT_OK) {
            dt_win_free(win);
            return r;
        }
        if (atomic_load_explicit(arrivals, memory_order_relaxed) < (i + 1) * n)
            rec->early++;
    }
    rec->wall = dt_now() - t0;
    rec->polls = b.polls;
    rec->yields = b.yields;
    rec->sleeps = b.sleeps;
    DT_CHECK(dt_win_free(win));
    return lab_barrier_destroy(&b);
}

static dt_result run_rank(dt_comm *world, void *arg)
{
    run_args *a = arg;
    int rank = dt_comm_rank(world), n = dt_comm_size(world);
    rank_record rec = {0};
    float *buf = NULL, *out = NULL;
    dt_result r = DT_OK;
    if (a->kind == RUN_BARRIER) {
        r = run_barrier(world, a, &rec);
    } else {
        buf = malloc((a->count ? a->count : 1) * sizeof(float));
        out = malloc((a->count ? a->count : 1) * sizeof(float));
        if (!buf || !out) {
            free(buf);
            free(out);
            return dt_fail(DT_ERR_NOMEM, "run: %zu floats", a->count);
        }
        for (size_t i = 0; i < a->count; i++)
            buf[i] = (rank == a->root || a->kind == RUN_RING) ? (float)(rank * 1000 + i % 1000)
                                                              : -1.0f;
        double t0 = dt_now();
        if (a->kind == RUN_LINEAR)
            r = lab_bcast_linear(buf, a->count, DT_F32, a->root, world);
        else if (a->kind == RUN_TREE)
            r = lab_bcast_tree(buf, a->count, DT_F32, a->root, world);
        else
            r = lab_ring_pass(buf, out, a->count, DT_F32, world);
        rec.wall = dt_now() - t0;
        /* Check the data: the root's for a broadcast, the previous rank's
         * for the ring. */
        int from = a->kind == RUN_RING ? (rank - 1 + n) % n : a->root;
        float *got = a->kind == RUN_RING ? out : buf;
        for (size_t i = 0; r == DT_OK && i < a->count; i++)
            if (got[i] != (float)(from * 1000 + i % 1000))
                r = dt_fail(DT_ERR_INTERNAL, "%s: element %zu = %g, expected %g",
                            kind_name[a->kind], i, got[i], (double)(from * 1000 + i % 1000));
    }
    free(buf);
    free(out);
    if (r != DT_OK)
        return r;
    /* The stats and the clock now, before the allgather below adds its own. */
    dt_stats st;
    DT_CHECK(dt_comm_stats(world, &st));
    rec.msgs_sent = st.msgs_sent;
    rec.msgs_recv = st.msgs_recv;
    rec.bytes_sent = st.bytes_sent;
    rec.bytes_recv = st.bytes_recv;
    for (int k = DT_COLL_ALLREDUCE; k <= DT_COLL_BARRIER; k++)
        rec.coll_calls += st.calls[k];
    rec.clock = dt_clock(world);

    rank_record *all = calloc((size_t)n, sizeof *all);
    if (!all)
        return dt_fail(DT_ERR_NOMEM, "run: records");
    r = dt_allgather(&rec, all, sizeof rec, DT_U8, world);
    if (r == DT_OK && rank == 0) {
        double done = 0;
        for (int q = 0; q < n; q++)
            done = fmax(done, all[q].clock);
        a->completion = done;
        if (!a->quiet && a->kind == RUN_BARRIER) {
            printf("\n%s: %d ranks, %d barriers in a row\n", kind_name[a->kind], n,
                   a->barriers);
            printf("%6s %12s %12s %12s %12s %8s\n", "rank", "us/barrier", "polls", "yields",
                   "sleeps", "early");
            for (int q = 0; q < n; q++)
                printf("%6d %12.2f %12llu %12llu %12llu %8d\n", q,
                       all[q].wall / (a->barriers ? a->barriers : 1) * 1e6,
                       (unsigned long long)all[q].polls, (unsigned long long)all[q].yields,
                       (unsigned long long)all[q].sleeps, all[q].early);
        } else if (!a->quiet) {
            if (a->kind == RUN_RING)
                printf("\n%s: %d ranks, %zu f32 (%zu bytes)\n", kind_name[a->kind], n,
                       a->count, a->count * sizeof(float));
            else
                printf("\n%s: %d ranks, root %d, %zu f32 (%zu bytes)\n", kind_name[a->kind],
                       n, a->root, a->count, a->count * sizeof(float));
            printf("%6s %10s %10s %12s %12s %12s %14s\n", "rank", "msgs sent", "msgs recv",
                   "bytes sent", "bytes recv", "collectives", "clock (us)");
            uint64_t total = 0;
            for (int q = 0; q < n; q++) {
                total += all[q].bytes_sent;
                printf("%6d %10llu %10llu %12llu %12llu %12llu %14.2f\n", q,
                       (unsigned long long)all[q].msgs_sent,
                       (unsigned long long)all[q].msgs_recv,
                       (unsigned long long)all[q].bytes_sent,
                       (unsigned long long)all[q].bytes_recv,
                       (unsigned long long)all[q].coll_calls, all[q].clock * 1e6);
            }
            printf("bytes sent by all ranks: %llu\n", (unsigned long long)total);
        }
    }
    free(all);
    return r;
}

static dt_result run_one(int nranks, const char *net, run_args *a)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    o.backend = DT_BACKEND_THREAD; /* run_args.completion is read back */
    o.net = net;
    return dt_launch(&o, run_rank, a);
}

/* The predictions of the alpha-beta model (chapter sections 5-7). */
static double predict_linear(double alpha, double beta, double bytes, int n)
{
    return n < 2 ? 0 : alpha + (n - 1) * bytes / beta; /* last copy leaves at (N-2) n/beta */
}

static double predict_tree(double alpha, double beta, double bytes, int n)
{
    int rounds = 0;
    while ((1 << rounds) < n)
        rounds++;
    return rounds * (alpha + bytes / beta); /* ceil(log2 N) rounds */
}

static dt_result write_plot(const char *path, const char *net, size_t count)
{
    double alpha, beta;
    DT_CHECK(dt_net_parse(net, &alpha, &beta));
    double bytes = (double)count * sizeof(float);
    enum { NMAX = 16 };
    double xs[NMAX], lin[NMAX], tree[NMAX], plin[NMAX], ptree[NMAX];
    printf("\nmodeled broadcast time against N (%s, %.0f bytes)\n", net, bytes);
    printf("%4s %14s %14s %14s %14s\n", "N", "linear (us)", "predicted", "tree (us)",
           "predicted");
    for (int n = 1; n <= NMAX; n++) {
        run_args a = {.kind = RUN_LINEAR, .root = 0, .count = count, .quiet = 1};
        DT_CHECK(run_one(n, net, &a));
        lin[n - 1] = a.completion * 1e6;
        a.kind = RUN_TREE;
        DT_CHECK(run_one(n, net, &a));
        tree[n - 1] = a.completion * 1e6;
        xs[n - 1] = n;
        plin[n - 1] = predict_linear(alpha, beta, bytes, n) * 1e6;
        ptree[n - 1] = predict_tree(alpha, beta, bytes, n) * 1e6;
        printf("%4d %14.2f %14.2f %14.2f %14.2f\n", n, lin[n - 1], plin[n - 1], tree[n - 1],
               ptree[n - 1]);
    }
    char title[160];
    snprintf(title, sizeof title, "Broadcast of %.0f MiB on %s: modeled time",
             bytes / (1024.0 * 1024.0), net);
    dt_plot *p;
    DT_CHECK(dt_plot_create(&p, title, "ranks N", "time (us)"));
    dt_result r = dt_plot_add_series(p, "linear, measured", xs, lin, NMAX, DT_SERIES_POINTS);
    if (r == DT_OK)
        r = dt_plot_add_series(p, "alpha + (N-1) n/beta", xs, plin, NMAX, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_add_series(p, "tree, measured", xs, tree, NMAX, DT_SERIES_POINTS);
    if (r == DT_OK)
        r = dt_plot_add_series(p, "ceil(log2 N) (alpha + n/beta)", xs, ptree, NMAX,
                               DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_write_svg(p, path);
    dt_plot_free(p);
    if (r == DT_OK)
        printf("wrote %s\n", path);
    return r;
}

int main(int argc, char **argv)
{
    int nranks = 8, root = 0, barriers = 10000;
    long count = 1 << 20, spin_opt = -1, yield_opt = -1;
    const char *net = "ib100", *plot = NULL;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &nranks, .help = "ranks", .lo = 1, .hi = 64},
        {"--root", DT_OPT_INT, &root, .help = "root of the broadcasts, below --ranks", .lo = 0,
         .hi = 63},
        {"--count", DT_OPT_LONG, &count, .help = "f32 elements per message", .lo = 0,
         .hi = 1 << 28},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--barriers", DT_OPT_INT, &barriers, .help = "barriers in a row for the barrier timing",
         .lo = 0, .hi = 1e9},
        {"--spin", DT_OPT_LONG, &spin_opt, .help = "polls spent spinning before yielding "
         "(default LAB_SPIN_POLLS)", .lo = 0, .hi = 1e18, .arg = "P", .flags = DT_OPT_NO_DEFAULT},
        {"--yield", DT_OPT_LONG, &yield_opt, .help = "polls spent yielding before napping "
         "(default LAB_YIELD_POLLS)", .lo = 0, .hi = 1e18, .arg = "P",
         .flags = DT_OPT_NO_DEFAULT},
        {"--svg", DT_OPT_FILE, &plot, .help = "also sweep N = 1..16 and plot the modeled "
         "broadcast time against N, measured and predicted"},
        {"--plot", DT_OPT_RENAMED, NULL, .arg = "--svg"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 01: your barrier, broadcasts and ring pass on --ranks ranks "
                           "(threads) over a\nmodeled network, with each rank's messages, "
                           "bytes and modeled clock."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (root >= nranks)
        return dt_cli_fail(&cli, "--root %d: not a rank of --ranks %d", root, nranks);
    uint64_t spin = spin_opt < 0 ? UINT64_MAX : (uint64_t)spin_opt;
    uint64_t yield = yield_opt < 0 ? UINT64_MAX : (uint64_t)yield_opt;
    double alpha, beta;
    dt_net_parse(net, &alpha, &beta); /* checked by the parse */
    double bytes = (double)count * sizeof(float);
    printf("lab 01 on %d ranks; network %s: alpha = %.3g us, beta = %.4g GB/s\n", nranks, net,
           alpha * 1e6, beta / 1e9);

    run_args a = {.root = root, .count = (size_t)count, .barriers = barriers,
                  .spin_polls = spin, .yield_polls = yield};
    struct {
        run_kind kind;
        double predicted;
        const char *formula;
    } runs[] = {
        {RUN_BARRIER, 0, ""},
        {RUN_LINEAR, predict_linear(alpha, beta, bytes, nranks), "alpha + (N-1) n/beta"},
        {RUN_TREE, predict_tree(alpha, beta, bytes, nranks), "ceil(log2 N) (alpha + n/beta)"},
        /* Even ranks sending first, odd ones receiving first (chapter 01,
         * section 7): two waves for an even N; for an odd N ranks N-1 and 0
         * are both even, and a message above the eager limit waits for its
         * receive: three transfers. dt_sendrecv: one message time. */
        {RUN_RING, nranks < 2 ? 0 : nranks % 2 ? alpha + 3 * bytes / beta
                                              : 2 * (alpha + bytes / beta),
         nranks % 2 ? "even/odd, N odd: alpha + 3 n/beta (dt_sendrecv: alpha + n/beta)"
                    : "even/odd, N even: 2 (alpha + n/beta) (dt_sendrecv: alpha + n/beta)"},
    };
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        a.kind = runs[k].kind;
        dt_result r = run_one(nranks, net, &a);
        if (r != DT_OK) {
            fprintf(stderr, "%s: %s %s\n", kind_name[a.kind], dt_strerror(r), dt_last_error());
            return 1;
        }
        if (a.kind != RUN_BARRIER)
            printf("finished at %.2f us (modeled); %s = %.2f us\n", a.completion * 1e6,
                   runs[k].formula, runs[k].predicted * 1e6);
    }
    if (plot) {
        dt_result r = write_plot(plot, net, (size_t)count);
        if (r != DT_OK) {
            fprintf(stderr, "plot: %s %s\n", dt_strerror(r), dt_last_error());
            return 1;
        }
    }
    return 0;
}
