/* run.c - lab 09's program: `make run-lab LAB=09 [ARGS="--ranks 4 --net ib100
 * --svg chapters/figures/09-prefetch.svg"]`; the figure goes to --svg PATH,
 * by default $BUILD/09-prefetch.svg (make run-lab sets BUILD: build/ unless
 * told otherwise).
 *
 * Runs your FSDP (fsdp.c) on K thread ranks and prints what confirms the
 * chapter's formulas:
 *   1. FSDP trains like data parallelism (the library's allreduce and
 *      AdamW on the same batches), on the deep MLP and the tiny GPT;
 *   2. memory per rank: peak PARAM and GRAD against the shards plus one
 *      unit (no prefetch), two units (prefetch) or the whole model
 *      (resharding off);
 *   3. communication and time: bytes per step against 3 psi and 2 psi,
 *      and the modeled step (compute charged from FLOPs) against the
 *      serial sum and the overlapped bound of section 6;
 * and, as an SVG, rank 0's step without and with prefetch as a Gantt
 * chart of the modeled clock, read back from the communicator's trace. */
#include "fsdp.h"
#include "dt/cli.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LAYERS 64
#define DEVICE_FLOPS 30e9 /* the modeled device, as in chapter 03 */

typedef struct {
    const char *spec, *net, *trace;
    int K, prefetch, reshard, modeled, compare;
    size_t B;
    /* rank 0, out */
    int units;
    size_t psi, peak[3];
    double shards, one_unit, two_units, all_units; /* bytes: the largest unit, two largest */
    uint64_t bytes, gathers;
    double step_s, comp_s, comm_s, step_start, diff;
} job;

/* Modeled compute of a batch of B rows: a linear layer of C inputs and OC
 * outputs costs 2 B C OC FLOPs forward, twice that backward. */
static void model_cost(const dt_model *m, size_t B, double *fwd, double *bwd)
{
    for (int i = 0; i < m->num_layers && i < MAX_LAYERS; i++) {
        double f = 2.0 * (double)B * (double)m->layers[i].in_width *
                   (double)m->layers[i].out_width;
        fwd[i] = f / DEVICE_FLOPS, bwd[i] = 2 * f / DEVICE_FLOPS;
    }
}

static dt_result batch(const dt_dataset *d, const dt_model *m, int t, int K, int r, size_t B,
                       float *x, int32_t *tok, int32_t *y, dt_batch *b)
{
    size_t idx[256];
    int gpt = m->kind == DT_MODEL_GPT;
    for (size_t i = 0; i < B && i < 256; i++)
        idx[i] = ((size_t)(t * K + r) * B + i) % d->n;
    *b = (dt_batch){gpt ? NULL : x, gpt ? tok : NULL, y, B, gpt ? m->max_seq : 1, 1};
    return dt_data_gather(d, idx, B, gpt ? NULL : x, gpt ? tok : NULL, y);
}

/* What rank 0 reads after the measured step. */
static void report(job *j, const lab_fsdp *f, const dt_stats *s0, const dt_stats *s1,
                   const dt_net *link)
{
    dt_mem_stats ms;
    double big[2] = {0, 0};
    dt_mem_stats_get(&ms);
    j->peak[0] = ms.peak[DT_MEM_PARAM], j->peak[1] = ms.peak[DT_MEM_GRAD];
    j->peak[2] = ms.peak[DT_MEM_OPTIM];
    j->units = f->num_units, j->shards = j->all_units = j->comm_s = 0;
    for (int u = 0; u < f->num_units; u++) {
        double full = 4.0 * (double)(f->units[u].shard * (size_t)f->ranks);
        j->shards += 4.0 * (double)f->units[u].shard, j->all_units += full;
        if (full > big[0])
            big[1] = big[0], big[0] = full;
        else if (full > big[1])
            big[1] = full;
        /* section 6: each unit's all-gather (twice with resharding) and reduce-scatter */
        j->comm_s += (j->reshard ? 3 : 2) * dt_net_ring_allgather(link, full, f->ranks);
    }
    j->one_unit = big[0], j->two_units = big[0] + big[1];
    j->bytes = s1->bytes_sent - s0->bytes_sent;
    j->gathers = s1->calls[DT_COLL_ALLGATHER] - s0->calls[DT_COLL_ALLGATHER];
}

/* The library's data parallelism on the same batches: rank 0's largest
 * difference, relative to its largest parameter. */
static dt_result compare(job *j, dt_comm *w, const dt_dataset *d, const float *params,
                         float *x, int32_t *tok, int32_t *y, int steps)
{
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_adamw_config(1e-3f);
    DT_CHECK(dt_model_create_spec(&m, j->spec, 1));
    dt_result r = dt_trainer_init(&t, &m, w, &tc);
    for (int s = 0; r == DT_OK && s < steps; s++) {
        dt_batch b;
        r = batch(d, &m, s, j->K, dt_comm_rank(w), j->B, x, tok, y, &b);
        if (r == DT_OK)
            r = dt_train_step(&t, &b);
    }
    double dmax = 0, pmax = 0;
    for (size_t i = 0; r == DT_OK && i < m.num_params; i++)
        dmax = fmax(dmax, fabs((double)params[i] - m.params[i])),
        pmax = fmax(pmax, fabs((double)m.params[i]));
    if (dt_comm_rank(w) == 0)
        j->diff = dmax / pmax;
    dt_trainer_free(&t);
    dt_model_free(&m);
    return r;
}

static dt_result train(job *j, dt_comm *w, dt_model *m, const dt_dataset *d, float *x,
                       int32_t *tok, int32_t *y, float *params)
{
    double fwd[MAX_LAYERS], bwd[MAX_LAYERS];
    dt_net link;
    int rank = dt_comm_rank(w), steps = j->compare ? 3 : 2;
    lab_fsdp f;
    lab_fsdp_config cfg = {dt_adamw_config(1e-3f), 0, j->prefetch, j->reshard, NULL, NULL};
    model_cost(m, j->B, fwd, bwd);
    if (j->modeled)
        cfg.forward_layer_s = fwd, cfg.backward_s = bwd;
    DT_CHECK(dt_comm_link(w, &link));
    DT_CHECK(lab_fsdp_init(&f, w, m, &cfg));
    dt_result r = DT_OK;
    dt_stats s0, s1;
    double step_s = 0, step_start = 0;
    for (int t = 0; r == DT_OK && t < steps; t++) { /* the last step is measured */
        dt_batch b;
        r = batch(d, m, t, j->K, rank, j->B, x, tok, y, &b);
        if (t == steps - 1)
            dt_mem_reset_peak();
        double c0 = dt_clock(w);
        if (r == DT_OK)
            r = dt_comm_stats(w, &s0);
        if (r == DT_OK)
            r = lab_fsdp_step(&f, &b, NULL);
        if (r == DT_OK)
            r = dt_comm_stats(w, &s1);
        step_s = dt_clock(w) - c0, step_start = c0;
    }
    if (rank == 0) { /* the job's outputs are rank 0's alone: ranks are threads */
        j->step_s = step_s, j->step_start = step_start, j->comp_s = 0;
        for (int i = 0; j->modeled && i < m->num_layers; i++)
            j->comp_s += fwd[i] + bwd[i];
    }
    if (r == DT_OK && rank == 0)
        report(j, &f, &s0, &s1, &link);
    if (r == DT_OK && j->compare)
        r = lab_fsdp_params(&f, params);
    lab_fsdp_free(&f);
    return r;
}

static dt_result rank_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    dt_model m = {0};
    dt_dataset d = {0};
    DT_CHECK(dt_model_create_spec(&m, j->spec, 1));
    if (dt_comm_rank(w) == 0)
        j->psi = m.num_params;
    size_t T = m.kind == DT_MODEL_GPT ? m.max_seq : 1, rows = j->B * T;
    dt_result r = m.kind == DT_MODEL_GPT
                      ? dt_data_sequences(&d, 64 * j->B, T, m.num_classes, 5, 0)
                      : dt_data_blobs(&d, 64 * j->B, m.in_width, m.num_classes, 2.0f, 5, 0);
    float *x = malloc(rows * (m.in_width + 1) * sizeof *x);
    float *params = malloc(m.num_params * sizeof *params);
    int32_t *tok = malloc(rows * sizeof *tok), *y = malloc(rows * sizeof *y);
    if (r == DT_OK && (!x || !params || !tok || !y))
        r = dt_fail(DT_ERR_NOMEM, "run: buffers");
    if (r == DT_OK)
        r = train(j, w, &m, &d, x, tok, y, params);
    if (r == DT_OK && j->compare)
        r = compare(j, w, &d, params, x, tok, y, 3);
    free(x), free(params), free(tok), free(y);
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
    o.trace_path = j->trace;
    dt_result r = dt_launch(&o, rank_fn, j);
    if (r != DT_OK)
        fprintf(stderr, "run: %s: %s\n", dt_strerror(r), dt_last_error());
    return r != DT_OK;
}

static job base(const char *spec, const char *net, int K, int prefetch, int reshard)
{
    return (job){.spec = spec, .net = net, .K = K, .prefetch = prefetch, .reshard = reshard,
                 .modeled = 1, .B = 32};
}

static const char *mode(const job *j)
{
    return j->reshard ? (j->prefetch ? "prefetch, reshard" : "no prefetch, reshard")
                      : (j->prefetch ? "prefetch, keep" : "no prefetch, keep");
}

/* ------------------------------------------------------------ the tables */

static int equivalence(const char *spec, int K)
{
    static const char *const gpt = "gpt:64,16,2,4,64";
    printf("1. FSDP (prefetch, resharding) against data parallelism, K = %d, 3 steps of "
           "AdamW\n", K);
    printf("   %-20s %s\n", "model", "max relative difference");
    const char *specs[2] = {spec, gpt};
    for (int i = 0; i < 2; i++) {
        job j = base(specs[i], "none", K, 1, 1);
        j.compare = 1, j.modeled = 0, j.B = 8;
        if (run_job(&j))
            return -1;
        printf("   %-20s %.2e\n", specs[i], j.diff);
    }
    return 0;
}

static int memory(const char *spec, const char *net, int K)
{
    job js[3] = {base(spec, net, K, 0, 1), base(spec, net, K, 1, 1), base(spec, net, K, 1, 0)};
    for (int i = 0; i < 3; i++)
        if (run_job(&js[i]))
            return -1;
    printf("\n2. Memory per rank, peak over one step (MB), %s: %zu parameters in %d units, "
           "K = %d\n", spec, js[0].psi, js[0].units, K);
    printf("   %-21s %-11s %-26s %-11s %-24s %s\n", "", "PARAM", "shards + ...", "GRAD",
           "shards + 2 units", "OPTIM");
    for (int i = 0; i < 3; i++) {
        const job *j = &js[i];
        double want = j->shards + (i == 0 ? j->one_unit : i == 1 ? j->two_units
                                                                  : j->all_units);
        const char *what = i == 0 ? "1 unit" : i == 1 ? "2 units" : "every unit";
        printf("   %-21s %9.3f   %9.3f (%-10s)      %9.3f   %9.3f                %9.3f\n", mode(j),
               j->peak[0] / 1e6, want / 1e6, what, j->peak[1] / 1e6,
               (j->shards + j->two_units) / 1e6, j->peak[2] / 1e6);
    }
    return 0;
}

static int timing(const char *spec, const char *net, int K)
{
    printf("\n3. One step on %s, K = %d, compute modeled at %.0f GFLOP/s, batch 32 per rank\n",
           net, K, DEVICE_FLOPS / 1e9);
    printf("   %-21s %-11s %-11s %-9s %-10s %-10s %-11s %-11s %s\n", "", "bytes sent",
           "psi(K-1)/K", "gathers", "T_comp", "T_comm", "serial sum", "max bound", "step");
    for (int reshard = 1; reshard >= 0; reshard--)
        for (int prefetch = 0; prefetch <= 1; prefetch++) {
            job j = base(spec, net, K, prefetch, reshard);
            if (run_job(&j))
                return -1;
            double unit = 4.0 * (double)j.psi * (K - 1) / K;
            printf("   %-21s %-11llu %4.2f x     %-9llu %7.3f ms %7.3f ms %8.3f ms %8.3f ms "
                   "%7.3f ms\n", mode(&j), (unsigned long long)j.bytes, (double)j.bytes / unit,
                   (unsigned long long)j.gathers, j.comp_s * 1e3, j.comm_s * 1e3,
                   (j.comp_s + j.comm_s) * 1e3, fmax(j.comp_s, j.comm_s) * 1e3, j.step_s * 1e3);
        }
    return 0;
}

/* ------------------------------------------------------------ the figure */

/* Rank 0's modeled regions of the step that started at t0 into rows row
 * (compute: the first `units` regions are the units' forwards, the rest
 * the layers' backwards) and row + 1 (its asynchronous collectives). */
static int gantt_rows(dt_gantt *g, const char *path, double t0, int row, int units)
{
    dt_trace_region *r;
    size_t n;
    int nf = 0;
    if (dt_trace_read(path, &r, &n) != DT_OK)
        return -1;
    for (size_t i = 0; i < n; i++) {
        double s = (r[i].start_s - t0) * 1e3, e = (r[i].end_s - t0) * 1e3;
        if (!r[i].modeled || r[i].rank != 0 || e <= s || s < -1e-9)
            continue;
        if (!strcmp(r[i].name, "compute"))
            dt_gantt_add(g, row, s, e, nf++ < units ? "forward" : "backward", NULL);
        else if (r[i].lane == 1)
            dt_gantt_add(g, row + 1, s, e, r[i].name, NULL);
    }
    free(r);
    return 0;
}

static int figure(const char *spec, const char *net, int K, const char *svg)
{
    char trace[4200];
    dt_gantt *g = NULL;
    int rc = -1;
    /* the trace goes beside the figure (where the user writes), and then away */
    snprintf(trace, sizeof trace, "%s.trace.json", svg);
    for (int p = 0; p < 2; p++) {
        job j = base(spec, net, K, p, 1);
        j.trace = trace;
        if (run_job(&j))
            goto out;
        if (p == 0) {
            char title[160];
            snprintf(title, sizeof title, "rank 0, one step of FSDP, %s, K = %d on %s: no "
                     "prefetch (top), prefetch (bottom)", spec, K, net);
            if (dt_gantt_create(&g, title, "modeled time (ms)", 4) != DT_OK)
                goto out;
        }
        if (gantt_rows(g, trace, j.step_start, 2 * p, j.units))
            goto out;
    }
    for (int row = 0; row < 4; row++)
        dt_gantt_set_row_label(g, row, row % 2 ? "collectives" : "compute");
    if (dt_gantt_write_svg(g, svg) == DT_OK) {
        printf("\nwrote %s\n", svg);
        rc = 0;
    }
out:
    if (rc)
        fprintf(stderr, "run: the figure failed: %s\n", dt_last_error());
    dt_gantt_free(g);
    remove(trace);
    return rc;
}

int main(int argc, char **argv)
{
    int K = 4;
    char svg_default[4096];
    snprintf(svg_default, sizeof svg_default, "%s/09-prefetch.svg", dt_cli_build_dir());
    const char *net = "ib100", *spec = "deep:64,512,8,10", *svg = svg_default;
    const dt_opt opts[] = {
        {"--ranks", DT_OPT_INT, &K, .help = "ranks", .lo = 2, .hi = 16},
        {"--net", DT_OPT_NET, &net, .help = "the modeled network"},
        {"--model", DT_OPT_TEXT, &spec, .help = "the model, as dttrain's --model (an MLP)",
         .arg = "SPEC"},
        {"--svg", DT_OPT_FILE, &svg, .help = "the figure"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 09: your FSDP (fsdp.c) on K thread ranks: equivalence with one rank, memory per rank, the step's time with and without prefetch, and its timeline as a figure."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    dt_model m;
    if (dt_model_create_spec(&m, spec, 1) != DT_OK)
        return dt_cli_fail(&cli, "--model '%s': %s", spec, dt_last_error());
    dt_model_free(&m);
    if (equivalence(spec, K) || memory(spec, net, K) || timing(spec, net, K))
        return 1;
    if (figure(spec, net, K, svg))
        return 1;
    return 0;
}
