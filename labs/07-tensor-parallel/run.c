/* run.c - lab 07's program (make run-lab LAB=07): tensor parallelism on the
 * tiny GPT, measured with your functions.
 *
 *   1. one block's communication, TP and TP + SP: collectives, bytes and
 *      modeled time against chapter 07's formulas (section 6); and why TP
 *      stays inside a node, for a GPT-3-sized layer (formulas only);
 *   2. memory per rank: the shard's parameters, one layer's activations
 *      against Korthikanti et al.'s formula (section 8);
 *   3. training: TP = 2 against TP = 1 on a sequence task, loss step for
 *      step (section 10); the curves in $BUILD/07-loss.svg;
 *   4. wall clock of one training step, TP = 2 on 2 ranks (thread and proc)
 *      against 1 rank, with the communication's share measured and
 *      predicted from the cost model (section 11).
 * Table 4 is run_wall.c's. `run --help` lists the options. */
#include "run.h"

#include "dt/cli.h"

#include "dt/data.h"
#include "dt/metrics.h"
#include "dt/net.h"
#include "dt/sim.h"
#include "dt/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 5000

/* The model of sections 1 to 3: vocabulary 32, context 16, 2 blocks, 4
 * heads, 64 channels; batches of 8 sequences (N = 128 rows). */
static const dt_gpt_config small = {32, 16, 2, 4, 64};
enum { SMALL_B = 8 };

dt_result launch(int t, dt_backend b, const char *net, dt_rank_fn fn, void *arg)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = t;
    o.backend = b;
    o.net = net;
    o.timeout_s = 60;
    return dt_launch(&o, fn, arg);
}

dt_result open_model(rank_model *r, dt_comm *c, const dt_gpt_config *cfg, size_t B, int sp,
                     size_t *param_bytes)
{
    dt_model whole = {0};
    dt_mem_stats m0, m1;
    memset(r, 0, sizeof *r);
    DT_CHECK(dt_gpt_create(&whole, cfg, 1));
    dt_result res = lab_tp_init(&r->tp, c, cfg, B, cfg->context, sp);
    dt_mem_stats_get(&m0);
    if (res == DT_OK)
        res = lab_tp_model_create(&r->m, &r->tp, &whole);
    dt_mem_stats_get(&m1);
    if (param_bytes)
        *param_bytes = m1.current[DT_MEM_PARAM] - m0.current[DT_MEM_PARAM];
    if (res == DT_OK)
        res = lab_tp_acts_create(&r->a, &r->tp, cfg->layers);
    dt_model_free(&whole);
    return res;
}

void close_model(rank_model *r)
{
    lab_tp_acts_free(&r->a);
    lab_tp_model_free(&r->m);
    lab_tp_free(&r->tp);
}

/* ================================================================ 1. communication */

typedef struct {
    int sp;
    long calls[2][3];      /* forward, backward: allreduce, reduce-scatter, allgather */
    uint64_t bytes[2];
    double time[2];        /* modeled seconds */
} comm_probe;

static void take_stats(dt_comm *c, comm_probe *p, int pass, double *clock)
{
    dt_stats st;
    dt_comm_stats(c, &st);
    p->calls[pass][0] = (long)st.calls[DT_COLL_ALLREDUCE];
    p->calls[pass][1] = (long)st.calls[DT_COLL_REDUCE_SCATTER];
    p->calls[pass][2] = (long)st.calls[DT_COLL_ALLGATHER];
    p->bytes[pass] = st.bytes_sent;
    p->time[pass] = dt_clock(c) - *clock;
    *clock = dt_clock(c);
    dt_comm_stats_reset(c);
}

/* One block's forward and backward, its collectives counted (rank 0
 * writes them into arg: thread backend). Compute is not charged to the
 * modeled clock, so the clock moves by the communication only. */
static dt_result block_comm_rank(dt_comm *c, void *arg)
{
    comm_probe *p = arg, mine = *p;
    dt_gpt_config cfg = small;
    cfg.layers = 1;
    rank_model r;
    DT_CHECK(dt_comm_set_algo(c, DT_ALGO_RING));
    dt_result res = open_model(&r, c, &cfg, SMALL_B, p->sp, NULL);
    size_t Nl = r.tp.Nl, C = cfg.channels;
    float *x = malloc(2 * Nl * C * sizeof(float));
    if (res == DT_OK && !x)
        res = dt_fail(DT_ERR_NOMEM, "block_comm_rank");
    if (res == DT_OK) {
        for (size_t i = 0; i < 2 * Nl * C; i++)
            x[i] = (float)((i * 7919) % 17) / 17.0f - 0.5f;
        lab_tp_block_w w = lab_tp_block(&r.m, r.m.params, 0), g = lab_tp_block(&r.m, r.m.grads, 0);
        res = dt_barrier(c);
        double clock = dt_clock(c);
        dt_comm_stats_reset(c);
        if (res == DT_OK)
            res = lab_tp_block_forward(&r.tp, &r.a.blocks[0], x, &w);
        take_stats(c, &mine, 0, &clock);
        if (res == DT_OK)
            res = lab_tp_block_backward(&r.tp, r.a.d[0], &g, x + Nl * C, x, &r.a.blocks[0], &w,
                                        r.a.d[1], r.a.d[2]);
        take_stats(c, &mine, 1, &clock);
    }
    if (res == DT_OK && dt_comm_rank(c) == 0)
        *p = mine;
    free(x);
    close_model(&r);
    return res;
}

static const char *calls_str(const long *k, char *buf, size_t len)
{
    if (k[0])
        snprintf(buf, len, "%ld allreduce", k[0]);
    else
        snprintf(buf, len, "%ld reduce-scatter + %ld allgather", k[1], k[2]);
    return buf;
}

static int comm_table(int t, const char *net)
{
    double a, b;
    dt_net_parse(net, &a, &b);
    double n = 4.0 * SMALL_B * small.context * small.channels; /* one activation, bytes */
    double half = (t - 1.0) / t * n, step = dt_net_ring_reduce_scatter(&(dt_net){.alpha = a, .beta = b}, n, t);
    printf("## 1. One block's communication: t = %d, N = %d x %zu rows, C = %zu "
           "(an activation: 4NC = %.0f bytes), ring, %s\n\n", t, SMALL_B, small.context,
           small.channels, n, net);
    printf("| layout | pass | collectives | bytes sent per rank | formula | modeled time | "
           "formula |\n|---|---|---|---|---|---|---|\n");
    for (int sp = 0; sp < 2; sp++) {
        comm_probe p = {.sp = sp};
        if (launch(t, DT_BACKEND_THREAD, net, block_comm_rank, &p) != DT_OK) {
            fprintf(stderr, "run: %s\n", dt_last_error());
            return 1;
        }
        /* TP: 2 allreduces each way; SP: the forward's 2 (RS + AG), the
         * backward's the same plus 2 allgathers of the inputs it did not keep */
        double f_bytes[2] = {4 * half, sp ? 6 * half : 4 * half};
        double f_time[2] = {4 * step, sp ? 6 * step : 4 * step};
        const char *f_txt[2] = {"2 x 2(t-1)/t 4NC", sp ? "3 x 2(t-1)/t 4NC" : "2 x 2(t-1)/t 4NC"};
        for (int pass = 0; pass < 2; pass++) {
            char buf[96];
            printf("| %s | %s | %s | %llu | %s = %.0f | %.2f us | %.2f us |\n",
                   sp ? "TP + SP" : "TP", pass ? "backward" : "forward",
                   calls_str(p.calls[pass], buf, sizeof buf), (unsigned long long)p.bytes[pass],
                   f_txt[pass], f_bytes[pass], p.time[pass] * 1e6, f_time[pass] * 1e6);
        }
    }
    printf("\n(modeled time formula: each reduce-scatter or allgather (t-1)(a + 4NC/(t b)), "
           "an allreduce twice that)\n\n");
    return 0;
}

/* Why TP stays inside a node: a GPT-3 175B layer (s = 2048, b = 1,
 * h = 12288, 16-bit) on t = 8, its 4 allreduces per step against its
 * compute on A100s (312 TFLOP/s peak, 50% of it). */
static void node_table(void)
{
    const double s = 2048, h = 12288, n = 2 * s * h, t = 8;
    const double flops = 2 * 3 * 12 * s * h * h / t; /* forward and backward, this rank */
    const double comp = flops / (0.5 * 312e12);
    static const char *nets[] = {"nvlink", "ib400", "ib100"};
    printf("Why TP stays inside a node: one GPT-3 layer (s = 2048, h = 12288, 16-bit, t = 8), "
           "forward + backward: 4 allreduces of 2sh = %.1f MB; compute %.2f ms per rank at "
           "156 TFLOP/s\n\n| link | alpha | beta | 4 allreduces | share of the step |\n"
           "|---|---|---|---|---|\n", n / 1e6, comp * 1e3);
    for (int i = 0; i < 3; i++) {
        double a, b;
        dt_net_preset(nets[i], &a, &b);
        double c = 4 * dt_net_ring_allreduce(&(dt_net){.alpha = a, .beta = b}, n, (int)t);
        printf("| %s | %.1f us | %.1f GB/s | %.2f ms | %.0f%% |\n", nets[i], a * 1e6, b / 1e9,
               c * 1e3, 100 * c / (c + comp));
    }
    printf("\n");
}

/* ================================================================ 2. memory */

typedef struct {
    int sp;
    size_t param, act;
} mem_probe;

static dt_result memory_rank(dt_comm *c, void *arg)
{
    mem_probe *p = arg, mine = *p;
    rank_model r;
    lab_tp_block_acts a;
    dt_mem_stats m0, m1;
    dt_result res = open_model(&r, c, &small, SMALL_B, p->sp, &mine.param);
    dt_mem_stats_get(&m0);
    if (res == DT_OK)
        res = lab_tp_block_acts_create(&a, &r.tp);
    dt_mem_stats_get(&m1);
    mine.act = m1.current[DT_MEM_ACT] - m0.current[DT_MEM_ACT];
    if (res == DT_OK)
        lab_tp_block_acts_free(&a);
    if (res == DT_OK && dt_comm_rank(c) == 0)
        *p = mine;
    close_model(&r);
    return res;
}

static int memory_table(void)
{
    const double s = (double)small.context, b = SMALL_B, h = (double)small.channels;
    const double heads = (double)small.heads;
    printf("## 2. Memory per rank: the shard's parameters, one layer's activations "
           "(s = %.0f, b = %.0f, h = %.0f, a = %.0f)\n\n", s, b, h, heads);
    /* replicated: wpe, lnf, per block 2 layernorms and 2 biases; split:
     * wte, lm_head, per block qkv, proj, fc, mproj (section 8) */
    size_t C = small.channels, L = small.layers;
    size_t rep = small.context * C + 2 * C + 6 * C * L;
    size_t split = 2 * small.vocab * C + L * (12 * C * C + 7 * C);
    printf("| t | SP | PARAM per rank | 4 (rep + split/t) | ACT per layer, measured | formula, "
           "float32 without dropout | measured / formula | paper (16-bit, dropout) |\n"
           "|---|---|---|---|---|---|---|---|\n");
    for (int t = 1; t <= 4; t *= 2)
        for (int sp = 0; sp < 2; sp++) {
            mem_probe p = {.sp = sp};
            if (launch(t, DT_BACKEND_THREAD, "none", memory_rank, &p) != DT_OK) {
                fprintf(stderr, "run: %s\n", dt_last_error());
                return 1;
            }
            double f = dt_sim_act_bytes_layer(s, b, h, heads, t, sp, 4, 0);
            double paper = dt_sim_act_bytes_layer(s, b, h, heads, t, sp, 2, 1);
            printf("| %d | %s | %zu | %zu | %zu | %.0f | %.3f | %.0f |\n", t, sp ? "yes" : "no",
                   p.param, 4 * (rep + split / (size_t)t), p.act, f, (double)p.act / f, paper);
        }
    printf("\n(rep = %zu replicated floats, split = %zu floats of split tensors in the whole "
           "model)\n\n", rep, split);
    return 0;
}

/* ================================================================ 3. training */

typedef struct {
    int steps;
    const dt_dataset *data;
    float loss[MAX_STEPS];
} train_probe;

typedef struct {
    train_probe *p;
    int record;             /* rank 0 of the group records the losses */
} train_report;

/* dt_train's report after every step: the step's loss. */
static void on_step(void *arg, const dt_train_progress *pr)
{
    const train_report *rep = arg;
    if (rep->record && pr->step >= 1 && pr->step <= rep->p->steps)
        rep->p->loss[pr->step - 1] = pr->loss;
}

/* The library's loop over the data set (dt_train), with the lab's hooks:
 * every rank of the group takes the same batches, from the sampler of a
 * data-parallel group of one. */
static dt_result train_rank(dt_comm *c, void *arg)
{
    train_probe *p = arg;
    rank_model r;
    lab_tp_train s = {0};
    dt_optim_config oc = dt_adamw_config(3e-3f);
    train_report rep = {p, dt_comm_rank(c) == 0};
    dt_train_config tc = dt_train_defaults();
    dt_train_result res_run;
    tc.batch = SMALL_B, tc.steps = p->steps, tc.seed = 5, tc.report_every = 1;
    tc.progress = on_step, tc.progress_arg = &rep;
    dt_result res = open_model(&r, c, &small, SMALL_B, 0, NULL);
    if (res == DT_OK)
        res = lab_tp_train_init(&s, &r.tp, &r.m, &r.a, &oc, 1.0f);
    if (res == DT_OK)
        res = dt_train(&s.trainer, p->data, &tc, &res_run);
    lab_tp_train_free(&s);
    close_model(&r);
    return res;
}

static int training(int steps, const char *svg)
{
    static train_probe one, two; /* large: not on the stack */
    dt_dataset d = {0};
    if (dt_data_sequences(&d, 1024, small.context, small.vocab, 5, 0) != DT_OK)
        return fprintf(stderr, "run: %s\n", dt_last_error()), 1;
    one.steps = two.steps = steps, one.data = two.data = &d;
    int bad = launch(1, DT_BACKEND_THREAD, "none", train_rank, &one) != DT_OK ||
              launch(2, DT_BACKEND_THREAD, "none", train_rank, &two) != DT_OK;
    dt_dataset_free(&d);
    if (bad)
        return fprintf(stderr, "run: %s\n", dt_last_error()), 1;
    printf("## 3. Training: gpt:%zu,%zu,%zu,%zu,%zu, batch %d x %zu, AdamW 3e-3, clip 1.0, "
           "sequences mod %zu\n\n| step | loss, TP = 1 | loss, TP = 2 | difference |\n"
           "|---|---|---|---|\n", small.vocab, small.context, small.layers, small.heads,
           small.channels, SMALL_B, small.context, small.vocab);
    double worst = 0, x[MAX_STEPS], y1[MAX_STEPS], y2[MAX_STEPS];
    for (int s = 0; s < steps; s++) {
        double d1 = fabs((double)two.loss[s] - one.loss[s]);
        worst = d1 > worst ? d1 : worst;
        x[s] = s + 1, y1[s] = one.loss[s], y2[s] = two.loss[s];
        if (s % 25 == 0 || s == steps - 1)
            printf("| %d | %.6f | %.6f | %.1e |\n", s + 1, (double)one.loss[s],
                   (double)two.loss[s], d1);
    }
    printf("\nlargest difference over the %d steps: %.2e\n\n", steps, worst);
    dt_plot *pl = NULL;
    dt_result r = dt_plot_create(&pl, "tiny GPT, TP = 1 and TP = 2", "step", "loss");
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "TP = 1", x, y1, (size_t)steps, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "TP = 2", x, y2, (size_t)steps, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_write_svg(pl, svg);
    dt_plot_free(pl);
    if (r != DT_OK)
        return fprintf(stderr, "run: %s\n", dt_last_error()), 1;
    printf("wrote %s\n\n", svg);
    return 0;
}

/* ================================================================ main */

int main(int argc, char **argv)
{
    int steps = 300, t = 2, no_wall = 0;
    char svg_default[4096];
    snprintf(svg_default, sizeof svg_default, "%s/07-loss.svg", dt_cli_build_dir());
    const char *net = "nvlink", *svg = svg_default;
    static const char *const tps[] = {"1", "2", "4", NULL};
    int tp = 1; /* index in tps */
    const dt_opt opts[] = {
        {"--steps", DT_OPT_INT, &steps, .help = "training steps of table 3", .lo = 1,
         .hi = MAX_STEPS},
        {"--ranks", DT_OPT_CHOICE, &tp, .help = "tensor-parallel ranks t of tables 1 and 2",
         .choices = tps},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network of table 1"},
        {"--no-wall", DT_OPT_FLAG, &no_wall, .help = "without table 4 (the wall clock)"},
        {"--svg", DT_OPT_FILE, &svg, .help = "the loss curves of table 3"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 07: tensor parallelism on the tiny GPT, measured with your "
                           "functions: communication, memory, training, wall clock."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    t = atoi(tps[tp]);
    if (comm_table(t, net))
        return 1;
    node_table();
    if (memory_table() || training(steps, svg))
        return 1;
    return no_wall ? 0 : wall_table();
}
