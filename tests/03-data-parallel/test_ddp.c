/* test_ddp.c - lab 03: data parallelism. Each multi-rank test trains with
 * the lab inside dt_launch and checks, inside the ranks, the parameters
 * against one rank trained on the global batch (ddp_test.c), that all ranks
 * agree bit for bit, and the calls the lab made (dt_comm_stats). The
 * launches run on the backend DT_BACKEND names (`make check BACKEND=proc`),
 * and each rank checks that it runs there (dt_test_on_backend); figures
 * the test compares across ranks come back through dt_rank_out. */
#include "ddp_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ task 1 */

static dt_result bcast_rank(dt_comm *world, void *arg)
{
    (void)arg;
    int rank = dt_comm_rank(world);
    dt_model m = {0}, want = {0};
    dt_stats st;
    dt_result r = dt_test_on_backend(rank, dt_test_backend());
    if (r == DT_OK)
        r = dt_model_create_spec(&m, "mlp:12,16,8,4", DDP_MODEL_SEED + (uint64_t)rank);
    if (r == DT_OK)
        r = dt_model_create_spec(&want, "mlp:12,16,8,4", DDP_MODEL_SEED);
    if (r == DT_OK)
        r = lab_ddp_broadcast_params(world, &m);
    for (size_t i = 0; r == DT_OK && i < m.num_params; i++)
        if (memcmp(&m.params[i], &want.params[i], sizeof(float)) != 0)
            r = dt_fail(DT_ERR_MISMATCH, "%d ranks: after the broadcast rank %d's params[%zu] = "
                        "%.9g, rank 0's is %.9g (rank %d started from seed %d)",
                        dt_comm_size(world), rank, i, (double)m.params[i],
                        (double)want.params[i], rank, DDP_MODEL_SEED + rank);
    if (r == DT_OK)
        r = dt_comm_stats(world, &st);
    if (r == DT_OK && (st.calls[DT_COLL_BROADCAST] != 1 || st.calls[DT_COLL_ALLREDUCE] != 0))
        r = dt_fail(DT_ERR_MISMATCH, "%llu broadcasts and %llu allreduces, expected 1 and 0",
                    (unsigned long long)st.calls[DT_COLL_BROADCAST],
                    (unsigned long long)st.calls[DT_COLL_ALLREDUCE]);
    dt_model_free(&m);
    dt_model_free(&want);
    return r;
}

TEST(broadcast_initial_params, 2)
{
    for (int K = 1; K <= 3; K++) {
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = K;
        o.timeout_s = 5;
        EXPECT_OK(dt_launch(&o, bcast_rank, NULL));
    }
}

/* The ranks' batches of step t, together, are the one-rank batch of K*B. */
TEST(local_batch_shards_global_batch, 2)
{
    const size_t n = 50, B = 3;
    dt_sampler s;
    size_t all[50], idx[3];
    EXPECT_OK(dt_sampler_init(&s, n, 1, 0, 1, 1, 9));
    EXPECT_OK(dt_sampler_indices(&s, 2, all));
    for (int K = 1; K <= 4; K++)
        for (size_t t = 0; t < 4; t++) {
            int seen[50] = {0};
            for (int rank = 0; rank < K; rank++) {
                EXPECT_OK(lab_ddp_local_batch(n, 9, rank, K, 2, t, B, idx));
                for (size_t j = 0; j < B; j++) {
                    EXPECT(idx[j] < n, "K=%d rank %d step %zu: index %zu of %zu samples", K,
                           rank, t, idx[j], n);
                    seen[idx[j]]++;
                }
            }
            /* the global batch of step t: order[t*K*B .. (t+1)*K*B) */
            for (size_t g = t * K * B; g < (t + 1) * K * B; g++) {
                EXPECT(seen[all[g]] == 1, "K=%d step %zu: sample %zu taken %d times, expected "
                       "once", K, t, all[g], seen[all[g]]);
                seen[all[g]] = 0;
            }
            for (size_t i = 0; i < n; i++)
                EXPECT(seen[i] == 0, "K=%d step %zu: sample %zu is not in the global batch",
                       K, t, i);
        }
    /* 50 samples on 4 ranks: 12 per rank with drop_last; step 4 of 3 needs 15 */
    EXPECT_OK(lab_ddp_local_batch(n, 9, 3, 4, 0, 3, B, idx));
    EXPECT_ERR(lab_ddp_local_batch(n, 9, 3, 4, 0, 4, B, idx), DT_ERR_INVALID_ARG);
}

/* ------------------------------------------------------------ task 2 */

TEST_T(flat_allreduce_equals_large_batch, 4, 20)
{
    ddp_run run = {"mlp:12,16,8,4", LAB_DDP_FLAT, LAB_DDP_BUCKET_BYTES, 6, 1, 3, 1e-5};
    for (int K = 1; K <= 4; K++)
        EXPECT_OK(ddp_launch(K, &run));
}

/* ------------------------------------------------------------ task 3 */

/* Layers of mlp:12,16,8,4 (floats): fc1 12*16+16 = 208, fc2 16*8+8 = 136,
 * fc3 8*4+4 = 36, at offsets 0, 208, 344; 4 bytes each. */
static void expect_buckets(size_t bytes, int n, const int *first, const int *last)
{
    dt_model m = {0};
    lab_bucket *b = NULL;
    int num = -1, of[3] = {-1, -1, -1};
    static const size_t off[3] = {0, 208, 344}, cnt[3] = {208, 136, 36};
    EXPECT_OK(dt_model_create_spec(&m, "mlp:12,16,8,4", 1));
    EXPECT_OK(lab_ddp_make_buckets(&m, bytes, &b, &num, of));
    EXPECT(num == n, "bucket_bytes %zu: %d buckets, expected %d", bytes, num, n);
    for (int i = 0; i < n; i++) {
        size_t o = off[first[i]], c = 0;
        for (int l = first[i]; l < last[i]; l++)
            c += cnt[l];
        EXPECT(b[i].first_layer == first[i] && b[i].last_layer == last[i],
               "bucket_bytes %zu: bucket %d holds layers [%d, %d), expected [%d, %d)", bytes, i,
               b[i].first_layer, b[i].last_layer, first[i], last[i]);
        EXPECT(b[i].offset == o && b[i].count == c,
               "bucket_bytes %zu: bucket %d is [%zu, +%zu), expected [%zu, +%zu)", bytes, i,
               b[i].offset, b[i].count, o, c);
        EXPECT(b[i].pending == last[i] - first[i] && b[i].req == NULL,
               "bucket %d: pending %d (expected %d), req %p", i, b[i].pending,
               last[i] - first[i], (void *)b[i].req);
        for (int l = first[i]; l < last[i]; l++)
            EXPECT(of[l] == i, "bucket_bytes %zu: layer %d in bucket %d, expected %d", bytes, l,
                   of[l], i);
    }
    free(b);
    dt_model_free(&m);
}

TEST(bucket_layout_reverse_order, 3)
{
    /* fc3 = 144 B, fc2 = 544 B, fc1 = 832 B */
    expect_buckets(LAB_DDP_BUCKET_BYTES, 1, (int[]){0}, (int[]){3}); /* all in one */
    expect_buckets(1, 3, (int[]){2, 1, 0}, (int[]){3, 2, 1});       /* one layer each */
    expect_buckets(600, 2, (int[]){1, 0}, (int[]){3, 1});  /* 144 + 544 = 688 >= 600 */
    expect_buckets(688, 2, (int[]){1, 0}, (int[]){3, 1});  /* exactly full closes */
    expect_buckets(689, 1, (int[]){0}, (int[]){3});
    expect_buckets(100, 3, (int[]){2, 1, 0}, (int[]){3, 2, 1});
    dt_model m = {0};
    lab_bucket *b = NULL;
    int num, of[3];
    EXPECT_OK(dt_model_create_spec(&m, "mlp:12,16,8,4", 1));
    EXPECT_ERR(lab_ddp_make_buckets(&m, 0, &b, &num, of), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
}

TEST_T(buckets_equal_large_batch, 3, 20)
{
    /* mlp:12,16,8,4 with 600-byte buckets: 2 buckets, 2 allreduces a step */
    ddp_run run = {"mlp:12,16,8,4", LAB_DDP_BUCKETS, 600, 5, 1, 3, 1e-5};
    for (int K = 2; K <= 3; K++)
        EXPECT_OK(ddp_launch(K, &run));
    run.bucket_bytes = 1; /* one bucket per layer */
    EXPECT_OK(ddp_launch(4, &run));
}

/* ------------------------------------------------------------ task 4 */

TEST_T(overlap_equals_large_batch, 3, 20)
{
    ddp_run run = {"mlp:12,16,8,4", LAB_DDP_OVERLAP, 600, 5, 1, 3, 1e-5};
    for (int K = 2; K <= 4; K += 2)
        EXPECT_OK(ddp_launch(K, &run));
    run.bucket_bytes = 1;
    EXPECT_OK(ddp_launch(3, &run));
}

/* ------------------------------------------------------------ task 5 */

TEST_T(accumulation_equals_large_batch, 3, 20)
{
    /* 4 micro-batches of 3 on 2 ranks = one rank with batch 24; one
     * allreduce per step (FLAT), one per bucket per step (OVERLAP) */
    ddp_run run = {"mlp:12,16,8,4", LAB_DDP_FLAT, LAB_DDP_BUCKET_BYTES, 3, 4, 3, 1e-5};
    EXPECT_OK(ddp_launch(2, &run));
    run.mode = LAB_DDP_OVERLAP;
    run.bucket_bytes = 1;
    run.micro_steps = 2;
    EXPECT_OK(ddp_launch(3, &run));
}

/* ------------------------------------------------------------ task 4: overlap */

/* deep:12,128,6,4 has 8 layers: "in" 1664 floats, six blocks of 16512, "out"
 * 516. With 60000-byte buckets: {out, block6}, block5, ..., block1, {in}:
 * 7 buckets. Each layer's backward is charged 100 us of modeled time, the
 * forward 500 us; on eth10 (30 us, 1.25 GB/s) a block's ring allreduce on 2
 * ranks costs about 2 (30 us + 33 KB / 1.25 GB/s) = 113 us. */
#define OV_SPEC "deep:12,128,6,4"
#define OV_LAYERS 8
#define OV_BUCKET 60000
#define OV_FWD 500e-6
#define OV_BWD 100e-6

typedef struct {
    double step_s[2]; /* modeled time of a step: without overlap, with */
    int buckets;
    long allreduces;  /* in the overlapped steps */
} ov_result;

/* Two steps in `mode`; *step_s gets the modeled time of the second. */
static dt_result ov_steps(dt_comm *world, lab_ddp_mode mode, double *step_s, int *buckets,
                          long *allreduces)
{
    static const double bwd[OV_LAYERS] = {OV_BWD, OV_BWD, OV_BWD, OV_BWD,
                                          OV_BWD, OV_BWD, OV_BWD, OV_BWD};
    lab_ddp_cost cost = {OV_FWD, bwd};
    dt_optim_config cfg = ddp_test_optim();
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    dt_dataset data = {0};
    dt_model m = {0};
    lab_ddp d;
    size_t idx[8];
    float x[8 * 12];
    int32_t y[8];
    dt_stats st;
    DT_CHECK(ddp_test_data(&data));
    dt_result r = dt_model_create_spec(&m, OV_SPEC, DDP_MODEL_SEED);
    if (r == DT_OK)
        r = lab_ddp_init(&d, world, &m, mode, OV_BUCKET, &cfg, &cost);
    if (r != DT_OK)
        goto out;
    for (int t = 0; r == DT_OK && t < 2; t++) {
        double t0 = dt_clock(world);
        r = dt_comm_stats_reset(world); /* count the calls of the last step */
        if (r == DT_OK)
            r = lab_ddp_local_batch(DDP_DATA_N, DDP_DATA_SEED, rank, K, 0, (size_t)t, 8, idx);
        if (r == DT_OK)
            r = dt_data_gather(&data, idx, 8, x, NULL, y);
        if (r == DT_OK)
            r = lab_ddp_step(&d, x, y, 8, 1, NULL);
        *step_s = dt_clock(world) - t0;
    }
    *buckets = d.num_buckets;
    if (r == DT_OK)
        r = dt_comm_stats(world, &st);
    *allreduces = (long)st.calls[DT_COLL_ALLREDUCE];
    lab_ddp_free(&d);
out:
    dt_model_free(&m);
    dt_dataset_free(&data);
    return r;
}

/* Each rank's figures come back in its block of the launch's out. */
static dt_result ov_rank(dt_comm *world, void *arg)
{
    (void)arg;
    ov_result *res = dt_rank_out(world);
    int b0;
    long n0;
    DT_CHECK(dt_test_on_backend(dt_comm_rank(world), dt_test_backend()));
    DT_CHECK(ov_steps(world, LAB_DDP_BUCKETS, &res->step_s[0], &b0, &n0));
    return ov_steps(world, LAB_DDP_OVERLAP, &res->step_s[1], &res->buckets, &res->allreduces);
}

TEST_T(overlap_hides_communication, 4, 20)
{
    for (int K = 2; K <= 4; K += 2) {
        ov_result res[4];
        memset(res, 0, sizeof res);
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = K;
        o.net = "eth10";
        o.timeout_s = 8;
        o.out = res;
        o.out_bytes = sizeof res[0];
        EXPECT_OK(dt_launch(&o, ov_rank, NULL));
        EXPECT(res[0].buckets == 7, "%s with %d-byte buckets: %d buckets, expected 7", OV_SPEC,
               OV_BUCKET, res[0].buckets);
        for (int r = 0; r < K; r++)
            EXPECT(res[r].allreduces == 7, "K=%d rank %d: %ld allreduces in an overlapped "
                   "step, expected one per bucket (7)", K, r, res[r].allreduces);
        double t_bwd = OV_LAYERS * OV_BWD, t_no = res[0].step_s[0], t_ov = res[0].step_s[1];
        double t_comm = t_no - OV_FWD - t_bwd, lo = t_comm < t_bwd ? t_comm : t_bwd;
        EXPECT(t_comm > 0.3e-3, "K=%d on eth10: the step without overlap takes %.1f us, its "
               "communication %.1f us: too little for 7 allreduces of ~64 KB", K, t_no * 1e6,
               t_comm * 1e6);
        EXPECT(t_ov >= OV_FWD + t_bwd - 1e-9, "K=%d: an overlapped step of %.1f us is shorter "
               "than its compute (%.1f us)", K, t_ov * 1e6, (OV_FWD + t_bwd) * 1e6);
        EXPECT(t_no - t_ov >= 0.7 * lo, "K=%d on eth10: step %.1f us without overlap, %.1f us "
               "with: saves %.1f us, expected at least 70%% of min(backward %.1f us, "
               "communication %.1f us)", K, t_no * 1e6, t_ov * 1e6, (t_no - t_ov) * 1e6,
               t_bwd * 1e6, t_comm * 1e6);
    }
}

/* ------------------------------------------------------------ the proc backend */

/* Ranks as processes whatever DT_BACKEND says: each checks itself
 * (ddp_check_rank). A library built without the proc backend runs the same
 * checks on threads. */
static dt_result launch_proc(int K, const ddp_run *run)
{
    dt_result r = ddp_launch_on(K, DT_BACKEND_PROC, run);
    if (r == DT_ERR_UNSUPPORTED) {
        dt_log("the proc backend is not available (%s): threads instead", dt_last_error());
        r = ddp_launch_on(K, DT_BACKEND_THREAD, run);
    }
    return r;
}

TEST_T(ddp_on_proc_backend, 3, 30)
{
    ddp_run run = {"mlp:12,16,8,4", LAB_DDP_FLAT, LAB_DDP_BUCKET_BYTES, 6, 1, 3, 1e-5};
    EXPECT_OK(launch_proc(2, &run));
    run.mode = LAB_DDP_OVERLAP;
    run.bucket_bytes = 1;
    run.micro_steps = 2;
    run.micro_B = 3;
    EXPECT_OK(launch_proc(4, &run));
}


/* ------------------------------------------------------------ predict, then measure */

/* Backward times that differ from layer to layer, so that when each bucket
 * is complete depends on which layers it holds (section 7). */
static const double pm_bwd[OV_LAYERS] = {40e-6, 70e-6, 100e-6, 40e-6, 70e-6, 100e-6, 40e-6, 70e-6};

static const char *const mode_name[3] = {"FLAT", "BUCKETS", "OVERLAP"};

typedef struct {
    double start[3], end[3]; /* the second step of each mode, on the modeled clock */
} pm_out;

/* Two steps of OV_SPEC in each mode; the second's start and end. */
static dt_result pm_rank(dt_comm *world, void *arg)
{
    (void)arg;
    pm_out *o = dt_rank_out(world);
    dt_optim_config cfg = ddp_test_optim();
    lab_ddp_cost cost = {OV_FWD, pm_bwd};
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    dt_dataset data = {0};
    DT_CHECK(dt_test_on_backend(rank, dt_test_backend()));
    DT_CHECK(ddp_test_data(&data));
    dt_result r = DT_OK;
    for (int mode = LAB_DDP_FLAT; r == DT_OK && mode <= LAB_DDP_OVERLAP; mode++) {
        dt_model m = {0};
        lab_ddp d;
        size_t idx[8];
        float x[8 * 12];
        int32_t y[8];
        int ready = 0;
        r = dt_model_create_spec(&m, OV_SPEC, DDP_MODEL_SEED);
        if (r == DT_OK)
            ready = (r = lab_ddp_init(&d, world, &m, (lab_ddp_mode)mode, OV_BUCKET, &cfg,
                                      &cost)) == DT_OK;
        for (int t = 0; r == DT_OK && t < 2; t++) {
            r = lab_ddp_local_batch(DDP_DATA_N, DDP_DATA_SEED, rank, K, 0, (size_t)t, 8, idx);
            if (r == DT_OK)
                r = dt_data_gather(&data, idx, 8, x, NULL, y);
            o->start[mode] = dt_clock(world);
            if (r == DT_OK)
                r = lab_ddp_step(&d, x, y, 8, 1, NULL);
            o->end[mode] = dt_clock(world);
        }
        if (ready)
            lab_ddp_free(&d);
        dt_model_free(&m);
    }
    dt_dataset_free(&data);
    return r;
}

/* Your prediction against the modeled clock of your own DDP, with the
 * ring of section 5 (K divides every bucket here, so the ring's blocks
 * are equal and the clock is exact). The step is the job's: from when the
 * last rank starts it to when the last rank ends it. Hidden tests hold the
 * prediction to the formulas on configurations no run here makes. */
TEST_T(predict_then_measure_step, 3, 30)
{
    dt_test_see("chapter 03, sections 5 to 7");
    dt_model m = {0};
    EXPECT_OK(dt_model_create_spec(&m, OV_SPEC, 1));
    lab_ddp_cost cost = {OV_FWD, pm_bwd};
    dt_net eth10;
    EXPECT_OK(dt_net_link("eth10", &eth10));
    for (int K = 2; K <= 4; K += 2) {
        pm_out res[4];
        memset(res, 0, sizeof res);
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = K;
        o.net = "eth10";
        o.algo = DT_ALGO_RING;
        o.timeout_s = 8;
        o.out = res;
        o.out_bytes = sizeof res[0];
        EXPECT_OK(dt_launch(&o, pm_rank, NULL));
        for (int mode = LAB_DDP_FLAT; mode <= LAB_DDP_OVERLAP; mode++) {
            double start = res[0].start[mode], end = res[0].end[mode], got = -1;
            for (int r = 1; r < K; r++)
                start = fmax(start, res[r].start[mode]), end = fmax(end, res[r].end[mode]);
            EXPECT_OK(lab_ddp_predict_step(&m, (lab_ddp_mode)mode, K, OV_BUCKET, &cost, &eth10,
                                           &got));
            EXPECT(fabs((end - start) - got) <= 1e-9,
                   "%s, K=%d, %d-byte buckets on eth10, forward %.0f us, backward of the layers "
                   "40 to 100 us: lab_ddp_predict_step says %.4f us, your DDP's step took %.4f "
                   "us of modeled time (if your DDP passes the other tests, the prediction is "
                   "off: when can each bucket's allreduce start? section 7)", mode_name[mode], K,
                   OV_BUCKET, OV_FWD * 1e6, got * 1e6, (end - start) * 1e6);
        }
    }
    double s = -1;
    EXPECT_ERR(lab_ddp_predict_step(&m, LAB_DDP_FLAT, 0, OV_BUCKET, &cost, &eth10, &s),
               DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_ddp_predict_step(&m, LAB_DDP_BUCKETS, 2, 0, &cost, &eth10, &s),
               DT_ERR_INVALID_ARG);
    EXPECT(s == -1, "a refused prediction wrote %g to *step_s", s);
    dt_model_free(&m);
}
