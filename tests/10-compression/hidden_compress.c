/* hidden_compress.c - lab 10, staff tests: the compressors' edge cases,
 * exchanges on 3 and 8 ranks, with fewer values than ranks, on the proc
 * backend, top-k at density 1, PowerSGD's checkpoint, a checkpoint of
 * another method refused, and training on 2 ranks. */
#include "cmp_test.h"
#include "exchange_test.h"
#include "grader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TEST_HIDDEN(codec_edge_cases, 2)
{
    dt_test_see("chapter 10, sections 2 to 4");
    /* 1-bit: one value; exactly one byte of bits; one bit into a second byte */
    const float v[9] = {-2, 1, 1, -1, 1, 1, 1, -1, -0.0f};
    uint8_t out[6];
    float c[9], s;
    EXPECT_OK(lab_sign_encode(v, 1, out));
    memcpy(&s, out, 4);
    EXPECT(s == 2 && out[4] == 0, "one value -2: scale %g, bits 0x%02x", (double)s, out[4]);
    EXPECT_OK(lab_sign_encode(v, 8, out));
    EXPECT(out[4] == 0x76, "8 values: bits 0x%02x, expected 0x76", out[4]);
    memset(out, 0xff, sizeof out);
    EXPECT_OK(lab_sign_encode(v, 9, out));
    EXPECT(out[5] == 0x01, "9 values, the last -0: bits of byte 5 0x%02x, expected 0x01 (-0 "
           "is not below 0; the unused bits 0)", out[5]);
    EXPECT_OK(lab_sign_decode(out, 9, c));
    memcpy(&s, out, 4);
    EXPECT(c[8] == s && c[0] == -s, "decoded -0 as %g and -2 as %g (scale %g)", (double)c[8],
           (double)c[0], (double)s);
    /* top-k: all magnitudes equal, so the lowest indices */
    const float t[6] = {1, -1, 1, -1, 1, -1};
    lab_pair p[6];
    EXPECT_OK(lab_topk_select(t, 6, 3, p));
    for (int j = 0; j < 3; j++)
        EXPECT(p[j].index == j && p[j].value == t[j], "equal magnitudes, k = 3: pair %d is "
               "(%d, %g), expected (%d, %g)", j, p[j].index, (double)p[j].value, j,
               (double)t[j]);
    /* int8: the negative side clamps too; 127 levels reach 127 */
    const float w[3] = {-100, 100, -63.5f};
    int8_t q[3];
    EXPECT_OK(lab_int8_encode(w, 3, 0.5f, 127, q));
    EXPECT(q[0] == -127 && q[1] == 127 && q[2] == -127, "levels 127: %d %d %d, expected -127 "
           "127 -127", q[0], q[1], q[2]);
    EXPECT(lab_int8_levels(3) == 42 && lab_int8_levels(128) == 0, "lab_int8_levels changed");
}

TEST_HIDDEN_T(exchanges_on_three_and_eight_ranks, 3, 30)
{
    dt_test_see("chapter 10, section 6");
    lab_method ms[3] = {LAB_TOPK, LAB_INT8, LAB_SIGN};
    for (int i = 0; i < 3; i++) {
        lab_compress_config cc = {ms[i], 1, 0.1, 0, 0};
        exchange_expect(&cc, 3, 1, 1e-6); /* 64 / 3: divisions by 3 round */
        exchange_expect(&cc, 8, 2, 0);
    }
}

TEST_HIDDEN_T(sign_with_fewer_values_than_ranks, 2, 20)
{
    dt_test_see("chapter 10, section 6");
    /* mlp:1,2 has 4 parameters: on 8 ranks blocks of 1, 1, 1, 1, 0, 0, 0, 0 */
    lab_compress_config cc = {LAB_SIGN, 1, 0, 0, 0};
    exchange_expect_on(&cc, 8, 2, 0, DT_BACKEND_THREAD, "mlp:1,2");
    cc.method = LAB_TOPK, cc.density = 0.5;
    exchange_expect_on(&cc, 8, 2, 0, DT_BACKEND_THREAD, "mlp:1,2");
}

TEST_HIDDEN_T(exchanges_on_proc_backend, 2, 30)
{
    dt_test_see("chapter 10, section 6");
    lab_compress_config cc = {LAB_SIGN, 1, 0, 0, 0};
    exchange_expect_on(&cc, 2, 2, 0, DT_BACKEND_PROC, NULL);
    cc.method = LAB_TOPK, cc.density = 0.1;
    exchange_expect_on(&cc, 3, 1, 1e-6, DT_BACKEND_PROC, NULL);
    cc.method = LAB_INT8;
    exchange_expect_on(&cc, 2, 2, 0, DT_BACKEND_PROC, NULL);
}

TEST_HIDDEN_T(topk_at_density_one_sends_everything, 1, 20)
{
    dt_test_see("chapter 10, section 3");
    lab_compress_config cc = {LAB_TOPK, 1, 1.0, 0, 0};
    exchange_expect(&cc, 4, 2, 0); /* C(v) = v: no residual, the exact mean */
}

/* A PowerSGD checkpoint is no top-k state: refused, and nothing of it loaded. */
static dt_result refused_rank(dt_comm *w, void *arg)
{
    const char *dir = arg;
    lab_compress_config psgd = {LAB_POWERSGD, 1, 0, 2, 9}, topk = {LAB_TOPK, 1, 0.1, 0, 0};
    char path[4200];
    dt_model a = {0}, x = {0}, fresh = {0};
    snprintf(path, sizeof path, "%s/rank%d.ckpt", dir, dt_comm_rank(w));
    dt_result r = cmp_train_until(w, &psgd, dt_adamw_config(0.01f), 3, NULL, path, 4, &a);
    if (r == DT_OK) {
        dt_result bad = cmp_train_until(w, &topk, dt_adamw_config(0.01f), 5, path, NULL, 5, &x);
        if (bad != DT_ERR_INVALID_ARG)
            r = dt_fail(DT_ERR_MISMATCH, "loading a PowerSGD checkpoint into a top-k state "
                        "returned %s, expected DT_ERR_INVALID_ARG", dt_strerror(bad));
        else if ((r = dt_model_create_spec(&fresh, "mlp:12,16,4", 5)) == DT_OK &&
                 cmp_first_diff(x.params, fresh.params, x.num_params) >= 0)
            r = dt_fail(DT_ERR_MISMATCH, "a refused load changed the parameters (from "
                        "parameter %ld on): nothing may be loaded when a check fails",
                        cmp_first_diff(x.params, fresh.params, x.num_params));
    }
    unlink(path);
    dt_model_free(&a), dt_model_free(&x), dt_model_free(&fresh);
    return r;
}

/* ------------------------------------------------------------ checkpoints */

/* AdamW this time: two state slots and a step count to resume; PowerSGD's
 * Q matrices besides the residuals. */
TEST_HIDDEN_T(powersgd_checkpoint_resumes_and_other_methods_refused, 2, 30)
{
    dt_test_see("chapter 10, section 7");
    cmp_ckpt_run psgd = {{LAB_POWERSGD, 1, 0, 2, 9}, dt_adamw_config(0.01f), 4, 10};
    cmp_ckpt_resume_test("powersgd_checkpoint_resumes_and_other_methods_refused", &psgd, 1);
    if (getenv("CMP_CKPT_RESUME")) /* the fresh process has done its part */
        return;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/dtlab-ckpt-XXXXXX", dt_test_tmpdir());
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp %s failed", dir);
    dt_result r = cmp_launch(2, NULL, refused_rank, dir);
    rmdir(dir);
    EXPECT(r == DT_OK, "%s", dt_last_error());
}

/* ------------------------------------------------------------ training on 2 ranks */

TEST_HIDDEN_T(compressors_train_on_two_ranks, 3, 90)
{
    dt_test_see("chapter 10, section 5");
    cmp_digits_run base = {{LAB_DENSE, 0, 0, 0, 0}, 2, 440, 0, 0};
    EXPECT_OK(cmp_train_digits(&base));
    lab_compress_config cc[3] = {{LAB_SIGN, 1, 0, 0, 0}, {LAB_TOPK, 1, 0.01, 0, 0},
                                 {LAB_INT8, 1, 0, 0, 0}};
    for (int i = 0; i < 3; i++) {
        cmp_digits_run run = {cc[i], 2, 440, 0, 0};
        EXPECT_OK(cmp_train_digits(&run));
        dt_log("2 ranks: %s %.4f, uncompressed %.4f", lab_method_name(cc[i].method),
               (double)run.accuracy, (double)base.accuracy);
        EXPECT(run.accuracy >= base.accuracy - 0.02f, "2 ranks: %s with error feedback "
               "reaches %.2f%%, more than 2 points below the uncompressed %.2f%%",
               lab_method_name(cc[i].method), 100.0 * run.accuracy, 100.0 * base.accuracy);
    }
}

/* Predict, then measure, on other networks and rank counts, and the
 * arguments the contract refuses. */
TEST_HIDDEN_T(predict_topk_crossover_elsewhere, 2, 30)
{
    dt_test_see("chapter 10, sections 1, 3 and 6");
    crossover_expect("mlp:64,256,10", 2, "eth10");
    crossover_expect("mlp:64,1024,10", 5, "ib100"); /* n = 76810: d* = 0.2305 */
    crossover_expect("mlp:64,256,10", 2, "alpha=2.5us,bw=9GB/s");
    dt_net link;
    double d;
    EXPECT_OK(dt_net_link("ib100", &link));
    EXPECT_ERR(lab_topk_crossover(&link, 100, 1, &d), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_topk_crossover(&link, 0, 4, &d), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_net_link("none", &link));
    EXPECT_ERR(lab_topk_crossover(&link, 100, 4, &d), DT_ERR_INVALID_ARG);
}
