/* run.c - lab 14's program: `make run-lab LAB=14 [ARGS="--phase mid-save
 * --step 6 --victim 0 --ranks 3 --resume-ranks 2"]`.
 *
 * Runs your checkpoints (ckpt.c, reshard.c) on a ZeRO-1 run of K thread
 * ranks that saves every 3 steps, and prints its timeline:
 *   1. the run that never stops, 12 steps (its parameters kept);
 *   2. the same run killed by the failure plan (dt_failure_point) at the
 *      phase, step and rank given: its steps, its saves with their files
 *      and bytes, the failure;
 *   3. what ROOT/latest names after the crash, and the work lost;
 *   4. the resume from it (lab_load; lab_reshard_load on --resume-ranks M
 *      ranks), on to step 12, and whether its parameters are the bits of
 *      the run that never stopped (M = K), or how far from them (M != K:
 *      the sums are rounded in another order).
 * The killed run and the resume also go into one trace (--trace, default
 * BUILD/lab14-trace.json) that Perfetto (ui.perfetto.dev) opens: each
 * rank's steps and saves, the kill, and the recovery's load, after the
 * failure on the modeled clock, beside the compute and the collectives. */
#include "ft.h"
#include "dt/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { STEPS = 12, EVERY = 3 };

typedef struct {
    const char *phase, *dir, *trace;
    long step;
    int victim, ranks, resume_ranks;
} options;

typedef struct {
    const options *o;
    const char *root;
    dt_failure plan;
    int resume;          /* 0: from scratch; 1: lab_load; 2: lab_reshard_load */
    int print;           /* rank 0 prints its timeline */
    const char *trace;   /* the trace file, "" for none */
    float *params;       /* rank 0's parameters at the end (num_params floats) */
} job;

static int parse(int argc, char **argv, options *o)
{
    *o = (options){"before-manifest", dt_cli_build_dir(), NULL, 6, 0, 3, 0};
    const dt_opt opts[] = {
        {"--phase", DT_OPT_TEXT, &o->phase, .help = "where the victim dies: mid-allreduce, "
         "after-backward, mid-save, before-manifest, before-rename"},
        {"--step", DT_OPT_LONG, &o->step, .help = "at which step (steps done)", .lo = 0,
         .hi = STEPS - 1},
        {"--victim", DT_OPT_INT, &o->victim, .help = "the rank that dies", .lo = 0, .hi = 63},
        {"--ranks", DT_OPT_INT, &o->ranks, .help = "ranks K of the run (dividing 12)", .lo = 1,
         .hi = 12},
        {"--resume-ranks", DT_OPT_INT, &o->resume_ranks, .help = "ranks M of the resume "
         "(default K; another M reshards)", .lo = 1, .hi = 12, .flags = DT_OPT_NO_DEFAULT},
        {"--dir", DT_OPT_DIR, &o->dir, .help = "where the checkpoints go (a folder made in it)"},
        {"--trace", DT_OPT_FILE, &o->trace, .help = "the trace of the killed run and the "
         "resume, for Perfetto (default: lab14-trace.json in --dir)", .flags = DT_OPT_NO_DEFAULT},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 14: a ZeRO-1 run that checkpoints, is killed, and resumes, "
                           "with your checkpoints; its timeline."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    char spec[128];
    dt_failure f;
    snprintf(spec, sizeof spec, "rank=%d:step=%ld:phase=%s", o->victim, o->step, o->phase);
    if (dt_failure_parse(spec, &f) != DT_OK)
        return dt_cli_fail(&cli, "%s", dt_last_error());
    if (o->victim >= o->ranks)
        return dt_cli_fail(&cli, "--victim %d: the run has %d ranks", o->victim, o->ranks);
    if (!o->resume_ranks)
        o->resume_ranks = o->ranks;
    return DT_CLI_GO;
}

/* The files of the checkpoint of step s and their bytes. */
static void print_files(const char *root, long s, int ranks)
{
    char dir[LAB_PATH], p[LAB_PATH + 32];
    struct stat st;
    long long total = 0;
    if (lab_ckpt_dir(dir, sizeof dir, root, s) != DT_OK)
        return;
    for (int k = 0; k < ranks; k++)
        if (dt_ckpt_shard_path(p, sizeof p, dir, k) == DT_OK && stat(p, &st) == 0)
            total += st.st_size;
    dt_ckpt_manifest_path(p, sizeof p, dir);
    long long m = stat(p, &st) == 0 ? (long long)st.st_size : -1;
    printf("  save    step %2ld: %d shards, %lld bytes; manifest %lld bytes; latest -> "
           "step-%08ld\n", s, ranks, total, m, s);
}

static dt_result rank_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    lab_run r;
    int me = dt_comm_rank(w);
    dt_result res = lab_run_init(&r, w, LAB_ZERO1, j->resume ? 77 : 5, &j->plan);
    if (res == DT_OK && j->resume) {
        /* the recovery: a region of the trace around the load */
        res = dt_trace_begin(w, j->resume == 1 ? "recovery: lab_load" : "recovery: "
                             "lab_reshard_load");
        if (res == DT_OK)
            res = j->resume == 1 ? lab_load(&r, j->root) : lab_reshard_load(&r, j->root);
        dt_result e = dt_trace_end(w);
        res = res != DT_OK ? res : e;
    }
    if (res == DT_OK && j->resume) {
        char mark[32];
        snprintf(mark, sizeof mark, "resumed at step %ld", r.trainer.step);
        res = dt_trace_instant(w, mark);
    }
    if (res == DT_OK && j->resume && me == 0 && j->print)
        printf("  resume  at step %ld on %d ranks (%s)\n", r.trainer.step, r.ranks,
               j->resume == 1 ? "lab_load" : "lab_reshard_load");
    while (res == DT_OK && r.trainer.step < STEPS) {
        res = lab_train(&r, j->root, r.trainer.step + 1, EVERY);
        if (res == DT_OK && me == 0 && j->print) {
            printf("  step    %2ld\n", r.trainer.step);
            if (r.trainer.step % EVERY == 0)
                print_files(j->root, r.trainer.step, r.ranks);
        }
    }
    if (res == DT_OK && me == 0)
        memcpy(j->params, r.model.params, r.model.num_params * sizeof(float));
    lab_run_free(&r);
    return res;
}

static dt_result launch(job *j, int ranks)
{
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = ranks;
    lo.backend = DT_BACKEND_THREAD;
    lo.timeout_s = 20;
    lo.net = "eth10"; /* collectives priced: the trace's modeled track moves */
    lo.trace_path = j->trace;
    lo.trace_append = j->resume != 0; /* the resume after the killed run */
    return dt_launch(&lo, rank_fn, j);
}

int main(int argc, char **argv)
{
    options o;
    int st = parse(argc, argv, &o);
    if (st != DT_CLI_GO)
        return st;
    char root[LAB_PATH], latest[LAB_PATH], spec[128];
    snprintf(root, sizeof root, "%s/lab14-XXXXXX", o.dir);
    if (!mkdtemp(root))
        return fprintf(stderr, "run: cannot make a folder in %s\n", o.dir), 1;
    float *straight = malloc(4096 * sizeof(float)), *resumed = malloc(4096 * sizeof(float));
    if (!straight || !resumed)
        return fprintf(stderr, "run: out of memory\n"), 1;
    char trace[LAB_PATH + 32];
    snprintf(trace, sizeof trace, "%s", o.trace ? o.trace : "");
    if (!o.trace)
        snprintf(trace, sizeof trace, "%s/lab14-trace.json", o.dir);
    job j = {&o, root, {.rank = -1}, 0, 0, "", straight};
    printf("1. the run that never stops: ZeRO-1 on %d ranks, %d steps\n", o.ranks, STEPS);
    char quiet[LAB_PATH + 16];
    snprintf(quiet, sizeof quiet, "%s/straight", root);
    mkdir(quiet, 0700);
    j.root = quiet;
    dt_result r = launch(&j, o.ranks);
    if (r != DT_OK)
        return fprintf(stderr, "run: %s\n", dt_last_error()), 1;
    snprintf(spec, sizeof spec, "rank=%d:step=%ld:phase=%s", o.victim, o.step, o.phase);
    dt_failure_parse(spec, &j.plan);
    j.root = root, j.print = 1, j.params = resumed, j.trace = trace;
    printf("\n2. the same run with saves every %d steps, and the failure plan %s\n", EVERY, spec);
    r = launch(&j, o.ranks);
    printf("  FAILURE %s\n", r == DT_OK ? "none: the plan's point was never reached"
                                        : dt_last_error());
    if (lab_read_latest(latest, sizeof latest, root) != DT_OK) {
        printf("\n3. no checkpoint committed (%s): the run starts again\n", dt_last_error());
        printf("(the trace of the steps, saves and the kill, for Perfetto: %s)\n", trace);
        return 0;
    }
    long at = atol(strrchr(latest, '-') + 1);
    printf("\n3. ROOT/latest names %s: the work of steps %ld to %ld is lost and done again\n",
           strrchr(latest, '/') + 1, at + 1, o.step + 1);
    printf("\n4. the resume in a new launch, from other parameters: only the files count\n");
    dt_failure_parse(NULL, &j.plan);
    j.resume = o.resume_ranks == o.ranks ? 1 : 2;
    r = launch(&j, o.resume_ranks);
    if (r != DT_OK)
        return fprintf(stderr, "run: the resume: %s\n", dt_last_error()), 1;
    size_t P = 185;
    double gap = 0;
    for (size_t i = 0; i < P; i++)
        gap = fmax(gap, fabs((double)straight[i] - resumed[i]));
    if (gap == 0)
        printf("\nthe parameters at step %d are the bits of the run that never stopped\n", STEPS);
    else
        printf("\nthe parameters at step %d differ from the run that never stopped by at most "
               "%.3g\n", STEPS, gap);
    printf("(the checkpoints: %s)\n", root);
    printf("(the trace of steps, saves, the kill and the recovery, for Perfetto: %s)\n", trace);
    free(straight), free(resumed);
    return 0;
}
