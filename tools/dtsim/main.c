/* dtsim - the cost model from the command line, in three modes:
 *
 *   network  the cost of each collective algorithm for one link, buffer
 *            and rank count; a data-parallel step; a pipeline bubble
 *                dtsim --net ib100 --bytes 256Mi --ranks 8 [--comp 0.2]
 *   plan     one training step of a transformer on a cluster for a layout
 *            (dt_sim_plan, chapter 13)
 *                dtsim --model gpt3-175b --cluster dgx-a100-80gb
 *                      --global-batch 64 --tp 8 --pp 8 --vpp 3 --recompute full
 *   search   every layout of a cluster for a model, ranked
 *                dtsim search --devices 4096 --cluster dgx-a100-80gb
 *                      --model gpt3-175b --global-batch 1536
 *   checkpoint  Young's and Daly's checkpoint intervals and the waste
 *                dtsim --checkpoint --cost 5min --restart 10min --mtbf 24h
 *   stragglers  a step's time under the straggler policies
 *                dtsim --stragglers --workers 4 --slow-rank 3
 *
 * A command line with any of the planner's flags is the planner's; the
 * rest go to the network mode, as before the planner existed. */
#include "dtsim.h"

#include <stdio.h>
#include <string.h>

static int plan_main(int argc, char **argv)
{
    dtsim_opts o;
    int r = dtsim_plan_parse(argc, argv, 0, &o);
    if (r != DT_CLI_GO)
        return r;
    dt_sim_cost k;
    dt_sim_bad bad;
    if (dt_sim_plan_eval(&o.model, &o.layout, o.cluster, &k, &bad) != DT_OK)
        return dtsim_refused(&bad);
    if (o.json)
        dtsim_print_json(&o, &k);
    else if (o.explain)
        dtsim_print_explain(&o, &k);
    else
        dtsim_print_text(&o, &k);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            dtsim_net_usage(stdout);
            printf("\n");
            dtsim_plan_usage(stdout);
            printf("\n");
            dtsim_ckpt_usage(stdout);
            printf("\n");
            dtsim_straggler_usage(stdout);
            return 0;
        }
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--checkpoint"))
            return dtsim_ckpt_main(argc, argv);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--stragglers"))
            return dtsim_straggler_main(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "search"))
        return dtsim_search_main(argc - 1, argv + 1);
    for (int i = 1; i < argc; i++)
        if (dtsim_is_plan_flag(argv[i]))
            return plan_main(argc, argv);
    return dtsim_net_main(argc, argv);
}
