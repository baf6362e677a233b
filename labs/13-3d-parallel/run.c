/* run.c - lab 13's program (make run-lab LAB=13): your functions at work.
 *
 *   1. the groups of 2 x 2 x 2 = 8 ranks, as rank 0 of each group sees them;
 *   2. the cost terms of Megatron-Turing NLG 530B on its published layout
 *      (8-way TP x 35-way PP x 8-way DP, 2,240 devices, batch 1920);
 *   3. your predicted step time against the emulator's modeled clock for
 *      every layout of 8 ranks on two nodes of 4, the wall time beside it.
 * Options: --net SPEC (the topology of 3), --micro M (micro-batches). */
#include "threed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dt_result show_groups(dt_comm *world, void *arg)
{
    (void)arg;
    lab_groups g;
    DT_CHECK(lab_groups_create(&g, world, 2, 2));
    int32_t me = dt_comm_rank(world), m[3][8];
    dt_result r = dt_allgather(&me, m[0], 1, DT_I32, g.tp);
    if (r == DT_OK)
        r = dt_allgather(&me, m[1], 1, DT_I32, g.pp);
    if (r == DT_OK)
        r = dt_allgather(&me, m[2], 1, DT_I32, g.dp);
    for (int w = 0; r == DT_OK && w < dt_comm_size(world); w++) {
        if (w == me)
            printf("  world rank %d (d %d, p %d, t %d): tp {%d %d}  pp {%d %d}  dp {%d %d}\n",
                   me, g.dp_rank, g.pp_rank, g.tp_rank, m[0][0], m[0][1], m[1][0], m[1][1],
                   m[2][0], m[2][1]);
        fflush(stdout);
        r = dt_barrier(world);
    }
    lab_groups_free(&g);
    return r;
}

int main(int argc, char **argv)
{
    const char *net = "nodes=2,per_node=4,intra.alpha=2us,intra.bw=20GB/s,"
                      "inter.alpha=20us,inter.bw=1GB/s";
    int micro = 4;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--net") && i + 1 < argc)
            net = argv[++i];
        else if (!strcmp(argv[i], "--micro") && i + 1 < argc && atoi(argv[i + 1]) >= 1)
            micro = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: run [--net SPEC] [--micro M >= 1]\n");
            return 2;
        }
    }
    printf("1. groups of TP 2 x PP 2 x DP 2 (section 1)\n");
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 8, o.backend = DT_BACKEND_THREAD;
    if (dt_launch(&o, show_groups, NULL) != DT_OK)
        printf("  lab_groups_create: %s\n", dt_last_error());

    printf("\n2. MT-NLG 530B on 2,240 devices, TP 8 x PP 35 x DP 8, batch 1920, "
           "selective recomputation, ZeRO 1 (sections 3 and 5)\n");
    const dt_sim_model *mt = dt_sim_model_preset("mt-nlg-530b");
    dt_sim_layout l = {8, 35, 8, 1, 0, 1920, 1, DT_SIM_RECOMPUTE_SELECTIVE, 1, DT_SIM_BF16,
                       DT_SIM_1F1B};
    lab_memory mem;
    lab_group_bytes by;
    printf("  bubble %.4f (3 chunks a rank would make it %.4f)\n", lab_bubble(35, 1, 240),
           lab_bubble(35, 3, 240));
    if (!mt || lab_memory_first_stage(mt, &l, &mem) != DT_OK)
        printf("  memory: %s\n", dt_last_error());
    else
        printf("  first stage: parameters %.2f GB, gradients %.2f GB, optimizer %.2f GB, "
               "activations %.2f GB, total %.2f GB\n", mem.params / 1e9, mem.grads / 1e9,
               mem.optim / 1e9, mem.acts / 1e9, mem.total / 1e9);
    if (!mt || lab_group_bytes_per_step(mt, &l, &by) != DT_OK)
        printf("  bytes: %s\n", dt_last_error());
    else
        printf("  bytes sent per step by one rank: TP %.1f GB, PP %.2f GB, DP %.2f GB\n",
               by.tp / 1e9, by.pp / 1e9, by.dp / 1e9);

    printf("\n3. the step time on %s, %d micro-batches (section 9)\n", net, micro);
    static const dt_gpt_config cfg = {32, 8, 6, 4, 32};
    double f[8], b[8];
    for (int k = 0; k < 8; k++)
        f[k] = 20e-6, b[k] = 40e-6;
    f[0] = 5e-6, b[0] = 10e-6;
    dt_net_topo topo;
    if (dt_net_topo_parse(net, &topo) != DT_OK) {
        fprintf(stderr, "run: --net %s: %s\n", net, dt_last_error());
        return 2;
    }
    printf("  | TP x PP x DP | predicted | emulator (modeled) | error | wall of the step |\n");
    static const int ls[][2] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}, {1, 8},
                                {2, 2}, {2, 4}, {4, 2}};
    for (size_t k = 0; k < sizeof ls / sizeof *ls; k++) {
        int tp = ls[k][0], pp = ls[k][1], dp = 8 / (tp * pp);
        lab_step_work w;
        double got = NAN, want = NAN, wall = NAN;
        if (lab_step_work_gpt(&w, &cfg, tp, 2, micro, f, b) != DT_OK ||
            lab_predict_step(&w, tp, pp, dp, &topo, &got) != DT_OK)
            printf("  lab_predict_step: %s\n", dt_last_error());
        if (lab_measure_step(&cfg, 2, micro, f, b, tp, pp, dp, net, &want, &wall) != DT_OK)
            printf("  lab_measure_step: %s\n", dt_last_error());
        printf("  | %d x %d x %d | %.3f ms | %.3f ms | %+.1f%% | %.2f ms |\n", tp, pp, dp,
               got * 1e3, want * 1e3, 100 * (got - want) / want, wall * 1e3);
    }
    return 0;
}
