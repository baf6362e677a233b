/* threed.c - chapter 13's table of the planner against the emulator: the
 * tiny GPT (8 blocks, 4 heads of 8 channels, context 8, vocabulary 32)
 * trained on every layout TP x PP x DP of 8 thread ranks on two nodes of
 * 4 (a fast link inside a node, a slow one between), with modeled compute:
 * each layer's forward charges a TP rank its share, FLOPs / t, at PEAK
 * FLOP/s, the backward twice that. Printed per layout: the emulator's modeled time of one step
 * (the third; the largest over the ranks), lib/sim's planner (dtsim) on a
 * cluster of the same links and peak (matmul and network efficiencies 1,
 * no memory-bound time), its error, and the step's wall time.
 *
 *   threed [--net SPEC] [--micro M] [--rounds R]    (bash bench/threed.sh)
 *
 * The modeled figures are the same on every run; the wall time is the
 * median over R runs (default 5) of the slowest rank's step.
 *
 * The planner prices what Megatron's GPT does; the library's GPT differs
 * where the table shows it: its head's allreduces (the vocabulary-parallel
 * cross-entropy), pipeline sends of the whole activation rather than
 * 1/t of it, and the embedding and head as layers of the cut. */
#include "dt/dt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PEAK 2.048e10 /* FLOP/s: a block's forward of one micro-batch in 20 us */
static const dt_gpt_config cfg = {32, 8, 8, 4, 32};
enum { B = 2, NL = 10 /* the embedding, 8 blocks, the head */ };

typedef struct {
    int tp, pp, m;
    double f[NL], b[NL];
} job;

typedef struct {
    double seconds, wall;
} result;

static dt_result rank(dt_comm *world, void *arg)
{
    const job *j = arg;
    dt_model whole = {0};
    dt_parallel x;
    dt_schedule *s = NULL;
    memset(&x, 0, sizeof x);
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    tc.clock = DT_CLOCK_MODELED;
    tc.forward_layer_s = j->f, tc.backward_s = j->b;
    for (int l = 0; l < NL; l++)
        tc.forward_s += j->f[l];
    size_t rows = (size_t)j->m * B * cfg.context;
    int32_t *tok = malloc(rows * sizeof *tok), *y = malloc(rows * sizeof *y);
    dt_result r = tok && y ? dt_gpt_create(&whole, &cfg, 1) : dt_fail(DT_ERR_NOMEM, "batch");
    if (r == DT_OK && j->pp > 1)
        r = dt_sched_named(&s, "1f1b", j->pp, 1, j->m);
    if (r == DT_OK)
        r = dt_parallel_init(&x, world, &whole, j->tp, j->pp, s, &tc);
    result o = {0, 0};
    for (int k = 0; r == DT_OK && k < 3; k++) {
        for (size_t i = 0; i < rows; i++)
            tok[i] = (int32_t)((i * 7 + (size_t)k + (size_t)x.groups.dp_rank) % cfg.vocab),
            y[i] = (int32_t)((i * 5 + 1) % cfg.vocab);
        dt_batch bt = {NULL, tok, y, B, cfg.context, j->m};
        r = dt_barrier(world);
        double t0 = dt_clock(world), w0 = dt_now();
        if (r == DT_OK)
            r = dt_train_step(&x.trainer, &bt);
        o.seconds = dt_clock(world) - t0, o.wall = dt_now() - w0;
    }
    result *slot = dt_rank_out(world);
    if (slot)
        *slot = o;
    dt_parallel_free(&x);
    dt_sched_free(s);
    dt_model_free(&whole);
    free(tok), free(y);
    return r;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    const char *net = "nodes=2,per_node=4,intra.alpha=2us,intra.bw=20GB/s,"
                      "inter.alpha=20us,inter.bw=1GB/s";
    int m = 4, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--net") && i + 1 < argc)
            net = argv[++i];
        else if (!strcmp(argv[i], "--micro") && i + 1 < argc && atoi(argv[i + 1]) >= 1)
            m = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc && atoi(argv[i + 1]) >= 1 &&
                 atoi(argv[i + 1]) <= 99)
            rounds = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: threed [--net SPEC] [--micro M >= 1] [--rounds 1..99]\n");
            return 2;
        }
    }
    dt_net_topo topo;
    if (dt_net_topo_parse(net, &topo) != DT_OK || topo.per_node < 1) {
        fprintf(stderr, "threed: --net %s: %s\n", net,
                topo.per_node < 1 ? "a topology with per_node is needed" : dt_last_error());
        return 2;
    }
    /* per token, a block's forward 8h^2 + 4hf + 4sh FLOPs (f = 4h), the
       head's logits 2hV, the embedding a lookup (none) */
    double h = (double)cfg.channels, s = (double)cfg.context, tokens = B * s;
    job j = {0, 0, m, {0}, {0}};
    dt_sim_model sm = {(int)cfg.layers, (int)cfg.channels, (int)cfg.heads, 4 * (int)cfg.channels,
                       (int)cfg.context, (int)cfg.vocab, 0};
    dt_sim_cluster c = {"emulator", net, PEAK, PEAK, 1e12, 1e30, topo.per_node, topo.intra,
                        topo.inter, 1, 1};
    printf("network %s; %d micro-batches of %d sequences per replica; compute at %.4g "
           "GFLOP/s\n\n", net, m, B, PEAK / 1e9);
    printf("| TP x PP x DP | emulator (modeled) | dtsim | dtsim error | wall clock of the step (median) |\n");
    printf("|---|---:|---:|---:|---:|\n");
    static const int layouts[][2] = {{1, 1}, {2, 1}, {4, 1}, {1, 2}, {1, 4}, {1, 8},
                                     {2, 2}, {2, 4}, {4, 2}};
    double sum = 0, worst = 0;
    int n = 0;
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++) {
        j.tp = layouts[k][0], j.pp = layouts[k][1];
        int dp = 8 / (j.tp * j.pp);
        for (int l = 1; l <= (int)cfg.layers; l++)
            j.f[l] = tokens * (8 * h * h + 16 * h * h + 4 * s * h) / PEAK / j.tp;
        j.f[NL - 1] = tokens * 2 * h * (double)cfg.vocab / PEAK / j.tp;
        for (int l = 0; l < NL; l++)
            j.b[l] = 2 * j.f[l];
        double emu = 0, walls[99];
        for (int i = 0; i < rounds; i++) {
            result out[8];
            dt_launch_opts o;
            dt_launch_opts_init(&o);
            o.nranks = 8, o.backend = DT_BACKEND_THREAD, o.net = net, o.algo = DT_ALGO_RING;
            o.out = out, o.out_bytes = sizeof *out;
            if (dt_launch(&o, rank, &j) != DT_OK) {
                fprintf(stderr, "threed: TP %d PP %d: %s\n", j.tp, j.pp, dt_last_error());
                return 1;
            }
            walls[i] = 0;
            for (int r = 0; r < 8; r++)
                emu = fmax(emu, out[r].seconds), walls[i] = fmax(walls[i], out[r].wall);
        }
        qsort(walls, (size_t)rounds, sizeof *walls, by_value);
        double wall = rounds % 2 ? walls[rounds / 2]
                                 : (walls[rounds / 2 - 1] + walls[rounds / 2]) / 2;
        dt_sim_layout l = {j.tp, j.pp, dp, 1, 0, dp * m * B, B, DT_SIM_RECOMPUTE_NONE, 0,
                           DT_SIM_FP32, DT_SIM_1F1B};
        dt_sim_cost plan;
        if (dt_sim_plan(&sm, &l, &c, &plan) != DT_OK) {
            fprintf(stderr, "threed: dtsim TP %d PP %d: %s\n", j.tp, j.pp, dt_last_error());
            return 1;
        }
        double err = (plan.step_s - emu) / emu;
        sum += fabs(err), worst = fmax(worst, fabs(err)), n++;
        printf("| %d x %d x %d | %.3f ms | %.3f ms | %+.1f%% | %.2f ms |\n", j.tp, j.pp, dp,
               emu * 1e3, plan.step_s * 1e3, 100 * err, wall * 1e3);
    }
    printf("\ndtsim against the emulator: mean error %.1f%%, largest %.1f%%\n", 100 * sum / n,
           100 * worst);
    return 0;
}
