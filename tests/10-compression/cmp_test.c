/* cmp_test.c - the shared part of lab 10's tests (cmp_test.h). The
 * reference exchanges are written here from the contract, sharing no code
 * with the lab: a top-k by sorting, the blocks by their formula, the sums
 * in the order the contract gives. */
#include "cmp_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cmp_fill(float *x, size_t n, uint64_t seed, int rank, int range, float den)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t h = dt_hash64(seed, (uint64_t)rank, i);
        x[i] = (float)((long)(h % (uint64_t)(2 * range + 1)) - range) / den;
    }
}

void cmp_exchange_error(lab_method m, int r, size_t n, float *e)
{
    cmp_fill(e, n, 2000 + (uint64_t)m, r, 8, 16.0f); /* [-1/2, 1/2] */
}

void cmp_exchange_grad(lab_method m, int K, int r, int step, size_t n, const float *e, float *g)
{
    cmp_fill(g, n, 1000 + 100 * (uint64_t)step + (uint64_t)m, r, 32, 16.0f); /* [-2, 2] */
    if (m == LAB_INT8 && r == 0 && n > 5) /* the largest |v| of all ranks: levels / 4 */
        g[5] = (float)lab_int8_levels(K) / 4.0f - (e ? e[5] : 0.0f);
}

long cmp_first_diff(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0)
            return (long)i;
    return -1;
}

dt_result cmp_launch(int K, const char *net, dt_rank_fn fn, void *arg)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = DT_BACKEND_THREAD;
    o.net = net ? net : "none";
    o.algo = DT_ALGO_RING;
    o.timeout_s = 20;
    return dt_launch(&o, fn, arg);
}

/* ---------------------------------------------------------------- reference exchanges */

typedef struct {
    float mag;
    int32_t index;
} ref_entry;

static int by_magnitude(const void *a, const void *b)
{
    const ref_entry *x = a, *y = b;
    if (x->mag != y->mag)
        return x->mag > y->mag ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int by_index(const void *a, const void *b)
{
    const ref_entry *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* sent = v at its k largest |v_i| (ties: lower index), 0 elsewhere */
static dt_result ref_topk(const float *v, size_t n, size_t k, float *sent)
{
    ref_entry *t = malloc(n * sizeof *t);
    if (!t)
        return dt_fail(DT_ERR_NOMEM, "ref_topk");
    for (size_t i = 0; i < n; i++)
        t[i] = (ref_entry){fabsf(v[i]), (int32_t)i};
    qsort(t, n, sizeof *t, by_magnitude);
    qsort(t, k, sizeof *t, by_index);
    memset(sent, 0, n * sizeof *sent);
    for (size_t j = 0; j < k; j++)
        sent[t[j].index] = v[t[j].index];
    free(t);
    return DT_OK;
}

/* sent = (sum |v| / n in double, as float) times the sign of each v_i, +0 positive */
static void ref_sign(const float *v, size_t n, float *sent)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += fabs(v[i]);
    float s = n ? (float)(sum / (double)n) : 0;
    for (size_t i = 0; i < n; i++)
        sent[i] = v[i] >= 0 ? s : -s;
}

static void block_of(size_t n, int K, int b, size_t *off, size_t *len)
{
    *len = n / (size_t)K + ((size_t)b < n % (size_t)K);
    *off = (size_t)b * (n / (size_t)K) + ((size_t)b < n % (size_t)K ? (size_t)b : n % (size_t)K);
}

static dt_result ref_sign_exchange(int K, size_t n, const float *v, float *out, float *sent,
                                   float *se)
{
    size_t off, len, longest = n / (size_t)K + (n % (size_t)K != 0);
    float *u = malloc((longest ? longest : 1) * sizeof *u);
    if (!u)
        return dt_fail(DT_ERR_NOMEM, "ref_sign_exchange");
    for (int k = 0; k < K; k++) /* each rank's blocks, each with its scale */
        for (int b = 0; b < K; b++) {
            block_of(n, K, b, &off, &len);
            ref_sign(v + (size_t)k * n + off, len, sent + (size_t)k * n + off);
        }
    for (int b = 0; b < K; b++) { /* rank b reduces block b and compresses it again */
        block_of(n, K, b, &off, &len);
        for (size_t i = 0; i < len; i++) {
            float sum = 0;
            for (int k = 0; k < K; k++)
                sum += sent[(size_t)k * n + off + i];
            u[i] = sum / (float)K + (se ? se[(size_t)b * longest + i] : 0.0f);
        }
        ref_sign(u, len, out + off);
        for (size_t i = 0; se && i < len; i++)
            se[(size_t)b * longest + i] = u[i] - out[off + i];
    }
    free(u);
    return DT_OK;
}

static void ref_int8(int K, size_t n, const float *v, float *out, float *sent)
{
    int L = 127 / K;
    float M = 0;
    for (size_t i = 0; i < (size_t)K * n; i++)
        M = fabsf(v[i]) > M ? fabsf(v[i]) : M;
    float s = M / (float)L;
    for (size_t i = 0; i < n; i++) {
        int sum = 0;
        for (int k = 0; k < K; k++) {
            float x = s > 0 ? rintf(v[(size_t)k * n + i] / s) : 0;
            int q = x > L ? L : x < -L ? -L : (int)x; /* an integer: no -0 */
            sent[(size_t)k * n + i] = s * (float)q;
            sum += q;
        }
        out[i] = s / (float)K * (float)sum;
    }
}

dt_result cmp_reference(const lab_compress_config *cc, int K, size_t n, const float *g,
                        const float *e, float *out, float *sent, float *e_new, float *se)
{
    float *v = malloc((size_t)K * n * sizeof *v);
    if (!v)
        return dt_fail(DT_ERR_NOMEM, "cmp_reference");
    for (size_t i = 0; i < (size_t)K * n; i++)
        v[i] = g[i] + (e ? e[i] : 0.0f);
    dt_result r = DT_OK;
    if (cc->method == LAB_TOPK) {
        size_t k = lab_topk_count(n, cc->density);
        for (int q = 0; r == DT_OK && q < K; q++)
            r = ref_topk(v + (size_t)q * n, n, k, sent + (size_t)q * n);
        for (size_t i = 0; i < n; i++) {
            float sum = 0;
            for (int q = 0; q < K; q++)
                sum += sent[(size_t)q * n + i];
            out[i] = sum / (float)K;
        }
    } else if (cc->method == LAB_INT8) {
        ref_int8(K, n, v, out, sent);
    } else if (cc->method == LAB_SIGN) {
        r = ref_sign_exchange(K, n, v, out, sent, e ? se : NULL);
    } else {
        r = dt_fail(DT_ERR_INVALID_ARG, "cmp_reference: method %s", lab_method_name(cc->method));
    }
    for (size_t i = 0; e && i < (size_t)K * n; i++)
        e_new[i] = v[i] - sent[i];
    free(v);
    return r;
}

/* ---------------------------------------------------------------- training */

static dt_result digits_rank(dt_comm *w, void *arg)
{
    cmp_digits_run *run = arg;
    dt_dataset all = {0}, train = {0}, test = {0};
    dt_model m = {0};
    lab_cdp c;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    dt_result r = dt_data_load_digits(&all, NULL);
    if (r == DT_OK)
        r = dt_data_split(&all, 0.2, 1, &train, &test);
    if (r == DT_OK)
        r = dt_model_create_spec(&m, "mlp:64,64,10", 7);
    if (r == DT_OK)
        r = lab_cdp_init(&c, w, &m, &run->cc, &tc);
    if (r == DT_OK) {
        dt_stats st;
        r = dt_comm_stats_reset(w);
        if (r == DT_OK)
            r = lab_cdp_train(&c, &train, 32, 3, run->steps, NULL);
        if (r == DT_OK)
            r = dt_comm_stats(w, &st);
        if (r == DT_OK && dt_comm_rank(w) == 0) {
            run->bytes_per_step = (double)st.bytes_sent / (double)run->steps;
            r = dt_evaluate(&m, &test, 256, &run->accuracy, NULL);
        }
        lab_cdp_free(&c);
    }
    dt_model_free(&m);
    dt_dataset_free(&all), dt_dataset_free(&train), dt_dataset_free(&test);
    return r;
}

dt_result cmp_train_digits(cmp_digits_run *run)
{
    run->accuracy = -1;
    return cmp_launch(run->K, NULL, digits_rank, run);
}

void cmp_expect_within_two_points(lab_compress_config cc, float *dense, float *with_ef)
{
    cmp_digits_run base = {{LAB_DENSE, 0, 0, 0, 0}, CMP_DIGITS_RANKS, CMP_DIGITS_STEPS, 0, 0};
    cmp_digits_run run = {cc, CMP_DIGITS_RANKS, CMP_DIGITS_STEPS, 0, 0};
    run.cc.error_feedback = 1;
    EXPECT_OK(cmp_train_digits(&run));
    EXPECT_OK(cmp_train_digits(&base));
    dt_log("digits, %d ranks, %ld steps: uncompressed %.4f, %s with error feedback %.4f",
           CMP_DIGITS_RANKS, (long)CMP_DIGITS_STEPS, (double)base.accuracy,
           lab_method_name(cc.method), (double)run.accuracy);
    EXPECT(run.accuracy >= base.accuracy - 0.02f, "the digits MLP with %s and error feedback "
           "reaches %.2f%% on the test set, more than 2 points below the uncompressed %.2f%%",
           lab_method_name(cc.method), 100.0 * run.accuracy, 100.0 * base.accuracy);
    if (dense)
        *dense = base.accuracy;
    if (with_ef)
        *with_ef = run.accuracy;
}

dt_result cmp_train_until(dt_comm *w, const lab_compress_config *cc, dt_optim_config opt,
                          uint64_t model_seed, const char *load, const char *save, long until,
                          dt_model *m)
{
    dt_dataset d = {0};
    dt_trainer_config tc = {0};
    lab_cdp c;
    tc.optim = opt;
    DT_CHECK(dt_data_blobs(&d, 256, 12, 4, 1.5f, 8, 0));
    dt_result r = dt_model_create_spec(m, "mlp:12,16,4", model_seed);
    if (r == DT_OK)
        r = lab_cdp_init(&c, w, m, cc, &tc);
    if (r == DT_OK) {
        if (load)
            r = lab_cdp_load(&c, load);
        if (r == DT_OK)
            r = lab_cdp_train(&c, &d, 8, 4, until, NULL);
        if (r == DT_OK && save)
            r = lab_cdp_save(&c, save);
        lab_cdp_free(&c);
    }
    dt_dataset_free(&d);
    return r;
}
