/* run.c - lab 11's program (make run-lab LAB=11): mixed precision and
 * activation checkpointing, measured with your functions.
 *
 *   1. the two 16-bit formats, probed through the library's converters;
 *      an update lost without fp32 master weights (sections 1, 2);
 *   2. gradients that fp16 loses to underflow, by loss scale (section 3);
 *   3. the scalers on a scripted overflow pattern (section 4);
 *   4. the digits MLP trained in fp32, fp16 with and without the scaler,
 *      and bf16: accuracy, skipped steps, loss curves (11-loss.svg);
 *   5. memory by tag, fp32 against 16 bits (section 5);
 *   6. checkpointing the deep MLP: peak ACT measured against the sqrt(L)
 *      formula, recomputed layers, and the wall clock against the
 *      one-extra-forward prediction (section 6; 11-ckpt-memory.svg);
 *   7. plans under a budget: the optimum, the best segments, and the rule
 *      that counts kept bytes only, measured (section 7).
 *
 * usage: run [--steps N] [--width W] [--no-wall] [--out DIR] */
#include "memory.h"

#include "dt/data.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *out_dir = "build";

static dt_result fail(void)
{
    fprintf(stderr, "run: %s\n", dt_last_error());
    return DT_ERR_INTERNAL;
}

#define RUN_CHECK(expr)                                                      \
    do {                                                                     \
        if ((expr) != DT_OK)                                                 \
            return fail();                                                   \
    } while (0)

/* ================================================================ 1. formats */

static float decode(dt_dtype t, uint16_t v)
{
    return t == DT_F16 ? dt_f16_to_f32(v) : dt_bf16_to_f32(v);
}

static uint16_t encode(dt_dtype t, float v)
{
    return t == DT_F16 ? dt_f32_to_f16(v) : dt_f32_to_bf16(v);
}

static void formats_table(void)
{
    printf("## 1. The 16-bit formats (probed through dt_f32_to_f16/bf16 and back)\n\n"
           "| format | exponent, mantissa bits | largest | smallest normal | smallest subnormal "
           "| eps (ulp of 1) | 65520 becomes | 2^-25 becomes |\n|---|---|---|---|---|---|---|---|\n");
    const struct { dt_dtype t; const char *bits; uint16_t max, norm, sub; } f[2] = {
        {DT_F16, "5, 10", 0x7bff, 0x0400, 0x0001}, {DT_BF16, "8, 7", 0x7f7f, 0x0080, 0x0001}};
    for (int i = 0; i < 2; i++) {
        dt_dtype t = f[i].t;
        float eps = decode(t, (uint16_t)(encode(t, 1.0f) + 1)) - 1.0f;
        printf("| %s | %s | %.6g | %.6g | %.6g | %.6g | %.6g | %.6g |\n", dt_dtype_name(t),
               f[i].bits, (double)decode(t, f[i].max), (double)decode(t, f[i].norm),
               (double)decode(t, f[i].sub), (double)eps, (double)decode(t, encode(t, 65520.0f)),
               (double)decode(t, encode(t, ldexpf(1, -25))));
    }
    /* an update of 1e-4 per step on a weight of 1, kept in 16 bits or fp32 */
    float w16[2] = {1, 1}, w32 = 1;
    for (int s = 0; s < 1000; s++) {
        w32 -= 1e-4f;
        for (int i = 0; i < 2; i++)
            w16[i] = decode(i ? DT_BF16 : DT_F16, encode(i ? DT_BF16 : DT_F16, w16[i] - 1e-4f));
    }
    printf("\nA weight of 1 after 1000 updates of -1e-4: fp32 master %.6f, fp16 %.6f, bf16 "
           "%.6f (the update is below half a unit in the last place of 1)\n\n", (double)w32,
           (double)w16[0], (double)w16[1]);
}

/* ================================================================ 2. underflow */

enum { SURE_ROWS = 32 };

/* The digits-shaped MLP 64-48-10 sure of class 0 (its logit 24 higher),
 * every label 0, inputs in [0, 1): the gradient of the logits is ~1e-12. */
static dt_result sure_model(dt_model *m, float *x, int32_t *y)
{
    const size_t w[] = {64, 48, 10};
    DT_CHECK(dt_mlp_create(m, w, 3, 2024));
    dt_rng g;
    dt_rng_init(&g, 7, 0);
    for (size_t i = 0; i < SURE_ROWS * 64; i++)
        x[i] = dt_rng_uniform(&g);
    for (int n = 0; n < SURE_ROWS; n++)
        y[n] = 0;
    dt_model_view(m, m->params, m->num_layers - 1, DT_LINEAR_BIAS)[0] += 24;
    return DT_OK;
}

/* Of the nonzero fp32 gradients, the share the 16-bit step holds as 0 at
 * scale S, and how many are inf or nan. */
static dt_result lost_share(dt_dtype t, float S, const float *g32, double *lost, size_t *inf)
{
    dt_model m;
    float x[SURE_ROWS * 64], loss;
    int32_t y[SURE_ROWS];
    lab_mp mp;
    dt_optim_config o = dt_sgd_config(0.1f, 0, 0);
    DT_CHECK(sure_model(&m, x, y));
    dt_result r = lab_mp_create(&mp, &m, t, SURE_ROWS, &o);
    if (r == DT_OK)
        r = lab_mp_forward(&mp, x, y, &loss, NULL);
    if (r == DT_OK)
        r = lab_mp_backward(&mp, y, S);
    size_t nz = 0, gone = 0;
    *inf = 0;
    for (size_t i = 0; r == DT_OK && i < m.num_params; i++) {
        float v = decode(t, mp.g16[i]);
        nz += g32[i] != 0;
        gone += g32[i] != 0 && v == 0;
        *inf += !isfinite(v);
    }
    *lost = nz ? (double)gone / (double)nz : 0;
    lab_mp_free(&mp);
    dt_model_free(&m);
    return r;
}

static dt_result underflow_table(void)
{
    dt_model m;
    float x[SURE_ROWS * 64], loss;
    int32_t y[SURE_ROWS];
    dt_acts *a = NULL;
    RUN_CHECK(sure_model(&m, x, y));
    RUN_CHECK(dt_acts_create(&a, &m, 0, m.num_layers, SURE_ROWS, 1));
    RUN_CHECK(dt_model_forward(&m, a, x, NULL));
    RUN_CHECK(dt_model_loss(&m, a, y, &loss, NULL));
    RUN_CHECK(dt_model_backward(&m, a, NULL, NULL, NULL, NULL));
    dt_acts_free(a);
    double gmax = 0, gmin = INFINITY;
    for (size_t i = 0; i < m.num_params; i++)
        if (m.grads[i] != 0)
            gmax = fmax(gmax, fabs(m.grads[i])), gmin = fmin(gmin, fabs(m.grads[i]));
    printf("## 2. Underflow: a model sure of its answers (loss %.3g; nonzero fp32 gradients "
           "from %.2g to %.2g)\n\n| format | loss scale S | nonzero fp32 gradients held as 0 "
           "| inf or nan |\n|---|---|---|---|\n", (double)loss, gmin, gmax);
    const struct { dt_dtype t; int log2s; } runs[] = {
        {DT_F16, 0}, {DT_F16, 8}, {DT_F16, 16}, {DT_F16, 24}, {DT_F16, 32}, {DT_F16, 48},
        {DT_BF16, 0}, {DT_BF16, 32}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        double lost;
        size_t inf;
        RUN_CHECK(lost_share(runs[i].t, ldexpf(1, runs[i].log2s), m.grads, &lost, &inf));
        printf("| %s | 2^%d | %.1f%% | %zu |\n", dt_dtype_name(runs[i].t), runs[i].log2s,
               100 * lost, inf);
    }
    printf("\n");
    dt_model_free(&m);
    return DT_OK;
}

/* ================================================================ 3. scalers */

static int pattern(long i) { return i == 0 || (i >= 3000 && i < 3003) || i == 3500; }

static dt_result scaler_table(void)
{
    lab_scaler_config c[2] = {lab_gradscaler_config(), lab_megatron_config()};
    lab_scaler s[2];
    for (int k = 0; k < 2; k++)
        RUN_CHECK(lab_scaler_init(&s[k], &c[k]));
    printf("## 3. The scalers on one pattern: overflows at steps 1, 3001-3003 and 3501\n\n"
           "| after step | found inf | GradScaler S | skipped | Megatron S | skipped |\n"
           "|---|---|---|---|---|---|\n");
    static const long show[] = {1, 2, 1000, 1001, 2000, 2001, 3000, 3001, 3002, 3003, 3004,
                                3501, 4001, 4503, 5001, 5503};
    for (long i = 0, j = 0; i < 5503; i++) {
        for (int k = 0; k < 2; k++)
            RUN_CHECK(lab_scaler_update(&s[k], pattern(i)));
        if (i + 1 == show[j]) {
            printf("| %ld | %s | %.0f | %ld | %.0f | %ld |\n", i + 1, pattern(i) ? "yes" : "no",
                   (double)s[0].scale, s[0].skipped, (double)s[1].scale, s[1].skipped);
            j++;
        }
    }
    printf("\n");
    return DT_OK;
}

/* ================================================================ 4. training */

enum { MAX_STEPS = 20000, REPORT = 10 };

typedef struct {
    double x[MAX_STEPS / REPORT + 1], y[MAX_STEPS / REPORT + 1];
    size_t n;
} curve;

static void on_progress(void *arg, const dt_train_progress *p)
{
    curve *c = arg;
    if (c->n < sizeof c->x / sizeof *c->x)
        c->x[c->n] = (double)p->step, c->y[c->n++] = p->loss;
}

/* The digits MLP 64-128-10, SGD lr 0.05 momentum 0.9, batch 32, from the
 * same model and batches: fp32 through the library's loop (sc NULL), or
 * the 16-bit step through the same loop with the lab's hooks. */
static dt_result train_one(const dt_dataset *tr, const dt_dataset *te, long steps, dt_dtype t,
                           const lab_scaler_config *sc, curve *cv, float *acc, lab_scaler *s)
{
    dt_model m;
    dt_trainer trainer;
    lab_mp mp = {0};
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.05f, 0.9f, 0);
    DT_CHECK(dt_model_create_spec(&m, "mlp:64,128,10", 1));
    dt_result r = dt_trainer_init(&trainer, &m, NULL, &tc);
    if (r == DT_OK && sc)
        r = lab_scaler_init(s, sc);
    if (r == DT_OK && sc)
        r = lab_mp_create(&mp, &m, t, 32, &tc.optim);
    if (r == DT_OK && sc)
        r = lab_mp_use_in_trainer(&trainer, &mp, s);
    dt_train_config c = dt_train_defaults();
    c.batch = 32, c.steps = steps, c.report_every = REPORT, c.test = te;
    c.progress = on_progress, c.progress_arg = cv;
    dt_train_result res;
    cv->n = 0;
    if (r == DT_OK)
        r = dt_train(&trainer, tr, &c, &res);
    *acc = res.accuracy;
    dt_trainer_free(&trainer);
    lab_mp_free(&mp);
    dt_model_free(&m);
    return r;
}

static dt_result training_table(long steps)
{
    dt_dataset all, tr, te;
    RUN_CHECK(dt_data_load_digits(&all, NULL));
    RUN_CHECK(dt_data_split(&all, 0.2, 1, &tr, &te));
    enum { RUNS = 5 };
    static curve cv[RUNS];
    const char *names[RUNS] = {"fp32", "fp16, GradScaler", "fp16, Megatron's scaler",
                               "fp16, S = 1", "bf16, S = 1"};
    lab_scaler_config gs = lab_gradscaler_config(), mg = lab_megatron_config(),
                      one = lab_constant_config(1);
    const lab_scaler_config *cfg[RUNS] = {NULL, &gs, &mg, &one, &one};
    dt_dtype types[RUNS] = {DT_F32, DT_F16, DT_F16, DT_F16, DT_BF16};
    printf("## 4. The digits MLP 64-128-10, %ld steps of SGD (lr 0.05, momentum 0.9, batch 32)\n\n"
           "| run | test accuracy | last loss | steps skipped | S at the end |\n"
           "|---|---|---|---|---|\n", steps);
    dt_plot *pl = NULL;
    RUN_CHECK(dt_plot_create(&pl, "digits MLP: training loss", "step", "loss"));
    dt_result r = dt_plot_set_yscale(pl, DT_AXIS_LOG10);
    for (int k = 0; k < RUNS && r == DT_OK; k++) {
        lab_scaler s = {0};
        float acc;
        r = train_one(&tr, &te, steps, types[k], cfg[k], &cv[k], &acc, &s);
        if (r == DT_OK && cv[k].n)
            r = dt_plot_add_series(pl, names[k], cv[k].x, cv[k].y, cv[k].n, DT_SERIES_LINE);
        if (r == DT_OK && k)
            printf("| %s | %.4f | %.4f | %ld | %.0f |\n", names[k], (double)acc,
                   cv[k].y[cv[k].n - 1], s.skipped, (double)s.scale);
        else if (r == DT_OK)
            printf("| %s | %.4f | %.4f | - | - |\n", names[k], (double)acc, cv[k].y[cv[k].n - 1]);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/11-loss.svg", out_dir);
    if (r == DT_OK)
        r = dt_plot_write_svg(pl, path);
    dt_plot_free(pl);
    dt_dataset_free(&all), dt_dataset_free(&tr), dt_dataset_free(&te);
    RUN_CHECK(r);
    printf("\n(loss: the mean over the last %d steps; accuracy of the fp32 master weights on "
           "the test fifth) wrote %s\n\n", REPORT, path);
    return DT_OK;
}

/* ================================================================ 5. memory by tag */

static dt_result memory_table(void)
{
    dt_model m;
    dt_acts *a;
    dt_mem_stats s0, s1, s2;
    enum { B = 32 };
    dt_mem_stats_get(&s0);
    RUN_CHECK(dt_model_create_spec(&m, "mlp:64,128,10", 1));
    RUN_CHECK(dt_acts_create(&a, &m, 0, m.num_layers, B, 1));
    dt_optimizer opt;
    dt_optim_config oc = dt_sgd_config(0.05f, 0.9f, 0);
    RUN_CHECK(dt_optim_init(&opt, &oc, 0, m.num_params));
    dt_mem_stats_get(&s1);
    dt_acts_free(a);
    dt_optim_free(&opt);
    lab_mp mp;
    RUN_CHECK(lab_mp_create(&mp, &m, DT_F16, B, &oc));
    dt_mem_stats_get(&s2);
    printf("## 5. Memory by tag: the digits MLP (%zu parameters), batch %d, SGD with momentum\n\n"
           "| tag | fp32 (bytes) | fp16 step (bytes) | ratio |\n|---|---|---|---|\n",
           m.num_params, B);
    const dt_mem_tag tags[] = {DT_MEM_PARAM, DT_MEM_GRAD, DT_MEM_OPTIM, DT_MEM_ACT};
    size_t t32 = 0, t16 = 0;
    for (size_t i = 0; i < 4; i++) {
        size_t b32 = s1.current[tags[i]] - s0.current[tags[i]];
        size_t b16 = s2.current[tags[i]] - s0.current[tags[i]];
        t32 += b32, t16 += b16;
        printf("| %s | %zu | %zu | %.3f |\n", dt_mem_tag_name(tags[i]), b32, b16,
               (double)b16 / (double)b32);
    }
    printf("| all four | %zu | %zu | %.3f |\n\n(fp16: PARAM holds the fp32 master weights and "
           "their 16-bit copy; the fp32 scratch of the emulation, OTHER, is left out: a GPU does "
           "not hold it)\n\n", t32, t16, (double)t16 / (double)t32);
    lab_mp_free(&mp);
    dt_model_free(&m);
    return DT_OK;
}

/* ================================================================ 6. checkpointing */

enum { ROWS = 64, REPS = 9 };

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A deep MLP of L layers of width w, its executor and a batch. */
typedef struct {
    dt_model m;
    lab_ckpt c;
    lab_plan p;
    float *x;
    int32_t y[ROWS];
} deep;

static dt_result deep_open(deep *d, int L, size_t w)
{
    memset(d, 0, sizeof *d);
    DT_CHECK(dt_deep_mlp_create(&d->m, w, w, (size_t)(L - 2), w, 1));
    DT_CHECK(lab_ckpt_create(&d->c, &d->m, ROWS));
    DT_CHECK(lab_plan_init(&d->p, L));
    if (!(d->x = malloc(ROWS * w * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "run: a batch");
    dt_rng g;
    dt_rng_init(&g, 3, 0);
    for (size_t i = 0; i < ROWS * w; i++)
        d->x[i] = dt_rng_normal(&g);
    for (int n = 0; n < ROWS; n++)
        d->y[n] = (int32_t)dt_rng_below(&g, (uint32_t)w);
    return DT_OK;
}

static void deep_close(deep *d)
{
    lab_plan_free(&d->p);
    lab_ckpt_free(&d->c);
    dt_model_free(&d->m);
    free(d->x);
}

/* One step of d->p: the peak of ACT and the layers recomputed. */
static dt_result measure(deep *d, size_t *peak, long *recomputed)
{
    dt_mem_stats s;
    float loss;
    DT_CHECK(dt_model_zero_grads(&d->m));
    dt_mem_reset_peak();
    DT_CHECK(lab_ckpt_step(&d->c, &d->p, d->x, d->y, &loss));
    dt_mem_stats_get(&s);
    *peak = s.peak[DT_MEM_ACT];
    *recomputed = d->c.layers_run - d->c.num_layers;
    return DT_OK;
}

/* Medians over REPS steps of d->p: forward (with the loss), backward,
 * step, and the step's CPU time on this thread. */
static dt_result time_steps(deep *d, double *fwd, double *bwd, double *step, double *cpu)
{
    double f[REPS], b[REPS], s[REPS], c[REPS];
    float loss;
    for (int r = 0; r < REPS; r++) {
        DT_CHECK(dt_model_zero_grads(&d->m));
        double c0 = cpu_now(), t0 = dt_now();
        DT_CHECK(lab_ckpt_forward(&d->c, &d->p, d->x));
        DT_CHECK(lab_ckpt_loss(&d->c, d->y, &loss));
        double t1 = dt_now();
        DT_CHECK(lab_ckpt_backward(&d->c, &d->p));
        double t2 = dt_now();
        f[r] = t1 - t0, b[r] = t2 - t1, s[r] = t2 - t0, c[r] = cpu_now() - c0;
    }
    *fwd = median(f, REPS), *bwd = median(b, REPS), *step = median(s, REPS);
    *cpu = median(c, REPS);
    return DT_OK;
}

static double mib(double bytes) { return bytes / (1024.0 * 1024.0); }

static dt_result ckpt_table(size_t w, int wall)
{
    static const int Ls[] = {16, 64};
    printf("## 6. Checkpointing the deep MLP: width %zu, batch %d (one output A = %.3f MiB), "
           "sqrt(L) segments\n\n| L | plain peak | checkpointed peak | formula F + (2 sqrt(L) "
           "- 1) A | recomputed | (sqrt(L) - 1)^2 |%s\n|---|---|---|---|---|---|%s\n", w, ROWS,
           mib(4.0 * ROWS * (double)w), wall ? " step plain | step checkpointed | overhead, wall "
           "| overhead, CPU | predicted | one whole forward |" : "",
           wall ? "---|---|---|---|---|---|" : "");
    for (size_t i = 0; i < 2; i++) {
        int L = Ls[i], k = (int)lround(sqrt(L));
        deep d;
        size_t plain, peak;
        long rp, rec;
        RUN_CHECK(deep_open(&d, L, w));
        double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
        RUN_CHECK(lab_plan_segments(&d.p, 1));
        RUN_CHECK(measure(&d, &plain, &rp));
        double pf, pb, ps, pc, cf, cb, cs, cc;
        if (wall)
            RUN_CHECK(time_steps(&d, &pf, &pb, &ps, &pc));
        RUN_CHECK(lab_plan_segments(&d.p, k));
        RUN_CHECK(measure(&d, &peak, &rec));
        printf("| %d | %.2f MiB | %.2f MiB | %.2f MiB | %ld | %d |", L, mib((double)plain),
               mib((double)peak), mib(F + (2 * k - 1) * A), rec, (k - 1) * (k - 1));
        if (wall) {
            RUN_CHECK(time_steps(&d, &cf, &cb, &cs, &cc));
            /* the forward of the recomputed layers, priced at the plain forward's rate */
            double pred = (double)rec / L * pf / ps;
            printf(" %.1f ms | %.1f ms | %.1f%% | %.1f%% | %.1f%% | %.1f%% |", 1e3 * ps, 1e3 * cs,
                   100 * (cs / ps - 1), 100 * (cc / pc - 1), 100 * pred, 100 * pf / ps);
        }
        printf("\n");
        deep_close(&d);
    }
    if (wall)
        printf("\n(medians of %d steps on %s; overhead, CPU: the same from this thread's CPU time, "
               "which a busy machine disturbs less; predicted: recomputed/L x T_fwd / T_step of "
               "the plain step; one whole forward: T_fwd / T_step)\n", REPS,
               dt_blas_available() ? "OpenBLAS" : "the built-in sgemm");
    printf("\n");
    return DT_OK;
}

/* Segments 1 .. L of the deep MLP of 64 layers: measured and formula. */
static dt_result segments_table(size_t w)
{
    enum { L = 64 };
    static const int ks[] = {1, 2, 4, 6, 8, 11, 16, 32, 64};
    enum { NK = sizeof ks / sizeof *ks };
    double x[NK], meas[NK], form[NK];
    deep d;
    RUN_CHECK(deep_open(&d, L, w));
    double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
    printf("## 6b. L = 64, every segment count: peak of ACT in outputs A beyond F = %.0f A\n\n"
           "| segments k | peak, measured | formula k - 1 + L - (k - 1) floor(L/k) | recomputed, "
           "measured | formula (k - 1)(floor(L/k) - 1) |\n|---|---|---|---|---|\n", F / A);
    for (int i = 0; i < NK; i++) {
        size_t peak;
        long rec;
        RUN_CHECK(lab_plan_segments(&d.p, ks[i]));
        RUN_CHECK(measure(&d, &peak, &rec));
        dt_sim_recompute s = dt_sim_recompute_segments(L, ks[i]);
        x[i] = ks[i], meas[i] = ((double)peak - F) / A, form[i] = s.peak;
        printf("| %d | %.2f | %.0f | %ld | %.0f |\n", ks[i], meas[i], s.peak, rec, s.recomputed);
    }
    dt_plot *pl = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/11-ckpt-memory.svg", out_dir);
    dt_result r = dt_plot_create(&pl, "deep MLP, 64 layers: peak activations by segments",
                                 "segments k", "layer outputs at the peak (beyond F)");
    if (r == DT_OK)
        r = dt_plot_set_xscale(pl, DT_AXIS_LOG2);
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "formula", x, form, NK, DT_SERIES_LINE);
    if (r == DT_OK)
        r = dt_plot_add_series(pl, "measured (ACT)", x, meas, NK, DT_SERIES_POINTS);
    if (r == DT_OK)
        r = dt_plot_write_svg(pl, path);
    dt_plot_free(pl);
    deep_close(&d);
    RUN_CHECK(r);
    printf("\nwrote %s\n\n", path);
    return DT_OK;
}

/* ================================================================ 7. budgets */

/* The segment count with the fewest recomputed FLOPs whose peak fits. */
static int best_segments(deep *d, size_t budget, lab_plan_cost *best)
{
    int k_best = 0;
    for (int k = 1; k <= d->c.num_layers; k++) {
        lab_plan_cost cost;
        if (lab_plan_segments(&d->p, k) != DT_OK ||
            lab_plan_cost_of(&d->c.chain, &d->p, &cost) != DT_OK)
            return -1;
        if (cost.peak_bytes <= budget && (!k_best || cost.recompute_flops < best->recompute_flops))
            k_best = k, *best = cost;
    }
    return k_best;
}

static dt_result budget_row(deep *d, const char *label, size_t budget)
{
    size_t peak;
    long rec;
    lab_plan_cost seg;
    int k = best_segments(d, budget, &seg);
    RUN_CHECK(k < 0 ? DT_ERR_INTERNAL : DT_OK);
    printf("| %s | %.2f |", label, mib((double)budget));
    if (lab_plan_select(&d->c.chain, budget, &d->p) == DT_OK) {
        RUN_CHECK(measure(d, &peak, &rec));
        printf(" %.2f | %ld |", mib((double)peak), rec);
    } else {
        printf(" none fits | - |");
    }
    if (k)
        printf(" k = %d: %.2f, %d |", k, mib((double)seg.peak_bytes), seg.recomputed_layers);
    else
        printf(" none fits |");
    if (lab_plan_greedy(&d->c.chain, budget, &d->p) == DT_OK) {
        RUN_CHECK(measure(d, &peak, &rec));
        printf(" %.2f%s | %ld |\n", mib((double)peak), peak > budget ? " (over)" : "", rec);
    } else {
        printf(" none | - |\n");
    }
    return DT_OK;
}

static dt_result budget_table(size_t w)
{
    enum { L = 64 };
    deep d;
    RUN_CHECK(deep_open(&d, L, w));
    double A = 4.0 * ROWS * (double)w, F = (double)d.c.chain.fixed_bytes;
    printf("## 7. Budgets, L = 64 (A = %.3f MiB, F = %.2f MiB): peak (MiB, measured) and layers "
           "recomputed\n\n| budget, outputs beyond F | budget (MiB) | optimum: peak | "
           "recomputed | best segments: peak, recomputed | kept-bytes rule: peak | recomputed |\n"
           "|---|---|---|---|---|---|---|\n", mib(A), mib(F));
    static const int Ms[] = {10, 11, 12, 15, 20, 32, 48, 64};
    for (size_t i = 0; i < sizeof Ms / sizeof *Ms; i++) {
        char label[32];
        snprintf(label, sizeof label, "%d", Ms[i]);
        RUN_CHECK(budget_row(&d, label, (size_t)(F + Ms[i] * A)));
    }
    deep_close(&d);
    /* unequal layers: wide outputs that are cheap to recompute, narrow ones that are not */
    dt_model m;
    lab_ckpt c;
    RUN_CHECK(dt_model_create_spec(&m, "mlp:256,2048,128,2048,128,2048,128,2048,128,2048,128,"
                                   "2048,128,2048,128,10", 1));
    RUN_CHECK(lab_ckpt_create(&c, &m, ROWS));
    size_t all = 0;
    for (int i = 0; i < c.num_layers; i++)
        all += c.chain.out_bytes[i];
    printf("\nUnequal layers (mlp:256,2048,128,2048,...,128,10, %d layers): the wide outputs "
           "cost %.0f FLOPs a byte to recompute, the narrow ones %.0f. Budgets as a share of "
           "all outputs (%.2f MiB) beyond F = %.2f MiB; peaks in MiB, recompute in MFLOP\n\n"
           "| budget | optimum: peak | recompute | kept-bytes rule: peak | recompute |\n"
           "|---|---|---|---|---|\n", c.num_layers, c.chain.flops[2] / (double)c.chain.out_bytes[2],
           c.chain.flops[1] / (double)c.chain.out_bytes[1], mib((double)all),
           mib((double)c.chain.fixed_bytes));
    lab_plan p;
    RUN_CHECK(lab_plan_init(&p, c.num_layers));
    static const int shares[] = {20, 30, 40, 50, 60, 80};
    for (size_t i = 0; i < sizeof shares / sizeof *shares; i++) {
        size_t budget = c.chain.fixed_bytes + all * (size_t)shares[i] / 100;
        lab_plan_cost o, g;
        printf("| %d%% |", shares[i]);
        if (lab_plan_select(&c.chain, budget, &p) == DT_OK &&
            lab_plan_cost_of(&c.chain, &p, &o) == DT_OK)
            printf(" %.2f | %.1f |", mib((double)o.peak_bytes), o.recompute_flops / 1e6);
        else
            printf(" none fits | - |");
        if (lab_plan_greedy(&c.chain, budget, &p) == DT_OK &&
            lab_plan_cost_of(&c.chain, &p, &g) == DT_OK)
            printf(" %.2f%s | %.1f |\n", mib((double)g.peak_bytes),
                   g.peak_bytes > budget ? " (over)" : "", g.recompute_flops / 1e6);
        else
            printf(" none | - |\n");
    }
    lab_plan_free(&p);
    lab_ckpt_free(&c);
    dt_model_free(&m);
    printf("\n");
    return DT_OK;
}

/* ================================================================ main */

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--steps N (1..%d, default 600)] [--width W (16..2048, default "
            "512)] [--no-wall] [--out DIR (default $BUILD)]\n", prog, MAX_STEPS);
    return 2;
}

int main(int argc, char **argv)
{
    long steps = 600, width = 512;
    int wall = 1;
    const char *build = getenv("BUILD");
    out_dir = build && *build ? build : "build";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!strcmp(argv[i], "--no-wall")) {
            wall = 0;
        } else if (v && !strcmp(argv[i], "--steps")) {
            steps = strtol(v, &end, 10), i++;
            if (*end || steps < 1 || steps > MAX_STEPS)
                return fprintf(stderr, "run: --steps %s (need 1..%d)\n", v, MAX_STEPS), usage(argv[0]);
        } else if (v && !strcmp(argv[i], "--width")) {
            width = strtol(v, &end, 10), i++;
            if (*end || width < 16 || width > 2048)
                return fprintf(stderr, "run: --width %s (need 16..2048)\n", v), usage(argv[0]);
        } else if (v && !strcmp(argv[i], "--out")) {
            out_dir = v, i++;
        } else {
            return usage(argv[0]);
        }
    }
    formats_table();
    if (underflow_table() || scaler_table() || training_table(steps) || memory_table() ||
        ckpt_table((size_t)width, wall) || segments_table((size_t)width) ||
        budget_table((size_t)width))
        return 1;
    return 0;
}
