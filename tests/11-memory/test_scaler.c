/* test_scaler.c - lab 11, task 1: the loss scaler's rule on scripted
 * overflow patterns, and the update step that skips on an overflow and
 * otherwise unscales (chapter 11, sections 3 and 4). */
#include "grader.h"
#include "memory_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Runs `steps` updates of s with found_inf from pattern(i), checking
 * scale and growth tracker against the rule after every one. */
static void follow(lab_scaler *s, mt_scaler *want, long steps, int (*pattern)(long), long *at)
{
    for (long i = 0; i < steps; i++, ++*at) {
        int inf = pattern(*at);
        EXPECT_OK(lab_scaler_update(s, inf));
        mt_scaler_step(want, &s->cfg, inf);
        EXPECT(s->scale == (float)want->scale && s->growth_tracker == want->tracker,
               "step %ld (%s): S = %.9g, growth tracker %ld; the rule gives S = %.9g, tracker %ld",
               *at + 1, inf ? "overflow" : "clean", (double)s->scale, s->growth_tracker,
               want->scale, want->tracker);
    }
}

static int clean(long i) { (void)i; return 0; }
static int overflow(long i) { (void)i; return 1; }
/* about one overflow in 700 steps, in bursts of up to 3 */
static int sparse(long i) { return dt_hash64(5, 0, (uint64_t)i / 3) % 700 == 0; }

TEST(gradscaler_rule_on_scripted_overflows, 3)
{
    dt_test_see("chapter 11, section 4");
    lab_scaler s;
    lab_scaler_config c = lab_gradscaler_config();
    EXPECT_OK(lab_scaler_init(&s, &c));
    mt_scaler want = {c.init_scale, 0, c.hysteresis};
    long at = 0;
    /* the pattern: an overflow, then clean steps */
    follow(&s, &want, 1, overflow, &at);
    EXPECT(s.scale == 32768 && s.skipped == 1, "after an overflow at 65536: S = %g, skipped %ld "
           "(expected 32768 and the step skipped)", (double)s.scale, s.skipped);
    follow(&s, &want, 1999, clean, &at);
    EXPECT(s.scale == 32768, "after 1999 clean steps S = %g, expected still 32768",
           (double)s.scale);
    follow(&s, &want, 1, clean, &at);
    EXPECT(s.scale == 65536 && s.growth_tracker == 0, "after the 2000th clean step S = %g "
           "(tracker %ld), expected 65536 (tracker 0)", (double)s.scale, s.growth_tracker);
    /* a long pattern of sparse bursts, and a run of overflows */
    follow(&s, &want, 20000, sparse, &at);
    follow(&s, &want, 30, overflow, &at);
    follow(&s, &want, 4100, clean, &at);
    long expect_skipped = 1 + 30;
    for (long i = 2001; i < 22001; i++)
        expect_skipped += sparse(i);
    EXPECT(s.steps == at && s.skipped == expect_skipped, "GradScaler after %ld updates: its "
           "counters say %ld steps, %ld skipped; %ld updates were made, %ld of them on "
           "overflows", at, s.steps, s.skipped, at, expect_skipped);
}

TEST(megatron_hysteresis_floor_and_constant, 2)
{
    dt_test_see("chapter 11, section 4");
    lab_scaler s;
    lab_scaler_config c = lab_megatron_config();
    EXPECT_OK(lab_scaler_init(&s, &c));
    mt_scaler want = {c.init_scale, 0, c.hysteresis};
    long at = 0;
    /* hysteresis 2: the first overflow keeps S; a clean step does not
     * restore the hysteresis, so the next overflow, and every one after,
     * backs off until S grows again */
    follow(&s, &want, 1, overflow, &at);
    EXPECT(s.scale == 4294967296.0f, "Megatron's first overflow: S = %g, expected 2^32 kept",
           (double)s.scale);
    follow(&s, &want, 5, clean, &at);
    follow(&s, &want, 2, overflow, &at);
    EXPECT(s.scale == 1073741824.0f, "after overflow, 5 clean, 2 overflows: S = %g, expected 2^30",
           (double)s.scale);
    follow(&s, &want, 1000, clean, &at);
    follow(&s, &want, 1, overflow, &at);
    EXPECT(s.scale == 2147483648.0f, "a growth restores the hysteresis: S = %g, expected 2^31",
           (double)s.scale);
    follow(&s, &want, 40, overflow, &at);
    EXPECT(s.scale == 1.0f, "40 overflows in a row: S = %g, expected the floor 1", (double)s.scale);
    follow(&s, &want, 12000, sparse, &at);
    /* other factors than 2 and 1/2, and a growth that would reach inf */
    lab_scaler_config odd = {8.0f, 4.0f, 0.25f, 3, 3, 0.5f, 1};
    EXPECT_OK(lab_scaler_init(&s, &odd));
    want = (mt_scaler){8, 0, 3}, at = 0;
    follow(&s, &want, 3000, sparse, &at);
    follow(&s, &want, 7, overflow, &at);
    follow(&s, &want, 100, clean, &at);
    lab_scaler_config high = {2e38f, 2.0f, 0.5f, 1, 1, 0.0f, 1};
    EXPECT_OK(lab_scaler_init(&s, &high));
    EXPECT_OK(lab_scaler_update(&s, 0));
    EXPECT(s.scale == 2e38f, "S = 2e38 grown by 2 would be inf in fp32: S = %g, expected "
           "2e38 kept", (double)s.scale);
    /* a constant scaler never moves, but still counts skipped steps */
    lab_scaler_config k = lab_constant_config(1.0f);
    EXPECT_OK(lab_scaler_init(&s, &k));
    for (int i = 0; i < 5000; i++)
        EXPECT_OK(lab_scaler_update(&s, i % 3 == 0));
    EXPECT(s.scale == 1 && s.skipped == 1667, "constant scaler: S = %g, skipped %ld (expected "
           "1 and 1667)", (double)s.scale, s.skipped);
    /* the given checks name the field */
    lab_scaler_config bad = lab_gradscaler_config();
    bad.backoff_factor = 2;
    EXPECT_ERR(lab_scaler_init(&s, &bad), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "backoff_factor"), "message: %s", dt_last_error());
}

/* ---------------------------------------------------------------- the step */

/* An fp16 step of the test MLP whose g16 holds 16-bit values of
 * normal(0, 1) x 1024 (a scaled gradient), with momentum. */
typedef struct {
    dt_model m;
    lab_mp mp;
    lab_scaler s;
    float *params, *mom;
} step_case;

static void step_open(step_case *k, dt_dtype t, uint64_t seed)
{
    memset(k, 0, sizeof *k);
    EXPECT_OK(mt_mlp(&k->m));
    dt_optim_config o = dt_sgd_config(0.05f, 0.9f, 1e-3f);
    EXPECT_OK(lab_mp_create(&k->mp, &k->m, t, 8, &o));
    lab_scaler_config c = lab_gradscaler_config();
    c.init_scale = 1024;
    EXPECT_OK(lab_scaler_init(&k->s, &c));
    dt_rng g;
    dt_rng_init(&g, seed, 1);
    size_t P = k->m.num_params;
    for (size_t i = 0; i < P; i++) {
        float v = dt_rng_normal(&g) * 1024;
        k->mp.g16[i] = t == DT_F16 ? dt_f32_to_f16(v) : dt_f32_to_bf16(v);
        k->mp.momentum[i] = dt_rng_normal(&g) * 0.01f; /* as after some steps */
    }
    k->params = malloc(P * sizeof(float));
    k->mom = malloc(P * sizeof(float));
    EXPECT(k->params && k->mom, "out of memory");
    memcpy(k->params, k->m.params, P * sizeof(float));
    memcpy(k->mom, k->mp.momentum, P * sizeof(float));
}

static void step_close(step_case *k)
{
    lab_mp_free(&k->mp);
    dt_model_free(&k->m);
    free(k->params), free(k->mom);
}

/* One element of g16 set to inf or nan: the step must leave the master
 * weights and the momentum as they were, and back S off. */
static void expect_skip(dt_dtype t, size_t where, uint16_t bad, const char *what)
{
    step_case k;
    step_open(&k, t, 3 + where);
    size_t P = k.m.num_params;
    where = where < P ? where : P - 1;
    k.mp.g16[where] = bad;
    int skipped = -1;
    EXPECT_OK(lab_mp_step(&k.mp, &k.s, &skipped));
    EXPECT(skipped == 1, "%s in g16 (element %zu): skipped = %d, expected 1", what, where,
           skipped);
    EXPECT(!memcmp(k.params, k.m.params, P * sizeof(float)) &&
           !memcmp(k.mom, k.mp.momentum, P * sizeof(float)),
           "%s in g16 (element %zu): the master weights or the momentum changed; an overflowed "
           "step must be skipped", what, where);
    EXPECT(k.s.scale == 512 && k.s.skipped == 1, "after the overflow S = %g, skipped %ld "
           "(expected 512 and 1)", (double)k.s.scale, k.s.skipped);
    step_close(&k);
}

TEST(step_skips_an_overflow_and_unscales_otherwise, 3)
{
    dt_test_see("chapter 11, sections 3 and 4");
    expect_skip(DT_F16, 0, 0x7c00, "+inf");
    expect_skip(DT_F16, (size_t)-1, 0xfc00, "-inf");
    expect_skip(DT_F16, 1234, 0x7e00, "nan");
    expect_skip(DT_BF16, 2345, 0x7f80, "bf16 +inf");
    expect_skip(DT_BF16, (size_t)-1, 0x7fc0, "bf16 nan");
    /* a clean step: dt_sgd_update with g16 / S, bit for bit */
    for (int t = 0; t < 2; t++) {
        dt_dtype dt = t ? DT_BF16 : DT_F16;
        step_case k;
        step_open(&k, dt, 77);
        size_t P = k.m.num_params;
        float *g = malloc(P * sizeof(float));
        EXPECT(g != NULL, "out of memory");
        for (size_t i = 0; i < P; i++)
            g[i] = (dt == DT_F16 ? dt_f16_to_f32(k.mp.g16[i]) : dt_bf16_to_f32(k.mp.g16[i])) / 1024;
        EXPECT_OK(dt_sgd_update(&k.mp.optim, k.params, g, k.mom, P));
        int skipped = -1;
        EXPECT_OK(lab_mp_step(&k.mp, &k.s, &skipped));
        EXPECT(skipped == 0, "%s clean step: skipped = %d", dt_dtype_name(dt), skipped);
        for (size_t i = 0; i < P; i++)
            EXPECT(!memcmp(&k.params[i], &k.m.params[i], sizeof(float)) &&
                   !memcmp(&k.mom[i], &k.mp.momentum[i], sizeof(float)),
                   "%s clean step, parameter %zu: %.9g (momentum %.9g), dt_sgd_update with "
                   "g16 / S gives %.9g (%.9g)", dt_dtype_name(dt), i, (double)k.m.params[i],
                   (double)k.mp.momentum[i], (double)k.params[i], (double)k.mom[i]);
        EXPECT(k.s.scale == 1024 && k.s.growth_tracker == 1 && k.s.skipped == 0,
               "after a clean step S = %g, tracker %ld, skipped %ld (expected 1024, 1, 0)",
               (double)k.s.scale, k.s.growth_tracker, k.s.skipped);
        free(g);
        step_close(&k);
    }
}
