/* test_ckpt.c - lab 11, task 3: activation checkpointing on the deep MLP
 * stack (chapter 11, section 6): the segment plans, what a plan costs,
 * the gradients bit for bit against the library's plain backward, and
 * the peak of ACT measured by the memory accounting against the sqrt(L)
 * formula. */
#include "grader.h"
#include "memory_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 32, ROWS = 16 };

static void expect_keep(int L, int k, const char *want)
{
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, L));
    memset(p.keep, 7, (size_t)L); /* neither 0 nor 1: every entry must be written */
    EXPECT_OK(lab_plan_segments(&p, k));
    for (int i = 0; i < L; i++)
        EXPECT(p.keep[i] == (want[i] == '1'), "%d layers in %d segments: keep[%d] = %d; expected "
               "%s (1: kept)", L, k, i, p.keep[i], want);
    lab_plan_free(&p);
}

TEST(plan_segments_as_checkpoint_sequential_cuts, 1)
{
    dt_test_see("chapter 11, section 6");
    expect_keep(16, 4, "0001000100011111");
    expect_keep(10, 3, "0010011111");
    expect_keep(7, 1, "1111111");
    expect_keep(7, 7, "1111111");
    expect_keep(9, 2, "000111111");
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, 16));
    EXPECT_ERR(lab_plan_segments(&p, 17), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "17") && strstr(dt_last_error(), "16"),
           "17 segments of 16 layers: the message names both numbers: %s", dt_last_error());
    EXPECT_ERR(lab_plan_segments(&p, 0), DT_ERR_INVALID_ARG);
    lab_plan_free(&p);
}

/* A chain of 9 layers of unequal outputs and costs, as a test draws it. */
static void odd_chain(lab_chain *c, uint64_t seed)
{
    EXPECT_OK(lab_chain_alloc(c, 9));
    for (int i = 0; i < 9; i++) {
        c->out_bytes[i] = 64 * (1 + dt_hash64(seed, 1, (uint64_t)i) % 16);
        c->flops[i] = (double)(1000 * (1 + dt_hash64(seed, 2, (uint64_t)i) % 50));
    }
    c->fixed_bytes = 333;
}

TEST(plan_cost_is_the_executors_peak, 2)
{
    dt_test_see("chapter 11, section 6");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        lab_chain c;
        lab_plan p;
        odd_chain(&c, seed);
        EXPECT_OK(lab_plan_init(&p, 9));
        for (unsigned bits = 0; bits < 1u << 9; bits++) {
            for (int i = 0; i < 9; i++)
                p.keep[i] = bits >> i & 1;
            p.keep[8] = 1;
            size_t peak;
            int rec;
            double flops;
            mt_walk(&c, p.keep, &peak, &rec, &flops);
            lab_plan_cost got = {0, -1, -1};
            EXPECT_OK(lab_plan_cost_of(&c, &p, &got));
            EXPECT(got.peak_bytes == peak && got.recomputed_layers == rec &&
                   got.recompute_flops == flops,
                   "plan %03x of chain %d: peak %zu, %d layers and %.0f FLOPs recomputed; the "
                   "executor holds %zu at its peak and recomputes %d layers, %.0f FLOPs", bits,
                   (int)seed, got.peak_bytes, got.recomputed_layers, got.recompute_flops, peak,
                   rec, flops);
        }
        lab_plan_free(&p);
        lab_chain_free(&c);
    }
}

/* ---------------------------------------------------------------- the executor */

typedef struct {
    dt_model m;
    lab_ckpt c;
    float *x, *plain;
    int32_t y[ROWS];
    float plain_loss;
} deep_case;

/* The deep MLP of L layers, a batch, and its plain gradients from the
 * library's reference path (dt_model_backward). */
static void deep_open(deep_case *k, int L)
{
    memset(k, 0, sizeof *k);
    EXPECT_OK(mt_deep(&k->m, L, W));
    k->x = malloc(ROWS * W * sizeof(float));
    k->plain = malloc(k->m.num_params * sizeof(float));
    EXPECT(k->x && k->plain, "out of memory");
    mt_batch(k->x, k->y, ROWS, W, W, MT_DATA_SEED + (uint64_t)L);
    EXPECT_OK(mt_fp32_grads(&k->m, k->x, k->y, ROWS, k->plain));
    dt_acts *a;
    EXPECT_OK(dt_acts_create(&a, &k->m, 0, L, ROWS, 1));
    EXPECT_OK(dt_model_forward(&k->m, a, k->x, NULL));
    EXPECT_OK(dt_model_loss(&k->m, a, k->y, &k->plain_loss, NULL));
    dt_acts_free(a);
    EXPECT_OK(lab_ckpt_create(&k->c, &k->m, ROWS));
}

static void deep_close(deep_case *k)
{
    lab_ckpt_free(&k->c);
    dt_model_free(&k->m);
    free(k->x), free(k->plain);
}

/* Runs plan p: the gradients and the loss must be the plain ones bit for
 * bit; returns the measured peak and recomputed layers. */
static void run_plan(deep_case *k, const lab_plan *p, const char *what, size_t *peak,
                     long *recomputed)
{
    float loss;
    EXPECT_OK(mt_ckpt_measure(&k->c, p, k->x, k->y, peak, recomputed));
    EXPECT_OK(dt_model_zero_grads(&k->m));
    EXPECT_OK(lab_ckpt_step(&k->c, p, k->x, k->y, &loss));
    EXPECT(!memcmp(&loss, &k->plain_loss, sizeof loss), "%s: loss %.9g, the plain forward "
           "gives %.9g", what, (double)loss, (double)k->plain_loss);
    for (size_t i = 0; i < k->m.num_params; i++)
        EXPECT(!memcmp(&k->m.grads[i], &k->plain[i], sizeof(float)), "%s: gradient %zu is %.9g, "
               "the plain backward gives %.9g (a recomputed layer must be the forward's bit for "
               "bit)", what, i, (double)k->m.grads[i], (double)k->plain[i]);
}

TEST(checkpointed_gradients_bit_for_bit, 3)
{
    dt_test_see("chapter 11, section 6");
    deep_case k;
    deep_open(&k, 16);
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, 16));
    const int segs[] = {1, 2, 3, 4, 5, 16};
    char what[64];
    size_t peak;
    long rec;
    for (size_t i = 0; i < sizeof segs / sizeof *segs; i++) {
        EXPECT_OK(lab_plan_segments(&p, segs[i]));
        snprintf(what, sizeof what, "%d segments of 16 layers", segs[i]);
        run_plan(&k, &p, what, &peak, &rec);
    }
    for (uint64_t seed = 0; seed < 6; seed++) { /* plans of any shape */
        for (int i = 0; i < 16; i++)
            p.keep[i] = dt_hash64(seed, 9, (uint64_t)i) % 3 == 0;
        p.keep[15] = 1;
        snprintf(what, sizeof what, "random plan %d", (int)seed);
        run_plan(&k, &p, what, &peak, &rec);
    }
    lab_plan_free(&p);
    deep_close(&k);
}

/* Measured against the chapter's formula: with every output A bytes and a
 * working set F (the input, two gradient buffers, the probabilities: 4 A
 * here), k = sqrt(L) segments hold F + (2 sqrt(L) - 1) A at the peak and
 * recompute (sqrt(L) - 1)^2 layers; keeping everything holds F + L A. */
static void sqrt_case(int L)
{
    deep_case k;
    deep_open(&k, L);
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, L));
    int r = (int)lround(sqrt((double)L));
    double A = ROWS * W * sizeof(float), F = (double)k.c.chain.fixed_bytes;
    size_t peak, plain_peak;
    long rec, plain_rec;
    char what[64];
    snprintf(what, sizeof what, "L = %d, one segment", L);
    EXPECT_OK(lab_plan_segments(&p, 1));
    run_plan(&k, &p, what, &plain_peak, &plain_rec);
    snprintf(what, sizeof what, "L = %d, %d segments", L, r);
    EXPECT_OK(lab_plan_segments(&p, r));
    run_plan(&k, &p, what, &peak, &rec);
    double formula = F + (2 * r - 1) * A;
    EXPECT(fabs((double)peak - formula) <= 0.1 * formula, "L = %d, %d segments: measured peak of "
           "ACT %zu bytes, the formula F + (2 sqrt(L) - 1) A gives %.0f (within 10%%)", L, r,
           peak, formula);
    EXPECT(rec == (long)(r - 1) * (r - 1), "L = %d, %d segments: %ld layers recomputed, the "
           "formula (sqrt(L) - 1)^2 gives %d", L, r, rec, (r - 1) * (r - 1));
    EXPECT(plain_rec == 0 && fabs((double)plain_peak - (F + L * A)) <= 0.1 * (F + L * A),
           "L = %d, one segment: %ld layers recomputed, peak %zu bytes (expected 0 and F + L A "
           "= %.0f)", L, plain_rec, plain_peak, F + L * A);
    lab_plan_free(&p);
    deep_close(&k);
}

TEST(peak_act_follows_the_sqrt_L_formula, 3)
{
    dt_test_see("chapter 11, section 6");
    sqrt_case(16);
    sqrt_case(64);
}

TEST(executor_peak_is_the_plans_cost, 2)
{
    dt_test_see("chapter 11, section 6");
    deep_case k;
    deep_open(&k, 12);
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, 12));
    for (uint64_t seed = 0; seed < 24; seed++) {
        for (int i = 0; i < 12; i++)
            p.keep[i] = dt_hash64(seed, 4, (uint64_t)i) % 2;
        p.keep[11] = 1;
        size_t peak, want_peak;
        long rec;
        int want_rec;
        double flops;
        mt_walk(&k.c.chain, p.keep, &want_peak, &want_rec, &flops);
        EXPECT_OK(mt_ckpt_measure(&k.c, &p, k.x, k.y, &peak, &rec));
        EXPECT(peak == want_peak && rec == want_rec, "plan %d: measured peak %zu bytes, %ld "
               "layers recomputed; section 6's executor holds %zu and recomputes %d",
               (int)seed, peak, rec, want_peak, want_rec);
    }
    lab_plan_free(&p);
    deep_close(&k);
}

/* ---------------------------------------------------------------- task 5 */

/* See memory_test.h: the peak of ACT must be F + peak A (every output A
 * bytes) and the layers run twice `recomputed`, exactly. */
void mt_expect_segments_prediction(int L, int k)
{
    int peak = -1, rec = -1, s = L / k;
    int want_peak = k - 1 + L - (k - 1) * s, want_rec = (k - 1) * (s - 1);
    dt_result r = lab_predict_segments(L, k, &peak, &rec);
    EXPECT(r == DT_OK, "L = %d, %d segments: lab_predict_segments: %s", L, k, dt_last_error());
    EXPECT(peak == want_peak && rec == want_rec, "L = %d, %d segments: predicted a peak of %d "
           "layer outputs and %d layers recomputed; section 6 gives k - 1 + L - (k - 1) "
           "floor(L/k) = %d and (k - 1)(floor(L/k) - 1) = %d", L, k, peak, rec, want_peak,
           want_rec);
    deep_case dc;
    deep_open(&dc, L);
    lab_plan p;
    EXPECT_OK(lab_plan_init(&p, L));
    EXPECT_OK(lab_plan_segments(&p, k));
    size_t got;
    long got_rec;
    double A = ROWS * W * sizeof(float), F = (double)dc.c.chain.fixed_bytes;
    EXPECT_OK(mt_ckpt_measure(&dc.c, &p, dc.x, dc.y, &got, &got_rec));
    EXPECT((double)got == F + peak * A && got_rec == rec, "L = %d, %d segments: predicted a "
           "peak of %d outputs (F + %d A = %.0f bytes of ACT) and %d layers recomputed, as "
           "section 6 does; the executor ran lab_plan_segments(%d) holding %zu bytes (F + %.2f "
           "A) at its peak and recomputed %ld layers", L, k, peak, peak, F + peak * A, rec, k,
           got, ((double)got - F) / A, got_rec);
    lab_plan_free(&p);
    deep_close(&dc);
}

/* L = 25 in 4 segments: k does not divide L, and the last segment is
 * longer than the others. */
TEST(predict_segments_peak_then_measure, 2)
{
    dt_test_see("chapter 11, section 6");
    mt_expect_segments_prediction(25, 4);
}
