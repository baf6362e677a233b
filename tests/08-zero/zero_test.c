/* zero_test.c - the checking rank function of the lab 08 tests (see
 * zero_test.h). The reference is the library's data parallelism: a
 * dt_trainer with its default allreduce and AdamW over every parameter,
 * which shares no code with the lab. */
#include "grader.h"
#include "zero_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dt_result zt_data(dt_dataset *d, const dt_model *m)
{
    return dt_data_blobs(d, ZT_DATA_N, m->in_width, m->num_classes, 2.0f, 5, 0);
}

size_t zt_shard(size_t count, int K)
{
    return (count + (size_t)K - 1) / (size_t)K;
}

dt_optim_config zt_optim(const zero_run *run)
{
    return run->sgd ? dt_sgd_config(0.05f, 0.9f, 1e-3f) : dt_adamw_config(0.01f);
}

void zt_kept_bytes(const lab_zero *z, size_t out[3])
{
    size_t K = (size_t)z->ranks, f = sizeof(float);
    size_t o = dt_optim_state_bytes_per_param(&z->cfg.optim); /* AdamW 8, SGD 4 or 0 */
    out[0] = out[1] = out[2] = 0;
    for (int u = 0; u < z->num_units; u++) {
        size_t n = z->units[u].unit.count, c = zt_shard(n, z->ranks);
        switch (z->cfg.stage) {
        case LAB_ZERO_DDP: out[0] += f * n, out[1] += f * n, out[2] += o * n; break;
        case LAB_ZERO_1: out[0] += f * K * c, out[1] += f * K * c, out[2] += o * c; break;
        case LAB_ZERO_2: out[0] += f * K * c, out[1] += f * c, out[2] += o * c; break;
        case LAB_ZERO_3: out[0] += f * c, out[1] += f * c, out[2] += o * c; break;
        }
    }
}

void zt_peak_formula(const lab_zero *z, size_t psi, double out[3])
{
    double P = (double)psi, K = z->ranks, big = 0;
    double O = (double)dt_optim_state_bytes_per_param(&z->cfg.optim);
    for (int u = 0; u < z->num_units; u++)
        big = fmax(big, (double)z->units[u].unit.count);
    switch (z->cfg.stage) {
    case LAB_ZERO_DDP: out[0] = 4 * P, out[1] = 4 * P, out[2] = O * P; break;
    case LAB_ZERO_1: out[0] = 4 * P, out[1] = 4 * P, out[2] = O * P / K; break;
    case LAB_ZERO_2: out[0] = 4 * P, out[1] = 4 * P / K + 4 * big, out[2] = O * P / K; break;
    case LAB_ZERO_3: out[0] = out[1] = 4 * P / K + 4 * big, out[2] = O * P / K; break;
    }
}

/* Rank r's samples of step t: [(t K + r) B, +B), wrapping around. */
static dt_result batch(const dt_dataset *d, int K, int r, int t, size_t B, float *x, int32_t *y)
{
    size_t idx[64];
    if (B > 64)
        return dt_fail(DT_ERR_INVALID_ARG, "zero tests: batch %zu > 64", B);
    for (size_t i = 0; i < B; i++)
        idx[i] = (((size_t)t * (size_t)K + (size_t)r) * B + i) % d->n;
    return dt_data_gather(d, idx, B, x, NULL, y);
}

/* The library's data parallelism on the same batches: the reference. */
static dt_result ddp_reference(dt_comm *w, const zero_run *run, const dt_dataset *d, float *x,
                               int32_t *y, float **out)
{
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = zt_optim(run);
    DT_CHECK(dt_model_create_spec(&m, run->spec, ZT_SEED));
    dt_result r = dt_trainer_init(&t, &m, w, &tc);
    for (int s = 0; r == DT_OK && s < run->steps; s++) {
        dt_batch b = {x, NULL, y, run->B, 1, 1};
        r = batch(d, dt_comm_size(w), dt_comm_rank(w), s, run->B, x, y);
        if (r == DT_OK)
            r = dt_train_step(&t, &b);
    }
    if (r == DT_OK && !(*out = malloc(m.num_params * sizeof(float))))
        r = dt_fail(DT_ERR_NOMEM, "zero tests: reference parameters");
    if (r == DT_OK)
        memcpy(*out, m.params, m.num_params * sizeof(float));
    dt_trainer_free(&t);
    dt_model_free(&m);
    return r;
}

const char *zt_stage_name(lab_zero_stage s)
{
    static const char *const names[] = {"DDP (stage 0)", "ZeRO-1", "ZeRO-2", "ZeRO-3"};
    return s >= LAB_ZERO_DDP && s <= LAB_ZERO_3 ? names[s] : "?";
}

/* The collectives one step makes: stage 0 one allreduce; stages 1 and 2
 * one reduce-scatter and one allgather per unit; stage 3 an allgather per
 * unit for the forward and one for the backward, a reduce-scatter per unit. */
static dt_result check_calls(const lab_zero *z, int step, const dt_stats *s0,
                             const dt_stats *s1)
{
    uint64_t U = (uint64_t)z->num_units, want[3] = {0, 0, 0}; /* allreduce, RS, AG */
    if (z->cfg.stage == LAB_ZERO_DDP)
        want[0] = 1;
    else
        want[1] = U, want[2] = z->cfg.stage == LAB_ZERO_3 ? 2 * U : U;
    uint64_t got[3] = {s1->calls[DT_COLL_ALLREDUCE] - s0->calls[DT_COLL_ALLREDUCE],
                       s1->calls[DT_COLL_REDUCE_SCATTER] - s0->calls[DT_COLL_REDUCE_SCATTER],
                       s1->calls[DT_COLL_ALLGATHER] - s0->calls[DT_COLL_ALLGATHER]};
    if (memcmp(got, want, sizeof got))
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, %d units: rank %d's step %d made "
                       "%llu allreduces, %llu reduce-scatters and %llu allgathers; expected "
                       "%llu, %llu and %llu", zt_stage_name(z->cfg.stage), z->ranks,
                       z->num_units, z->rank, step + 1, (unsigned long long)got[0],
                       (unsigned long long)got[1], (unsigned long long)got[2],
                       (unsigned long long)want[0], (unsigned long long)want[1],
                       (unsigned long long)want[2]);
    return DT_OK;
}

/* Section 7: 2 psi (K-1)/K floats for stages 0 to 2, 3 psi (K-1)/K for 3. */
static dt_result check_bytes(const lab_zero *z, int step, size_t psi, uint64_t sent)
{
    int K = z->ranks;
    double want = 4.0 * (z->cfg.stage == LAB_ZERO_3 ? 3 : 2) * (double)psi * (K - 1) / K;
    if (K == 1 ? sent != 0 : fabs((double)sent - want) > 0.05 * want)
        return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: rank %d's step %d sent %llu bytes, "
                       "section 7 says %d psi (K-1)/K = %.0f (within 5%%)",
                       zt_stage_name(z->cfg.stage), K, z->rank, step + 1,
                       (unsigned long long)sent, z->cfg.stage == LAB_ZERO_3 ? 3 : 2, want);
    return DT_OK;
}

/* Each tag's peak within 5% of the formula's; and the rank's whole peak:
 * what the lab allocated outside dt_mem_alloc counts against the sum. */
static dt_result check_memory(const lab_zero *z, size_t psi, const dt_mem_stats *ms)
{
    double want[3], counted = 0, formula = 0;
    static const dt_mem_tag tags[3] = {DT_MEM_PARAM, DT_MEM_GRAD, DT_MEM_OPTIM};
    zt_peak_formula(z, psi, want);
    for (int i = 0; i < 3; i++) {
        double got = (double)ms->peak[tags[i]];
        if (fabs(got - want[i]) > 0.05 * want[i])
            return dt_fail(DT_ERR_MISMATCH, "%s on %d ranks, %d units: rank %d's peak %s "
                           "memory %.0f bytes over the steps, the formula %.0f (within 5%%)",
                           zt_stage_name(z->cfg.stage), z->ranks, z->num_units, z->rank,
                           dt_mem_tag_name(tags[i]), got, want[i]);
        counted += got, formula += want[i];
    }
    char what[96];
    snprintf(what, sizeof what, "%s on %d ranks, %d units, rank %d", zt_stage_name(z->cfg.stage),
             z->ranks, z->num_units, z->rank);
    return dt_test_whole_peak(counted, (double)ms->peak[DT_MEM_UNTAGGED], formula, 0.05,
                              what);
}

/* max |a - b| / max |b|, and where the largest difference is */
static double rel_diff(const float *a, const float *b, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax))
            dmax = d, *worst = i;
        bmax = fmax(bmax, fabs((double)b[i]));
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

/* The mean over the K ranks of their gradients at the first step, from
 * the initial parameters: each rank's batch through a plain model on this
 * rank, summed in double. */
static dt_result mean_gradient(const zero_run *run, const dt_dataset *d, int K, float *x,
                               int32_t *y, float **out)
{
    dt_model m;
    dt_acts *a = NULL;
    float loss;
    DT_CHECK(dt_model_create_spec(&m, run->spec, ZT_SEED));
    double *sum = calloc(m.num_params, sizeof *sum);
    *out = malloc(m.num_params * sizeof **out);
    dt_result r = sum && *out ? dt_acts_create(&a, &m, 0, m.num_layers, run->B, 1)
                              : dt_fail(DT_ERR_NOMEM, "zero tests: the mean gradient");
    for (int q = 0; r == DT_OK && q < K; q++) {
        r = batch(d, K, q, 0, run->B, x, y);
        if (r == DT_OK)
            r = dt_model_zero_grads(&m);
        if (r == DT_OK)
            r = dt_model_forward(&m, a, x, NULL);
        if (r == DT_OK)
            r = dt_model_loss(&m, a, y, &loss, NULL);
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

/* What the probe checks at the first "sync": by then every stage has
 * reduced (stage 1 in its reduce-scatter, stages 2 and 3 unit by unit in
 * the backward), and the shards hold the mean gradient until the update. */
typedef struct {
    const lab_zero *z;
    const float *mean;  /* mean_gradient's, the model's flat layout */
    int syncs;          /* "sync" events seen */
    char why[640];      /* the first problem found, or "" */
} mean_probe;

/* This rank's gradient shard of unit u: stage 0 the whole unit, stage 1
 * its block of the full gradients, stages 2 and 3 grad_shard. */
static const float *grad_shard_of(const lab_zero *z, const lab_zero_unit *un, size_t *n,
                                  size_t *begin)
{
    if (z->cfg.stage == LAB_ZERO_DDP) {
        *n = un->unit.count, *begin = 0;
        return un->grads;
    }
    *n = un->shard, *begin = (size_t)z->rank * un->shard;
    return z->cfg.stage == LAB_ZERO_1 ? (un->grads ? un->grads + *begin : NULL)
                                      : un->grad_shard;
}

static void check_mean(mean_probe *p, int u)
{
    const lab_zero *z = p->z;
    const lab_zero_unit *un = &z->units[u];
    const float *want = p->mean + un->unit.offset;
    size_t n, begin, count = un->unit.count, worst = 0;
    const float *got = grad_shard_of(z, un, &n, &begin);
    if (!got) {
        snprintf(p->why, sizeof p->why, "%s on %d ranks, rank %d, unit %d: no gradient shard "
                 "after the reduction", zt_stage_name(z->cfg.stage), z->ranks, z->rank, u);
        return;
    }
    double big = 0, d_mean = 0, d_sum = 0;
    for (size_t i = 0; i < count; i++)
        big = fmax(big, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double w = begin + i < count ? want[begin + i] : 0, e = fabs((double)got[i] - w);
        if (!(e <= d_mean))
            d_mean = e, worst = i;
        d_sum = fmax(d_sum, fabs((double)got[i] - z->ranks * w));
    }
    if (big == 0)
        big = 1;
    if (d_mean <= 1e-5 * big)
        return;
    double w = begin + worst < count ? want[begin + worst] : 0;
    if (z->ranks > 1 && d_sum <= 1e-5 * big * z->ranks)
        snprintf(p->why, sizeof p->why, "%s on %d ranks, rank %d, unit %d (layers [%d, %d)), "
                 "step 1: the gradient shard is K = %d times the mean gradient (element %zu of "
                 "the unit: %.9g, the mean over the ranks %.9g): the ranks' gradients were "
                 "summed, not averaged", zt_stage_name(z->cfg.stage), z->ranks, z->rank, u,
                 un->unit.first, un->unit.last, z->ranks, begin + worst, (double)got[worst], w);
    else
        snprintf(p->why, sizeof p->why, "%s on %d ranks, rank %d, unit %d (layers [%d, %d)), "
                 "step 1: element %zu of the unit in this rank's gradient shard is %.9g, %s "
                 "%.9g (the largest difference, %.3g of the unit's largest gradient)",
                 zt_stage_name(z->cfg.stage), z->ranks, z->rank, u, un->unit.first,
                 un->unit.last, begin + worst, (double)got[worst],
                 begin + worst < count ? "the mean over the ranks of their gradients is"
                                       : "padding, which must be", w, d_mean / big);
}

static void on_event(void *arg, const char *event, int unit)
{
    mean_probe *p = arg;
    (void)unit;
    if (strcmp(event, "sync") || p->syncs++ > 0)
        return;
    for (int u = 0; !p->why[0] && u < p->z->num_units; u++)
        check_mean(p, u);
}

/* Each unit's optimizer is the one the config asks for (section 2: the
 * stage changes where the state lives, not the rule). */
static dt_result check_optimizer(const lab_zero *z)
{
    const dt_optim_config *want = &z->cfg.optim;
    for (int u = 0; u < z->num_units; u++) {
        const dt_optim_config *got = &z->units[u].opt.cfg;
        if (got->kind != want->kind || got->lr != want->lr ||
            got->weight_decay != want->weight_decay || got->momentum != want->momentum)
            return dt_fail(DT_ERR_MISMATCH, "%s, unit %d: its optimizer is %s (lr %g, momentum "
                           "%g, weight decay %g), the config's is %s (lr %g, momentum %g, "
                           "weight decay %g): the shard's optimizer is z->cfg.optim",
                           zt_stage_name(z->cfg.stage), u,
                           got->kind == DT_OPTIM_ADAMW ? "AdamW" : "SGD", (double)got->lr,
                           (double)got->momentum, (double)got->weight_decay,
                           want->kind == DT_OPTIM_ADAMW ? "AdamW" : "SGD", (double)want->lr,
                           (double)want->momentum, (double)want->weight_decay);
    }
    return DT_OK;
}

/* Trains with the lab; checks calls and bytes step by step, the first
 * step's mean gradient, memory at the end. */
static dt_result train_lab(dt_comm *w, const zero_run *run, const dt_dataset *d, dt_model *m,
                           float *x, int32_t *y, float *params)
{
    lab_zero z;
    mean_probe probe = {&z, NULL, 0, ""};
    float *mean = NULL;
    lab_zero_config cfg = {run->stage, zt_optim(run), run->bucket_bytes, NULL, NULL};
    size_t psi = m->num_params;
    if (run->checks & ZT_MEAN) {
        DT_CHECK(mean_gradient(run, d, dt_comm_size(w), x, y, &mean));
        probe.mean = mean, cfg.probe = on_event, cfg.probe_arg = &probe;
    }
    dt_result r = lab_zero_init(&z, w, m, &cfg);
    if (r != DT_OK) {
        free(mean);
        return r;
    }
    if (strcmp(z.trainer.sync.name, "lab_zero") || strcmp(z.trainer.update.name, "lab_zero"))
        r = dt_fail(DT_ERR_STATE, "the loop's hooks are not the lab's (sync %s, update %s): "
                    "the library's own ZeRO does not count", z.trainer.sync.name,
                    z.trainer.update.name);
    if (r == DT_OK)
        r = check_optimizer(&z);
    dt_mem_reset_peak();
    for (int s = 0; r == DT_OK && s < run->steps; s++) {
        dt_stats s0, s1;
        r = batch(d, z.ranks, z.rank, s, run->B, x, y);
        if (r == DT_OK)
            r = dt_comm_stats(w, &s0);
        if (r == DT_OK)
            r = lab_zero_step(&z, x, y, run->B, NULL);
        if (r == DT_OK)
            r = dt_comm_stats(w, &s1);
        if (r == DT_OK && (run->checks & ZT_CALLS))
            r = check_calls(&z, s, &s0, &s1);
        if (r == DT_OK && (run->checks & ZT_BYTES))
            r = check_bytes(&z, s, psi, s1.bytes_sent - s0.bytes_sent);
        if (r == DT_OK && probe.why[0])
            r = dt_fail(DT_ERR_MISMATCH, "%s", probe.why);
        if (r == DT_OK && (run->checks & ZT_MEAN) && probe.syncs == 0)
            r = dt_fail(DT_ERR_STATE, "%s on %d ranks: rank %d's step 1 never reached its "
                        "sync (the given hook that calls the probe)", zt_stage_name(z.cfg.stage),
                        z.ranks, z.rank);
    }
    dt_mem_stats ms;
    dt_mem_stats_get(&ms);
    if (r == DT_OK && (run->checks & ZT_MEMORY))
        r = check_memory(&z, psi, &ms);
    if (r == DT_OK)
        r = lab_zero_params(&z, params);
    lab_zero_free(&z);
    free(mean);
    return r;
}

dt_result zt_check_rank(dt_comm *w, void *arg)
{
    const zero_run *run = arg;
    dt_model m = {0};
    dt_dataset d = {0};
    float *x = NULL, *params = NULL, *ref = NULL;
    int32_t *y = NULL;
    dt_result r = dt_model_create_spec(&m, run->spec, ZT_SEED);
    if (r == DT_OK)
        r = zt_data(&d, &m);
    size_t psi = m.num_params;
    x = malloc(run->B * (m.in_width + 1) * sizeof *x);
    y = malloc(run->B * sizeof *y);
    params = malloc((psi + 1) * sizeof *params);
    if (r == DT_OK && (!x || !y || !params))
        r = dt_fail(DT_ERR_NOMEM, "zero tests: buffers");
    if (r == DT_OK)
        r = train_lab(w, run, &d, &m, x, y, params);
    if (r == DT_OK && (run->checks & ZT_PARAMS))
        r = ddp_reference(w, run, &d, x, y, &ref);
    if (r == DT_OK && (run->checks & ZT_PARAMS)) {
        size_t worst;
        double e = rel_diff(params, ref, psi, &worst);
        if (!(e <= 1e-5))
            r = dt_fail(DT_ERR_MISMATCH, "%s on %d ranks: rank %d after %d steps of %s: "
                        "params[%zu] = %.9g, data parallelism gives %.9g (relative difference "
                        "%.3g > 1e-5)", zt_stage_name(run->stage), dt_comm_size(w),
                        dt_comm_rank(w), run->steps,
                        run->sgd ? "SGD" : "AdamW", worst,
                        (double)params[worst], (double)ref[worst], e);
    }
    /* every rank holds rank 0's parameters, bit for bit */
    if (r == DT_OK && (run->checks & ZT_PARAMS)) {
        float *root = malloc(psi * sizeof *root);
        r = root ? dt_broadcast(params, root, psi, DT_F32, 0, w)
                 : dt_fail(DT_ERR_NOMEM, "zero tests: rank 0's parameters");
        if (r == DT_OK && memcmp(root, params, psi * sizeof *root))
            r = dt_fail(DT_ERR_MISMATCH, "%s: rank %d's parameters differ from rank 0's",
                        zt_stage_name(run->stage), dt_comm_rank(w));
        free(root);
    }
    free(x), free(y), free(params), free(ref);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return r;
}

dt_result zt_launch(int K, dt_backend b, const zero_run *run)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = b;
    o.algo = DT_ALGO_RING; /* bytes as the ring formulas say */
    o.net = "none";
    o.timeout_s = 10;
    return dt_launch(&o, zt_check_rank, (void *)run);
}

/* ---------------------------------------------------------------- predict, then measure */

dt_result zt_cost_formula(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                          const char *net, zt_cost *out, int *units)
{
    dt_model m;
    dt_net link;
    DT_CHECK(dt_net_link(net, &link));
    DT_CHECK(dt_model_create_spec(&m, spec, ZT_SEED));
    /* the units of the stage: stage 1 the whole model; stage 2 buckets
     * closed, from the last layer, once they hold bucket_bytes of
     * gradients (0: every layer); stage 3 every layer */
    size_t counts[64];
    int n = 0;
    size_t held = 0;
    for (int i = m.num_layers - 1; i >= 0 && n < 64; i--) {
        held += m.layers[i].param_count;
        if (i == 0 || (stage == LAB_ZERO_3) ||
            (stage == LAB_ZERO_2 && held * sizeof(float) >= bucket_bytes))
            counts[n++] = held, held = 0;
    }
    dt_model_free(&m);
    double bytes = 0, t = 0, passes = stage == LAB_ZERO_3 ? 3 : 2;
    for (int u = 0; u < n; u++) {
        double block = 4.0 * (double)zt_shard(counts[u], K); /* one shard, in bytes */
        bytes += passes * (K - 1) * block;
        t += passes * (K - 1) * (link.alpha + block / link.beta);
    }
    *out = (zt_cost){bytes, t};
    *units = n;
    return DT_OK;
}

typedef struct {
    const char *spec;
    lab_zero_stage stage;
    size_t bucket_bytes;
} cost_args;

static dt_result cost_rank(dt_comm *w, void *arg)
{
    const cost_args *a = arg;
    zt_cost *out = dt_rank_out(w);
    zero_run run = {a->spec, a->stage, a->bucket_bytes, 4, 2, 0, 0};
    dt_model m;
    dt_dataset d;
    lab_zero z = {0};
    float x[4 * 64];
    int32_t y[4];
    lab_zero_config cfg = {a->stage, zt_optim(&run), a->bucket_bytes, NULL, NULL};
    DT_CHECK(dt_model_create_spec(&m, a->spec, ZT_SEED));
    dt_result r = m.in_width <= 64 ? zt_data(&d, &m)
                                   : dt_fail(DT_ERR_INVALID_ARG, "zero tests: input too wide");
    if (r == DT_OK) {
        r = lab_zero_init(&z, w, &m, &cfg);
        for (int s = 0; r == DT_OK && s < run.steps; s++) {
            dt_stats s0, s1;
            r = batch(&d, z.ranks, z.rank, s, run.B, x, y);
            if (r == DT_OK)
                r = dt_comm_stats(w, &s0);
            if (r == DT_OK)
                r = lab_zero_step(&z, x, y, run.B, NULL);
            if (r == DT_OK)
                r = dt_comm_stats(w, &s1);
            if (r == DT_OK)
                *out = (zt_cost){(double)(s1.bytes_sent - s0.bytes_sent),
                                 s1.time_comm_modeled - s0.time_comm_modeled};
        }
        if (z.units)
            lab_zero_free(&z);
        dt_dataset_free(&d);
    }
    dt_model_free(&m);
    return r;
}

dt_result zt_cost_measured(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                           const char *net, zt_cost *out)
{
    cost_args a = {spec, stage, bucket_bytes};
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = DT_BACKEND_THREAD;
    o.algo = DT_ALGO_RING; /* the formulas are the ring's */
    o.net = net;
    o.timeout_s = 10;
    o.out = out, o.out_bytes = sizeof out[0];
    return dt_launch(&o, cost_rank, &a);
}

void zt_expect_prediction(const char *spec, lab_zero_stage stage, size_t bucket_bytes, int K,
                          const char *net)
{
    dt_model m;
    dt_net link;
    lab_zero_cost pred = {-1, -1};
    zt_cost want, got[16];
    int units = 0;
    char what[160];
    lab_zero_config cfg = {stage, dt_adamw_config(0.01f), bucket_bytes, NULL, NULL};
    EXPECT(K <= 16, "zero tests: %d ranks", K);
    EXPECT_OK(dt_net_link(net, &link));
    EXPECT_OK(zt_cost_formula(spec, stage, bucket_bytes, K, net, &want, &units));
    snprintf(what, sizeof what, "%s, %s (%d units), K = %d, over %s", zt_stage_name(stage),
             spec, units, K, net);
    EXPECT_OK(dt_model_create_spec(&m, spec, ZT_SEED));
    dt_result r = lab_zero_predict(&m, &cfg, K, &link, &pred);
    dt_model_free(&m);
    EXPECT(r == DT_OK, "%s: lab_zero_predict: %s", what, dt_last_error());
    EXPECT(pred.bytes_sent == want.bytes && fabs(pred.comm_s - want.comm_s) <= 1e-9 * want.comm_s,
           "%s: predicted %.0f bytes sent per rank and %.3f us of collectives a step; section "
           "7's formulas with this lab's units and padding give %.0f bytes and %.3f us",
           what, pred.bytes_sent, pred.comm_s * 1e6, want.bytes, want.comm_s * 1e6);
    EXPECT_OK(zt_cost_measured(spec, stage, bucket_bytes, K, net, got));
    for (int q = 0; q < K; q++)
        EXPECT(got[q].bytes == pred.bytes_sent &&
                   fabs(got[q].comm_s - pred.comm_s) <= 1e-9 * pred.comm_s,
               "%s: predicted %.0f bytes and %.3f us a step, as section 7's formulas do; rank "
               "%d measured %.0f bytes and %.3f us in the second step of lab_zero_step",
               what, pred.bytes_sent, pred.comm_s * 1e6, q, got[q].bytes, got[q].comm_s * 1e6);
}
