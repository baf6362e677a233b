/* test_reshard.c - lab 14, task 4: ZeRO-1's checkpoint of 3 ranks resumed
 * on 2, 4 and 3 ranks. Right after the load, each rank's AdamW state is
 * its block over M ranks of the 3 saved blocks laid back by their ranges
 * (read here from the files, bit for bit), and its parameters are the
 * saved ones. Trained on to step 12, the M ranks end within 1e-4 of the
 * run that never stopped (the global batch and the sample order are the
 * same; only the sums' rounding differs). A DDP checkpoint is refused,
 * saying why. */
#include "ft_test.h"
#include "grader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3, P_MAX = 4096 };

/* The saved AdamW state of every parameter: the 3 blocks at their ranges. */
static size_t saved_state(const char *dir, float *m, float *v, float *params)
{
    size_t P = 0;
    for (int k = 0; k < N; k++) {
        char p[FT_FILE];
        dt_ckpt_reader *rd;
        snprintf(p, sizeof p, "%s/rank-%05d.dtck", dir, k);
        if (dt_ckpt_open(&rd, p) != DT_OK) {
            EXPECT(0, "%s: %s", p, dt_last_error());
            return 0;
        }
        const dt_ckpt_record *range = dt_ckpt_find(rd, "update.shard.range"),
                             *st = dt_ckpt_find(rd, "update.shard.state"),
                             *pa = dt_ckpt_find(rd, "model.params");
        EXPECT(range && st && pa, "%s: no update.shard.range, update.shard.state or model.params",
               p);
        if (range && st && pa) {
            const uint64_t *off = range->data;
            size_t c = (size_t)off[1];
            P = pa->count;
            memcpy(m + off[0], st->data, c * sizeof(float));
            memcpy(v + off[0], (const float *)st->data + c, c * sizeof(float));
            memcpy(params, pa->data, P * sizeof(float));
        }
        dt_ckpt_close(rd);
    }
    return P;
}

static float max_abs(const float *x, size_t n)
{
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fabsf(x[i]) > m ? fabsf(x[i]) : m;
    return m;
}

/* The largest difference between ROOT/A.r0.f32 and ROOT/B.r0.f32. */
static float params_gap(const char *root, const char *a, const char *b, float *scale)
{
    char pa[FT_FILE], pb[FT_FILE];
    size_t na, nb;
    snprintf(pa, sizeof pa, "%s/%s.r0.f32", root, a);
    snprintf(pb, sizeof pb, "%s/%s.r0.f32", root, b);
    float *x = (float *)ft_slurp(pa, &na), *y = (float *)ft_slurp(pb, &nb);
    float gap = na == nb && na ? 0 : INFINITY;
    for (size_t i = 0; na == nb && i < na / 4; i++)
        gap = fabsf(x[i] - y[i]) > gap ? fabsf(x[i] - y[i]) : gap;
    *scale = max_abs(x, na / 4);
    free(x), free(y);
    return gap;
}

TEST_T(ft_reshard_zero1_n_to_m, 4, 60)
{
    dt_test_see("chapter 14, section 6");
    static float m[P_MAX], v[P_MAX], params[P_MAX];
    char root[FT_PATH - 64], dir[FT_PATH];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_ZERO1, N, root);
    j.until = 12, j.out = "straight";
    EXPECT(ft_launch(&j) == DT_OK, "12 steps on 3 ranks: %s", dt_last_error());
    j.until = 6, j.every = 3, j.out = NULL;
    EXPECT(ft_launch(&j) == DT_OK, "6 steps on 3 ranks, saves at 3 and 6: %s", dt_last_error());
    snprintf(dir, sizeof dir, "%s/step-00000006", root);
    size_t P = saved_state(dir, m, v, params);
    const int Ms[3] = {2, 4, 3};
    for (int t = 0; t < 3 && P; t++) {
        int M = Ms[t];
        char out[32];
        snprintf(out, sizeof out, "loaded%d", M);
        ft_job k = ft_job_make(LAB_ZERO1, M, root);
        k.start = FT_RESHARD, k.model_seed = 77, k.until = 6, k.out = out; /* no step */
        EXPECT(ft_launch(&k) == DT_OK, "3 ranks' checkpoint on %d: %s", M, dt_last_error());
        for (int q = 0; q < M; q++) {
            char p[FT_FILE];
            size_t n, off, len;
            dt_block(P, M, q, &off, &len);
            snprintf(p, sizeof p, "%s/%s.r%d.opt", root, out, q);
            float *o = (float *)ft_slurp(p, &n);
            EXPECT(n == (2 * len + 1) * sizeof(float) && !memcmp(o, m + off, len * 4) &&
                       !memcmp(o + len, v + off, len * 4) && o[2 * len] == 6,
                   "3 ranks' checkpoint on %d: rank %d's AdamW state is not the saved state of "
                   "its block [%zu, +%zu) (m, then v, then 6 updates)", M, q, off, len);
            free(o);
            snprintf(p, sizeof p, "%s/%s.r%d.f32", root, out, q);
            o = (float *)ft_slurp(p, &n);
            EXPECT(n == P * 4 && !memcmp(o, params, n), "3 ranks' checkpoint on %d: rank %d's "
                   "parameters are not the saved ones", M, q);
            free(o);
        }
        snprintf(out, sizeof out, "resumed%d", M);
        k.until = 12, k.out = out;
        EXPECT(ft_launch(&k) == DT_OK, "3 ranks' checkpoint on %d, to 12: %s", M, dt_last_error());
        float scale, gap = params_gap(root, "straight", out, &scale);
        EXPECT(gap <= 1e-4f * scale, "3 ranks' checkpoint on %d ranks, trained to step 12: "
               "parameters %g from the run that never stopped (largest %g)", M, gap, scale);
    }
    ft_rmdir(root);
}

TEST_T(ft_reshard_refuses_ddp, 1, 30)
{
    dt_test_see("chapter 14, section 6");
    char root[FT_PATH - 64];
    ft_tmpdir(root, sizeof root);
    ft_job j = ft_job_make(LAB_DDP, 2, root);
    j.until = 3, j.every = 3;
    EXPECT(ft_launch(&j) == DT_OK, "3 steps of DDP: %s", dt_last_error());
    j.start = FT_RESHARD, j.until = 3;
    ft_launch(&j);
    for (int q = 0; q < 2; q++)
        EXPECT(j.result[q] == DT_ERR_UNSUPPORTED && strstr(j.message[q], "DDP") &&
                   j.unchanged[q],
               "a DDP run resharded: rank %d: %s '%s' (expected DT_ERR_UNSUPPORTED saying "
               "why, nothing changed)", q, dt_strerror(j.result[q]), j.message[q]);
    ft_rmdir(root);
}
