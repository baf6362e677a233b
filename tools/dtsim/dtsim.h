/* dtsim.h - what dtsim's files share.
 *   main.c        picks the mode from the command line
 *   net.c         the network mode (collective costs on one link, a DP
 *                 step, a bubble)
 *   plan_args.c   the planner's flags: a table of their own, read by dt/cli.h
 *   plan_print.c  a plan as text, JSON or term by term (--explain)
 *   search.c      dtsim search: every layout of a cluster, ranked
 *   ckpt.c        dtsim --checkpoint: Young's and Daly's intervals, the waste
 *   straggler.c   dtsim --stragglers: the straggler policies' step times */
#ifndef DTSIM_H
#define DTSIM_H

#include "dt/cli.h"
#include "dt/sim.h"

#include <stdio.h>

int dtsim_net_main(int argc, char **argv);
void dtsim_net_usage(FILE *out); /* --help of the network mode, from its table */

/* The planner's command line. */
typedef struct {
    dt_sim_model model;
    dt_sim_layout layout;
    const dt_sim_cluster *cluster;
    const char *model_name; /* --model, or NULL */
    int json, explain;
    int devices, top;       /* search only */
} dtsim_opts;

/* 1 when arg (e.g. "--tp" or "--tp=8") is one of the planner's flags. */
int dtsim_is_plan_flag(const char *arg);

/* Fills o from argv[1 ..) (search: the flags of `dtsim search`):
 * DT_CLI_GO when they are good, else the exit status (2 after a message
 * naming the flag on stderr; 0 after --help). */
int dtsim_plan_parse(int argc, char **argv, int search, dtsim_opts *o);

void dtsim_plan_usage(FILE *out); /* --help of the planner and the search */

/* Prints the core's refusal with the flags' names ("--tp 3: must divide
 * the heads (--heads 32)"); returns 2. */
int dtsim_refused(const dt_sim_bad *bad);

/* plan_print.c */
void dtsim_print_text(const dtsim_opts *o, const dt_sim_cost *k);
void dtsim_print_json(const dtsim_opts *o, const dt_sim_cost *k);
void dtsim_print_explain(const dtsim_opts *o, const dt_sim_cost *k);

/* search.c */
int dtsim_search_main(int argc, char **argv);

/* ckpt.c */
int dtsim_ckpt_main(int argc, char **argv);
void dtsim_ckpt_usage(FILE *out);

/* straggler.c */
int dtsim_straggler_main(int argc, char **argv);
void dtsim_straggler_usage(FILE *out);

#endif /* DTSIM_H */
