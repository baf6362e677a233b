/* test_train_fsdp.c - the library's FSDP (lib/train/fsdp.c) on thread
 * ranks: it trains like data parallelism, holds at most two units beside
 * its shards (the whole model without resharding), sends 3 psi a step (2
 * without resharding), and refuses what it cannot do. */
#include "grader.h"
#include "dt/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *spec;
    dt_fsdp_config cfg;
    int fsdp;               /* 0: the library's DDP, for reference */
    /* out, rank 0 */
    float *params;
    size_t peak_param, bound2, bound_all;
    uint64_t bytes;
} fsdp_job;

/* Rank r's batch of step s: B samples from (s K + r) B on. */
static dt_result batch(const dt_dataset *d, const dt_model *m, int K, int r, int s,
                       float *x, int32_t *tok, int32_t *y, dt_batch *b)
{
    enum { B = 4 };
    size_t idx[B];
    int gpt = m->kind == DT_MODEL_GPT;
    for (size_t i = 0; i < B; i++)
        idx[i] = ((size_t)(s * K + r) * B + i) % d->n;
    *b = (dt_batch){gpt ? NULL : x, gpt ? tok : NULL, y, B, gpt ? m->max_seq : 1, 1};
    return dt_data_gather(d, idx, B, gpt ? NULL : x, gpt ? tok : NULL, y);
}

/* The shards and the two largest units, and every unit, in bytes. */
static void bounds(const dt_model *m, int K, size_t min, size_t *two, size_t *all)
{
    size_t shards = 0, full = 0, big[2] = {0, 0}, held = 0;
    for (int i = 0; i < m->num_layers; i++) {
        held += m->layers[i].param_count;
        if (held >= min || i == m->num_layers - 1) {
            size_t c = (held + (size_t)K - 1) / (size_t)K, f = 4 * c * (size_t)K;
            shards += 4 * c, full += f, held = 0;
            if (f > big[0])
                big[1] = big[0], big[0] = f;
            else if (f > big[1])
                big[1] = f;
        }
    }
    *two = shards + big[0] + big[1], *all = shards + full;
}

static dt_result fsdp_rank(dt_comm *w, void *arg)
{
    fsdp_job *j = arg;
    int K = dt_comm_size(w), r = dt_comm_rank(w);
    dt_model m;
    dt_dataset d;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_adamw_config(0.01f);
    DT_CHECK(dt_model_create_spec(&m, j->spec, 3));
    int gpt = m.kind == DT_MODEL_GPT;
    dt_result res = gpt ? dt_data_sequences(&d, 96, m.max_seq, m.num_classes, 2, 0)
                        : dt_data_blobs(&d, 96, m.in_width, m.num_classes, 2, 2, 0);
    size_t P = m.num_params, rows = 4 * m.max_seq;
    float *x = malloc(rows * (m.in_width + 1) * sizeof *x), *out = malloc(P * sizeof *out);
    int32_t *tok = malloc(rows * sizeof *tok), *y = malloc(rows * sizeof *y);
    if (res == DT_OK)
        res = dt_trainer_init(&t, &m, w, &tc);
    if (res == DT_OK && j->fsdp)
        res = dt_train_use_fsdp(&t, &j->cfg);
    dt_mem_reset_peak();
    dt_stats s0, s1;
    for (int s = 0; res == DT_OK && s < 3; s++) {
        dt_batch b;
        res = batch(&d, &m, K, r, s, x, tok, y, &b);
        if (res == DT_OK)
            res = dt_comm_stats(w, &s0);
        if (res == DT_OK)
            res = dt_train_step(&t, &b);
        if (res == DT_OK)
            res = dt_comm_stats(w, &s1);
    }
    if (res == DT_OK && j->fsdp)
        res = dt_train_fsdp_params(&t, out);
    else if (res == DT_OK)
        memcpy(out, m.params, P * sizeof *out);
    if (res == DT_OK && r == 0) {
        dt_mem_stats ms;
        dt_mem_stats_get(&ms);
        j->peak_param = ms.peak[DT_MEM_PARAM];
        j->bytes = s1.bytes_sent - s0.bytes_sent;
        bounds(&m, K, j->cfg.min_unit_params, &j->bound2, &j->bound_all);
        j->params = out, out = NULL;
    }
    dt_trainer_free(&t);
    free(x), free(out), free(tok), free(y);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return res;
}

static void launch(int K, fsdp_job *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K, o.backend = DT_BACKEND_THREAD, o.algo = DT_ALGO_RING, o.timeout_s = 10;
    EXPECT_OK(dt_launch(&o, fsdp_rank, j));
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)b[i]));
    return d / (mx > 0 ? mx : 1);
}

/* Every combination of prefetch and resharding, units of one layer or
 * of several, on a deep MLP and a GPT: DDP's parameters within 1e-5; the
 * shards and two units at most with resharding, the whole model without;
 * 3 psi (K-1)/K bytes a step, 2 psi without resharding. */
TEST_T(train_fsdp_equals_ddp_in_two_units_of_memory, 3, 40, .own_backend = 1)
{
    static const char *const specs[2] = {"deep:7,12,3,4", "gpt:9,4,2,2,8"};
    for (int sp = 0; sp < 2; sp++)
        for (int K = 2; K <= 3; K++) {
            dt_model m;
            EXPECT_OK(dt_model_create_spec(&m, specs[sp], 3));
            size_t P = m.num_params;
            dt_model_free(&m);
            fsdp_job ddp = {specs[sp], {0, 0, 0, NULL, NULL}, 0, NULL, 0, 0, 0, 0};
            launch(K, &ddp);
            for (int v = 0; v < 8; v++) {
                fsdp_job f = {specs[sp], {(size_t)(v & 4 ? 200 : 0), v & 1, !!(v & 2), NULL, NULL}, 1,
                              NULL, 0, 0, 0, 0};
                launch(K, &f);
                double e = rel_diff(f.params, ddp.params, P);
                EXPECT(e < 1e-5, "%s, K=%d, prefetch %d, reshard %d, min %zu: relative "
                       "difference %.3g to DDP", specs[sp], K, f.cfg.prefetch,
                       f.cfg.reshard_after_forward, f.cfg.min_unit_params, e);
                if (f.cfg.reshard_after_forward)
                    EXPECT(f.peak_param <= f.bound2, "peak PARAM %zu > %zu (shards + 2 units)",
                           f.peak_param, f.bound2);
                else
                    EXPECT(f.peak_param == f.bound_all, "without resharding: peak PARAM %zu, "
                           "expected %zu (shards + every unit)", f.peak_param, f.bound_all);
                double want = 4.0 * (f.cfg.reshard_after_forward ? 3 : 2) * P * (K - 1) / K;
                EXPECT(fabs((double)f.bytes - want) < 0.05 * want, "%llu bytes a step, "
                       "expected about %.0f", (unsigned long long)f.bytes, want);
                free(f.params);
            }
            free(ddp.params);
        }
}

static dt_result refuse_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_model m;
    dt_trainer t;
    dt_fsdp_config c = {0, 1, 1, NULL, NULL};
    float x[2 * 2 * 5] = {0};
    int32_t y[4] = {0};
    dt_batch b = {x, NULL, y, 2, 1, 2};
    DT_CHECK(dt_model_create_spec(&m, "mlp:5,4,3", 1));
    DT_CHECK(dt_trainer_init(&t, &m, w, NULL));
    DT_CHECK(dt_train_use_fsdp(&t, &c));
    dt_result r = dt_train_use_fsdp(&t, &c) == DT_ERR_INVALID_ARG ? DT_OK
                  : dt_fail(DT_ERR_STATE, "FSDP twice was accepted");
    if (r == DT_OK && dt_train_step(&t, &b) != DT_ERR_UNSUPPORTED)
        r = dt_fail(DT_ERR_STATE, "two micro-batches were accepted");
    float out[39];
    if (r == DT_OK && dt_train_fsdp_params(&t, out) != DT_OK)
        r = dt_fail(DT_ERR_STATE, "the parameters cannot be gathered after a refused step");
    dt_trainer_free(&t);
    dt_model_free(&m);
    return r;
}

TEST(train_fsdp_refuses_what_it_cannot_do, 1, .own_backend = 1)
{
    dt_model m;
    dt_trainer t;
    dt_fsdp_config c = {0, 1, 1, NULL, NULL};
    EXPECT_OK(dt_model_create_spec(&m, "mlp:5,4,3", 1));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, NULL));
    EXPECT_ERR(dt_train_use_fsdp(&t, &c), DT_ERR_INVALID_ARG); /* no communicator */
    EXPECT(m.params != NULL, "a refusal leaves the model's parameters");
    dt_trainer_free(&t);
    dt_model_free(&m);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2, o.backend = DT_BACKEND_THREAD, o.timeout_s = 5;
    EXPECT_OK(dt_launch(&o, refuse_rank, NULL));
}
