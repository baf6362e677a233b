/* run.c - lab 08's program: `make run-lab LAB=08 [ARGS="--ranks 4 --net ib100
 * --svg chapters/figures/08-memory.svg"]`; the figure goes to --svg PATH,
 * by default $BUILD/08-memory.svg (make run-lab sets BUILD: build/ unless told
 * otherwise).
 *
 * Runs your ZeRO (zero.c), stage 0 (data parallelism) to stage 3, on K
 * thread ranks, and prints what confirms the chapter's formulas:
 *   1. memory per rank: the peak bytes of parameters, gradients and
 *      optimizer state over a step (the memory accounting's PARAM, GRAD
 *      and OPTIM) against section 2's formulas for fp32 with AdamW;
 *   2. communication per step: the bytes each rank sends against
 *      2, 2, 2, 3 psi (K-1)/K floats, and the modeled time against the
 *      ring's alpha-beta time of each reduce-scatter and allgather;
 *   3. the paper's example, 7.5 B parameters on 64 devices, from the
 *      formulas (dt_sim_zero_memory) in both conventions;
 * and, as an SVG, rank 0's memory over one step of each stage, and of
 * the library's FSDP (chapter 09: ZeRO-3 with the next layer's all-gather
 * prefetched, lib/train/fsdp.c) beside them: the model states (PARAM +
 * GRAD + OPTIM) at their highest in each part of the step, read through
 * the probes. Collectives run the ring algorithm, so that bytes and times
 * are those of the ring formulas. */
#include "zero.h"
#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 16
#define MAX_SAMPLES 256
#define FSDP 4 /* the fifth run: the library's FSDP */

typedef struct {
    const char *spec, *net;
    int K;
    int stage;                    /* 0 to 3, or FSDP */
    size_t B;
    /* rank 0, out */
    size_t psi, big;              /* parameters; the largest unit's */
    int units;
    size_t peak[3];               /* PARAM, GRAD, OPTIM over the measured step */
    uint64_t bytes;               /* sent in the measured step */
    double comm_s, predicted_s;   /* modeled communication of the step, and the formula's */
    int n;                        /* samples of the memory timeline */
    double sx[MAX_SAMPLES], sy[MAX_SAMPLES];
    int sampling;
} job;

static const dt_mem_tag tags[3] = {DT_MEM_PARAM, DT_MEM_GRAD, DT_MEM_OPTIM};
static const char *const stage_names[5] = {"DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3", "FSDP"};

/* The model states at their highest since the last sample (each tag's
 * peak also raises the step's), and a new interval from here. */
static double states_peak(job *j)
{
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    dt_mem_reset_peak();
    double sum = 0;
    for (int i = 0; i < 3; i++) {
        if (s.peak[tags[i]] > j->peak[i])
            j->peak[i] = s.peak[tags[i]];
        sum += (double)s.peak[tags[i]];
    }
    return sum;
}

/* The probe of rank 0: x places the event on the step's axis (forward
 * 0..1, backward 1..2, sync 2..3, update 3..4). */
static void probe(void *arg, const char *event, int unit)
{
    job *j = arg;
    if (!j->sampling || j->n >= MAX_SAMPLES)
        return;
    double U = j->units, x = 4;
    if (!strcmp(event, "f"))
        x = (unit + 1) / U;
    else if (!strcmp(event, "b"))
        x = 1 + (U - unit) / U;
    else if (!strcmp(event, "sync"))
        x = 3;
    j->sx[j->n] = x, j->sy[j->n++] = states_peak(j) / 1e6;
}

/* The ring formulas of section 7 for one step: T_RS = T_AG = (K-1)(alpha
 * + n/(K beta)) for n bytes, an allreduce twice that; per unit of count
 * parameters, padded to K shards except in DDP. */
static double predicted_comm(int stage, const size_t *count, int units, int K,
                             const dt_net *link)
{
    double t = 0;
    for (int u = 0; u < units; u++) {
        size_t c = (count[u] + (size_t)K - 1) / (size_t)K;
        double n = 4.0 * (double)(stage == LAB_ZERO_DDP ? count[u] : c * (size_t)K);
        t += dt_net_ring_allgather(link, n, K) * (stage >= LAB_ZERO_3 ? 3 : 2);
    }
    return t;
}

/* The lab's ZeRO, or the library's FSDP, one step at a time. */
typedef struct {
    lab_zero *z;
    dt_trainer *t;
} runner;

static dt_result run_step(runner *rn, const float *x, const int32_t *y, size_t B)
{
    dt_batch b = {x, NULL, y, B, 1, 1};
    return rn->z ? lab_zero_step(rn->z, x, y, B, NULL) : dt_train_step(rn->t, &b);
}

/* Rank r's batch of step t: samples [(t K + r) B, +B) of the set. */
static dt_result batch(const dt_dataset *d, int t, int K, int r, size_t B, size_t *idx,
                       float *x, int32_t *y)
{
    for (size_t i = 0; i < B; i++)
        idx[i] = ((size_t)(t * K + r) * B + i) % d->n;
    return dt_data_gather(d, idx, B, x, NULL, y);
}

/* Step 0 makes the activations and the optimizer's first moments; step 1
 * is measured: its bytes, its modeled communication, rank 0's memory. */
static dt_result measure(job *j, runner *rn, dt_comm *w, const dt_dataset *d, size_t *idx,
                         float *x, int32_t *y, const size_t *count, int units)
{
    int rank = dt_comm_rank(w), K = dt_comm_size(w);
    dt_stats s0 = {0}, s1 = {0};
    for (int t = 0; t < 2; t++) {
        DT_CHECK(batch(d, t, K, rank, j->B, idx, x, y));
        if (t == 1 && rank == 0) {
            dt_mem_reset_peak();
            memset(j->peak, 0, sizeof j->peak);
            j->sampling = 1, j->units = units;
            j->sx[0] = 0, j->sy[0] = states_peak(j) / 1e6, j->n = 1;
        }
        DT_CHECK(dt_comm_stats(w, &s0));
        DT_CHECK(run_step(rn, x, y, j->B));
        DT_CHECK(dt_comm_stats(w, &s1));
    }
    if (rank != 0)
        return DT_OK;
    j->sampling = 0;
    states_peak(j); /* anything after the last probe */
    dt_net link;
    DT_CHECK(dt_comm_link(w, &link));
    j->bytes = s1.bytes_sent - s0.bytes_sent;
    j->comm_s = s1.time_comm_modeled - s0.time_comm_modeled;
    j->predicted_s = predicted_comm(j->stage, count, units, K, &link);
    j->big = 0;
    for (int u = 0; u < units; u++)
        j->big = count[u] > j->big ? count[u] : j->big;
    return DT_OK;
}

/* The library's FSDP, one layer per unit, prefetching, resharding. */
static dt_result fsdp_run(job *j, dt_comm *w, dt_model *m, const dt_dataset *d, size_t *idx,
                          float *x, int32_t *y)
{
    dt_trainer t;
    dt_trainer_config tc = {0};
    dt_fsdp_config fc = {0, 1, 1, dt_comm_rank(w) ? NULL : probe, j};
    size_t count[64];
    int units = m->num_layers < 64 ? m->num_layers : 64;
    for (int u = 0; u < units; u++)
        count[u] = m->layers[u].param_count;
    tc.optim = dt_adamw_config(1e-3f);
    DT_CHECK(dt_trainer_init(&t, m, w, &tc));
    dt_result r = dt_train_use_fsdp(&t, &fc);
    runner rn = {NULL, &t};
    if (r == DT_OK)
        r = measure(j, &rn, w, d, idx, x, y, count, units);
    dt_trainer_free(&t);
    return r;
}

static dt_result zero_run(job *j, dt_comm *w, dt_model *m, const dt_dataset *d, size_t *idx,
                          float *x, int32_t *y)
{
    lab_zero z;
    lab_zero_config cfg = {(lab_zero_stage)j->stage, dt_adamw_config(1e-3f), 0,
                           dt_comm_rank(w) ? NULL : probe, j};
    size_t count[64];
    DT_CHECK(lab_zero_init(&z, w, m, &cfg));
    int units = z.num_units < 64 ? z.num_units : 64;
    for (int u = 0; u < units; u++)
        count[u] = z.units[u].unit.count;
    runner rn = {&z, NULL};
    dt_result r = measure(j, &rn, w, d, idx, x, y, count, units);
    lab_zero_free(&z);
    return r;
}

static dt_result rank_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    dt_model m = {0};
    dt_dataset d = {0};
    DT_CHECK(dt_model_create_spec(&m, j->spec, 1));
    if (dt_comm_rank(w) == 0) /* the job's outputs are rank 0's alone */
        j->psi = m.num_params;
    dt_result r = dt_data_blobs(&d, 64 * j->B, m.in_width, m.num_classes, 2.0f, 5, 0);
    float *x = malloc(j->B * m.in_width * sizeof *x);
    int32_t *y = malloc(j->B * sizeof *y);
    size_t *idx = malloc(j->B * sizeof *idx);
    if (r == DT_OK && (!x || !y || !idx))
        r = dt_fail(DT_ERR_NOMEM, "run: batch buffers");
    if (r == DT_OK)
        r = j->stage == FSDP ? fsdp_run(j, w, &m, &d, idx, x, y)
                             : zero_run(j, w, &m, &d, idx, x, y);
    free(x), free(y), free(idx);
    dt_model_free(&m);
    dt_dataset_free(&d);
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
    o.timeout_s = 120;
    dt_result r = dt_launch(&o, rank_fn, j);
    if (r != DT_OK) {
        fprintf(stderr, "run: %s: %s: %s\n", stage_names[j->stage], dt_strerror(r),
                dt_last_error());
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ 1, 2: the stages */

/* The formulas of section 2 for fp32 with AdamW, with the transient
 * terms of this lab: B the largest bucket (stage 2), L the largest layer
 * (stage 3). */
static void formula(const job *j, double out[3])
{
    double P = (double)j->psi, K = j->K, big = (double)j->big;
    dt_sim_memory m = dt_sim_zero_memory(j->stage, P, j->K, dt_sim_fp32_adam());
    out[0] = m.params, out[1] = m.grads, out[2] = m.optim;
    if (j->stage == LAB_ZERO_2)
        out[1] += 4 * big;
    if (j->stage == LAB_ZERO_3)
        out[0] += 4 * big, out[1] += 4 * big;
    if (j->stage == FSDP) { /* two units at once: the running one and the next */
        m = dt_sim_zero_memory(3, P, j->K, dt_sim_fp32_adam());
        out[0] = m.params + 8 * big, out[1] = m.grads + 8 * big, out[2] = m.optim;
    }
    (void)K;
}

static int stages(job jobs[5])
{
    const job *j0 = &jobs[0];
    printf("1. Memory per rank, peak over one step (bytes), %s: psi = %zu parameters, "
           "K = %d, fp32 with AdamW (4 + 4 + 8 bytes per parameter)\n", j0->spec, j0->psi,
           j0->K);
    printf("   %-7s %-5s %-25s %-25s %-25s %s\n", "stage", "units", "PARAM measured/formula",
           "GRAD measured/formula", "OPTIM measured/formula", "total / DDP's");
    double ddp = 0;
    for (int s = 0; s < 5; s++) {
        const job *j = &jobs[s];
        double f[3], tot = 0;
        formula(j, f);
        printf("   %-7s %-5d", stage_names[s], j->units);
        for (int i = 0; i < 3; i++) {
            printf(" %10zu / %-10.0f   ", j->peak[i], f[i]);
            tot += (double)j->peak[i];
        }
        if (s == 0)
            ddp = tot;
        printf("%.3f\n", tot / ddp);
    }
    printf("   formulas: DDP 4P, 4P, 8P; ZeRO-1 4P, 4P, 8P/K; ZeRO-2 4P, 4P/K + 4B, 8P/K; "
           "ZeRO-3 4P/K + 4L, 4P/K + 4L, 8P/K;\n   FSDP (prefetch) 4P/K + 8L, 4P/K + 8L, 8P/K "
           "(B = %zu: the largest bucket; L = %zu: the largest layer;\n   the measured figures "
           "hold each unit padded to K shards)\n", jobs[2].big, jobs[3].big);
    printf("\n2. Communication per rank in one step, on %s\n", j0->net);
    printf("   %-7s %-12s %-22s %-16s %s\n", "stage", "bytes sent", "4 {2,2,2,3,3} P (K-1)/K",
           "modeled time", "ring formula");
    for (int s = 0; s < 5; s++) {
        const job *j = &jobs[s];
        double want = 4.0 * (s >= 3 ? 3 : 2) * (double)j->psi * (j->K - 1) / j->K;
        printf("   %-7s %-12llu %-22.0f %10.3f ms    %10.3f ms\n", stage_names[s],
               (unsigned long long)j->bytes, want, j->comm_s * 1e3, j->predicted_s * 1e3);
    }
    return 0;
}

/* ------------------------------------------------------------ 3. the paper's example */

static void paper_example(void)
{
    const double psi = 7.5e9;
    const int n = 64;
    dt_sim_state_bytes conv[2] = {dt_sim_mixed_precision_adam(), dt_sim_fp32_adam()};
    const char *names[2] = {"mixed precision, 2 + 2 + 12 (the paper's)",
                            "fp32 with Adam, 4 + 4 + 8 (this lab's)"};
    printf("\n3. The paper's example: 7.5 B parameters on %d devices, model states per "
           "device (GB = 1e9 bytes)\n", n);
    printf("   %-42s %9s %9s %9s %9s\n", "convention", "DDP", "ZeRO-1", "ZeRO-2", "ZeRO-3");
    for (int c = 0; c < 2; c++) {
        printf("   %-42s", names[c]);
        for (int s = 0; s < 4; s++)
            printf(" %9.1f", dt_sim_zero_memory(s, psi, n, conv[c]).total / 1e9);
        printf("\n");
    }
    double z2 = dt_sim_zero_memory(2, psi, n, conv[0]).total;
    printf("   ZeRO-2 saves %.2fx at N = %d (mixed precision); 8x only as N grows\n",
           dt_sim_zero_memory(0, psi, n, conv[0]).total / z2, n);
}

/* ------------------------------------------------------------ the figure */

static int figure(const job jobs[5], const char *svg)
{
    dt_plot *p = NULL;
    char title[160];
    snprintf(title, sizeof title, "rank 0 over one step, %s on %d ranks: model states at their "
             "highest in each part", jobs[0].spec, jobs[0].K);
    int rc = dt_plot_create(&p, title, "forward (0-1), backward (1-2), sync (2-3), update (3-4)",
                            "PARAM + GRAD + OPTIM (MB)") != DT_OK;
    for (int s = 0; !rc && s < 5; s++)
        rc = dt_plot_add_series(p, stage_names[s], jobs[s].sx, jobs[s].sy, (size_t)jobs[s].n,
                                DT_SERIES_POINTS_AND_LINE) != DT_OK;
    if (!rc)
        rc = dt_plot_write_svg(p, svg) != DT_OK;
    if (rc)
        fprintf(stderr, "run: the figure failed: %s\n", dt_last_error());
    else
        printf("\nwrote %s\n", svg);
    dt_plot_free(p);
    return rc;
}

int main(int argc, char **argv)
{
    int K = 4;
    char svg_default[4096];
    snprintf(svg_default, sizeof svg_default, "%s/08-memory.svg", dt_cli_build_dir());
    const char *net = "ib100", *spec = "deep:64,512,8,10", *svg = svg_default;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &K, .help = "ranks", .lo = 2, .hi = MAX_RANKS},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--model", DT_OPT_TEXT, &spec, .help = "the model, as dttrain's --model (an MLP)",
         .arg = "SPEC"},
        {"--svg", DT_OPT_FILE, &svg, .help = "the figure"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 08: your ZeRO (zero.c), stages 0 to 3, on K thread ranks: memory per rank, communication per step, the paper's example, and rank 0's memory over a step as a figure."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    dt_model m;
    if (dt_model_create_spec(&m, spec, 1) != DT_OK)
        return dt_cli_fail(&cli, "--model '%s': %s", spec, dt_last_error());
    dt_model_free(&m);
    static job jobs[5];
    for (int s = 0; s < 5; s++) {
        jobs[s] = (job){.spec = spec, .net = net, .K = K, .stage = s, .B = 32};
        if (run_job(&jobs[s]))
            return 1;
    }
    stages(jobs);
    paper_example();
    if (figure(jobs, svg))
        return 1;
    return 0;
}
