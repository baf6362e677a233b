/* gpu_stream.c - lab 15 on the GPU (stream_gpu.h): the student's
 * same code with the given task bodies on device buffers, on the nccl
 * backend, against the host device's. Compiled in make gpu's build only
 * (DT_HAVE_NCCL): in the CPU build this file is empty, so that build's
 * tests and points are unchanged. Without a GPU each test reports
 * "skipped: no GPU" (tests/gpu/gpu_test.h), never passed.
 *
 * Ranks: 1, and 2 where the GPUs allow (two GPUs, or DT_NCCL_HOSTID=1:
 * two ranks on one GPU, bench/gpu-check.sh's route). The GPU's sums run in
 * another order than the CPU's (cuBLAS, NCCL's rings): results are equal
 * within TOL of the array's largest magnitude, not bit for bit. */
#ifdef DT_HAVE_NCCL

#include "grader.h"
#include "../gpu/gpu_test.h"
#include "stream_ddp.h"
#include "stream_tp.h"

#include "dt/tp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC "mlp:12,16,14,18,10,4" /* the host tests' model: 5 layers, 950 parameters */
#define B 6
#define STEPS 3
#define LR 0.05f
#define TOL 1e-4 /* fp32, three steps: relative to the array's largest */

static int max_ranks(int gpus)
{
    const char *h = getenv("DT_NCCL_HOSTID");
    return gpus >= 2 || (h && !strcmp(h, "1")) ? 2 : 1;
}

static dt_launch_opts nccl_opts(int K)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = DT_BACKEND_NCCL;
    o.net = "none";
    o.timeout_s = 60;
    return o;
}

/* |got - want| <= TOL max |want|, else a failure naming what and where. */
static dt_result close_all(const char *what, int rank, const float *got, const float *want,
                           size_t n)
{
    double big = 1e-30;
    for (size_t i = 0; i < n; i++)
        big = fmax(big, fabs(want[i]));
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= TOL * big))
            return dt_fail(DT_ERR_MISMATCH, "rank %d: %s[%zu] = %.9g on the GPU, %.9g expected "
                           "(tolerance %g of the largest, %.6g)", rank, what, i, got[i],
                           want[i], TOL, big);
    return DT_OK;
}

static void batch(int rank, int step, const dt_model *m, float *x, int32_t *y)
{
    for (size_t i = 0; i < B * m->in_width; i++)
        x[i] = (float)((int)((rank * 131 + step * 71 + (int)i * 17) % 19) - 9) / 8.0f;
    for (int i = 0; i < B; i++)
        y[i] = (int32_t)((rank + step + i) % (int)m->num_classes);
}

/* ---------------------------------------------------------------- DDP, ZeRO-1 */

typedef struct {
    lab_sddp_mode mode;  /* of b; a runs DDP */
    lab_device_kind a_on, b_on;
    size_t cap;
} pair_cfg;

/* Two labs side by side on the same batches: a (DDP) and b; their losses
 * and parameters within TOL after every step. */
static dt_result pair_fn(dt_comm *w, void *arg)
{
    const pair_cfg *c = arg;
    int r = dt_comm_rank(w);
    dt_model ma, mb;
    DT_CHECK(dt_model_create_spec(&ma, SPEC, 11));
    dt_result res = dt_model_create_spec(&mb, SPEC, 11);
    if (res != DT_OK) {
        dt_model_free(&ma);
        return res;
    }
    lab_sddp a, b;
    memset(&a, 0, sizeof a), memset(&b, 0, sizeof b);
    res = lab_sddp_init_on(&a, c->a_on, w, &ma, LAB_SDDP_DDP, B, c->cap, LR);
    if (res == DT_OK)
        res = lab_sddp_init_on(&b, c->b_on, w, &mb, c->mode, B, c->cap, LR);
    float x[B * 12];
    int32_t y[B];
    for (int s = 0; res == DT_OK && s < STEPS; s++) {
        float la = 0, lb = 0;
        batch(r, s, &ma, x, y);
        res = lab_sddp_step(&a, x, y, &la);
        if (res == DT_OK)
            res = lab_sddp_step(&b, x, y, &lb);
        if (res == DT_OK)
            res = close_all("the loss", r, &lb, &la, 1);
        if (res == DT_OK)
            res = lab_sddp_download(&a);
        if (res == DT_OK)
            res = lab_sddp_download(&b);
        if (res == DT_OK)
            res = close_all("params", r, mb.params, ma.params, ma.num_params);
        if (res != DT_OK)
            dt_fail(res, "%s (step %d on %d ranks, %s on the %s against DDP on the %s)",
                    dt_last_error(), s, dt_comm_size(w),
                    c->mode == LAB_SDDP_DDP ? "DDP" : "ZeRO-1", c->b_on ? "GPU" : "host",
                    c->a_on ? "GPU" : "host");
    }
    lab_sddp_free(&b);
    lab_sddp_free(&a);
    dt_model_free(&mb);
    dt_model_free(&ma);
    return res;
}

TEST_T(gpu_overlapped_ddp_matches_host, 1, 120, .own_backend = 1)
{
    dt_test_see("chapter 15, section 9");
    int K = max_ranks(gpu_require());
    static const size_t caps[] = {800, 1 << 20}; /* four buckets; one */
    for (int k = 1; k <= K; k++)
        for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++) {
            pair_cfg c = {LAB_SDDP_DDP, LAB_ON_HOST, LAB_ON_GPU, caps[i]};
            dt_launch_opts o = nccl_opts(k);
            EXPECT_OK(dt_launch(&o, pair_fn, &c));
        }
}

TEST_T(gpu_zero1_matches_gpu_ddp, 1, 120, .own_backend = 1)
{
    dt_test_see("chapter 08, section 4; chapter 15, section 9");
    int K = max_ranks(gpu_require());
    for (int k = 1; k <= K; k++) {
        pair_cfg c = {LAB_SDDP_ZERO1, LAB_ON_GPU, LAB_ON_GPU, 800};
        dt_launch_opts o = nccl_opts(k);
        EXPECT_OK(dt_launch(&o, pair_fn, &c));
    }
}

/* ---------------------------------------------------------------- the tensor-parallel MLP */

#define N 5
#define C 8
#define H 16

static float val(size_t i, int a, int m) { return (float)((int)((i * (size_t)a) % (size_t)m) - m / 2) / 16.0f; }

/* One device's whole MLP (dt/tp.h with no group), this rank's slices of
 * it run by the lab on the GPU: y and dx within TOL of one device's, and
 * the rank's parts of the four gradients. */
static dt_result tp_fn(dt_comm *w, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(w), t = dt_comm_size(w);
    size_t Hl = H / (size_t)t;
    /* 0 fc_w 1 fc_b 2 mproj_w 3 mproj_b 4 x 5 dy 6 y 7 dx 8 dfc_w 9 dfc_b 10 dmproj_w
     * 11 dmproj_b: one device's (each at most H C floats); slices below */
    float h[12][H * C], fch[N * H], fchg[N * H], work[2 * N * H];
    memset(h, 0, sizeof h);
    for (size_t i = 0; i < H * C; i++)
        h[0][i] = val(i, 3, 13), h[2][i] = val(i, 5, 11);
    for (size_t i = 0; i < H; i++)
        h[1][i] = val(i, 7, 9);
    for (size_t i = 0; i < C; i++)
        h[3][i] = val(i, 2, 7);
    for (size_t i = 0; i < N * C; i++)
        h[4][i] = val(i, 7, 11), h[5][i] = val(i, 5, 7);
    dt_result res = dt_tp_mlp_forward(NULL, h[6], fch, fchg, h[4], h[0], h[1], h[2], h[3], N, C, H);
    if (res == DT_OK)
        res = dt_tp_mlp_backward(NULL, h[7], h[8], h[9], h[10], h[11], work, h[5], h[4], fch,
                                 fchg, h[0], h[2], N, C, H);
    /* this rank's slices: fc_w's rows, fc_b's entries, mproj_w's columns */
    float s_fc_w[H * C], s_mproj_w[C * H], got[H * C];
    for (size_t i = 0; i < C; i++)
        for (size_t j = 0; j < Hl; j++)
            s_mproj_w[i * Hl + j] = h[2][i * H + (size_t)r * Hl + j];
    memcpy(s_fc_w, h[0] + (size_t)r * Hl * C, Hl * C * sizeof(float));
    /* device copies: 0 fc_w 1 fc_b 2 mproj_w 3 mproj_b 4 x 5 dy 6 y 7 dx 8-11 the gradients */
    const float *src[12] = {s_fc_w, h[1] + (size_t)r * Hl, s_mproj_w, h[3], h[4], h[5]};
    size_t dlen[12] = {Hl * C, Hl, C * Hl, C, N * C, N * C, N * C, N * C, Hl * C, Hl, C * Hl, C};
    float *d[12];
    memset(d, 0, sizeof d);
    for (size_t i = 0; res == DT_OK && i < 12; i++) {
        res = dt_gpu_alloc((void **)&d[i], dlen[i] * sizeof(float));
        if (res == DT_OK)
            res = src[i] ? dt_gpu_to_device(d[i], src[i], dlen[i] * sizeof(float))
                         : dt_gpu_zero(d[i], dlen[i] * sizeof(float));
    }
    lab_stp p;
    memset(&p, 0, sizeof p);
    if (res == DT_OK)
        res = lab_stp_init_on(&p, LAB_ON_GPU, w, N, C, Hl, d[0], d[1], d[2], d[3], d[8], d[9],
                              d[10], d[11]);
    if (res == DT_OK)
        res = lab_stp_forward(&p, d[4], d[6]);
    if (res == DT_OK)
        res = lab_stp_backward(&p, d[4], d[5], d[7]);
    dt_result rc = p.compute ? dt_stream_synchronize(p.compute) : DT_OK;
    dt_result rm = p.comm_stream ? dt_stream_synchronize(p.comm_stream) : DT_OK;
    if (res == DT_OK)
        res = rc != DT_OK ? rc : rm;
    /* want: one device's, the rank's part of each gradient */
    const float *want[12] = {[6] = h[6], [7] = h[7], [8] = h[8] + (size_t)r * Hl * C,
                             [9] = h[9] + (size_t)r * Hl, [11] = h[11]};
    float s_dmproj_w[C * H];
    for (size_t i = 0; i < C; i++)
        for (size_t j = 0; j < Hl; j++)
            s_dmproj_w[i * Hl + j] = h[10][i * H + (size_t)r * Hl + j];
    want[10] = s_dmproj_w;
    static const char *names[12] = {[6] = "y", [7] = "dx", [8] = "dfc_w", [9] = "dfc_b",
                                    [10] = "dmproj_w", [11] = "dmproj_b"};
    for (size_t i = 6; res == DT_OK && i < 12; i++) {
        res = dt_gpu_to_host(got, d[i], dlen[i] * sizeof(float));
        if (res == DT_OK)
            res = close_all(names[i], r, got, want[i], dlen[i]);
    }
    if (res != DT_OK)
        dt_fail(res, "%s (the tensor-parallel MLP on %d ranks on the GPU against one device)",
                dt_last_error(), t);
    lab_stp_free(&p);
    for (size_t i = 0; i < 12; i++)
        dt_gpu_free(d[i]);
    return res;
}

TEST_T(gpu_tp_mlp_matches_one_device, 1, 120, .own_backend = 1)
{
    dt_test_see("chapter 07, section 3; chapter 15, section 9");
    int K = max_ranks(gpu_require());
    for (int k = 1; k <= K; k++) {
        dt_launch_opts o = nccl_opts(k);
        EXPECT_OK(dt_launch(&o, tp_fn, NULL));
    }
}

#endif /* DT_HAVE_NCCL */
