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
 * Tables 6 and 7 are run_ckpt.c's. `run --help` lists the options. */
#include "run.h"

#include "dt/cli.h"

#include "dt/data.h"
#include "dt/metrics.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *out_dir = "build";

dt_result fail(void)
{
    fprintf(stderr, "run: %s\n", dt_last_error());
    return DT_ERR_INTERNAL;
}

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

/* ================================================================ main */

int main(int argc, char **argv)
{
    int steps = 600, width = 512, no_wall = 0;
    out_dir = dt_cli_build_dir();
    const dt_opt opts[] = {
        {"--steps", DT_OPT_INT, &steps, .help = "training steps of table 4", .lo = 1,
         .hi = MAX_STEPS},
        {"--width", DT_OPT_INT, &width, .help = "the deep MLP's width, tables 6 and 7",
         .arg = "W", .lo = 16, .hi = 2048},
        {"--no-wall", DT_OPT_FLAG, &no_wall, .help = "without the wall-clock columns"},
        {"--figures", DT_OPT_DIR, &out_dir, .help = "where 11-loss.svg and 11-ckpt-memory.svg "
         "go"},
        {"--out", DT_OPT_RENAMED, NULL, .arg = "--figures"},
    };
    dt_cli cli = {.prog = "run", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .about = "Lab 11: mixed precision and activation checkpointing, measured "
                           "with your functions."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    formats_table();
    if (underflow_table() || scaler_table() || training_table(steps) || memory_table() ||
        ckpt_table((size_t)width, !no_wall) || segments_table((size_t)width) ||
        budget_table((size_t)width))
        return 1;
    return 0;
}
