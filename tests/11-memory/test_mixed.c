/* test_mixed.c - lab 11, task 2: the MLP's forward and backward in fp16
 * and bf16 with fp32 master weights (chapter 11, sections 1 to 3, 5):
 * what is stored where, against the chapter's step written in
 * memory_test.c; the underflow of small gradients in fp16 without loss
 * scaling; the memory each tag holds.
 *
 * Tolerances: the lab and the test sum the same products in different
 * orders, in fp32; rounding the sums to 16 bits hides most of that, but
 * a sum that lands next to a rounding boundary may round the other way
 * (one unit in the last place), and such a unit flows on to later
 * layers. Every tensor is held to a few units of its format relative to
 * its largest element: 2 eps for the forward, 4 eps for gradients (eps =
 * 2^-10 in fp16, 2^-7 in bf16). Rounding in the wrong format, or summing
 * in 16 bits, is off by more. */
#include "grader.h"
#include "memory_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ROWS = 128, IN = 64 };

typedef struct {
    dt_model m;
    lab_mp mp;
    float x[ROWS * IN];
    int32_t y[ROWS];
    mt_mp_ref ref;
} mp_case;

static void case_open(mp_case *k, dt_dtype t, float scale)
{
    memset(k, 0, sizeof *k);
    EXPECT_OK(mt_mlp(&k->m));
    mt_batch(k->x, k->y, ROWS, IN, k->m.num_classes, MT_DATA_SEED);
    EXPECT_OK(mt_mp_reference(&k->ref, &k->m, t, k->x, k->y, ROWS, scale));
    dt_optim_config o = dt_sgd_config(0.1f, 0, 0);
    EXPECT_OK(lab_mp_create(&k->mp, &k->m, t, ROWS, &o));
}

static void case_close(mp_case *k)
{
    mt_mp_ref_free(&k->ref, &k->m);
    lab_mp_free(&k->mp);
    dt_model_free(&k->m);
}

static void check_forward(dt_dtype t)
{
    mp_case k;
    case_open(&k, t, 1);
    float loss = -1;
    size_t correct = 0;
    EXPECT_OK(lab_mp_forward(&k.mp, k.x, k.y, &loss, &correct));
    const dt_model *m = &k.m;
    char what[96];
    /* rounded element by element: exact */
    snprintf(what, sizeof what, "%s w16 (the master weights rounded)", dt_dtype_name(t));
    EXPECT_OK(mt_compare16(what, t, k.mp.w16, k.ref.w16, m->num_params, 0));
    snprintf(what, sizeof what, "%s act[0] (the input rounded)", dt_dtype_name(t));
    EXPECT_OK(mt_compare16(what, t, k.mp.act[0], k.ref.act[0], ROWS * IN, 0));
    for (int i = 0; i < m->num_layers; i++) {
        snprintf(what, sizeof what, "%s act[%d] (the output of layer %s)", dt_dtype_name(t),
                 i + 1, m->layers[i].name);
        EXPECT_OK(mt_compare16(what, t, k.mp.act[i + 1], k.ref.act[i + 1],
                               ROWS * m->layers[i].out_width, 2 * mt_eps(t)));
    }
    EXPECT(fabs(loss - k.ref.loss) <= 2 * mt_eps(t) * k.ref.loss, "%s loss %.7g, the chapter's "
           "step gives %.7g", dt_dtype_name(t), (double)loss, (double)k.ref.loss);
    EXPECT(correct + 1 >= k.ref.correct && correct <= k.ref.correct + 1, "%s: %zu rows correct, "
           "the chapter's step gives %zu", dt_dtype_name(t), correct, k.ref.correct);
    case_close(&k);
}

TEST(mp_forward_rounds_where_a_step_stores, 3)
{
    dt_test_see("chapter 11, sections 1 and 2");
    check_forward(DT_F16);
    check_forward(DT_BF16);
}

static void check_backward(dt_dtype t, float scale)
{
    mp_case k;
    case_open(&k, t, scale);
    float loss;
    EXPECT_OK(lab_mp_forward(&k.mp, k.x, k.y, &loss, NULL));
    EXPECT_OK(lab_mp_backward(&k.mp, k.y, scale));
    char what[96];
    for (int v = 0; v < k.m.num_views; v++) {
        const dt_param_view *pv = &k.m.views[v];
        snprintf(what, sizeof what, "%s g16 of %s, loss scale %g", dt_dtype_name(t), pv->name,
                 (double)scale);
        EXPECT_OK(mt_compare16(what, t, k.mp.g16 + pv->offset, k.ref.g16 + pv->offset, pv->count,
                               4 * mt_eps(t)));
    }
    case_close(&k);
}

TEST(mp_backward_scaled_gradients_rounded_once, 3)
{
    dt_test_see("chapter 11, sections 2 and 3");
    check_backward(DT_F16, 1024);
    check_backward(DT_F16, 1);
    check_backward(DT_BF16, 1);
    check_backward(DT_BF16, 65536);
}

/* ---------------------------------------------------------------- underflow */

enum { SURE_ROWS = 32 };

/* A model sure of itself: class 0's logit 24 above what it was, every
 * label 0. p(other classes) ~ e^-24 ~ 4e-11, so the gradient of the
 * logits, (p - onehot) / 32, is ~1e-12: below fp16's smallest subnormal
 * (2^-24 ~ 6e-8), far inside bf16's range (2^-133). */
static dt_result sure_model(dt_model *m, float *x, int32_t *y)
{
    DT_CHECK(mt_mlp(m));
    int32_t ignored[SURE_ROWS];
    mt_batch(x, ignored, SURE_ROWS, IN, m->num_classes, MT_DATA_SEED);
    for (int n = 0; n < SURE_ROWS; n++)
        y[n] = 0;
    dt_model_view(m, m->params, m->num_layers - 1, DT_LINEAR_BIAS)[0] += 24;
    return DT_OK;
}

/* The fraction of the nonzero fp32 gradients that g16 / scale holds as 0,
 * and the comparison with them. */
static double run_16(dt_dtype t, float scale, const float *g32, size_t *nonzero32, double tol)
{
    dt_model m;
    float x[SURE_ROWS * IN], loss;
    int32_t y[SURE_ROWS];
    lab_mp mp;
    EXPECT_OK(sure_model(&m, x, y));
    dt_optim_config o = dt_sgd_config(0.1f, 0, 0);
    EXPECT_OK(lab_mp_create(&mp, &m, t, SURE_ROWS, &o));
    EXPECT_OK(lab_mp_forward(&mp, x, y, &loss, NULL));
    EXPECT_OK(lab_mp_backward(&mp, y, scale));
    size_t lost = 0, nz = 0, P = m.num_params;
    float *g = malloc(P * sizeof(float));
    EXPECT(g != NULL, "out of memory");
    EXPECT_OK(dt_convert(g, DT_F32, mp.g16, t, P));
    for (size_t i = 0; i < P; i++) {
        g[i] /= scale;
        nz += g32[i] != 0;
        lost += g32[i] != 0 && g[i] == 0;
    }
    if (tol > 0)
        for (int v = 0; v < m.num_views; v++) {
            char what[96];
            const dt_param_view *pv = &m.views[v];
            snprintf(what, sizeof what, "%s g16 / S of %s, S = %g, against fp32", dt_dtype_name(t),
                     pv->name, (double)scale);
            EXPECT_OK(mt_compare32(what, g + pv->offset, g32 + pv->offset, pv->count, tol));
        }
    free(g);
    lab_mp_free(&mp);
    dt_model_free(&m);
    *nonzero32 = nz;
    return nz ? (double)lost / (double)nz : 0;
}

TEST(fp16_underflows_without_scaling_bf16_does_not, 3)
{
    dt_test_see("chapter 11, sections 1 and 3");
    dt_model m;
    float x[SURE_ROWS * IN];
    int32_t y[SURE_ROWS];
    EXPECT_OK(sure_model(&m, x, y));
    float *g32 = malloc(m.num_params * sizeof(float));
    EXPECT(g32 != NULL, "out of memory");
    EXPECT_OK(mt_fp32_grads(&m, x, y, SURE_ROWS, g32));
    size_t nz;
    double lost = run_16(DT_F16, 1, g32, &nz, 0);
    EXPECT(nz > m.num_params / 2, "the fp32 gradient has only %zu nonzero elements of %zu", nz,
           m.num_params);
    EXPECT(lost >= 0.99, "fp16 without loss scaling kept %.1f%% of the %zu nonzero gradients; "
           "they lie below 2^-24 and must underflow to 0", 100 * (1 - lost), nz);
    lost = run_16(DT_F16, 4294967296.0f, g32, &nz, 0.01);
    EXPECT(lost <= 0.01, "fp16 with S = 2^32 lost %.1f%% of the gradients to underflow",
           100 * lost);
    lost = run_16(DT_BF16, 1, g32, &nz, 0.2);
    EXPECT(lost <= 0.01, "bf16 without scaling lost %.1f%% of the gradients to underflow",
           100 * lost);
    free(g32);
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- memory */

TEST(mp_memory_halves_activations_and_gradients, 2)
{
    dt_test_see("chapter 11, section 5");
    dt_model m;
    float x[ROWS * IN], loss;
    int32_t y[ROWS];
    EXPECT_OK(mt_mlp(&m));
    mt_batch(x, y, ROWS, IN, m.num_classes, MT_DATA_SEED);
    size_t P = m.num_params, V = m.num_classes, widest = IN, outs = 0;
    for (int i = 0; i < m.num_layers; i++) {
        widest = m.layers[i].out_width > widest ? m.layers[i].out_width : widest;
        outs += m.layers[i].out_width;
    }
    /* fp32, the library's reference path: ACT of one batch, GRAD 4 P */
    dt_mem_stats s0, s1;
    dt_acts *a;
    dt_mem_stats_get(&s0);
    EXPECT_OK(dt_acts_create(&a, &m, 0, m.num_layers, ROWS, 1));
    dt_mem_stats_get(&s1);
    size_t act32 = s1.current[DT_MEM_ACT] - s0.current[DT_MEM_ACT];
    dt_acts_free(a);
    /* the 16-bit step: PARAM 4 P + 2 P, GRAD 2 P, OPTIM 4 P (momentum) */
    lab_mp mp;
    dt_optim_config o = dt_sgd_config(0.1f, 0.9f, 0);
    EXPECT_OK(lab_mp_create(&mp, &m, DT_F16, ROWS, &o));
    lab_scaler s;
    lab_scaler_config c = lab_gradscaler_config();
    EXPECT_OK(lab_scaler_init(&s, &c));
    dt_mem_stats_get(&s0);
    dt_mem_reset_peak();
    EXPECT_OK(lab_mp_forward(&mp, x, y, &loss, NULL));
    EXPECT_OK(lab_mp_backward(&mp, y, s.scale));
    EXPECT_OK(lab_mp_step(&mp, &s, NULL));
    dt_mem_stats_get(&s1);
    size_t act16 = 2 * ROWS * (IN + outs) + 2 * 2 * ROWS * widest + 4 * ROWS * V;
    EXPECT(s1.peak[DT_MEM_ACT] == s0.current[DT_MEM_ACT],
           "ACT grew from %zu to a peak of %zu bytes during the 16-bit step: activations live "
           "in the 16-bit buffers only (fp32 temporaries are the scratch's, OTHER)",
           s0.current[DT_MEM_ACT], s1.peak[DT_MEM_ACT]);
    EXPECT(s1.peak[DT_MEM_GRAD] == 2 * P && s1.peak[DT_MEM_OPTIM] == 4 * P &&
           s1.peak[DT_MEM_PARAM] == 6 * P,
           "peaks: GRAD %zu (expected 2P = %zu: no fp32 gradient buffer), OPTIM %zu (4P = %zu), "
           "PARAM %zu (6P = %zu)", s1.peak[DT_MEM_GRAD], 2 * P, s1.peak[DT_MEM_OPTIM], 4 * P,
           s1.peak[DT_MEM_PARAM], 6 * P);
    EXPECT(s0.current[DT_MEM_ACT] == act16 && act16 * 100 <= 55 * act32,
           "ACT %zu bytes in 16 bits against %zu in fp32 (expected %zu: about half)",
           s0.current[DT_MEM_ACT], act32, act16);
    /* the whole peak: an fp32 copy made with malloc has no tag, but counts */
    double tagged = (double)(s1.peak[DT_MEM_PARAM] + s1.peak[DT_MEM_GRAD] +
                             s1.peak[DT_MEM_OPTIM] + s1.peak[DT_MEM_ACT]);
    EXPECT_OK(dt_test_whole_peak(tagged, (double)s1.peak[DT_MEM_UNTAGGED],
                                 (double)(12 * P + act16), 0.05, "the 16-bit step"));
    lab_mp_free(&mp);
    dt_model_free(&m);
}
