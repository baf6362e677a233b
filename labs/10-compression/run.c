/* run.c - lab 10's program: `make run-lab LAB=10 [ARGS="--ranks 4 --epochs 20
 * --figures DIR"]`.
 *
 * Runs your compressors and prints what confirms the chapter's formulas:
 *   1. the digits MLP trained with each method on K ranks: bytes per step,
 *      the modeled step on eth10 and on ib100 (compute priced from FLOPs),
 *      final accuracy and loss; the loss curves as an SVG (DIR/10-loss.svg);
 *   2. one exchange of a 1.1 M-parameter gradient: bytes and modeled time
 *      against the cost model, and the compressor's own time (wall clock);
 *   3. top-k through an allgather against the dense allreduce as the
 *      density grows: the crossover in bytes (1/K) and in time.
 * Collectives run the ring algorithm, so that the modeled times are those
 * of the ring formulas. */
#include "compress.h"
#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 8
#define MAX_STEPS 20000
#define SPEC "mlp:64,64,10"            /* the digits MLP: 4810 parameters */
#define BIG "mlp:64,1024,1024,10"      /* 1.12 M parameters, 4.5 MB of gradient */
#define DEVICE_FLOPS 30e9              /* the modeled device, as in chapter 03 */
#define BATCH 32

typedef struct {
    const char *label;
    lab_compress_config cc;
} method_row;

static const method_row ROWS[] = {
    {"dense (fp32 allreduce)", {LAB_DENSE, 0, 0, 0, 0}},
    {"1-bit, error feedback", {LAB_SIGN, 1, 0, 0, 0}},
    {"1-bit, no feedback", {LAB_SIGN, 0, 0, 0, 0}},
    {"top-k 1%, error feedback", {LAB_TOPK, 1, 0.01, 0, 0}},
    {"top-k 1%, no feedback", {LAB_TOPK, 0, 0.01, 0, 0}},
    {"top-k 10%, error feedback", {LAB_TOPK, 1, 0.10, 0, 0}},
    {"int8, error feedback", {LAB_INT8, 1, 0, 0, 0}},
    {"PowerSGD r=2, error feedback", {LAB_POWERSGD, 1, 0, 2, 5}},
};
#define NUM_ROWS ((int)(sizeof ROWS / sizeof *ROWS))

/* ------------------------------------------------------------ jobs */

typedef struct {
    double lr, momentum;    /* of the SGD every run uses */
} train_opts;

typedef struct {
    const char *net;
    const char *spec;
    train_opts opt;
    lab_compress_config cc;
    long steps;             /* training steps; 0: one sync of a random gradient */
    int timed;              /* with steps 0: SYNC_REPEAT syncs for cpu_ms, else one */
    const dt_dataset *train, *test;
    /* out: rank 0's unless said */
    float *losses;          /* steps entries */
    double span_s[MAX_RANKS][2];   /* each rank's modeled clock at the start and the end */
    double bytes;           /* sent per step (mean over the ranks) */
    double cpu_ms;          /* one sync: its least CPU time in SYNC_REPEAT */
    float accuracy;
    size_t k, block_bytes, lr_p, lr_q, n;
    dt_stats stats[MAX_RANKS];     /* each rank's, over the steps (or the first sync) */
} job;

/* The job's modeled time: from the latest start to the latest end. */
static double job_span(const job *j, int K)
{
    double start = 0, end = 0;
    for (int r = 0; r < K; r++) {
        start = fmax(start, j->span_s[r][0]);
        end = fmax(end, j->span_s[r][1]);
    }
    return end - start;
}

/* Compute priced from FLOPs: 2 B C OC per linear layer forward, twice that backward. */
static void model_cost(const dt_model *m, double *fwd, double *bwd)
{
    *fwd = 0;
    for (int i = 0; i < m->num_layers; i++) {
        double f = 2.0 * BATCH * (double)m->layers[i].in_width * (double)m->layers[i].out_width;
        *fwd += f / DEVICE_FLOPS;
        bwd[i] = 2 * f / DEVICE_FLOPS;
    }
}

/* Training steps; rank 0 records each step's loss. */
static dt_result train_steps(lab_cdp *c, job *j)
{
    dt_result r = DT_OK;
    for (long t = 0; r == DT_OK && t < j->steps; t++)
        r = lab_cdp_train(c, j->train, BATCH, 3, t + 1,
                          c->rank == 0 && j->losses ? &j->losses[t] : NULL);
    return r;
}

/* Syncs of a random gradient, the same in each (and in every job: the
 * library keeps the stream once drawn): the first after a barrier (the
 * ranks' clocks meet there) is the one measured; *cpu_ms gets the least
 * CPU time a sync took in SYNC_REPEAT of them (compression and copies). */
#define SYNC_REPEAT 3
static dt_result sync_timed(lab_cdp *c, job *j, double *cpu_ms)
{
    *cpu_ms = INFINITY;
    for (int i = 0; i < (j->timed ? SYNC_REPEAT : 1); i++) {
        dt_rng rng;
        dt_rng_init(&rng, 17, (uint64_t)c->rank);
        dt_rng_fill_normal(&rng, c->model->grads, c->n);
        for (size_t e = 0; e < c->n; e++)
            c->model->grads[e] *= 1e-3f;
        DT_CHECK(dt_barrier(c->comm));
        if (i == 0) {
            DT_CHECK(dt_comm_stats_reset(c->comm));
            j->span_s[c->rank][0] = dt_clock(c->comm);
        }
        double t0 = dt_thread_cpu();
        DT_CHECK(lab_cdp_sync(c));
        *cpu_ms = fmin(*cpu_ms, 1e3 * (dt_thread_cpu() - t0));
        if (i == 0) {
            j->span_s[c->rank][1] = dt_clock(c->comm);
            DT_CHECK(dt_comm_stats(c->comm, &j->stats[c->rank]));
        }
    }
    return DT_OK;
}

static dt_result rank_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    int rank = dt_comm_rank(w);
    dt_model m = {0};
    lab_cdp c;
    double bwd[64];
    dt_trainer_config tc = {0};
    DT_CHECK(dt_model_create_spec(&m, j->spec, 7));
    dt_result r = m.num_layers <= 64 ? DT_OK : dt_fail(DT_ERR_INVALID_ARG, "run: %d layers",
                                                       m.num_layers);
    tc.optim = dt_sgd_config((float)j->opt.lr, (float)j->opt.momentum, 0);
    tc.clock = DT_CLOCK_MODELED;
    tc.backward_s = bwd;
    if (r == DT_OK) {
        model_cost(&m, &tc.forward_s, bwd);
        r = lab_cdp_init(&c, w, &m, &j->cc, &tc);
    }
    if (r != DT_OK) {
        dt_model_free(&m);
        return r;
    }
    if (j->steps) {
        r = dt_comm_stats_reset(w);
        j->span_s[rank][0] = dt_clock(w);
        if (r == DT_OK)
            r = train_steps(&c, j);
        j->span_s[rank][1] = dt_clock(w);
        if (r == DT_OK)
            r = dt_comm_stats(w, &j->stats[rank]);
    } else {
        double cpu_ms = 0;
        r = sync_timed(&c, j, &cpu_ms);
        if (rank == 0)
            j->cpu_ms = cpu_ms;
    }
    if (r == DT_OK && rank == 0) {
        j->k = c.k, j->block_bytes = c.block_bytes, j->n = c.n;
        j->lr_p = c.lr_p_count, j->lr_q = c.lr_q_count;
        j->accuracy = -1;
        if (j->test)
            r = dt_evaluate(&m, j->test, 256, &j->accuracy, NULL);
    }
    lab_cdp_free(&c);
    dt_model_free(&m);
    return r;
}

static int run_job(job *j, int K)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = DT_BACKEND_THREAD;
    o.net = j->net;
    o.algo = DT_ALGO_RING;
    o.timeout_s = 120;
    dt_result r = dt_launch(&o, rank_fn, j);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s, %s on %s: %s: %s\n", lab_method_name(j->cc.method), j->spec,
                j->net, dt_strerror(r), dt_last_error());
        return -1;
    }
    double sum = 0;
    for (int q = 0; q < K; q++)
        sum += (double)j->stats[q].bytes_sent;
    j->bytes = sum / K / (double)(j->steps ? j->steps : 1);
    return 0;
}

/* ------------------------------------------------------------ 1. training */

static int write_losses(const char *out, int K, long steps, long per_epoch, float **losses)
{
    char path[600], title[160];
    dt_plot *p = NULL;
    long epochs = steps / per_epoch;
    double x[1000], y[1000];
    snprintf(path, sizeof path, "%s/10-loss.svg", out);
    snprintf(title, sizeof title, "the digits MLP on %d ranks: training loss (rank 0, mean over "
             "each epoch)", K);
    dt_result r = dt_plot_create(&p, title, "epoch", "training loss");
    if (r == DT_OK)
        r = dt_plot_set_size(p, 800, 520);
    for (int i = 0; r == DT_OK && i < NUM_ROWS; i++) {
        for (long e = 0; e < epochs && e < 1000; e++) {
            double s = 0;
            for (long t = e * per_epoch; t < (e + 1) * per_epoch; t++)
                s += losses[i][t];
            x[e] = (double)(e + 1), y[e] = s / (double)per_epoch;
        }
        r = dt_plot_add_series(p, ROWS[i].label, x, y, (size_t)(epochs < 1000 ? epochs : 1000),
                               DT_SERIES_LINE);
    }
    if (r == DT_OK)
        r = dt_plot_write_svg(p, path);
    dt_plot_free(p);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s: %s\n", path, dt_last_error());
        return -1;
    }
    printf("   loss curves: %s\n", path);
    return 0;
}

static int training(int K, long epochs, train_opts opt, const char *out)
{
    dt_dataset all, train, test;
    dt_sampler s;
    float *losses[NUM_ROWS] = {0};
    int rc = -1;
    if (dt_data_load_digits(&all, NULL) != DT_OK ||
        dt_data_split(&all, 0.2, 1, &train, &test) != DT_OK) {
        fprintf(stderr, "run: the digits: %s\n", dt_last_error());
        return -1;
    }
    dt_dataset_free(&all);
    (void)dt_sampler_init(&s, train.n, K, 0, 1, 1, 3);
    long per_epoch = (long)(s.num_samples / BATCH), steps = epochs * per_epoch;
    printf("1. The digits MLP (%s), %d ranks x batch %d, SGD lr %g momentum %g, %ld epochs = "
           "%ld steps; compute priced at %.0f GFLOP/s\n", SPEC, K, BATCH, opt.lr, opt.momentum,
           epochs, steps, DEVICE_FLOPS / 1e9);
    printf("   %-29s %12s %7s %12s %12s %9s %8s\n", "method", "bytes/step", "less",
           "step eth10", "step ib100", "accuracy", "loss");
    double dense_bytes = 0;
    for (int i = 0; i < NUM_ROWS; i++) {
        job a = {.net = "eth10", .spec = SPEC, .opt = opt, .cc = ROWS[i].cc, .steps = steps,
                 .train = &train, .test = &test};
        job b = a;
        if (!(losses[i] = malloc((size_t)steps * sizeof(float))))
            goto out;
        a.losses = losses[i];
        b.net = "ib100", b.steps = 2 * per_epoch, b.test = NULL;
        if (run_job(&a, K) || run_job(&b, K))
            goto out;
        if (i == 0)
            dense_bytes = a.bytes;
        float last = 0;
        for (long t = steps - per_epoch; t < steps; t++)
            last += losses[i][t] / (float)per_epoch;
        printf("   %-29s %12.0f %6.1fx %9.3f ms %9.3f ms %8.2f%% %8.4f\n", ROWS[i].label,
               a.bytes, dense_bytes / a.bytes, job_span(&a, K) / (double)steps * 1e3,
               job_span(&b, K) / (double)b.steps * 1e3, 100.0 * a.accuracy, (double)last);
    }
    printf("   (bytes sent per rank and step; steps modeled, compute included; accuracy on the "
           "%zu test digits; loss: rank 0's, the last epoch's mean)\n", test.n);
    rc = write_losses(out, K, steps, per_epoch, losses);
out:
    for (int i = 0; i < NUM_ROWS; i++)
        free(losses[i]);
    dt_dataset_free(&train), dt_dataset_free(&test);
    return rc;
}

/* ------------------------------------------------------------ 2. one exchange */

/* The cost model of each exchange (chapter 10, section 6), n floats on K ranks. */
static double model_time(const job *j, const dt_net *l, int K)
{
    double n = (double)j->n;
    switch (j->cc.method) {
    case LAB_SIGN: /* an alltoall and an allgather of one block per rank */
        return dt_net_pairwise_alltoall(l, K * (double)j->block_bytes, K) +
               dt_net_ring_allgather(l, K * (double)j->block_bytes, K);
    case LAB_TOPK:
        return dt_net_ring_allgather(l, K * 8.0 * (double)j->k, K);
    case LAB_INT8: /* the scale (one float), then n bytes */
        return dt_net_ring_allreduce(l, 4, K) + dt_net_ring_allreduce(l, n, K);
    case LAB_POWERSGD:
        return dt_net_ring_allreduce(l, 4.0 * (double)j->lr_p, K) +
               dt_net_ring_allreduce(l, 4.0 * (double)j->lr_q, K);
    default:
        return dt_net_ring_allreduce(l, 4 * n, K);
    }
}

static double model_bytes(const job *j, int K)
{
    double n = (double)j->n, f = (K - 1.0) / K;
    switch (j->cc.method) {
    case LAB_SIGN: return 2.0 * (K - 1) * (double)j->block_bytes;
    case LAB_TOPK: return (K - 1) * 8.0 * (double)j->k;
    case LAB_INT8: return 2 * f * (4 + n);
    case LAB_POWERSGD: return 2 * f * 4 * (double)(j->lr_p + j->lr_q);
    default: return 2 * f * 4 * n;
    }
}

static int exchange(int K)
{
    static const char *nets[2] = {"eth10", "ib100"};
    printf("\n2. One exchange of the gradient of %s on %d ranks (ring algorithm)\n", BIG, K);
    printf("   %-29s %11s %11s %7s %12s %12s %12s %12s %10s\n", "method", "bytes", "model",
           "less", "eth10", "model", "ib100", "model", "sync CPU");
    double dense = 0;
    for (int i = 0; i < NUM_ROWS; i++) {
        if (!ROWS[i].cc.error_feedback && ROWS[i].cc.method != LAB_DENSE)
            continue; /* the same bytes as with feedback */
        job j[2];
        double t[2], m[2];
        for (int q = 0; q < 2; q++) {
            j[q] = (job){.net = nets[q], .spec = BIG, .opt = {0.1, 0}, .cc = ROWS[i].cc,
                         .timed = 1};
            if (run_job(&j[q], K))
                return -1;
            dt_net link;
            dt_net_link(nets[q], &link);
            t[q] = job_span(&j[q], K), m[q] = model_time(&j[q], &link, K);
        }
        if (i == 0)
            dense = j[0].bytes;
        printf("   %-29s %11.0f %11.0f %6.1fx %9.3f ms %9.3f ms %9.3f ms %9.3f ms %8.2f ms\n",
               ROWS[i].label, j[0].bytes, model_bytes(&j[0], K), dense / j[0].bytes, t[0] * 1e3,
               m[0] * 1e3, t[1] * 1e3, m[1] * 1e3, j[0].cpu_ms);
    }
    printf("   (bytes: sent per rank, the mean over the ranks; model: the formulas of section "
           "6; times modeled; sync CPU: rank 0's CPU time in the sync, compression and copies, "
           "measured on this machine)\n");
    return 0;
}

/* ------------------------------------------------------------ 3. top-k crossover */

static int crossover(int K)
{
    static const double d[] = {0.01, 0.05, 0.1, 0.2, 0.24, 0.25, 0.26, 0.3, 0.5};
    static const char *nets[2] = {"eth10", "ib100"};
    double a[2], b[2], t_dense[2] = {0};
    job dense[2];
    for (int q = 0; q < 2; q++) {
        dt_net_preset(nets[q], &a[q], &b[q]);
        dense[q] = (job){.net = nets[q], .spec = BIG, .opt = {0.1, 0}, .cc = ROWS[0].cc};
        if (run_job(&dense[q], K))
            return -1;
        t_dense[q] = job_span(&dense[q], K);
    }
    double n = (double)dense[0].n; /* P, in values */
    printf("\n3. Top-k (allgather of index and value) against the dense allreduce, %s, %d ranks\n",
           BIG, K);
    printf("   crossover in bytes at d = 1/K = %.3f; in time at d = 1/K + alpha beta / (8P): "
           "%.3f on eth10, %.3f on ib100\n", 1.0 / K, 1.0 / K + a[0] * b[0] / (8 * n),
           1.0 / K + a[1] * b[1] / (8 * n));
    printf("   %-8s %12s %12s %12s %12s %12s\n", "density", "bytes", "dense bytes", "eth10",
           "dense eth10", "ib100");
    for (size_t i = 0; i < sizeof d / sizeof *d; i++) {
        job j[2];
        for (int q = 0; q < 2; q++) {
            j[q] = (job){.net = nets[q], .spec = BIG, .opt = {0.1, 0}, .cc = {LAB_TOPK, 1, d[i], 0, 0}};
            if (run_job(&j[q], K))
                return -1;
        }
        printf("   %6.0f%% %12.0f %12.0f %9.3f ms %9.3f ms %9.3f ms %s\n", 100 * d[i],
               j[0].bytes, dense[0].bytes, job_span(&j[0], K) * 1e3, t_dense[0] * 1e3,
               job_span(&j[1], K) * 1e3, job_span(&j[0], K) < t_dense[0] ? "" : "(dense faster on eth10)");
    }
    printf("   (dense ib100: %.3f ms)\n", t_dense[1] * 1e3);
    return 0;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int K = 4, epochs = 20, only = 0;
    train_opts opt = {0.1, 0};
    const char *out = dt_cli_build_dir();
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &K, .help = "ranks", .lo = 1, .hi = MAX_RANKS},
        {"--epochs", DT_OPT_INT, &epochs, .help = "epochs of table 1's training", .lo = 1,
         .hi = 200},
        {"--lr", DT_OPT_REAL, &opt.lr, .help = "learning rate", .lo = 1e-6, .hi = 10,
         .flags = DT_OPT_OPEN_HI},
        {"--momentum", DT_OPT_REAL, &opt.momentum, .help = "momentum", .lo = 0, .hi = 1,
         .flags = DT_OPT_OPEN_HI},
        {"--figures", DT_OPT_DIR, &out, .help = "where the loss curves go (DIR/10-loss.svg)"},
        {"--only", DT_OPT_INT, &only, .help = "only table 1, 2 or 3", .lo = 1, .hi = 3,
         .flags = DT_OPT_NO_DEFAULT},
        {"--out", DT_OPT_RENAMED, NULL, .arg = "--figures"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 10: your compressors: training with each method, one "
                           "exchange against the cost model, top-k against the dense "
                           "allreduce."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if ((!only || only == 1) && training(K, epochs, opt, out))
        return 1;
    if ((!only || only == 2) && exchange(K))
        return 1;
    if ((!only || only == 3) && crossover(K))
        return 1;
    return 0;
}
