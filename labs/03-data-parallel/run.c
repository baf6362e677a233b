/* run.c - lab 03's program: `make run-lab LAB=03 [ARGS="--ranks 4 --net eth10
 * --svg chapters/figures/03-overlap.svg"]`.
 *
 * Runs your DDP (ddp.c) and prints the measurements that confirm the
 * chapter's formulas:
 *   1. K ranks with batch B end with the parameters of one rank with batch
 *      K*B, and all ranks hold the same bits;
 *   2. one allreduce of P floats sends 2 (K-1)/K * 4P bytes per rank and
 *      takes 2 (K-1) (alpha + 4P / (K beta)) of modeled time;
 *   3. buckets and overlap: modeled step time without and with overlap,
 *      against T_fwd + T_bwd + T_comm and T_fwd + max(T_bwd, T_comm);
 *   4. accumulation: allreduces and modeled time per global batch;
 *   5. memory per rank by tag (the library's accounting, dt_mem): the
 *      parameters, gradients and momentum are 4P bytes each whatever K,
 *      only the activations shrink with the batch per rank.
 * With --example it runs only the worked example of section 5: one
 * allreduce of a 25 M-parameter model's gradient (100 MB) on 8 ranks, on
 * NVLink, InfiniBand 100 Gb/s and 10 Gb Ethernet, against the formula.
 * With --svg it also draws rank 0's last step, without and with overlap,
 * as a Gantt chart of the modeled clock (compute and bucket allreduces),
 * read back from the communicator's trace. Collectives run the ring
 * algorithm, so that the measured times are those of the ring formula. */
#include "ddp.h"
#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RANKS 16
#define FEATURES 64
#define SPEC "deep:64,512,8,10" /* 10 layers, 2.14 M parameters (8.56 MB of gradients) */
#define DEVICE_FLOPS 30e9       /* the modeled device: 30 GFLOP/s */

typedef struct {
    const char *net, *spec; /* network; model (SPEC unless another) */
    int K;
    lab_ddp_mode mode;
    size_t bucket_bytes, micro_B;
    int micro_steps, steps;
    int modeled;            /* charge FLOP-modeled compute time */
    int allreduce_only;     /* no step: one lab_ddp_allreduce_flat */
    const char *trace;      /* the communicator's trace file, or NULL */
    /* per rank, out */
    struct {
        double step_s, step_start, comp_s;
        uint64_t bytes, allreduces;
        int buckets;
        float *params;      /* rank 0: a copy of its final parameters */
        uint64_t digest;    /* of the final parameters */
        dt_mem_stats mem;   /* the rank's accounting at the end (peaks per tag) */
    } out[MAX_RANKS];
} job;

/* The step as the job lives it: from when the last rank starts it to when
 * the last rank ends it. Ranks enter a step with different clocks (the
 * broadcast before it reaches them one after another), so one rank's own
 * span can be shorter than the collective's cost. */
static double job_step_s(const job *j)
{
    double start = j->out[0].step_start, end = start + j->out[0].step_s;
    for (int r = 1; r < j->K; r++) {
        start = fmax(start, j->out[r].step_start);
        end = fmax(end, j->out[r].step_start + j->out[r].step_s);
    }
    return end - start;
}

static uint64_t digest(const float *p, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the bytes */
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n * sizeof *p; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* Modeled compute of one micro-batch of B samples: a linear layer of
 * C inputs and OC outputs costs 2 B C OC FLOPs forward, twice that backward. */
static void model_cost(const dt_model *m, size_t B, double *fwd, double *bwd)
{
    *fwd = 0;
    for (int i = 0; i < m->num_layers; i++) {
        double f = 2.0 * (double)B * (double)m->layers[i].in_width * (double)m->layers[i].out_width;
        *fwd += f / DEVICE_FLOPS;
        bwd[i] = 2 * f / DEVICE_FLOPS;
    }
}

static dt_result rank_fn(dt_comm *world, void *arg)
{
    job *j = arg;
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    size_t rows = j->micro_B * (size_t)j->micro_steps;
    dt_dataset data = {0};
    dt_model m = {0};
    lab_ddp d;
    double bwd[64];
    lab_ddp_cost cost = {0, bwd};
    dt_optim_config cfg = dt_sgd_config(0.05f, 0.9f, 0);
    dt_stats st;
    DT_CHECK(dt_data_blobs(&data, 2048, FEATURES, 10, 2.0f, 5, 0));
    float *x = malloc(rows * FEATURES * sizeof *x);
    int32_t *y = malloc(rows * sizeof *y);
    size_t *idx = malloc(rows * sizeof *idx);
    dt_result r = x && y && idx ? DT_OK : dt_fail(DT_ERR_NOMEM, "run: batch");
    /* Different seeds: the broadcast makes them one model. The worked
     * example's values do not matter (one allreduce on the modeled clock):
     * one seed, so that its 25 M values are drawn once, not once a rank. */
    uint64_t seed = j->allreduce_only ? 1 : 1 + (uint64_t)rank;
    if (r == DT_OK)
        r = dt_model_create_spec(&m, j->spec ? j->spec : SPEC, seed);
    if (r == DT_OK && m.num_layers > 64)
        r = dt_fail(DT_ERR_INVALID_ARG, "run: too many layers");
    if (r == DT_OK)
        model_cost(&m, j->micro_B, &cost.forward_s, bwd);
    if (r == DT_OK)
        r = lab_ddp_init(&d, world, &m, j->mode, j->bucket_bytes, &cfg, j->modeled ? &cost : NULL);
    if (r != DT_OK)
        goto out;
    if (j->allreduce_only) { /* the gradient as the backward left it: zeros, same cost */
        double t0 = dt_clock(world);
        r = dt_comm_stats_reset(world);
        if (r == DT_OK)
            r = lab_ddp_allreduce_flat(&d, 1.0f / (float)K);
        j->out[rank].step_start = t0;
        j->out[rank].step_s = dt_clock(world) - t0;
    }
    for (int t = 0; r == DT_OK && !j->allreduce_only && t < j->steps; t++) {
        double t0 = dt_clock(world);
        r = dt_comm_stats_reset(world);
        if (r == DT_OK)
            r = lab_ddp_local_batch(data.n, 7, rank, K, 0, (size_t)t, rows, idx);
        if (r == DT_OK)
            r = dt_data_gather(&data, idx, rows, x, NULL, y);
        if (r == DT_OK)
            r = lab_ddp_step(&d, x, y, j->micro_B, j->micro_steps, NULL);
        j->out[rank].step_start = t0;
        j->out[rank].step_s = dt_clock(world) - t0;
    }
    if (r == DT_OK)
        r = dt_comm_stats(world, &st);
    j->out[rank].bytes = st.bytes_sent;
    j->out[rank].allreduces = st.calls[DT_COLL_ALLREDUCE];
    j->out[rank].buckets = d.num_buckets;
    j->out[rank].comp_s = j->modeled ? cost.forward_s * j->micro_steps : 0;
    for (int i = 0; j->modeled && i < m.num_layers; i++)
        j->out[rank].comp_s += bwd[i] * j->micro_steps;
    dt_mem_stats_get(&j->out[rank].mem);
    j->out[rank].digest = digest(m.params, m.num_params);
    if (r == DT_OK && rank == 0 && (j->out[0].params = malloc(m.num_params * sizeof(float))))
        memcpy(j->out[0].params, m.params, m.num_params * sizeof(float));
    lab_ddp_free(&d);
out:
    dt_model_free(&m);
    dt_dataset_free(&data);
    free(x), free(y), free(idx);
    return r;
}

static int run_job(job *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = j->K;
    o.backend = DT_BACKEND_THREAD;
    o.net = j->net;
    o.algo = DT_ALGO_RING;
    o.timeout_s = 60;
    o.trace_path = j->trace;
    dt_result r = dt_launch(&o, rank_fn, j);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s: %s\n", dt_strerror(r), dt_last_error());
        return -1;
    }
    return 0;
}

static job base(const char *net, int K, lab_ddp_mode mode, size_t bucket, size_t B, int m)
{
    job j;
    memset(&j, 0, sizeof j);
    j.net = net, j.K = K, j.mode = mode, j.bucket_bytes = bucket;
    j.micro_B = B, j.micro_steps = m, j.steps = 2, j.modeled = 1;
    return j;
}

/* ------------------------------------------------------------ 1. equivalence */

static int equivalence(void)
{
    printf("1. K ranks with batch B vs one rank with batch K*B (%s, 4 steps, SGD momentum)\n",
           SPEC);
    printf("   %-3s %-8s %-12s %-20s %s\n", "K", "batch/rk", "global batch", "max rel. difference",
           "ranks identical");
    for (int K = 2; K <= 4; K += 2) {
        job a = base("none", K, LAB_DDP_OVERLAP, 1 << 20, 8, 1), b = base("none", 1,
                                                                        LAB_DDP_FLAT, 0, 8 * K, 1);
        a.steps = b.steps = 4;
        a.modeled = b.modeled = 0;
        if (run_job(&a) || run_job(&b))
            return -1;
        double dmax = 0, bmax = 0;
        size_t n = 0;
        dt_model tmp = {0};
        if (dt_model_create_spec(&tmp, SPEC, 1) == DT_OK)
            n = tmp.num_params;
        dt_model_free(&tmp);
        for (size_t i = 0; i < n && a.out[0].params && b.out[0].params; i++) {
            dmax = fmax(dmax, fabs((double)a.out[0].params[i] - b.out[0].params[i]));
            bmax = fmax(bmax, fabs((double)b.out[0].params[i]));
        }
        int same = 1;
        for (int r = 1; r < K; r++)
            same &= a.out[r].digest == a.out[0].digest;
        printf("   %-3d %-8d %-12d %-20.2e %s\n", K, 8, 8 * K, dmax / bmax, same ? "yes" : "NO");
        free(a.out[0].params), free(b.out[0].params);
    }
    return 0;
}

/* ------------------------------------------------------------ 2. one allreduce */

static int flat_cost(const char *net, int K)
{
    dt_net link;
    dt_model m = {0};
    if (dt_net_link(net, &link) != DT_OK || dt_model_create_spec(&m, SPEC, 1) != DT_OK)
        return -1;
    double n = 4.0 * (double)m.num_params;
    dt_model_free(&m);
    printf("\n2. One allreduce of the flat gradient (%.2f MB) on %s, per rank per step\n",
           n / 1e6, net);
    printf("   %-3s %-14s %-14s %-16s %-16s\n", "K", "bytes sent", "2(K-1)/K*n", "T_comm modeled",
           "2(K-1)(a+n/Kb)");
    for (int k = 2; k <= K; k *= 2) {
        job j = base(net, k, LAB_DDP_FLAT, 0, 8, 1);
        j.modeled = 0;
        if (run_job(&j))
            return -1;
        printf("   %-3d %-14llu %-14.0f %10.3f ms    %10.3f ms\n", k,
               (unsigned long long)j.out[0].bytes, 2.0 * (k - 1) / k * n, job_step_s(&j) * 1e3,
               dt_net_ring_allreduce(&link, n, k) * 1e3);
        free(j.out[0].params);
    }
    return 0;
}

/* ------------------------------------------------------------ 3. buckets, overlap */

static int overlap_table(const char *net, int K)
{
    static const size_t caps[] = {LAB_DDP_BUCKET_BYTES, 4 << 20, 2 << 20, 1 << 20};
    printf("\n3. Buckets and overlap, K = %d on %s, modeled device %.0f GFLOP/s, batch 32/rank\n",
           K, net, DEVICE_FLOPS / 1e9);
    printf("   %-9s %-7s %-9s %-9s %-9s %-11s %-9s %-11s\n", "bucket", "buckets", "T_fwd",
           "T_bwd", "T_comm", "no overlap", "overlap", "fwd+max()");
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        job a = base(net, K, LAB_DDP_BUCKETS, caps[c], 32, 1);
        job b = base(net, K, LAB_DDP_OVERLAP, caps[c], 32, 1);
        if (run_job(&a) || run_job(&b))
            return -1;
        dt_model m = {0};
        double bwd[64], fwd;
        if (dt_model_create_spec(&m, SPEC, 1) != DT_OK)
            return -1;
        model_cost(&m, 32, &fwd, bwd);
        double t_bwd = a.out[0].comp_s - fwd, t_comm = job_step_s(&a) - a.out[0].comp_s;
        dt_model_free(&m);
        printf("   %-6.2f MB %-7d %6.2f ms %6.2f ms %6.2f ms %8.2f ms %6.2f ms %8.2f ms\n",
               (double)caps[c] / (1 << 20), b.out[0].buckets, fwd * 1e3, t_bwd * 1e3,
               t_comm * 1e3, job_step_s(&a) * 1e3, job_step_s(&b) * 1e3,
               (fwd + fmax(t_bwd, t_comm)) * 1e3);
        free(a.out[0].params), free(b.out[0].params);
    }
    return 0;
}

/* ------------------------------------------------------------ 4. accumulation */

static int accumulation(const char *net, int K)
{
    printf("\n4. Gradient accumulation, K = %d on %s, micro-batch 16/rank (FLAT)\n", K, net);
    printf("   %-12s %-13s %-16s %-11s %-11s %s\n", "micro-steps", "global batch",
           "allreduces/step", "T_step", "T_comm", "comm share");
    for (int m = 1; m <= 4; m *= 2) {
        job j = base(net, K, LAB_DDP_FLAT, 0, 16, m);
        if (run_job(&j))
            return -1;
        double t_step = job_step_s(&j), t_comm = t_step - j.out[0].comp_s;
        printf("   %-12d %-13d %-16llu %8.2f ms %8.2f ms %6.0f %%\n", m, K * 16 * m,
               (unsigned long long)j.out[0].allreduces, t_step * 1e3, t_comm * 1e3,
               100 * t_comm / t_step);
        free(j.out[0].params);
    }
    return 0;
}

/* ------------------------------------------------------------ 5. memory per rank */

/* The activations the library's reference path keeps for a batch of B
 * rows of an MLP, in floats: its input, every layer's output, two
 * ping-pong buffers of the widest layer for the backward, the softmax's
 * probabilities. */
static double act_floats(const dt_model *m, size_t B)
{
    double sum = (double)m->layers[0].in_width, maxw = sum;
    for (int i = 0; i < m->num_layers; i++) {
        sum += (double)m->layers[i].out_width;
        maxw = fmax(maxw, (double)m->layers[i].out_width);
    }
    return (double)B * (sum + 2 * maxw + (double)m->num_classes);
}

/* Section 1's table measured: each rank's peak bytes per tag after two
 * steps (FLAT, SGD with momentum), one rank with the global batch against
 * K ranks with a K-th of it each. Predicted: 4P bytes each for the
 * parameters, the gradients and the momentum, whatever K; the activations
 * of the rank's own batch (act_floats); the ring allreduce's scratch, two
 * blocks of n/K (none on one rank). */
static int memory_table(int K)
{
    static const char *specs[] = {SPEC, "mlp:64,512,512,10"};
    const size_t global = 128;
    printf("\n5. Memory per rank by tag (peak bytes, the library's accounting), global batch "
           "%zu, SGD momentum\n", global);
    printf("   %-18s %-2s %-5s %8s %8s %8s %8s %8s %8s | %8s %8s %8s | %s\n", "model", "K",
           "batch", "param", "grad", "optim", "act", "comm", "other", "4P", "act", "2n/K",
           "ranks alike");
    for (size_t s = 0; s < sizeof specs / sizeof specs[0]; s++) {
        dt_model m = {0};
        if (dt_model_create_spec(&m, specs[s], 1) != DT_OK)
            return -1;
        double n = 4.0 * (double)m.num_params;
        for (int i = 0; i < 2; i++) {
            int k = i ? K : 1;
            size_t B = global / (size_t)k;
            job j = base("none", k, LAB_DDP_FLAT, 0, B, 1);
            j.spec = specs[s], j.modeled = 0;
            if (run_job(&j))
                return dt_model_free(&m), -1;
            const size_t *pk = j.out[0].mem.peak;
            int alike = 1;
            for (int r = 1; r < k; r++)
                alike &= memcmp(j.out[r].mem.peak, pk, sizeof j.out[r].mem.peak) == 0;
            printf("   %-18s %-2d %-5zu", specs[s], k, B);
            for (int t = DT_MEM_PARAM; t <= DT_MEM_OTHER; t++)
                printf(" %5.2f MB", (double)pk[t] / 1e6);
            printf(" | %5.2f MB %5.2f MB %5.2f MB | %s\n", n / 1e6, 4 * act_floats(&m, B) / 1e6,
                   k > 1 ? 2 * n / k / 1e6 : 0.0, alike ? "yes" : "NO");
            free(j.out[0].params);
        }
        dt_model_free(&m);
    }
    printf("   (rank 0's peaks. optim: the momentum, P floats; comm: the communicator's "
           "scratch;\n   other: this program's data set, 2048 samples of 64 features)\n");
    return 0;
}

/* ------------------------------------------------------------ --example */

/* Section 5's worked example on the modeled clock: one allreduce of the
 * gradient of a 25 M-parameter model (a single linear layer 4999 -> 5000:
 * 4999 x 5000 weights + 5000 biases = 25,000,000 floats, n = 100 MB) on 8
 * ranks, by the lab's lab_ddp_allreduce_flat, against
 * T_ring = 2(K-1)(alpha + n/(K beta)). */
static int worked_example(void)
{
    static const char *nets[] = {"nvlink", "ib100", "eth10"};
    const int K = 8;
    const char *spec = "mlp:4999,5000";
    printf("Section 5's worked example: one allreduce of a 25 M-parameter model's gradient "
           "(%s),\nn = 100 MB, on %d ranks (ring), modeled clock\n", spec, K);
    printf("   %-7s %7s %12s %16s %16s %16s\n", "network", "alpha", "beta", "bytes sent/rank",
           "T_comm modeled", "2(K-1)(a+n/Kb)");
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        dt_net link;
        if (dt_net_link(nets[i], &link) != DT_OK)
            return -1;
        job j = base(nets[i], K, LAB_DDP_FLAT, 0, 1, 1);
        j.spec = spec, j.modeled = 0, j.allreduce_only = 1;
        if (run_job(&j))
            return -1;
        printf("   %-7s %4.1f us %6.2f GB/s %16llu %13.3f ms %13.3f ms\n", nets[i],
               link.alpha * 1e6, link.beta / 1e9, (unsigned long long)j.out[0].bytes,
               job_step_s(&j) * 1e3, dt_net_ring_allreduce(&link, 100e6, K) * 1e3);
        free(j.out[0].params);
    }
    return 0;
}

/* ------------------------------------------------------------ the figure */

/* Adds rank 0's regions of the step that started at t0 from a trace file
 * (modeled process, pid 1) to rows row (compute) and row + 1 (allreduces
 * of track `lane`: 0 blocking calls, 1 async operations). */
static int gantt_from_trace(dt_gantt *g, const char *path, double t0, int row, int lane)
{
    FILE *f = fopen(path, "r");
    char line[512], name[32], cat[16];
    int pid, tid, nbwd = 0, ncomm = 0;
    double ts, dur;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "{\"name\":\"%31[^\"]\",\"cat\":\"%15[^\"]\",\"ph\":\"X\",\"pid\":%d,"
                   "\"tid\":%d,\"ts\":%lf,\"dur\":%lf", name, cat, &pid, &tid, &ts, &dur) != 6)
            continue;
        double s = ts * 1e-6 - t0, e = (ts + dur) * 1e-6 - t0;
        if (pid != 1 || tid / 2 != 0 || dur <= 0 || s < -1e-9)
            continue; /* rank 0's modeled regions of the step */
        char label[16];
        if (strcmp(cat, "compute") == 0) {
            int fwd = nbwd++ == 0;
            snprintf(label, sizeof label, fwd ? "fwd" : "L%d", 10 - (nbwd - 1));
            dt_gantt_add(g, row, s * 1e3, e * 1e3, fwd ? "forward" : "backward", label);
        } else if (strcmp(name, "allreduce") == 0 && tid % 2 == lane) {
            snprintf(label, sizeof label, "b%d", ncomm++);
            dt_gantt_add(g, row + 1, s * 1e3, e * 1e3, "allreduce", label);
        }
    }
    fclose(f);
    return 0;
}

static int figure(const char *net, int K, const char *svg)
{
    char trace[2][4200];
    dt_gantt *g = NULL;
    int rc = -1;
    for (int i = 0; i < 2; i++) {
        /* the traces go beside the figure (where the user writes), and then away */
        snprintf(trace[i], sizeof trace[i], "%s.trace-%d.json", svg, i);
        job j = base(net, K, i ? LAB_DDP_OVERLAP : LAB_DDP_BUCKETS, 1 << 20, 32, 1);
        j.steps = 1;
        j.trace = trace[i];
        if (run_job(&j))
            goto out;
        free(j.out[0].params);
        char title[160];
        snprintf(title, sizeof title, "rank 0, one step, %d buckets, K = %d on %s: serial (top), "
                 "overlapped (bottom)", j.out[0].buckets, K, net);
        if (i == 0 && dt_gantt_create(&g, title, "modeled time (ms)", 4) != DT_OK)
            goto out;
        if (gantt_from_trace(g, trace[i], j.out[0].step_start, 2 * i, i))
            goto out;
    }
    for (int row = 0; row < 4; row++)
        dt_gantt_set_row_label(g, row, row % 2 ? "allreduce" : "compute");
    if (dt_gantt_write_svg(g, svg) == DT_OK) {
        printf("\nwrote %s\n", svg);
        rc = 0;
    }
out:
    if (rc)
        fprintf(stderr, "run: the figure failed: %s\n", dt_last_error());
    dt_gantt_free(g);
    remove(trace[0]), remove(trace[1]);
    return rc;
}

int main(int argc, char **argv)
{
    int K = 4, example = 0;
    const char *net = "eth10", *svg = NULL;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &K, .help = "ranks", .lo = 2, .hi = MAX_RANKS},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--svg", DT_OPT_FILE, &svg, .help = "also draw rank 0's last step, without and with "
         "overlap (a Gantt chart of the modeled clock)"},
        {"--example", DT_OPT_FLAG, &example, .help = "only section 5's worked example (8 ranks, "
         "100 MB: about 1.8 GB of memory), alone"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 03: your DDP (ddp.c) and the measurements that confirm "
                           "chapter 03's formulas."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (example && argc != 2)
        return dt_cli_fail(&cli, "--example runs alone (it has its ranks and networks)");
    if (example)
        return worked_example() ? 1 : 0;
    if (equivalence() || flat_cost(net, K) || overlap_table(net, K) || accumulation(net, K) ||
        memory_table(K))
        return 1;
    if (svg && figure(net, K, svg))
        return 1;
    return 0;
}
