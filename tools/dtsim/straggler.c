/* straggler.c - dtsim's straggler mode: one slow worker, or slowdowns at
 * random, and what each policy makes of them on the modeled clock
 * (dt_sim_stragglers, dt/sim.h, chapter 14, section 9).
 *
 *     dtsim --stragglers --workers 4 --batch 64 --sample 1ms --slow-rank 3
 *     dtsim --stragglers --workers 4 --p-slow 0.1 --slow-speed 0.25 --seed 7
 *           --net ib100 --grad-bytes 100M */
#include "dtsim.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int stragglers, workers, backup, drop, batch, slow_rank, steps;
    double sample, slow_speed, p_slow;
    size_t grad_bytes;
    long seed;
    const char *net;
} options;

#define NUM_OPTS 13

static dt_cli straggler_cli(options *o, dt_opt opts[NUM_OPTS])
{
    const dt_opt table[NUM_OPTS] = {
        {"--stragglers", DT_OPT_FLAG, &o->stragglers, .help = "this mode"},
        {"--workers", DT_OPT_INT, &o->workers, .help = "K, the gradients a step averages",
         .lo = 1, .hi = 1024},
        {"--backup", DT_OPT_INT, &o->backup, .help = "spare workers of the backup policy",
         .lo = 1, .hi = 1024},
        {"--drop", DT_OPT_INT, &o->drop, .help = "gradients the drop policy does not wait for",
         .lo = 1, .hi = 1023},
        {"--batch", DT_OPT_INT, &o->batch, .help = "B, the global batch (a multiple of K)",
         .lo = 1, .hi = 1 << 30},
        {"--sample", DT_OPT_SECONDS, &o->sample, .help = "one sample's compute at speed 1",
         .lo = 1e-12, .hi = 1e6},
        {"--slow-rank", DT_OPT_INT, &o->slow_rank, .help = "a worker slow at every step (-1: "
         "none)", .lo = -1, .hi = 2047},
        {"--slow-speed", DT_OPT_REAL, &o->slow_speed, .help = "a slow worker's speed",
         .lo = 0, .hi = 1, .flags = DT_OPT_OPEN_LO},
        {"--p-slow", DT_OPT_REAL, &o->p_slow, .help = "each worker, each step: slow with this "
         "probability", .lo = 0, .hi = 1},
        {"--seed", DT_OPT_LONG, &o->seed, .help = "of the random slowdowns", .lo = 0,
         .hi = 1e15},
        {"--steps", DT_OPT_INT, &o->steps, .help = "steps averaged", .lo = 1, .hi = 10000000},
        {"--net", DT_OPT_NET, &o->net, .help = "the link of the gradients' allreduce"},
        {"--grad-bytes", DT_OPT_BYTES, &o->grad_bytes, .help = "the gradient's size", .lo = 0,
         .hi = 1e15},
    };
    memcpy(opts, table, sizeof table);
    return (dt_cli){.prog = "dtsim", .opts = opts, .nopts = NUM_OPTS,
                    .synopsis = "--stragglers [--workers K] [--slow-rank R | --p-slow P] ...",
                    .about = "A synchronous step's time under four straggler policies, on the "
                             "modeled clock: waiting for\nall, backup workers, dropping the "
                             "slowest, batches sized to the measured speeds."};
}

static options defaults(void)
{
    return (options){.workers = 4, .backup = 1, .drop = 1, .batch = 64, .slow_rank = -1,
                     .steps = 1000, .sample = 1e-3, .slow_speed = 0.5, .seed = 1, .net = "none"};
}

void dtsim_straggler_usage(FILE *out)
{
    options o = defaults();
    dt_opt opts[NUM_OPTS];
    dt_cli cli = straggler_cli(&o, opts);
    dt_cli_usage(&cli, out);
}

static const char *label(dt_sim_straggle_policy p, const char *extra)
{
    static char text[64];
    snprintf(text, sizeof text, "%s%s", dt_sim_straggle_name(p), extra);
    return text;
}

int dtsim_straggler_main(int argc, char **argv)
{
    options o = defaults();
    dt_opt opts[NUM_OPTS];
    dt_cli cli = straggler_cli(&o, opts);
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    dt_sim_straggle s = {o.workers, 0, o.batch, o.sample, (double)o.grad_bytes, {0, 0, 0},
                         o.slow_rank, o.slow_speed, o.p_slow, (uint64_t)o.seed, o.steps};
    if (dt_net_link(o.net, &s.link) != DT_OK)
        return dt_cli_fail(&cli, "%s", dt_last_error());
    if (o.batch % o.workers)
        return dt_cli_fail(&cli, "--batch %d: not a multiple of --workers %d", o.batch,
                           o.workers);
    if (o.drop >= o.workers)
        return dt_cli_fail(&cli, "--drop %d: the step needs one of --workers %d at least",
                           o.drop, o.workers);
    if (o.slow_rank >= o.workers)
        return dt_cli_fail(&cli, "--slow-rank %d: not one of --workers %d", o.slow_rank,
                           o.workers);
    const dt_sim_straggle_policy order[] = {DT_STRAGGLE_WAIT_ALL, DT_STRAGGLE_BACKUP,
                                            DT_STRAGGLE_DROP, DT_STRAGGLE_ADAPTIVE};
    dt_sim_straggle_out res[4];
    for (int i = 0; i < 4; i++) {
        dt_sim_straggle_policy p = order[i];
        s.extra = p == DT_STRAGGLE_BACKUP ? o.backup : p == DT_STRAGGLE_DROP ? o.drop : 0;
        if (dt_sim_stragglers(&s, p, &res[i]) != DT_OK)
            return dt_cli_fail(&cli, "%s", dt_last_error());
    }
    printf("K = %d workers, B = %d samples (%d a worker), %.6g ms a sample at speed 1; ",
           o.workers, o.batch, o.batch / o.workers, 1e3 * o.sample);
    if (o.slow_rank >= 0)
        printf("worker %d at speed %g every step", o.slow_rank, o.slow_speed);
    if (o.p_slow > 0)
        printf("%seach worker at speed %g with probability %g a step (seed %ld)",
               o.slow_rank >= 0 ? "; " : "", o.slow_speed, o.p_slow, o.seed);
    if (o.slow_rank < 0 && o.p_slow == 0)
        printf("no slow worker");
    printf("\n%d steps; the allreduce of %zu bytes on %s\n\n", o.steps, o.grad_bytes, o.net);
    printf("%-22s %7s %10s %12s %8s %9s %10s %10s\n", "policy", "workers", "step (ms)",
           "compute (ms)", "used", "computed", "share min", "share max");
    for (int i = 0; i < 4; i++) {
        dt_sim_straggle_policy p = order[i];
        s.extra = p == DT_STRAGGLE_BACKUP ? o.backup : p == DT_STRAGGLE_DROP ? o.drop : 0;
        const dt_sim_straggle_out r = res[i];
        char name[40] = "";
        if (s.extra) /* "backup workers +1", "drop the slowest 1" */
            snprintf(name, sizeof name, " %s%d", p == DT_STRAGGLE_BACKUP ? "+" : "", s.extra);
        printf("%-22s %7d %10.4f %12.4f %8.2f %9.2f %10.3f %10.3f\n", label(p, name),
               o.workers + (p == DT_STRAGGLE_BACKUP ? s.extra : 0), 1e3 * r.step_s,
               1e3 * r.compute_s, r.used, r.computed, r.share_min, r.share_max);
    }
    return 0;
}
