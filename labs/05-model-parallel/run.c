/* run.c - lab 05's program: `make run-lab LAB=05 [ARGS="--ranks 3 --net ib100
 * --measure"]`.
 *
 * Runs your model parallelism (mp.c) on the deep MLP deep:64,512,8,10 (ten
 * layers, batch 32) and prints the measurements that confirm the chapter's
 * formulas:
 *   1. K = 1..4 ranks, contiguous and round-robin, give one rank's loss and
 *      gradients (section 2);
 *   2. the bytes each placement sends per step, measured against the cuts
 *      (section 3), and the modeled step on the link against the chain
 *      sum (T_F + T_B) + (messages on the path) (alpha + n/beta);
 *   3. the utilisation on the modeled clock against 1/K (section 4);
 *   4. the balance of the equal-count and the balanced partitions, by
 *      FLOPs or (--measure) by each layer's time measured on this machine
 *      (section 5).
 * Compute is charged to the modeled clock from FLOPs at 30 GFLOP/s (as in
 * chapter 03), so the modeled tables are the same on every machine. */
#include "mp.h"
#include "dt/cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC "deep:64,512,8,10"
#define BATCH 32
#define DEVICE_FLOPS 30e9
#define MAX_RANKS 8

typedef struct {
    int K;
    int round_robin;             /* else the balanced contiguous partition */
    const double *forward_s, *backward_s; /* per layer, NULL: no modeled time */
    /* per rank, out */
    struct {
        double grad_err, loss_err; /* against one rank (loss: the last layer's rank) */
        uint64_t bytes, formula, msgs;
        double clock;
    } out[MAX_RANKS];
} job;

/* The batch: integer-based inputs, labels 0..9. */
static void batch(size_t in, float *x, int32_t *y)
{
    for (size_t i = 0; i < BATCH * in; i++)
        x[i] = (float)((int)(i * 7 % 13) - 6) / 6.0f;
    for (size_t i = 0; i < BATCH; i++)
        y[i] = (int32_t)(i * 3 % 10);
}

/* Per-layer FLOP-modeled times: a linear layer of C inputs and OC outputs
 * costs 2 B C OC FLOPs forward, twice that backward. */
static void flop_costs(const dt_model *m, double *f, double *b)
{
    for (int l = 0; l < m->num_layers; l++) {
        f[l] = 2.0 * BATCH * (double)m->layers[l].in_width * (double)m->layers[l].out_width /
               DEVICE_FLOPS;
        b[l] = 2 * f[l];
    }
}

/* One rank's loss and gradients on the batch, with the whole model. */
static dt_result one_rank(dt_model *ref, float *loss)
{
    float x[BATCH * 64];
    int32_t y[BATCH];
    dt_acts *a;
    batch(64, x, y);
    DT_CHECK(dt_model_create_spec(ref, SPEC, 1));
    DT_CHECK(dt_acts_create(&a, ref, 0, ref->num_layers, BATCH, 1));
    dt_result r = dt_model_forward(ref, a, x, NULL);
    if (r == DT_OK)
        r = dt_model_loss(ref, a, y, loss, NULL);
    if (r == DT_OK)
        r = dt_model_backward(ref, a, NULL, NULL, NULL, NULL);
    dt_acts_free(a);
    return r;
}

/* The placement of a job on m: balanced (by FLOPs) or round-robin. */
static dt_result placement(const job *j, const dt_model *m, int *owner)
{
    if (j->round_robin) {
        lab_mp_round_robin(m->num_layers, j->K, owner);
        return DT_OK;
    }
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    int first[LAB_MP_MAX_LAYERS + 1];
    flop_costs(m, f, b);
    DT_CHECK(lab_mp_partition(f, m->num_layers, j->K, first));
    lab_mp_contiguous(first, j->K, owner);
    return DT_OK;
}

static double rel_err(const float *a, const float *b, size_t off, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = off; i < off + n; i++)
        d = fmax(d, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)b[i]));
    return d / (mx > 0 ? mx : 1);
}

static dt_result rank_fn(dt_comm *world, void *arg)
{
    job *j = arg;
    int rank = dt_comm_rank(world);
    dt_model m = {0}, ref = {0};
    int owner[LAB_MP_MAX_LAYERS];
    lab_mp mp;
    lab_mp_cost cost = {j->forward_s, j->backward_s};
    dt_optim_config cfg = dt_sgd_config(0.1f, 0, 0);
    float x[BATCH * 64], loss = 0, ref_loss = 0;
    int32_t y[BATCH];
    dt_stats st;
    batch(64, x, y);
    memset(&mp, 0, sizeof mp);
    dt_result r = dt_model_create_spec(&m, SPEC, 1);
    if (r == DT_OK)
        r = placement(j, &m, owner);
    if (r == DT_OK)
        r = lab_mp_init(&mp, world, &m, owner, BATCH, &cfg, &cost);
    if (r == DT_OK)
        r = lab_mp_step(&mp, x, y, &loss);
    j->out[rank].clock = dt_clock(world);
    if (r == DT_OK)
        r = dt_comm_stats(world, &st);
    if (r == DT_OK)
        r = lab_mp_bytes_sent(&m, owner, rank, BATCH, &j->out[rank].formula);
    if (r == DT_OK)
        r = one_rank(&ref, &ref_loss);
    if (r == DT_OK) {
        j->out[rank].bytes = st.bytes_sent, j->out[rank].msgs = st.msgs_sent;
        j->out[rank].grad_err = 0;
        for (int l = 0; l < m.num_layers; l++)
            if (owner[l] == rank)
                j->out[rank].grad_err = fmax(j->out[rank].grad_err,
                                             rel_err(m.grads, ref.grads, m.layers[l].param_offset,
                                                     m.layers[l].param_count));
        j->out[rank].loss_err = owner[m.num_layers - 1] == rank
                                    ? fabs(loss - ref_loss) / fabs(ref_loss) : 0;
    }
    lab_mp_free(&mp);
    dt_model_free(&m), dt_model_free(&ref);
    return r;
}

static int run_job(job *j, const char *net)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = j->K;
    o.backend = DT_BACKEND_THREAD;
    o.net = net;
    o.timeout_s = 60;
    dt_result r = dt_launch(&o, rank_fn, j);
    if (r != DT_OK)
        fprintf(stderr, "run: %s: %s\n", dt_strerror(r), dt_last_error());
    return r == DT_OK ? 0 : -1;
}

/* The job's largest clock: when the step ended. */
static double step_s(const job *j)
{
    double t = 0;
    for (int r = 0; r < j->K; r++)
        t = fmax(t, j->out[r].clock);
    return t;
}

/* ------------------------------------------------------------ 1. equivalence */

static int equivalence(int K)
{
    printf("1. K ranks against one rank with the whole model (%s, batch %d)\n", SPEC, BATCH);
    printf("   %-3s %-12s %-22s %s\n", "K", "placement", "max rel. error, grads", "loss");
    for (int k = 1; k <= K; k++)
        for (int rr = 0; rr <= 1; rr++) {
            job j = {.K = k, .round_robin = rr};
            if (run_job(&j, "none"))
                return -1;
            double g = 0, l = 0;
            for (int r = 0; r < k; r++)
                g = fmax(g, j.out[r].grad_err), l = fmax(l, j.out[r].loss_err);
            printf("   %-3d %-12s %-22.2e %.2e\n", k, rr ? "round-robin" : "balanced", g, l);
        }
    return 0;
}

/* ------------------------------------------------------------ 2. bytes and time */

static int bytes_table(int K, const char *net, const double *f, const double *b, int L)
{
    double alpha, beta, work = 0;
    if (dt_net_parse(net, &alpha, &beta) != DT_OK)
        return -1;
    for (int l = 0; l < L; l++)
        work += f[l] + b[l];
    double n = BATCH * 512 * 4.0, tc = alpha + n / beta; /* every cut is 512 wide */
    printf("\n2. Bytes per step and the modeled step on %s (t_c = alpha + n/beta = %.1f us for "
           "n = %.0f B; compute %.2f ms)\n", net, tc * 1e6, n, work * 1e3);
    printf("   %-3s %-12s %-5s %-12s %-12s %-9s %-11s %s\n", "K", "placement", "cuts",
           "bytes, all", "formula", "messages", "T_step", "sum(T_F+T_B) + 2 cuts t_c");
    for (int k = 2; k <= K; k++)
        for (int rr = 0; rr <= 1; rr++) {
            job j = {.K = k, .round_robin = rr, .forward_s = f, .backward_s = b};
            if (run_job(&j, net))
                return -1;
            uint64_t bytes = 0, formula = 0, msgs = 0;
            for (int r = 0; r < k; r++)
                bytes += j.out[r].bytes, formula += j.out[r].formula, msgs += j.out[r].msgs;
            int cuts = (int)(msgs / 2);
            printf("   %-3d %-12s %-5d %-12llu %-12llu %-9llu %8.3f ms %8.3f ms\n", k,
                   rr ? "round-robin" : "balanced", cuts, (unsigned long long)bytes,
                   (unsigned long long)formula, (unsigned long long)msgs, step_s(&j) * 1e3,
                   (work + 2 * cuts * tc) * 1e3);
        }
    return 0;
}

/* ------------------------------------------------------------ 3. utilisation */

static int utilisation(int K, const char *net, const double *f, const double *b, int L)
{
    double work = 0;
    for (int l = 0; l < L; l++)
        work += f[l] + b[l];
    printf("\n3. Utilisation: busy time over K x the modeled step (balanced partition)\n");
    printf("   %-3s %-8s %-11s %-12s %s\n", "K", "network", "T_step", "utilisation", "1/K");
    for (int k = 1; k <= K; k++)
        for (int i = 0; i < 2; i++) {
            const char *nn = i ? net : "none";
            job j = {.K = k, .forward_s = f, .backward_s = b};
            if (run_job(&j, nn))
                return -1;
            printf("   %-3d %-8s %8.3f ms %-12.4f %.4f\n", k, nn, step_s(&j) * 1e3,
                   work / (k * step_s(&j)), 1.0 / k);
        }
    return 0;
}

/* ------------------------------------------------------------ 4. balance */

/* Each layer's forward + backward wall time on this machine, the median of
 * `reps` runs of the whole model, layer by layer. */
static int measure_layers(dt_model *m, double *t)
{
    enum { REPS = 21 };
    static double s[LAB_MP_MAX_LAYERS][REPS];
    float x[BATCH * 64];
    int32_t y[BATCH];
    batch(64, x, y);
    dt_acts *a[LAB_MP_MAX_LAYERS];
    for (int l = 0; l < m->num_layers; l++)
        if (dt_acts_create(&a[l], m, l, l + 1, BATCH, 1) != DT_OK)
            return -1;
    float *g = malloc(BATCH * 512 * sizeof *g);
    for (int i = 0; g && i < BATCH * 512; i++)
        g[i] = 1e-3f * (float)(i % 7);
    for (int rep = 0; g && rep < REPS; rep++)
        for (int l = 0; l < m->num_layers; l++) {
            float loss;
            double t0 = dt_now();
            dt_result r = dt_model_forward(m, a[l], l ? dt_acts_output(a[l - 1]) : x, NULL);
            if (r == DT_OK && l == m->num_layers - 1)
                r = dt_model_loss(m, a[l], y, &loss, NULL);
            if (r == DT_OK)
                r = dt_model_backward(m, a[l], l == m->num_layers - 1 ? NULL : g, NULL, NULL, NULL);
            s[l][rep] = dt_now() - t0;
            if (r != DT_OK)
                return -1;
        }
    for (int l = 0; l < m->num_layers; l++)
        t[l] = dt_median(s[l], REPS);
    for (int l = 0; l < m->num_layers; l++)
        dt_acts_free(a[l]);
    free(g);
    return g ? 0 : -1;
}

/* The stage costs of first[0..K] over cost, and the largest. */
static double print_stages(const char *name, const double *cost, const int *first, int K,
                           double unit)
{
    double worst = 0;
    printf("   %-11s", name);
    for (int k = 0; k < K; k++) {
        double s = 0;
        for (int l = first[k]; l < first[k + 1]; l++)
            s += cost[l];
        printf(" [%d,%d) %-9.3f", first[k], first[k + 1], s / unit);
        worst = fmax(worst, s);
    }
    printf(" largest %.3f\n", worst / unit);
    return worst;
}

static int balance(int K, int measure)
{
    dt_model m = {0};
    double cost[LAB_MP_MAX_LAYERS], f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS], total = 0;
    int first[LAB_MP_MAX_LAYERS + 1], equal[LAB_MP_MAX_LAYERS + 1];
    if (dt_model_create_spec(&m, SPEC, 1) != DT_OK)
        return -1;
    flop_costs(&m, f, b);
    int L = m.num_layers;
    for (int l = 0; l < L; l++)
        cost[l] = f[l] / 2.0 / BATCH * DEVICE_FLOPS; /* multiply-adds per sample */
    if (measure && measure_layers(&m, cost))
        return -1;
    const double unit = measure ? 1e-3 : 1e3; /* ms, or thousands of multiply-adds */
    printf("\n4. Balance on K = %d, by %s\n   per layer:", K, measure ? "the forward + "
           "backward time measured here (ms; medians of 21 runs, machine load included)"
           : "multiply-adds per sample (thousands)");
    for (int l = 0; l < L; l++)
        printf(" %.3f", cost[l] / unit), total += cost[l];
    printf("\n");
    for (int k = 0; k <= K; k++) /* L / K each, the first L mod K one more */
        equal[k] = k * (L / K) + (k < L % K ? k : L % K);
    dt_result r = lab_mp_partition(cost, L, K, first);
    if (r != DT_OK) {
        fprintf(stderr, "run: lab_mp_partition: %s: %s\n", dt_strerror(r), dt_last_error());
        dt_model_free(&m);
        return -1;
    }
    double we = print_stages("equal count", cost, equal, K, unit);
    double wb = print_stages("balanced", cost, first, K, unit);
    printf("   largest / perfect (sum / K): equal count %.2f, balanced %.2f; a pipeline of the "
           "balanced split runs %.2fx faster\n", we * K / total, wb * K / total, we / wb);
    dt_model_free(&m);
    return 0;
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    int K = 4, measure = 0;
    const char *net = "eth10";
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &K, .help = "ranks", .lo = 1, .hi = MAX_RANKS},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--measure", DT_OPT_FLAG, &measure, .help = "balance the partitions by each layer's "
         "time measured here (wall clock) instead of its FLOPs"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 05: your model parallelism (mp.c) on the deep MLP " SPEC
                           " and the measurements that confirm chapter 05's formulas."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    dt_model m = {0};
    double f[LAB_MP_MAX_LAYERS], b[LAB_MP_MAX_LAYERS];
    if (dt_model_create_spec(&m, SPEC, 1) != DT_OK)
        return 1;
    flop_costs(&m, f, b);
    int L = m.num_layers;
    dt_model_free(&m);
    if (equivalence(K) || bytes_table(K, net, f, b, L) || utilisation(K, net, f, b, L) ||
        balance(K, measure))
        return 1;
    return 0;
}
