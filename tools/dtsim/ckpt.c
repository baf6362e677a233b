/* ckpt.c - dtsim's checkpoint mode: the interval and the expected waste
 * for a checkpoint cost C, a restart R and an MTBF M (dt/sim.h, chapter
 * 14, section 2).
 *
 *     dtsim --checkpoint --cost 5min --restart 10min --mtbf 24h
 *     dtsim --checkpoint --cost 30s --restart 5min --mtbf 1000000h --devices 16384
 *     dtsim --checkpoint --cost 5min --restart 10min --mtbf 6h --sweep --svg waste.svg
 *
 * Times are a number and a unit: s, min, h or d (a bare number is seconds). */
#include "dtsim.h"

#include "dt/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int checkpoint, devices, sweep;
    const char *cost, *restart, *mtbf, *interval, *svg;
    long seed;
} options;

#define NUM_OPTS 9

static dt_cli ckpt_cli(options *o, dt_opt opts[NUM_OPTS])
{
    const dt_opt table[NUM_OPTS] = {
        {"--checkpoint", DT_OPT_FLAG, &o->checkpoint, .help = "this mode"},
        {"--cost", DT_OPT_TEXT, &o->cost, .help = "checkpoint cost C (delta): the training time "
         "one save stops", .arg = "TIME", .flags = DT_OPT_NO_DEFAULT},
        {"--restart", DT_OPT_TEXT, &o->restart, .help = "restart time R after a failure",
         .arg = "TIME", .flags = DT_OPT_NO_DEFAULT},
        {"--mtbf", DT_OPT_TEXT, &o->mtbf, .help = "mean time between failures M (of the job, "
         "or of one device with --devices)", .arg = "TIME", .flags = DT_OPT_NO_DEFAULT},
        {"--devices", DT_OPT_INT, &o->devices, .help = "devices n: --mtbf is one device's, the "
         "job's is M / n", .lo = 1, .hi = 1e9, .flags = DT_OPT_NO_DEFAULT},
        {"--interval", DT_OPT_TEXT, &o->interval, .help = "also the waste at this interval tau",
         .arg = "TIME", .flags = DT_OPT_NO_DEFAULT},
        {"--sweep", DT_OPT_FLAG, &o->sweep, .help = "also run the job on the modeled clock "
         "with failures drawn at the MTBF (dt_sim_ckpt_run), for intervals from Daly's / 4 to "
         "x 4: the measured waste beside the model's"},
        {"--seed", DT_OPT_LONG, &o->seed, .help = "of the failures of --sweep", .lo = 0,
         .hi = 1e15},
        {"--svg", DT_OPT_FILE, &o->svg, .help = "with --sweep: the measured and the modeled "
         "waste against the interval, as an SVG", .flags = DT_OPT_NO_DEFAULT},
    };
    memcpy(opts, table, sizeof table);
    return (dt_cli){.prog = "dtsim", .opts = opts, .nopts = NUM_OPTS,
                    .synopsis = "--checkpoint --cost TIME --restart TIME --mtbf TIME "
                                "[--devices N] [--interval TIME]",
                    .about = "Prints Young's and Daly's checkpoint intervals and the share of "
                             "the wall time\nwasted at each (Daly's model). TIME is a number "
                             "and a unit: s, min, h, d."};
}

void dtsim_ckpt_usage(FILE *out)
{
    options o = {0};
    dt_opt opts[NUM_OPTS];
    dt_cli cli = ckpt_cli(&o, opts);
    dt_cli_usage(&cli, out);
}

/* "5min" -> 300: a number >= 0 and one of s, min, h, d; -1 when it is not. */
static double parse_time(const char *s)
{
    static const struct { const char *unit; double scale; } units[] = {
        {"", 1}, {"s", 1}, {"min", 60}, {"h", 3600}, {"d", 86400}};
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit))
            return v * units[i].scale;
    return -1;
}

static int read_time(const dt_cli *cli, const char *flag, const char *text, int zero_ok,
                     double *out)
{
    *out = parse_time(text);
    if (*out < 0 || (!zero_ok && *out == 0))
        return dt_cli_fail(cli, "%s %s: a time %s with a unit (s, min, h, d), e.g. 5min", flag,
                           text, zero_ok ? ">= 0" : "> 0");
    return DT_CLI_GO;
}

/* Daly's model of the waste at tau, for the plot. */
typedef struct {
    double C, R, M;
} model;

static double model_waste(double tau_min, void *ctx)
{
    const model *m = ctx;
    return 100 * dt_sim_ckpt_waste(tau_min * 60, m->C, m->R, m->M);
}

enum { SWEEP_POINTS = 33 };

/* The job of 2000 M of work, run at each interval with the same failure
 * times (one seed: the curves' differences are the interval's, not
 * luck's); the interval of least measured waste. */
static int sweep(const options *o, double C, double R, double M)
{
    double daly = dt_sim_ckpt_daly(C, M), young = dt_sim_ckpt_young(C, M);
    double work = 2000 * M, tau[SWEEP_POINTS], meas[SWEEP_POINTS], best = 0, least = INFINITY;
    long fails = 0;
    printf("\nthe job run on the modeled clock: %.6g min of work, failures drawn at M "
           "(seed %ld)\n", work / 60, o->seed);
    printf("%14s %12s %12s %10s\n", "tau (min)", "measured", "Daly model", "failures");
    for (int i = 0; i < SWEEP_POINTS; i++) {
        tau[i] = daly * pow(2, -2 + 4.0 * i / (SWEEP_POINTS - 1)); /* daly / 4 .. x 4 */
        double wall = dt_sim_ckpt_run(work, tau[i], C, R, M, (uint64_t)o->seed, &fails);
        meas[i] = 100 * (1 - work / wall);
        printf("%14.4f %11.3f%% %11.3f%% %10ld\n", tau[i] / 60, meas[i],
               100 * dt_sim_ckpt_waste(tau[i], C, R, M), fails);
        if (meas[i] < least)
            least = meas[i], best = tau[i];
        tau[i] /= 60;
    }
    printf("least measured waste %.3f%% at tau = %.4f min (Daly %.4f, Young %.4f)\n", least,
           best / 60, daly / 60, young / 60);
    if (!o->svg)
        return 0;
    dt_plot *p;
    model m = {C, R, M};
    char title[160];
    snprintf(title, sizeof title, "Waste against the interval: C %.3g min, R %.3g min, M %.3g min",
             C / 60, R / 60, M / 60);
    if (dt_plot_create(&p, title, "checkpoint interval tau (min)", "wasted wall time (%)") !=
        DT_OK)
        return fprintf(stderr, "dtsim: %s\n", dt_last_error()), 1;
    double dx[2] = {daly / 60, daly / 60}, vy[2];
    dt_result r = dt_plot_set_xscale(p, DT_AXIS_LOG2);
    if (r == DT_OK)
        r = dt_plot_add_series(p, "measured (failures injected)", tau, meas, SWEEP_POINTS,
                               DT_SERIES_POINTS);
    if (r == DT_OK)
        r = dt_plot_add_function(p, "Daly's model", model_waste, &m, tau[0],
                                 tau[SWEEP_POINTS - 1], 200);
    vy[0] = 0, vy[1] = meas[0] > meas[SWEEP_POINTS - 1] ? meas[0] : meas[SWEEP_POINTS - 1];
    if (r == DT_OK)
        r = dt_plot_add_series(p, "Daly's interval", dx, vy, 2, DT_SERIES_LINE);
    dx[0] = dx[1] = young / 60;
    if (r == DT_OK)
        r = dt_plot_add_series(p, "Young's interval", dx, vy, 2, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_write_svg(p, o->svg);
    dt_plot_free(p);
    if (r != DT_OK)
        return fprintf(stderr, "dtsim: %s\n", dt_last_error()), 1;
    printf("wrote %s\n", o->svg);
    return 0;
}

int dtsim_ckpt_main(int argc, char **argv)
{
    options o = {.seed = 1};
    dt_opt opts[NUM_OPTS];
    dt_cli cli = ckpt_cli(&o, opts);
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (!o.cost || !o.restart || !o.mtbf)
        return dt_cli_fail(&cli, "--checkpoint needs --cost, --restart and --mtbf");
    double C, R, M, tau_given = 0;
    if ((st = read_time(&cli, "--cost", o.cost, 0, &C)) != DT_CLI_GO ||
        (st = read_time(&cli, "--restart", o.restart, 1, &R)) != DT_CLI_GO ||
        (st = read_time(&cli, "--mtbf", o.mtbf, 0, &M)) != DT_CLI_GO ||
        (o.interval && (st = read_time(&cli, "--interval", o.interval, 0, &tau_given)) != DT_CLI_GO))
        return st;
    if (o.devices > 0) {
        printf("device MTBF %.6g h over %d devices: ", M / 3600, o.devices);
        M = dt_sim_job_mtbf(M, o.devices);
        printf("job MTBF M = %.6g h (%.6g min)\n", M / 3600, M / 60);
    }
    double young = dt_sim_ckpt_young(C, M), daly = dt_sim_ckpt_daly(C, M);
    printf("checkpoint cost C = %.6g min, restart R = %.6g min, MTBF M = %.6g min\n\n", C / 60,
           R / 60, M / 60);
    printf("%-34s %14s %10s\n", "interval tau (work between saves)", "tau (min)", "waste");
    printf("%-34s %14.4f %9.3f%%\n", "Young   sqrt(2 C M)", young / 60,
           100 * dt_sim_ckpt_waste(young, C, R, M));
    printf("%-34s %14.4f %9.3f%%\n", "Daly    higher order", daly / 60,
           100 * dt_sim_ckpt_waste(daly, C, R, M));
    if (o.interval)
        printf("%-34s %14.4f %9.3f%%\n", "given   --interval", tau_given / 60,
               100 * dt_sim_ckpt_waste(tau_given, C, R, M));
    if (C >= 2 * M)
        printf("\nC >= 2M: a save costs more than the work it protects; Daly's tau is M.\n");
    return o.sweep ? sweep(&o, C, R, M) : 0;
}
