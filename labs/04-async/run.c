/* run.c - lab 04's program: `make run-lab LAB=04 [ARGS="..."]`.
 *
 * Trains the digits MLP four ways with the same number of gradients and a
 * straggler (worker 0 computes slower; --delay-ms also makes each message it
 * sends late): a synchronous parameter server, an asynchronous one, an
 * asynchronous one with a staleness bound, and Hogwild!. Prints a table of
 * modeled time, accuracy and staleness, the staleness histogram of the
 * asynchronous run, and optionally writes the chapter's figures.
 * --stability, --lost-updates and --knee measure sections 3, 8 and 9.1
 * instead (run_studies.c); --figures draws the chapter's figures
 * (run_figures.c); `run --help` lists the options. The
 * ranks are threads, or processes with --backend proc (DT_BACKEND sets
 * the default); the results come back through the launchers' out blocks. */
#include "run.h"

#include "dt/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads the command line into o: DT_CLI_GO, or the exit status. */
static int parse(int argc, char **argv, options *o)
{
    *o = (options){.workers = 4, .servers = 1, .updates = 400, .bound = 2, .batch = 16,
                   .slow_ms = 30, .compute_ms = 2, .lr = 0.1, .net = "none",
                   .backend = DT_BACKEND_THREAD};
    /* DT_BACKEND sets the default: thread or proc. The mpi backend needs
     * mpirun, and every process would print the tables: grade lab 04 on MPI
     * with `make check LAB=04 BACKEND=mpi` instead. */
    const char *env = dt_env_str("DT_BACKEND", NULL);
    if (env && (dt_backend_parse(env, &o->backend) != DT_OK ||
                (o->backend != DT_BACKEND_THREAD && o->backend != DT_BACKEND_PROC))) {
        fprintf(stderr, "run: DT_BACKEND '%s': this program runs its ranks as threads or "
                "processes (thread, proc)%s\n", env, o->backend == DT_BACKEND_MPI ?
                "; `make check LAB=04 BACKEND=mpi` grades the lab on MPI" : "");
        return 2;
    }
    const dt_opt opts[] = {
        {"--workers", DT_OPT_INT, &o->workers, .help = "workers K", .arg = "K", .lo = 1,
         .hi = LAB_MAX_WORKERS},
        {"--servers", DT_OPT_INT, &o->servers, .help = "servers S", .arg = "S", .lo = 1,
         .hi = LAB_MAX_SERVERS},
        {"--updates", DT_OPT_INT, &o->updates, .help = "gradients G in all (at least K)", .arg = "G",
         .lo = 1, .hi = 1e8},
        {"--bound", DT_OPT_INT, &o->bound, .help = "staleness bound of the bounded run", .arg = "B",
         .lo = 0, .hi = 1e6},
        {"--compute-ms", DT_OPT_REAL, &o->compute_ms, .help = "modeled compute of a gradient, "
         "ms", .lo = 0, .hi = 1e6, .arg = "C"},
        {"--slow-ms", DT_OPT_REAL, &o->slow_ms, .help = "the same on worker 0, the straggler "
         "(0: no straggler)", .lo = 0, .hi = 1e6, .arg = "W"},
        {"--delay-ms", DT_OPT_REAL, &o->delay_ms, .help = "every message worker 0 sends is D ms "
         "late", .lo = 0, .hi = 1e6, .arg = "D"},
        {"--batch", DT_OPT_INT, &o->batch, .help = "samples per gradient", .lo = 1, .hi = 1 << 20},
        {"--lr", DT_OPT_REAL, &o->lr, .help = "learning rate", .lo = 0, .hi = 1e3,
         .flags = DT_OPT_OPEN_LO},
        {"--figures", DT_OPT_DIR, &o->figures, .help = "write DIR/04-accuracy-time.svg and "
         "DIR/04-staleness.svg"},
        {"--net", DT_OPT_NET, &o->net, .help = "the modeled network"},
        {"--backend", DT_OPT_BACKEND, &o->backend, .help = "ranks as threads or processes "
         "(default: DT_BACKEND's, else thread)", .flags = DT_OPT_NO_MPI | DT_OPT_NO_DEFAULT},
        {"--knee", DT_OPT_INT, &o->knee, .help = "only the synchronous server with K = 1 .. "
         "KMAX workers and no straggler: its modeled time per round (section 9.1)", .lo = 0,
         .hi = LAB_MAX_WORKERS, .arg = "KMAX", .flags = DT_OPT_NO_DEFAULT},
        {"--stability", DT_OPT_FLAG, &o->stability, .help = "only the learning rate against a "
         "constant staleness: where training diverges (section 3; the same every run)"},
        {"--lost-updates", DT_OPT_FLAG, &o->lost, .help = "only the Hogwild! updates lost to a "
         "race (section 8)"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 04: K workers and S servers train the digits MLP with G "
                           "gradients: a synchronous parameter server, an asynchronous one, "
                           "one with a staleness bound, and Hogwild!."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (o->updates < o->workers)
        return dt_cli_fail(&cli, "--updates %d: fewer gradients than --workers %d", o->updates,
                           o->workers);
    return DT_CLI_GO;
}

static double max_clock(const double *clock, int n)
{
    double t = 0;
    for (int r = 0; r < n; r++)
        if (clock[r] > t)
            t = clock[r];
    return t;
}

/* One parameter-server run; fills the row, keeps res for the figures. */
dt_result ps_run(const options *o, const dt_dataset *train, const dt_dataset *test,
                        int sync, int bound, row *out, lab_ps_result *res)
{
    lab_ps_config cfg = lab_ps_defaults(train);
    cfg.servers = o->servers, cfg.updates = o->updates, cfg.sync = sync, cfg.bound = bound;
    cfg.batch = o->batch, cfg.lr = (float)o->lr, cfg.compute_s = o->compute_ms * 1e-3;
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
    lab_hogwild_config cfg = {.updates = o->updates, .batch = o->batch, .lr = (float)o->lr,
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

int fail(const char *what, dt_result r)
{
    fprintf(stderr, "%s: %s %s\n", what, dt_strerror(r), dt_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    options o;
    int st = parse(argc, argv, &o);
    if (st != DT_CLI_GO)
        return st;
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
           o.updates, o.batch, o.lr, o.compute_ms,
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
