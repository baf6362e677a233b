/* test_stream_ddp.c - lab 15: data parallelism on a device's streams. The
 * ranks train with the lab and compare, bit for bit, with the same bucketed
 * DDP run without streams on the rank's own thread (the library's backward
 * of the whole model, then each bucket's allreduce, then SGD); a probe on
 * the stream threads observes that each bucket's allreduce runs while the
 * compute stream goes on with earlier layers, by ordering, never timing. */
#include "grader.h"
#include "stream_ddp.h"

#include "dt/optim.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPEC "mlp:12,16,14,18,10,4" /* 5 layers of 208, 238, 270, 190, 44 parameters */
#define B 6
#define STEPS 3
#define LR 0.05f

/* The test's own buckets (chapter 03, section 6): first and last layer and
 * offset of each, walking from the last layer. */
static int plan(const dt_model *m, size_t cap, int first[], int last[], size_t off[],
                size_t cnt[])
{
    int n = 0;
    size_t c = 0;
    for (int l = m->num_layers - 1; l >= 0; l--) {
        if (c == 0)
            last[n] = l + 1;
        c += m->layers[l].param_count;
        first[n] = l, off[n] = m->layers[l].param_offset, cnt[n] = c;
        if (c * 4 >= cap || l == 0)
            n++, c = 0;
    }
    return n;
}

TEST(buckets_hold_the_last_layers_first, 1)
{
    dt_test_see("chapter 03, section 6");
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, SPEC, 1));
    static const size_t caps[] = {1, 176, 800, 936, 1000, 1200, 4000, 1 << 20}; /* 176, 936: the last one and two layers exactly */
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        int first[8], last[8], want;
        size_t off[8], cnt[8];
        want = plan(&m, caps[c], first, last, off, cnt);
        lab_sbucket *b = NULL;
        int n = -1;
        EXPECT_OK(lab_sddp_make_buckets(&m, caps[c], &b, &n));
        EXPECT(n == want, "bucket_bytes %zu: %d buckets, expected %d", caps[c], n, want);
        for (int k = 0; k < n; k++)
            EXPECT(b[k].first_layer == first[k] && b[k].last_layer == last[k] &&
                   b[k].offset == off[k] && b[k].count == cnt[k],
                   "bucket_bytes %zu, bucket %d: layers [%d, %d), floats [%zu, +%zu); "
                   "expected layers [%d, %d), floats [%zu, +%zu) (buckets[0] holds the last "
                   "layers)", caps[c], k, b[k].first_layer, b[k].last_layer, b[k].offset,
                   b[k].count, first[k], last[k], off[k], cnt[k]);
        free(b);
    }
    lab_sbucket *b;
    int n;
    EXPECT_ERR(lab_sddp_make_buckets(&m, 0, &b, &n), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_sddp_make_buckets(NULL, 8, &b, &n), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- the data */

static void batch(int rank, int step, const dt_model *m, float *x, int32_t *y)
{
    /* exact small values from (rank, step, i): each rank its own rows */
    for (size_t i = 0; i < B * m->in_width; i++)
        x[i] = (float)((int)((rank * 131 + step * 71 + (int)i * 17) % 19) - 9) / 8.0f;
    for (int i = 0; i < B; i++)
        y[i] = (int32_t)((rank + step + i) % (int)m->num_classes);
}

/* The reference: bucketed DDP without streams, on this thread. */
static dt_result reference_step(dt_comm *w, dt_model *m, dt_acts *a, dt_optimizer *o, int nb,
                                const size_t off[], const size_t cnt[], const float *x,
                                const int32_t *y, float *loss)
{
    DT_CHECK(dt_model_zero_grads(m));
    DT_CHECK(dt_model_forward(m, a, x, NULL));
    DT_CHECK(dt_model_loss(m, a, y, loss, NULL));
    DT_CHECK(dt_model_backward(m, a, NULL, NULL, NULL, NULL));
    for (int k = 0; k < nb; k++)
        DT_CHECK(dt_allreduce(m->grads + off[k], m->grads + off[k], cnt[k], DT_F32, DT_AVG, w));
    return dt_optim_step(o, m->params, m->grads);
}

/* ---------------------------------------------------------------- the probe */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    const lab_sddp *d;
    int started[16];        /* backward of layer l started in this step */
    int order[64], norder;  /* allreduce starts, in order */
    char fail[256];
} observer;

/* As the allreduce of bucket k starts, the compute stream must still have
 * the backward of the layer just below the bucket to start: wait for it
 * (3 s, then note the failure and stop waiting). On one stream, or after
 * the whole backward, it can never start first. */
static void observe(void *arg, const char *event, int index)
{
    observer *o = arg;
    pthread_mutex_lock(&o->mu);
    if (!strcmp(event, "backward")) {
        o->started[index] = 1;
        pthread_cond_broadcast(&o->cv);
    } else {
        if (o->norder < 64)
            o->order[o->norder++] = index;
        int below = o->d->buckets[index].first_layer - 1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 3;
        int rc = 0;
        while (!o->fail[0] && below >= 0 && !o->started[below] && rc == 0)
            rc = pthread_cond_timedwait(&o->cv, &o->mu, &ts);
        if (!o->fail[0] && below >= 0 && !o->started[below])
            snprintf(o->fail, sizeof o->fail, "the allreduce of bucket %d (layers [%d, %d)) "
                     "started, and the backward of layer %d could not start while it ran: "
                     "no overlap (is the allreduce on its own stream, waiting only for its "
                     "bucket's gradients?)", index, o->d->buckets[index].first_layer,
                     o->d->buckets[index].last_layer, below);
    }
    pthread_mutex_unlock(&o->mu);
}

/* ---------------------------------------------------------------- the rank */

typedef struct {
    lab_sddp_mode mode;
    size_t cap; /* DDP's buckets; ZeRO-1 is compared with DDP of one bucket */
    int watch;  /* 1: observe the overlap */
} run_cfg;

static dt_result rank_fn(dt_comm *w, void *arg)
{
    const run_cfg *c = arg;
    int r = dt_comm_rank(w), K = dt_comm_size(w);
    dt_model m, ref;
    DT_CHECK(dt_model_create_spec(&m, SPEC, 11));
    DT_CHECK(dt_model_create_spec(&ref, SPEC, 11));
    int first[8], last[8];
    size_t off[8], cnt[8];
    int nb = plan(&m, c->mode == LAB_SDDP_DDP ? c->cap : SIZE_MAX, first, last, off, cnt);
    dt_optimizer ropt;
    dt_optim_config cfg = dt_sgd_config(LR, 0.9f, 0);
    DT_CHECK(dt_optim_init(&ropt, &cfg, 0, ref.num_params));
    dt_acts *a = NULL;
    float x[B * 12];
    int32_t y[B];
    lab_sddp d;
    observer o;
    memset(&o, 0, sizeof o);
    pthread_mutex_init(&o.mu, NULL);
    pthread_cond_init(&o.cv, NULL);
    dt_result res = dt_acts_create(&a, &ref, 0, ref.num_layers, B, 1);
    dt_mem_stats m0, m1;
    dt_mem_stats_get(&m0);
    if (res == DT_OK)
        res = lab_sddp_init(&d, w, &m, c->mode, B, c->cap, LR);
    if (res != DT_OK) {
        dt_optim_free(&ropt), dt_acts_free(a), dt_model_free(&m), dt_model_free(&ref);
        return res;
    }
    dt_mem_stats_get(&m1);
    size_t boff, blen, held = m1.current[DT_MEM_OPTIM] - m0.current[DT_MEM_OPTIM];
    dt_block(m.num_params, K, r, &boff, &blen);
    if (c->mode == LAB_SDDP_ZERO1 && held != blen * sizeof(float))
        res = dt_fail(DT_ERR_MISMATCH, "ZeRO-1 on %d ranks: rank %d holds %zu bytes of "
                      "optimizer state, expected %zu (momentum for its %zu parameters of %zu)",
                      K, r, held, blen * sizeof(float), blen, m.num_params);
    if (c->watch)
        o.d = &d, d.probe = observe, d.probe_arg = &o;
    for (int s = 0; res == DT_OK && s < STEPS; s++) {
        float l1 = 0, l2 = 0;
        memset(o.started, 0, sizeof o.started);
        o.norder = 0;
        batch(r, s, &m, x, y);
        res = lab_sddp_step(&d, x, y, &l1);
        if (res == DT_OK)
            res = reference_step(w, &ref, a, &ropt, nb, off, cnt, x, y, &l2);
        if (res == DT_OK && c->watch && o.fail[0])
            res = dt_fail(DT_ERR_MISMATCH, "step %d on %d ranks: %s", s, K, o.fail);
        for (int k = 0; res == DT_OK && c->watch && k < nb; k++)
            if (o.norder != nb || o.order[k] != k)
                res = dt_fail(DT_ERR_MISMATCH, "step %d: %d allreduces started, number %d "
                              "of them bucket %d's; expected %d, in bucket order (bucket 0 first: its "
                              "gradients are ready first)", s, o.norder, k + 1,
                              k < o.norder ? o.order[k] : -1, nb);
        if (res == DT_OK && l1 != l2)
            res = dt_fail(DT_ERR_MISMATCH, "step %d: loss %.9g, the reference's %.9g", s, l1, l2);
        for (size_t i = 0; res == DT_OK && i < m.num_params; i++)
            if (m.params[i] != ref.params[i])
                res = dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, bucket_bytes %zu, after step "
                              "%d: rank %d's params[%zu] = %.9g, %s DDP without streams "
                              "gives %.9g (the same sums: bit for bit)",
                              c->mode == LAB_SDDP_DDP ? "DDP" : "ZeRO-1", K, c->cap, s, r, i,
                              m.params[i], c->mode == LAB_SDDP_DDP ? "bucketed" : "flat",
                              ref.params[i]);
    }
    lab_sddp_free(&d);
    dt_optim_free(&ropt);
    dt_acts_free(a);
    dt_model_free(&m);
    dt_model_free(&ref);
    pthread_mutex_destroy(&o.mu);
    pthread_cond_destroy(&o.cv);
    return res;
}

static void launch(lab_sddp_mode mode, int K, size_t cap, int watch)
{
    dt_launch_opts opt;
    dt_launch_opts_init(&opt);
    opt.nranks = K;
    opt.net = "none";
    run_cfg c = {mode, cap, watch};
    EXPECT_OK(dt_launch(&opt, rank_fn, &c));
}

TEST_T(overlapped_ddp_equals_bucketed_ddp, 3, 30, .race = 1)
{
    dt_test_see("chapter 15, sections 3 and 9");
    static const size_t caps[] = {800, 4000, 1 << 20};
    for (int K = 1; K <= 3; K++)
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++)
            launch(LAB_SDDP_DDP, K, caps[c], 0);
}

TEST_T(allreduces_overlap_the_backward, 3, 40, .race = 1)
{
    dt_test_see("chapter 15, sections 3 and 9");
    launch(LAB_SDDP_DDP, 2, 800, 1); /* 4 buckets: layers 4-3, 2, 1, 0 */
    launch(LAB_SDDP_DDP, 3, 1, 1);   /* one bucket per layer */
}

/* ---------------------------------------------------------------- ZeRO-1 */

TEST(zero1_shard_is_the_collectives_block, 1)
{
    dt_test_see("chapter 08, section 6");
    static const size_t counts[] = {0, 1, 2, 5, 7, 950, 1000003};
    for (int K = 1; K <= 9; K++)
        for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
            for (int r = 0; r < K; r++) {
                size_t o = 12345, n = 12345, wo, wn;
                dt_block(counts[i], K, r, &wo, &wn);
                EXPECT_OK(lab_sddp_zero1_shard(counts[i], K, r, &o, &n));
                EXPECT(o == wo && n == wn, "%zu floats on %d ranks, rank %d: the shard "
                       "[%zu, +%zu); dt_allreduce_scatter leaves [%zu, +%zu) reduced there",
                       counts[i], K, r, o, n, wo, wn);
            }
    size_t o, n;
    EXPECT_ERR(lab_sddp_zero1_shard(10, 0, 0, &o, &n), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_sddp_zero1_shard(10, 2, 2, &o, &n), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_sddp_zero1_shard(10, 2, 0, NULL, &n), DT_ERR_INVALID_ARG);
}

TEST_T(zero1_on_streams_equals_ddp, 3, 30, .race = 1)
{
    dt_test_see("chapter 08, section 4; chapter 15, section 9");
    for (int K = 1; K <= 4; K++) /* 950 parameters: uneven shards on 3 and 4 ranks */
        launch(LAB_SDDP_ZERO1, K, 0, 0);
}
