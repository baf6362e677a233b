/* dttrain.h - what the files of dttrain share.
 *
 *   options.c    the command line: every option, its range, the usage
 *   train.c      one run on one rank, the trainer's set-up, the JSON
 *   parallel.c   data parallelism: one run on K ranks (chapter 03; ZeRO-1, chapter 08);
 *                parallel.h shares it with the showcase
 *   hybrid.c     tensor and pipeline parallelism inside data parallelism (--tp, --pp;
 *                chapters 06, 07, 13)
 *   showcase.c   `make run`: 1 rank against K ranks, side by side
 *   dump.c       --dump: one step's inputs and gradients for bench/compute_verify.py
 *   main.c       which of them runs
 *
 * The training itself is the library's loop (dt/train.h); dttrain chooses
 * its hooks, builds the data and prints. */
#ifndef DTTRAIN_H
#define DTTRAIN_H

#include "dt/comm.h"
#include "dt/train.h"

#include <stdio.h>

typedef struct {
    const char *model, *data, *optim, *dump, *backend, *net;
    long batch, micro_batches, steps, epochs, eval_every, threads, ranks;
    double lr, momentum, weight_decay, time_budget;
    long seed; /* 0 .. 2^53 */
    int json, no_fuse, reference, showcase, shard_optimizer;
    int fsdp, no_prefetch, no_reshard; /* chapter 09: --fsdp and its two switches */
    long tp, pp, vpp;        /* chapter 13: tensor- and pipeline-parallel ranks per replica,
                                and the interleaved schedule's chunks per rank */
    const char *schedule;    /* --pp's schedule: gpipe, 1f1b, interleaved, zbh1 */
    int distributed; /* --ranks, --backend, --net or --showcase: through dt_launch */
    int model_set;   /* --model given (--showcase has its own default) */
} options;

#define SHOWCASE_MODEL "mlp:64,512,512,10" /* --showcase's digits MLP */

/* Parses and checks the command line. 0: run; 1: --help was printed;
 * 2: a bad option, whose message (naming the option and the value) was
 * printed on stderr. */
int dttrain_parse(int argc, char **argv, options *o);

/* Prints "dttrain: <what dt_last_error says>" and returns the exit status 1. */
int dttrain_fail(dt_result r);

/* The training and test sets for the model, from --data and --seed. */
dt_result dttrain_data(const options *o, const dt_model *m, dt_dataset *train,
                       dt_dataset *test);

/* A trainer for m on w (NULL: one rank) with the options' optimizer,
 * path and update: fused SGD where it applies unless --no-fuse or
 * --reference, ZeRO-1 with --shard-optimizer, FSDP with --fsdp (which
 * takes over m's parameters: dt_train_fsdp_params gives them back).
 * compute_per_sample > 0:
 * compute is charged to the modeled clock at that cost, else measured. */
dt_result dttrain_trainer(const options *o, dt_trainer *t, dt_model *m, dt_comm *w,
                          double compute_per_sample);

/* How a run's progress lines look: tag, the prefix of a line of a
 * data-parallel run (NULL: a single rank's line); epochs is set by
 * dttrain_run_config. */
typedef struct {
    const char *tag;
    int epochs;
} dttrain_progress;

/* The run's config: batch, steps or epochs (> 0), reports (printed as
 * *lines says, unless --json; lines must outlive the run). */
dt_train_config dttrain_run_config(const options *o, const dt_dataset *test, long epochs,
                                   dttrain_progress *lines);

/* What ran, for the JSON and the summary: "fused_sgd", "sgd", "adamw",
 * "zero1"; "feature_major" or "batch_major". */
const char *dttrain_update_name(const dt_trainer *t);
const char *dttrain_layout_name(const dt_trainer *t);

/* The JSON's fields about the machine the figures come from. */
void dttrain_json_machine(FILE *f, const options *o);

/* The trainer's config from the options (optimizer, path, clock), as
 * dttrain_trainer uses it. */
dt_trainer_config dttrain_trainer_config(const options *o, double compute_per_sample);

int dttrain_single(const options *o);
int dttrain_parallel(const options *o);
int dttrain_hybrid(const options *o); /* --tp, --pp: hybrid.c */
int dttrain_showcase(options *o);
dt_result dttrain_dump(const options *o, dt_model *m, const dt_dataset *d);

#endif /* DTTRAIN_H */
