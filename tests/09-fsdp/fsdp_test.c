/* fsdp_test.c - the checking rank function of the lab 09 tests (see
 * fsdp_test.h). The reference is the library's data parallelism: a
 * dt_trainer with its default allreduce and AdamW over every parameter,
 * which shares no code with the lab. */
#include "fsdp_test.h"
#include "grader.h"
#include "dt/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FT_DATA_N 192

dt_result ft_data(dt_dataset *d, const dt_model *m)
{
    if (m->kind == DT_MODEL_GPT)
        return dt_data_sequences(d, FT_DATA_N, m->max_seq, m->num_classes, 4, 0);
    return dt_data_blobs(d, FT_DATA_N, m->in_width, m->num_classes, 2.0f, 4, 0);
}

size_t ft_shard(size_t count, int K)
{
    return (count + (size_t)K - 1) / (size_t)K;
}

dt_result ft_batch(const dt_dataset *d, const dt_model *m, int K, int r, int t, size_t B,
                   float *x, int32_t *tok, int32_t *y, dt_batch *b)
{
    size_t idx[64];
    int gpt = m->kind == DT_MODEL_GPT;
    if (B > 64)
        return dt_fail(DT_ERR_INVALID_ARG, "fsdp tests: batch %zu > 64", B);
    for (size_t i = 0; i < B; i++)
        idx[i] = (((size_t)t * (size_t)K + (size_t)r) * B + i) % d->n;
    *b = (dt_batch){gpt ? NULL : x, gpt ? tok : NULL, y, B, gpt ? m->max_seq : 1, 1};
    return dt_data_gather(d, idx, B, gpt ? NULL : x, gpt ? tok : NULL, y);
}

typedef struct {
    float *x;
    int32_t *tok, *y;
} bufs;

static dt_optim_config ft_optim(void)
{
    return dt_adamw_config(0.01f);
}

/* The library's data parallelism on the same batches. */
static dt_result ddp_reference(dt_comm *w, const fsdp_run *run, const dt_dataset *d, bufs *bb,
                               float **out)
{
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = ft_optim();
    DT_CHECK(dt_model_create_spec(&m, run->spec, FT_SEED));
    dt_result r = dt_trainer_init(&t, &m, w, &tc);
    for (int s = 0; r == DT_OK && s < run->steps; s++) {
        dt_batch b;
        r = ft_batch(d, &m, dt_comm_size(w), dt_comm_rank(w), s, run->B, bb->x, bb->tok, bb->y,
                     &b);
        if (r == DT_OK)
            r = dt_train_step(&t, &b);
    }
    if (r == DT_OK && !(*out = malloc(m.num_params * sizeof(float))))
        r = dt_fail(DT_ERR_NOMEM, "fsdp tests: reference parameters");
    if (r == DT_OK)
        memcpy(*out, m.params, m.num_params * sizeof(float));
    dt_trainer_free(&t);
    dt_model_free(&m);
    return r;
}

static const char *mode(const fsdp_run *run)
{
    static const char *const names[4] = {"FSDP (no prefetch, resharding off)",
                                         "FSDP (prefetch, resharding off)",
                                         "FSDP (no prefetch, resharding on)",
                                         "FSDP (prefetch, resharding on)"};
    return names[2 * !!run->reshard + !!run->prefetch];
}

/* Per step: every unit gathered for the forward and, with resharding,
 * again for the backward; reduce-scattered once; no allreduce. */
static dt_result check_calls(const fsdp_run *run, const lab_fsdp *f, int step,
                             const dt_stats *s0, const dt_stats *s1)
{
    uint64_t U = (uint64_t)f->num_units;
    uint64_t ag = s1->calls[DT_COLL_ALLGATHER] - s0->calls[DT_COLL_ALLGATHER];
    uint64_t rs = s1->calls[DT_COLL_REDUCE_SCATTER] - s0->calls[DT_COLL_REDUCE_SCATTER];
    uint64_t ar = s1->calls[DT_COLL_ALLREDUCE] - s0->calls[DT_COLL_ALLREDUCE];
    uint64_t want_ag = run->reshard ? 2 * U : U;
    if (ag != want_ag || rs != U || ar != 0)
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, %d units: rank %d's step %d made "
                       "%llu all-gathers, %llu reduce-scatters and %llu allreduces; expected "
                       "%llu, %llu and 0", mode(run), f->ranks, f->num_units, f->rank, step + 1,
                       (unsigned long long)ag, (unsigned long long)rs,
                       (unsigned long long)ar, (unsigned long long)want_ag,
                       (unsigned long long)U);
    return DT_OK;
}

static dt_result check_bytes(const fsdp_run *run, const lab_fsdp *f, int step, size_t psi,
                             uint64_t sent)
{
    int K = f->ranks, passes = run->reshard ? 3 : 2;
    double want = 4.0 * passes * (double)psi * (K - 1) / K;
    if (K == 1 ? sent != 0 : fabs((double)sent - want) > 0.05 * want)
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: rank %d's step %d sent %llu bytes, "
                       "expected %d psi (K-1)/K = %.0f (within 5%%)", mode(run), K, f->rank,
                       step + 1, (unsigned long long)sent, passes, want);
    return DT_OK;
}

/* The shards of every unit, and the largest two gathered at once (with
 * resharding) or every unit (without), in bytes. */
static dt_result check_memory(const fsdp_run *run, const lab_fsdp *f, const dt_mem_stats *ms)
{
    double shards = 0, all = 0, big[2] = {0, 0};
    for (int u = 0; u < f->num_units; u++) {
        double c = (double)ft_shard(f->units[u].unit.count, f->ranks), full = c * f->ranks;
        shards += 4 * c, all += 4 * full;
        if (4 * full > big[0])
            big[1] = big[0], big[0] = 4 * full;
        else if (4 * full > big[1])
            big[1] = 4 * full;
    }
    double two = shards + big[0] + big[1], param = (double)ms->peak[DT_MEM_PARAM];
    double grad = (double)ms->peak[DT_MEM_GRAD];
    if ((run->checks & FT_PEAK2) && (param > 1.05 * two || grad > 1.05 * two))
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: rank %d's peak PARAM %.0f and GRAD "
                       "%.0f bytes; the shards and the two largest units are %.0f (+5%%)",
                       mode(run), f->ranks, f->rank, param, grad, two);
    if ((run->checks & FT_FULL) && fabs(param - (shards + all)) > 0.05 * (shards + all))
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: rank %d's peak PARAM %.0f bytes; "
                       "keeping every unit from its forward to its backward holds the shards and "
                       "the whole model, %.0f (within 5%%)", mode(run), f->ranks, f->rank, param,
                       shards + all);
    /* the rank's whole peak: what the lab allocated outside dt_mem_alloc counts too */
    char what[96];
    snprintf(what, sizeof what, "%s on %d ranks, rank %d", mode(run), f->ranks, f->rank);
    double untagged = (double)ms->peak[DT_MEM_UNTAGGED];
    if (run->checks & FT_PEAK2)
        return dt_test_whole_peak(param + grad, untagged, 2 * two, 0.05, what);
    if (run->checks & FT_FULL)
        return dt_test_whole_peak(param, untagged, shards + all, 0.05, what);
    return DT_OK;
}

/* The mean over the K ranks of their gradients at the first step, from
 * the initial parameters: each rank's batch through a plain model on this
 * rank, summed in double. */
static dt_result mean_gradient(const fsdp_run *run, const dt_dataset *d, int K, bufs *bb,
                               float **out)
{
    dt_model m;
    dt_acts *a = NULL;
    dt_batch b;
    float loss;
    DT_CHECK(dt_model_create_spec(&m, run->spec, FT_SEED));
    double *sum = calloc(m.num_params, sizeof *sum);
    *out = malloc(m.num_params * sizeof **out);
    dt_result r = sum && *out ? DT_OK : dt_fail(DT_ERR_NOMEM, "fsdp tests: the mean gradient");
    for (int q = 0; r == DT_OK && q < K; q++) {
        r = ft_batch(d, &m, K, q, 0, run->B, bb->x, bb->tok, bb->y, &b);
        if (r == DT_OK && !a)
            r = dt_acts_create(&a, &m, 0, m.num_layers, b.B, b.T);
        if (r == DT_OK)
            r = dt_model_zero_grads(&m);
        if (r == DT_OK)
            r = dt_model_forward(&m, a, b.x, b.tokens);
        if (r == DT_OK)
            r = dt_model_loss(&m, a, b.labels, &loss, NULL);
        if (r == DT_OK)
            r = dt_model_backward(&m, a, NULL, NULL, NULL, NULL);
        for (size_t i = 0; r == DT_OK && i < m.num_params; i++)
            sum[i] += m.grads[i];
    }
    for (size_t i = 0; r == DT_OK && i < m.num_params; i++)
        (*out)[i] = (float)(sum[i] / K);
    dt_acts_free(a);
    dt_model_free(&m);
    free(sum);
    return r;
}

/* After the first step: each unit's grad_shard (this rank's shard of the
 * padded unit) against the mean. AdamW hardly moves when the gradient is
 * K times larger, so a sum shows here, not in the parameters. */
static dt_result check_mean(const fsdp_run *run, const lab_fsdp *f, const float *mean)
{
    for (int u = 0; u < f->num_units; u++) {
        const lab_fsdp_unit *un = &f->units[u];
        const float *want = mean + un->unit.offset;
        size_t count = un->unit.count, begin = (size_t)f->rank * un->shard, worst = 0;
        double big = 0, d_mean = 0, d_sum = 0;
        for (size_t i = 0; i < count; i++)
            big = fmax(big, fabs((double)want[i]));
        big = big > 0 ? big : 1;
        for (size_t i = 0; i < un->shard; i++) {
            double w = begin + i < count ? want[begin + i] : 0;
            double e = fabs((double)un->grad_shard[i] - w);
            if (!(e <= d_mean))
                d_mean = e, worst = i;
            d_sum = fmax(d_sum, fabs((double)un->grad_shard[i] - f->ranks * w));
        }
        if (d_mean <= 1e-5 * big)
            continue;
        double w = begin + worst < count ? want[begin + worst] : 0;
        if (f->ranks > 1 && d_sum <= 1e-5 * big * f->ranks)
            return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, rank %d, unit %d (layers [%d, %d)), "
                           "step 1: grad_shard is K = %d times the mean gradient (element %zu "
                           "of the unit: %.9g, the mean over the ranks %.9g): the ranks' "
                           "gradients were summed, not averaged", mode(run), f->ranks, f->rank,
                           u, un->unit.first, un->unit.last, f->ranks, begin + worst,
                           (double)un->grad_shard[worst], w);
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, rank %d, unit %d (layers [%d, %d)), "
                       "step 1: grad_shard[%zu] (element %zu of the unit) is %.9g, %s %.9g "
                       "(%.3g of the unit's largest gradient)", mode(run), f->ranks, f->rank, u,
                       un->unit.first, un->unit.last, worst, begin + worst,
                       (double)un->grad_shard[worst],
                       begin + worst < count ? "the mean over the ranks of their gradients is"
                                             : "padding, which must be",
                       w, d_mean / big);
    }
    return DT_OK;
}

/* One step of the lab with its checks; *clock gets its modeled time. */
static dt_result lab_step(dt_comm *w, const fsdp_run *run, lab_fsdp *f, int step,
                          const dt_batch *b, size_t psi, double *clock)
{
    dt_stats s0, s1;
    DT_CHECK(dt_comm_stats(w, &s0));
    double c0 = dt_clock(w);
    DT_CHECK(lab_fsdp_step(f, b, NULL));
    *clock = dt_clock(w) - c0;
    DT_CHECK(dt_comm_stats(w, &s1));
    if (run->checks & FT_CALLS)
        DT_CHECK(check_calls(run, f, step, &s0, &s1));
    if (run->checks & FT_BYTES)
        DT_CHECK(check_bytes(run, f, step, psi, s1.bytes_sent - s0.bytes_sent));
    return DT_OK;
}

static dt_result train_lab(dt_comm *w, fsdp_run *run, const dt_dataset *d, dt_model *m,
                           bufs *bb, float *params)
{
    lab_fsdp f;
    double fwd[64], bwd[64];
    lab_fsdp_config cfg = {ft_optim(), run->min_unit_params, run->prefetch, run->reshard,
                           NULL, NULL};
    for (int i = 0; i < m->num_layers && i < 64; i++)
        fwd[i] = run->fwd_s, bwd[i] = run->bwd_s;
    if (run->fwd_s > 0 || run->bwd_s > 0)
        cfg.forward_layer_s = fwd, cfg.backward_s = bwd;
    size_t psi = m->num_params;
    float *mean = NULL;
    if (run->checks & FT_MEAN)
        DT_CHECK(mean_gradient(run, d, dt_comm_size(w), bb, &mean));
    dt_result r = lab_fsdp_init(&f, w, m, &cfg);
    if (r != DT_OK) {
        free(mean);
        return r;
    }
    if (strcmp(f.trainer.sync.name, "lab_fsdp") || strcmp(f.trainer.update.name, "lab_fsdp"))
        r = dt_fail(DT_ERR_STATE, "the loop's hooks are not the lab's (sync %s, update %s): "
                    "the library's own FSDP does not count", f.trainer.sync.name,
                    f.trainer.update.name);
    dt_mem_reset_peak();
    for (int s = 0; r == DT_OK && s < run->steps; s++) {
        dt_batch b;
        double t;
        r = ft_batch(d, m, f.ranks, f.rank, s, run->B, bb->x, bb->tok, bb->y, &b);
        if (r == DT_OK)
            r = lab_step(w, run, &f, s, &b, psi, &t);
        if (r == DT_OK && s == 0 && mean)
            r = check_mean(run, &f, mean);
        if (r == DT_OK && f.rank == 0)
            run->step_s = t, run->units = f.num_units;
    }
    dt_mem_stats ms;
    dt_mem_stats_get(&ms);
    if (r == DT_OK)
        r = check_memory(run, &f, &ms);
    if (r == DT_OK)
        r = lab_fsdp_params(&f, params);
    lab_fsdp_free(&f);
    free(mean);
    return r;
}

/* max |a - b| / max |b|, and where the largest difference is */
static double rel_diff(const float *a, const float *b, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double dd = fabs((double)a[i] - b[i]);
        if (!(dd <= dmax))
            dmax = dd, *worst = i;
        bmax = fmax(bmax, fabs((double)b[i]));
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

static dt_result compare(dt_comm *w, const fsdp_run *run, const float *params, const float *ref,
                         size_t psi)
{
    size_t worst;
    double e = rel_diff(params, ref, psi, &worst);
    if (!(e <= 1e-5))
        return dt_fail(DT_ERR_MISMATCH, "%s, %s on %d ranks: rank %d after %d steps of AdamW: "
                       "params[%zu] = %.9g, data parallelism gives %.9g (relative difference "
                       "%.3g > 1e-5)", mode(run), run->spec, dt_comm_size(w), dt_comm_rank(w),
                       run->steps, worst,
                       (double)params[worst], (double)ref[worst], e);
    float *root = malloc(psi * sizeof *root);
    dt_result r = root ? dt_broadcast(params, root, psi, DT_F32, 0, w)
                       : dt_fail(DT_ERR_NOMEM, "fsdp tests: rank 0's parameters");
    if (r == DT_OK && memcmp(root, params, psi * sizeof *root))
        r = dt_fail(DT_ERR_MISMATCH, "%s: rank %d's parameters differ from rank 0's", mode(run),
                    dt_comm_rank(w));
    free(root);
    return r;
}

dt_result ft_check_rank(dt_comm *w, void *arg)
{
    fsdp_run *run = arg;
    dt_model m = {0};
    dt_dataset d = {0};
    bufs bb = {0};
    float *params = NULL, *ref = NULL;
    dt_result r = dt_model_create_spec(&m, run->spec, FT_SEED);
    if (r == DT_OK)
        r = ft_data(&d, &m);
    size_t psi = m.num_params, rows = run->B * (m.max_seq ? m.max_seq : 1);
    bb.x = malloc(rows * (m.in_width + 1) * sizeof *bb.x);
    bb.tok = malloc(rows * sizeof *bb.tok);
    bb.y = malloc(rows * sizeof *bb.y);
    params = malloc((psi + 1) * sizeof *params);
    if (r == DT_OK && (!bb.x || !bb.tok || !bb.y || !params))
        r = dt_fail(DT_ERR_NOMEM, "fsdp tests: buffers");
    if (r == DT_OK)
        r = train_lab(w, run, &d, &m, &bb, params);
    if (r == DT_OK && (run->checks & FT_PARAMS))
        r = ddp_reference(w, run, &d, &bb, &ref);
    if (r == DT_OK && (run->checks & FT_PARAMS))
        r = compare(w, run, params, ref, psi);
    free(bb.x), free(bb.tok), free(bb.y), free(params), free(ref);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return r;
}

dt_result ft_launch(int K, dt_backend b, const char *net, fsdp_run *run)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = b;
    o.algo = DT_ALGO_RING; /* bytes and times as the ring formulas say */
    o.net = net;
    o.timeout_s = 10;
    o.trace_path = run->trace;
    return dt_launch(&o, ft_check_rank, run);
}

int ft_trace_spans(const char *path, const char *name, int lane, ft_span *out, int cap)
{
    dt_trace_region *r;
    size_t n;
    int k = 0;
    if (dt_trace_read(path, &r, &n) != DT_OK)
        return -1;
    for (size_t i = 0; i < n && k < cap; i++)
        if (r[i].modeled && r[i].rank == 0 && r[i].lane == lane && r[i].end_s > r[i].start_s &&
            !strcmp(r[i].name, name))
            out[k++] = (ft_span){r[i].start_s * 1e6, r[i].end_s * 1e6};
    free(r);
    for (int i = 1; i < k; i++) /* insertion sort by end */
        for (int j = i; j > 0 && out[j].e < out[j - 1].e; j--) {
            ft_span t = out[j];
            out[j] = out[j - 1], out[j - 1] = t;
        }
    return k;
}

/* ---------------------------------------------------------------- predict, then measure */

dt_result ft_peak_formula(const char *spec, size_t min_unit_params, int prefetch, int reshard,
                          int K, size_t *param, size_t *grad, int *units)
{
    dt_model m;
    DT_CHECK(dt_model_create_spec(&m, spec, FT_SEED));
    double full[64];
    int n = 0;
    size_t held = 0;
    for (int i = 0; i < m.num_layers && n < 64; i++) { /* section 1's wrap */
        held += m.layers[i].param_count;
        if (held >= min_unit_params || i == m.num_layers - 1)
            full[n++] = 4.0 * K * (double)ft_shard(held, K), held = 0;
    }
    dt_model_free(&m);
    double shards = 0, all = 0, big = 0, pair = 0;
    for (int u = 0; u < n; u++) {
        shards += full[u] / K, all += full[u], big = fmax(big, full[u]);
        pair = fmax(pair, u > 0 ? full[u - 1] + full[u] : full[u]);
    }
    *param = (size_t)(shards + (!reshard ? all : prefetch ? pair : big));
    *grad = (size_t)(shards + pair);
    *units = n;
    return DT_OK;
}

typedef struct {
    const char *spec;
    lab_fsdp_config cfg;
} peak_args;

typedef struct {
    size_t param, grad;
} peak_out;

/* Two steps of the lab's FSDP; the peaks of the second. */
static dt_result peak_rank(dt_comm *w, void *arg)
{
    const peak_args *a = arg;
    peak_out *out = dt_rank_out(w);
    dt_model m = {0};
    dt_dataset d = {0};
    lab_fsdp f = {0};
    float x[4 * 64];
    int32_t tok[4 * 16], y[4 * 16];
    DT_CHECK(dt_model_create_spec(&m, a->spec, FT_SEED));
    dt_result r = m.in_width <= 64 && m.max_seq <= 16
                      ? ft_data(&d, &m) : dt_fail(DT_ERR_INVALID_ARG, "fsdp tests: model too wide");
    if (r == DT_OK)
        r = lab_fsdp_init(&f, w, &m, &a->cfg);
    for (int s = 0; r == DT_OK && s < 2; s++) {
        dt_batch b;
        r = ft_batch(&d, &m, f.ranks, f.rank, s, 4, x, tok, y, &b);
        if (r == DT_OK && s == 1)
            dt_mem_reset_peak();
        if (r == DT_OK)
            r = lab_fsdp_step(&f, &b, NULL);
        if (r == DT_OK && s == 1) {
            dt_mem_stats ms;
            dt_mem_stats_get(&ms);
            *out = (peak_out){ms.peak[DT_MEM_PARAM], ms.peak[DT_MEM_GRAD]};
        }
    }
    if (f.units)
        lab_fsdp_free(&f);
    dt_dataset_free(&d);
    dt_model_free(&m);
    return r;
}

void ft_expect_peak_prediction(const char *spec, size_t min_unit_params, int prefetch,
                               int reshard, int K)
{
    size_t want_p, want_g, pred_p = 0, pred_g = 0;
    int units;
    char what[200];
    peak_args a = {spec, {ft_optim(), min_unit_params, prefetch, reshard, NULL, NULL}};
    fsdp_run mode_of = {.prefetch = prefetch, .reshard = reshard};
    peak_out got[8];
    dt_model m;
    EXPECT(K <= 8, "fsdp tests: %d ranks", K);
    EXPECT_OK(ft_peak_formula(spec, min_unit_params, prefetch, reshard, K, &want_p, &want_g,
                              &units));
    snprintf(what, sizeof what, "%s, %s wrapped at %zu parameters (%d units), K = %d",
             mode(&mode_of), spec, min_unit_params, units, K);
    EXPECT_OK(dt_model_create_spec(&m, spec, FT_SEED));
    dt_result r = lab_fsdp_predict_peak(&m, &a.cfg, K, &pred_p, &pred_g);
    dt_model_free(&m);
    EXPECT(r == DT_OK, "%s: lab_fsdp_predict_peak: %s", what, dt_last_error());
    EXPECT(pred_p == want_p && pred_g == want_g, "%s: predicted peaks of %zu bytes of PARAM and "
           "%zu of GRAD; the shards and the units section 3 holds at once come to %zu and %zu",
           what, pred_p, pred_g, want_p, want_g);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K, o.backend = DT_BACKEND_THREAD, o.algo = DT_ALGO_RING, o.net = "none";
    o.timeout_s = 10, o.out = got, o.out_bytes = sizeof got[0];
    EXPECT_OK(dt_launch(&o, peak_rank, &a));
    for (int q = 0; q < K; q++)
        EXPECT(got[q].param == pred_p && got[q].grad == pred_g, "%s: predicted peaks of %zu "
               "bytes of PARAM and %zu of GRAD, as section 3 says; rank %d held %zu and %zu at "
               "its peaks over the second step of lab_fsdp_step", what, pred_p, pred_g, q,
               got[q].param, got[q].grad);
}
