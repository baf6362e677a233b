/* run.c - lab 04's program: `make run-lab LAB=04 [ARGS="..."]`.
 *
 * Trains the digits MLP four ways with the same number of gradients and a
 * straggler (worker 0 computes slower; --delay-ms also makes each message it
 * sends late): a synchronous parameter server, an asynchronous one, an
 * asynchronous one with a staleness bound, and Hogwild!. Prints a table of
 * modeled time, accuracy and staleness, the staleness histogram of the
 * asynchronous run, and optionally writes the chapter's figures. */
#include "async.h"
#include "dt/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int workers, servers, updates, bound, batch;
    double slow_ms, delay_ms, compute_ms;
    float lr;
    const char *figures; /* folder for the SVGs, or NULL */
    const char *net;     /* network spec (dt/net.h) */
    int knee;            /* > 0: only the server's bottleneck, K = 1 .. knee */
} options;

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--workers K] [--servers S] [--updates G] [--bound B]\n"
            "          [--compute-ms C] [--slow-ms W] [--delay-ms D] [--batch N] [--lr X]\n"
            "          [--figures DIR] [--net SPEC] [--knee KMAX]\n"
            "  K workers (default 4) and S servers (1) train the digits MLP with G\n"
            "  gradients in all (400); a gradient costs C ms of modeled compute (2),\n"
            "  except on worker 0, the straggler, where it costs W ms (30; 0: no\n"
            "  straggler); with D > 0 every message worker 0 sends is D ms late too\n"
            "  (0). The bounded run uses staleness bound B (2). --figures writes\n"
            "  DIR/04-accuracy-time.svg and DIR/04-staleness.svg. SPEC is the network\n"
            "  (dt/net.h: a preset such as eth10, or alpha=..,bw=..; default none).\n"
            "  --knee runs only the synchronous server with K = 1 .. KMAX workers and\n"
            "  no straggler, and prints its modeled time per round (chapter 04, 9.1).\n",
            prog);
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){4, 1, 400, 2, 16, 30, 0, 2, 0.1f, NULL, "none", 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!v)
            return -1;
        i++;
        if (!strcmp(a, "--workers"))
            o->workers = atoi(v);
        else if (!strcmp(a, "--servers"))
            o->servers = atoi(v);
        else if (!strcmp(a, "--updates"))
            o->updates = atoi(v);
        else if (!strcmp(a, "--bound"))
            o->bound = atoi(v);
        else if (!strcmp(a, "--batch"))
            o->batch = atoi(v);
        else if (!strcmp(a, "--slow-ms"))
            o->slow_ms = atof(v);
        else if (!strcmp(a, "--delay-ms"))
            o->delay_ms = atof(v);
        else if (!strcmp(a, "--compute-ms"))
            o->compute_ms = atof(v);
        else if (!strcmp(a, "--lr"))
            o->lr = (float)atof(v);
        else if (!strcmp(a, "--figures"))
            o->figures = v;
        else if (!strcmp(a, "--net"))
            o->net = v;
        else if (!strcmp(a, "--knee"))
            o->knee = atoi(v);
        else
            return -1;
    }
    if (o->workers < 1 || o->workers > LAB_MAX_WORKERS || o->servers < 1 ||
        o->servers > LAB_MAX_SERVERS || o->updates < o->workers || o->bound < 0 ||
        o->batch < 1 || o->slow_ms < 0 || o->delay_ms < 0 || o->compute_ms < 0 || !(o->lr > 0) ||
        o->knee < 0 || o->knee > LAB_MAX_WORKERS)
        return -1;
    dt_net link;
    if (dt_net_link(o->net, &link) != DT_OK) {
        fprintf(stderr, "--net %s: %s\n", o->net, dt_last_error());
        return -1;
    }
    return 0;
}

typedef struct {
    const char *name;
    double modeled_s, wall_s;
    float accuracy;
    int applied, max_tau;
    double mean_tau;
    int per_worker[LAB_MAX_WORKERS];
} row;

static double max_clock(const double *clock, int n)
{
    double t = 0;
    for (int r = 0; r < n; r++)
        if (clock[r] > t)
            t = clock[r];
    return t;
}

/* One parameter-server run; fills the row, keeps res for the figures. */
static dt_result ps_run(const options *o, const dt_dataset *train, const dt_dataset *test,
                        int sync, int bound, row *out, lab_ps_result *res)
{
    lab_ps_config cfg = lab_ps_defaults(train);
    cfg.servers = o->servers, cfg.updates = o->updates, cfg.sync = sync, cfg.bound = bound;
    cfg.batch = o->batch, cfg.lr = o->lr, cfg.compute_s = o->compute_ms * 1e-3;
    cfg.slow_worker = o->slow_ms > 0 ? 0 : -1, cfg.slow_compute_s = o->slow_ms * 1e-3;
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = o->servers + o->workers;
    lo.backend = DT_BACKEND_THREAD;
    lo.net = o->net;
    char fault[64];
    snprintf(fault, sizeof fault, "delay:rank=%d:ms=%g", o->servers, o->delay_ms);
    lo.fault = o->delay_ms > 0 ? fault : "";
    memset(res, 0, sizeof *res);
    /* about 25 trace points per run: versions are rounds when synchronous */
    int versions = sync ? o->updates / o->workers : o->updates;
    res->trace_every = versions / 25 > 0 ? versions / 25 : 1;
    double t0 = dt_now();
    DT_CHECK(lab_ps_launch(&lo, &cfg, res));
    out->wall_s = dt_now() - t0;
    out->modeled_s = max_clock(res->clock, lo.nranks);
    DT_CHECK(lab_accuracy(res->params, res->num_params, test, &out->accuracy));
    int n = res->applied[0], mx = 0;
    double sum = 0;
    for (int k = 0; k < n; k++) {
        sum += res->staleness[k];
        if (res->staleness[k] > mx)
            mx = res->staleness[k];
    }
    out->applied = n, out->max_tau = mx, out->mean_tau = n ? sum / n : 0;
    memcpy(out->per_worker, res->pushed, sizeof out->per_worker);
    return DT_OK;
}

static dt_result hogwild_run(const options *o, const dt_dataset *train, const dt_dataset *test,
                             row *out)
{
    lab_hogwild_config cfg = {.updates = o->updates, .batch = o->batch, .lr = o->lr,
                              .compute_s = o->compute_ms * 1e-3, .seed = 1, .train = train,
                              .slow_worker = o->slow_ms > 0 ? 0 : -1,
                              .slow_compute_s = o->slow_ms * 1e-3};
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = o->workers;
    lo.backend = DT_BACKEND_THREAD;
    lo.fault = "";
    lab_hogwild_result res;
    double t0 = dt_now();
    DT_CHECK(lab_hogwild_launch(&lo, &cfg, &res));
    out->wall_s = dt_now() - t0;
    out->modeled_s = max_clock(res.clock, lo.nranks);
    dt_result r = lab_accuracy(res.params, res.num_params, test, &out->accuracy);
    out->applied = 0;
    for (int w = 0; w < o->workers; w++)
        out->applied += out->per_worker[w] = res.steps[w];
    out->max_tau = -1, out->mean_tau = -1; /* not measured: no versions */
    lab_hogwild_result_free(&res);
    return r;
}

/* Accuracy along a run's trace, as a series of the plot. */
static dt_result add_trace(dt_plot *plot, const char *name, const lab_ps_result *res,
                           const dt_dataset *test)
{
    double x[256], y[256];
    size_t n = 0;
    for (int k = 0; k < res->trace_len && n < 256; k++) {
        if (!(res->trace_clock[k] > 0))
            continue; /* the log axis starts after time 0 */
        float acc = 0;
        DT_CHECK(lab_accuracy(res->trace_params + (size_t)k * res->num_params, res->num_params,
                              test, &acc));
        x[n] = res->trace_clock[k];
        y[n++] = acc;
    }
    if (n == 0)
        return dt_fail(DT_ERR_STATE, "%s: no trace point after time 0", name);
    /* What the chapter reads off the figure: when the run first passed 90%. */
    size_t k90 = 0;
    while (k90 < n && y[k90] < 0.9)
        k90++;
    if (k90 < n)
        printf("%-16s test accuracy first >= 0.90 at %.3f s of modeled time\n", name, x[k90]);
    else
        printf("%-16s test accuracy never >= 0.90 (%.4f at the end, %.3f s)\n", name, y[n - 1],
               x[n - 1]);
    return dt_plot_add_series(plot, name, x, y, n, DT_SERIES_POINTS_AND_LINE);
}

static dt_result figures(const options *o, const lab_ps_result *runs, const char **names,
                         int nruns, const dt_dataset *test)
{
    char path[1024], title[160];
    dt_plot *plot = NULL;
    if (o->slow_ms > 0)
        snprintf(title, sizeof title, "Digits MLP, %d workers: %g ms per gradient, %g ms on worker 0",
                 o->workers, o->compute_ms, o->slow_ms);
    else
        snprintf(title, sizeof title, "Digits MLP, %d workers: %g ms per gradient", o->workers,
                 o->compute_ms);
    DT_CHECK(dt_plot_create(&plot, title, "modeled time (s, log scale)", "test accuracy"));
    dt_result r = dt_plot_set_xscale(plot, DT_AXIS_LOG10);
    for (int i = 0; i < nruns && r == DT_OK; i++)
        r = add_trace(plot, names[i], &runs[i], test);
    snprintf(path, sizeof path, "%s/04-accuracy-time.svg", o->figures);
    if (r == DT_OK)
        r = dt_plot_write_svg(plot, path);
    dt_plot_free(plot);
    if (r != DT_OK)
        return r;
    printf("wrote %s\n", path);

    /* staleness histogram of the asynchronous run (runs[1]) */
    const lab_ps_result *a = &runs[1];
    int mx = 0;
    for (int k = 0; k < a->applied[0]; k++)
        if (a->staleness[k] > mx)
            mx = a->staleness[k];
    double *x = calloc((size_t)mx + 1, sizeof *x), *y = calloc((size_t)mx + 1, sizeof *y);
    if (!x || !y) {
        free(x), free(y);
        return dt_fail(DT_ERR_NOMEM, "histogram");
    }
    for (int t = 0; t <= mx; t++)
        x[t] = t;
    for (int k = 0; k < a->applied[0]; k++)
        y[a->staleness[k]] += 1;
    snprintf(title, sizeof title, "Staleness of the %d gradients of the asynchronous run",
             a->applied[0]);
    r = dt_plot_create(&plot, title, "staleness tau (versions)", "gradients");
    if (r == DT_OK)
        r = dt_plot_add_series(plot, "asynchronous", x, y, (size_t)mx + 1, DT_SERIES_BARS);
    snprintf(path, sizeof path, "%s/04-staleness.svg", o->figures);
    if (r == DT_OK)
        r = dt_plot_write_svg(plot, path);
    dt_plot_free(plot);
    free(x), free(y);
    if (r == DT_OK)
        printf("wrote %s\n", path);
    return r;
}

static int fail(const char *what, dt_result r)
{
    fprintf(stderr, "%s: %s %s\n", what, dt_strerror(r), dt_last_error());
    return 1;
}

/* The server's bottleneck (chapter 04, section 9.1): the synchronous run
 * with K = 1 .. knee workers, no straggler, 10 rounds each, on o->net.
 * Every round, one server's receive port takes K pushes of a header and
 * n = 4 P / S bytes of gradient, and its send port K replies of the same
 * size: once K n / beta passes the compute time c, the ports, not the
 * workers, set the pace. Deterministic: the modeled clock depends only on
 * each rank's program order. */
static int knee(const options *base, const dt_dataset *train, const dt_dataset *test)
{
    dt_net link;
    if (dt_net_link(base->net, &link) != DT_OK)
        return fail("--net", DT_ERR_INVALID_ARG);
    const int rounds = 10;
    /* one shard's floats: a push's gradient or a pull's reply (each after a
     * 16-byte header of its own) */
    const double params = LAB_IN * LAB_HIDDEN + LAB_HIDDEN + LAB_HIDDEN * LAB_CLASSES + LAB_CLASSES;
    double n = 4.0 * params / base->servers;
    double w = dt_net_wire(&link, n), c = base->compute_ms * 1e-3;
    printf("the synchronous server's bottleneck: %d server(s), network %s, %g ms per "
           "gradient,\n%d rounds; a push's gradient or a reply's shard is n = %.0f bytes, w = n/beta = "
           "%.2f us\n\n",
           base->servers, base->net, base->compute_ms, rounds, n, w * 1e6);
    printf("%3s %13s %13s %17s %12s\n", "K", "ms per round", "predicted", "gradients per ms",
           "port busy");
    for (int k = 1; k <= base->knee; k++) {
        options o = *base;
        o.workers = k, o.updates = k * rounds, o.slow_ms = 0, o.delay_ms = 0;
        row out;
        lab_ps_result res;
        memset(&out, 0, sizeof out);
        dt_result r = ps_run(&o, train, test, 1, -1, &out, &res);
        lab_ps_result_free(&res);
        if (r != DT_OK)
            return fail("knee", r);
        /* A round: the replies leave the send port w apart, the last one
         * arrives alpha + K w after the round opens; its worker computes c
         * and pushes (alpha + w). The opening pull and the closing stop add
         * 2 alpha to the run (headers of 16 bytes: about 0). */
        double per_round = out.modeled_s / rounds;
        double predicted = 2 * link.alpha + c + (k + 1) * w + 2 * link.alpha / rounds;
        printf("%3d %13.4f %13.4f %17.2f %11.0f%%\n", k, per_round * 1e3, predicted * 1e3,
               k / (per_round * 1e3), 100 * k * w / per_round);
    }
    printf("\nthe ports' ceiling: beta / n = %.2f gradients per ms; half of it at K = "
           "(2 alpha + c + w) / w = %.1f\n",
           1e-3 / w, (2 * link.alpha + c + w) / w);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    int p = parse(argc, argv, &o);
    if (p != 0) {
        usage(argv[0]);
        return p > 0 ? 0 : 2;
    }
    dt_dataset train, test;
    dt_result r = lab_load_digits(&train, &test);
    if (r != DT_OK)
        return fail("digits", r);
    if (o.knee > 0) {
        int rc = knee(&o, &train, &test);
        dt_dataset_free(&train);
        dt_dataset_free(&test);
        return rc;
    }

    printf("digits MLP %d-%d-%d, %d workers, %d server(s), %d gradients of %d samples, "
           "lr %g\na gradient costs %g ms of modeled compute; on worker 0 %g ms; worker 0's "
           "messages are %g ms late\n\n", LAB_IN, LAB_HIDDEN, LAB_CLASSES, o.workers, o.servers,
           o.updates, o.batch, (double)o.lr, o.compute_ms,
           o.slow_ms > 0 ? o.slow_ms : o.compute_ms, o.delay_ms);

    const char *names[3] = {"synchronous", "asynchronous", "bounded"};
    char bounded[32];
    snprintf(bounded, sizeof bounded, "async, bound %d", o.bound);
    names[2] = bounded;
    row rows[4];
    memset(rows, 0, sizeof rows);
    lab_ps_result runs[3];
    memset(runs, 0, sizeof runs);
    const int sync[3] = {1, 0, 0}, bound[3] = {-1, -1, o.bound};
    for (int i = 0; i < 3; i++) {
        rows[i].name = names[i];
        r = ps_run(&o, &train, &test, sync[i], bound[i], &rows[i], &runs[i]);
        if (r != DT_OK)
            return fail(names[i], r);
    }
    rows[3].name = "Hogwild!";
    r = hogwild_run(&o, &train, &test, &rows[3]);
    if (r != DT_OK)
        return fail("Hogwild!", r);

    printf("%-16s %8s %10s %9s %8s %8s %7s   %s\n", "run", "grads", "modeled s", "wall s",
           "accuracy", "mean tau", "max tau", "gradients per worker");
    for (int i = 0; i < 4; i++) {
        printf("%-16s %8d %10.3f %9.3f %8.4f", rows[i].name, rows[i].applied,
               rows[i].modeled_s, rows[i].wall_s, (double)rows[i].accuracy);
        if (rows[i].max_tau >= 0)
            printf(" %8.2f %7d  ", rows[i].mean_tau, rows[i].max_tau);
        else
            printf(" %8s %7s  ", "-", "-");
        for (int w = 0; w < o.workers; w++)
            printf(" %d", rows[i].per_worker[w]);
        printf("\n");
    }
    printf("\nasynchronous is %.1fx faster than synchronous in modeled time\n",
           rows[0].modeled_s / rows[1].modeled_s);

    /* staleness histogram of the asynchronous run, as text: every value
     * that occurs, so that the straggler's few large ones show one by one */
    printf("\nstaleness of the asynchronous run (tau: gradients)\n");
    for (int t = 0, left = runs[1].applied[0]; left > 0; t++) {
        int n = 0;
        for (int k = 0; k < runs[1].applied[0]; k++)
            n += runs[1].staleness[k] == t;
        if (n)
            printf("  %3d: %d\n", t, n);
        left -= n;
    }

    int rc = 0;
    if (o.figures) {
        r = figures(&o, runs, names, 3, &test);
        if (r != DT_OK)
            rc = fail("figures", r);
    }
    for (int i = 0; i < 3; i++)
        lab_ps_result_free(&runs[i]);
    dt_dataset_free(&train);
    dt_dataset_free(&test);
    return rc;
}
