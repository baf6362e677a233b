/* run.c - lab 04's program: `make run-lab LAB=04 [ARGS="..."]`.
 *
 * Trains the digits MLP four ways with the same number of gradients and a
 * straggler (worker 0 computes slower; --delay-ms also makes each message it
 * sends late): a synchronous parameter server, an asynchronous one, an
 * asynchronous one with a staleness bound, and Hogwild!. Prints a table of
 * modeled time, accuracy and staleness, the staleness histogram of the
 * asynchronous run, and optionally writes the chapter's figures.
 * --stability and --lost-updates measure sections 3 and 8 instead. The
 * ranks are threads, or processes with --backend proc (DT_BACKEND sets
 * the default); the results come back through the launchers' out blocks. */
#include "async.h"
#include "dt/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int workers, servers, updates, bound, batch;
    double slow_ms, delay_ms, compute_ms;
    float lr;
    const char *figures; /* folder for the SVGs, or NULL */
    const char *net;     /* network spec (dt/net.h) */
    dt_backend backend;  /* of every launch: thread or proc */
    int knee;            /* > 0: only the server's bottleneck, K = 1 .. knee */
    int stability;       /* 1: only the stability sweep (section 3) */
    int lost;            /* 1: only the lost Hogwild! updates (section 8) */
} options;

static void usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s [--workers K] [--servers S] [--updates G] [--bound B]\n"
            "          [--compute-ms C] [--slow-ms W] [--delay-ms D] [--batch N] [--lr X]\n"
            "          [--figures DIR] [--net SPEC] [--knee KMAX] [--backend B]\n"
            "       %s --stability | --lost-updates\n"
            "  K workers (default 4) and S servers (1) train the digits MLP with G\n"
            "  gradients in all (400); a gradient costs C ms of modeled compute (2),\n"
            "  except on worker 0, the straggler, where it costs W ms (30; 0: no\n"
            "  straggler); with D > 0 every message worker 0 sends is D ms late too\n"
            "  (0). The bounded run uses staleness bound B (2). --figures writes\n"
            "  DIR/04-accuracy-time.svg and DIR/04-staleness.svg. SPEC is the network\n"
            "  (dt/net.h: a preset such as eth10, or alpha=..,bw=..; default none).\n"
            "  B: thread (ranks are threads) or proc (processes); default DT_BACKEND's,\n"
            "  else thread.\n"
            "  --knee runs only the synchronous server with K = 1 .. KMAX workers and\n"
            "  no straggler, and prints its modeled time per round (chapter 04, 9.1).\n"
            "  --stability sweeps the learning rate against a constant staleness and\n"
            "  prints where training diverges (section 3; same result every run);\n"
            "  --lost-updates counts the Hogwild! updates lost to a race (section 8).\n",
            prog, prog);
}

/* --backend, or DT_BACKEND: thread or proc. The mpi backend needs mpirun,
 * and every process would print the tables: grade lab 04 on MPI with
 * `make check LAB=04 BACKEND=mpi` instead. */
static int parse_backend(const char *from, const char *name, dt_backend *b)
{
    if (dt_backend_parse(name, b) != DT_OK ||
        (*b != DT_BACKEND_THREAD && *b != DT_BACKEND_PROC)) {
        fprintf(stderr, "%s '%s': this program runs its ranks as threads or processes "
                "(thread, proc)%s\n", from, name,
                *b == DT_BACKEND_MPI ? "; `make check LAB=04 BACKEND=mpi` grades the lab on "
                                       "MPI" : "");
        return -1;
    }
    return 0;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){4, 1, 400, 2, 16, 30, 0, 2, 0.1f, NULL, "none", DT_BACKEND_THREAD, 0, 0, 0};
    const char *env = getenv("DT_BACKEND");
    if (env && env[0] && parse_backend("DT_BACKEND", env, &o->backend) != 0)
        return -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h"))
            return 1;
        if (!strcmp(a, "--stability") || !strcmp(a, "--lost-updates")) {
            *(a[2] == 's' ? &o->stability : &o->lost) = 1;
            continue;
        }
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
        else if (!strcmp(a, "--backend")) {
            if (parse_backend("--backend", v, &o->backend) != 0)
                return -1;
        }
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
    lo.backend = o->backend;
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
    lo.backend = o->backend;
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

/* ------------------------------------------------------------ stability */

/* The mean loss of the lab's MLP with these parameters on all of d
 * (INFINITY when it is not finite). */
static dt_result mean_loss(const float *params, const dt_dataset *d, double *out)
{
    static const size_t widths[3] = {LAB_IN, LAB_HIDDEN, LAB_CLASSES};
    dt_model m;
    dt_acts *a = NULL;
    float loss = 0;
    DT_CHECK(dt_mlp_create(&m, widths, 3, 1));
    memcpy(m.params, params, m.num_params * sizeof *params);
    dt_result r = dt_acts_create(&a, &m, 0, m.num_layers, d->n, 1);
    if (r == DT_OK)
        r = dt_model_forward(&m, a, d->x, NULL);
    if (r == DT_OK)
        r = dt_model_loss(&m, a, d->y, &loss, NULL);
    *out = isfinite(loss) ? loss : INFINITY;
    dt_acts_free(a);
    dt_model_free(&m);
    return r;
}

/* Asynchronous SGD with a constant staleness tau, on the lab's server
 * (your lab_ps_apply) and model: K = tau + 1 equally fast workers, each
 * pulling, computing and pushing in turn, worker t mod K pushing the t-th
 * gradient. That is the order of their modeled clocks, ties going to the
 * lower worker, with no thread and no wall-clock race: every gradient
 * after the first K has staleness exactly K - 1, and a run is the same
 * bits every time. Writes the training loss after G updates to *loss
 * (INFINITY: diverged). */
static dt_result constant_staleness(const dt_dataset *train, int tau, int G, int batch,
                                    float lr, double *loss)
{
    const int K = tau + 1;
    lab_ps_config cfg = lab_ps_defaults(train);
    cfg.updates = G, cfg.batch = batch, cfg.lr = lr;
    lab_ps_result res;
    memset(&res, 0, sizeof res);
    lab_server s;
    memset(&s, 0, sizeof s);
    lab_trainer t[LAB_MAX_WORKERS];
    int steps[LAB_MAX_WORKERS] = {0}, made = 0;
    dt_result r = DT_OK;
    for (; made < K && r == DT_OK; made++)
        r = lab_trainer_init(&t[made], train, batch, cfg.seed, 0);
    const size_t n = lab_num_params();
    res.servers = 1, res.workers = K, res.num_params = n;
    res.staleness = calloc((size_t)G, sizeof *res.staleness);
    s.cfg = &cfg, s.res = &res, s.workers = K, s.count = n;
    s.params = calloc(n, sizeof *s.params), s.grad = calloc(n, sizeof *s.grad);
    s.sum = calloc(n, sizeof *s.sum);
    if (r == DT_OK && (!res.staleness || !s.params || !s.grad || !s.sum))
        r = dt_fail(DT_ERR_NOMEM, "stability: buffers");
    if (r == DT_OK) /* the initial parameters, as every worker's model starts */
        memcpy(s.params, t[0].model.params, n * sizeof *s.params);
    for (int w = 0; w < K && r == DT_OK; w++) { /* every worker pulls version 0 */
        memcpy(t[w].model.params, s.params, n * sizeof *s.params);
        s.in_flight[w] = 1, s.pulled_version[w] = 0;
    }
    for (int k = 0; k < G && r == DT_OK; k++) {
        int w = k % K;
        r = lab_trainer_gradient(&t[w], w, steps[w]++, NULL, NULL);
        if (r == DT_OK) {
            memcpy(s.grad, t[w].model.grads, n * sizeof *s.grad);
            r = lab_ps_apply(&s, w, s.pulled_version[w]);
        }
        /* the worker pulls again at once */
        memcpy(t[w].model.params, s.params, n * sizeof *s.params);
        s.in_flight[w] = 1, s.pulled_version[w] = s.version;
    }
    if (r == DT_OK && res.applied[0] != G)
        r = dt_fail(DT_ERR_STATE, "stability: %d of %d gradients recorded", res.applied[0], G);
    for (int k = K; r == DT_OK && k < G; k++)
        if (res.staleness[k] != tau)
            r = dt_fail(DT_ERR_STATE, "stability: gradient %d has staleness %d, not %d", k,
                        res.staleness[k], tau);
    if (r == DT_OK)
        r = mean_loss(s.params, train, loss);
    for (int w = 0; w < made; w++)
        lab_trainer_free(&t[w]);
    free(s.params), free(s.grad), free(s.sum), free(res.staleness);
    return r;
}

/* Section 3's stability limit, measured: for each tau, the smallest
 * learning rate on a geometric grid (2^(1/16) apart, 4.4%) at which the
 * run diverges: its training loss after G updates is above half the
 * initial one (trained runs end below 0.5, diverged ones near ln 10 =
 * 2.30, the loss of a model that predicts nothing). The recurrence of
 * section 3 puts the limit at alpha h = 2 sin(pi / (2 (2 tau + 1))); the
 * curvature h is unknown for the MLP, the ratios between two tau's limits
 * are not. */
static int stability(const options *o, const dt_dataset *train)
{
    static const int taus[] = {0, 1, 2, 3, 5, 7};
    const int ntau = (int)(sizeof taus / sizeof taus[0]);
    double l0, lim[8];
    lab_trainer t0;
    dt_result r = lab_trainer_init(&t0, train, o->batch, 1, 0);
    if (r == DT_OK)
        r = mean_loss(t0.model.params, train, &l0);
    lab_trainer_free(&t0);
    if (r != DT_OK)
        return fail("stability", r);
    printf("the stability limit of asynchronous SGD (chapter 04, section 3): staleness tau "
           "= K - 1\nof K workers in turn, %d gradients of %d samples on your server's "
           "lab_ps_apply;\nthe smallest learning rate (grid 2^(1/16)) whose run ends with a "
           "training loss\nabove %.3f, half the initial %.3f\n\n", o->updates, o->batch,
           l0 / 2, l0);
    printf("%4s %11s %12s %10s %12s %10s %14s\n", "tau", "diverges at", "/ tau 0's",
           "predicted", "/ tau 1's", "predicted", "lr x (2tau+1)");
    for (int i = 0; i < ntau; i++) {
        /* from far below the limit up the grid, to the first divergence */
        double lr = 1.0 / 16, loss = 0;
        int step = 0;
        const int steps = 16 * 10; /* from 1/16 up to 64 */
        for (; step < steps; step++, lr = pow(2, step / 16.0) / 16) {
            r = constant_staleness(train, taus[i], o->updates, o->batch, (float)lr, &loss);
            if (r != DT_OK)
                return fail("stability", r);
            if (!(loss <= l0 / 2))
                break;
        }
        if (step == 0 || step == steps) {
            fprintf(stderr, "stability: tau %d: %s at lr %g (loss %g): no limit in 1/16 .. 64\n",
                    taus[i], step ? "no divergence" : "not trained", lr, loss);
            return 1;
        }
        lim[i] = lr;
        /* the recurrence's limits, alpha h = 2 sin(pi / (2 (2 tau + 1))), as ratios */
        double pred = sin(M_PI / (2 * (2 * taus[i] + 1)));
        printf("%4d %11.4f %12.3f %10.3f", taus[i], lr, lr / lim[0], pred);
        if (i > 0)
            printf(" %12.3f %10.3f", lr / lim[1], pred / sin(M_PI / 6));
        else
            printf(" %12s %10s", "-", "-");
        printf(" %14.3f\n", lr * (2 * taus[i] + 1));
    }
    return 0;
}

/* ------------------------------------------------------------ lost updates */

/* The lossless update the chapter's section 8 sets against Hogwild!'s: a
 * compare-and-swap loop per word, so that no concurrent update is lost. */
static dt_result apply_cas(_Atomic float *params, const float *grad, size_t n, float lr)
{
    for (size_t i = 0; i < n; i++) {
        float old = atomic_load_explicit(&params[i], memory_order_relaxed);
        while (!atomic_compare_exchange_weak_explicit(&params[i], &old, old - lr * grad[i],
                                                      memory_order_relaxed,
                                                      memory_order_relaxed))
            ;
    }
    return DT_OK;
}

typedef struct {
    int rounds, cas;
    size_t n;
} hammer_job;

/* Every rank subtracts 1 from each of the n shared words, rounds times,
 * with your lab_hogwild_apply (or the CAS loop); the words start at 0.
 * Nothing lost, they end at -ranks * rounds; each lost update leaves a
 * word 1 higher. Rank 0 hands back the sum of the words at the end (its
 * block of the launch's out: a double). */
static dt_result hammer_rank(dt_comm *comm, void *arg)
{
    const hammer_job *j = arg;
    void *base = NULL;
    dt_win *win = NULL;
    float *ones = malloc(j->n * sizeof *ones);
    if (!ones)
        return dt_fail(DT_ERR_NOMEM, "lost updates: %zu floats", j->n);
    for (size_t i = 0; i < j->n; i++)
        ones[i] = 1.0f;
    dt_result r = dt_win_allocate(comm, j->n * sizeof(float), &base, &win);
    _Atomic float *w = base;
    if (r == DT_OK)
        r = dt_barrier(comm);
    for (int k = 0; r == DT_OK && k < j->rounds; k++)
        r = j->cas ? apply_cas(w, ones, j->n, 1.0f) : lab_hogwild_apply(w, ones, j->n, 1.0f);
    if (r == DT_OK)
        r = dt_barrier(comm);
    if (r == DT_OK && dt_comm_rank(comm) == 0) {
        double *remaining = dt_rank_out(comm);
        for (size_t i = 0; i < j->n; i++)
            *remaining += atomic_load_explicit(&w[i], memory_order_relaxed);
    }
    dt_result f = dt_win_free(win);
    free(ones);
    return r != DT_OK ? r : f;
}

/* Section 8's lost updates, made visible: the share of the updates that
 * another worker's store overwrote, with Hogwild!'s load-then-store
 * (yours) against the CAS loop. A race against the machine's scheduling:
 * it changes from run to run and with the load. */
static int lost_updates(dt_backend backend)
{
    const int rounds = 2000;
    const size_t n = lab_num_params();
    printf("lost Hogwild! updates (chapter 04, section 8): every worker subtracts 1 from the "
           "%zu\nshared words, %d times; an update that another's store overwrote is lost "
           "(a race:\nthe rate changes from run to run, with the machine and its load)\n\n",
           n, rounds);
    printf("%8s %30s %22s\n", "workers", "lost, load then store (yours)", "lost, CAS loop");
    for (int W = 2; W <= 8; W *= 2) {
        double rate[2];
        for (int cas = 0; cas < 2; cas++) {
            hammer_job j = {rounds, cas, n};
            double remaining[8]; /* one block per rank: rank 0's is the sum */
            dt_launch_opts lo;
            dt_launch_opts_init(&lo);
            lo.nranks = W;
            lo.backend = backend;
            lo.fault = "";
            lo.out = remaining;
            lo.out_bytes = sizeof remaining[0];
            dt_result r = dt_launch(&lo, hammer_rank, &j);
            if (r != DT_OK)
                return fail("lost updates", r);
            double updates = (double)W * rounds * (double)n;
            rate[cas] = (updates + remaining[0]) / updates; /* remaining = lost - updates */
        }
        printf("%8d %29.2f%% %21.2f%%\n", W, 100 * rate[0], 100 * rate[1]);
    }
    return 0;
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
    if (o.knee > 0 || o.stability || o.lost) {
        int rc = o.knee > 0 ? knee(&o, &train, &test)
                 : o.stability ? stability(&o, &train) : lost_updates(o.backend);
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
