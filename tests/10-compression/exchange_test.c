/* exchange_test.c - see exchange_test.h. */
#include "exchange_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    lab_compress_config cc;
    int steps;
    double tol;
    const char *spec;
} ex_args;

/* Buffers of one rank's check: every rank's inputs and the reference. */
typedef struct {
    float *g, *e, *out, *sent, *e_new, *se;
} ex_bufs;

static void ex_free(ex_bufs *b)
{
    free(b->g), free(b->e), free(b->out), free(b->sent), free(b->e_new), free(b->se);
}

static dt_result ex_alloc(ex_bufs *b, int K, size_t n, size_t longest)
{
    memset(b, 0, sizeof *b);
    b->g = calloc((size_t)K * n, sizeof(float));
    b->e = calloc((size_t)K * n, sizeof(float));
    b->out = calloc(n, sizeof(float));
    b->sent = calloc((size_t)K * n, sizeof(float));
    b->e_new = calloc((size_t)K * n, sizeof(float));
    b->se = calloc((size_t)K * longest + 1, sizeof(float));
    if (!b->g || !b->e || !b->out || !b->sent || !b->e_new || !b->se) {
        ex_free(b);
        return dt_fail(DT_ERR_NOMEM, "exchange test buffers");
    }
    return DT_OK;
}

/* a against the reference want: bit for bit (tol 0) or within tol */
static dt_result ex_compare(const char *what, const float *a, const float *want, size_t n,
                            double tol, const lab_cdp *c, int step)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - want[i]), m = fabs((double)want[i]);
        int same = tol == 0 ? memcmp(&a[i], &want[i], sizeof *a) == 0
                            : d <= tol * (m > 1e-30 ? m : 1e-30);
        if (!same)
            return dt_fail(DT_ERR_MISMATCH, "%s%s, K=%d, rank %d, step %d: %s[%zu] = %.9g, "
                           "expected %.9g%s", lab_method_name(c->cfg.method),
                           c->cfg.error_feedback ? " with error feedback" : "", c->ranks, c->rank,
                           step + 1, what, i, (double)a[i], (double)want[i],
                           tol == 0 ? " (bit for bit)" : "");
    }
    return DT_OK;
}

static dt_result ex_calls(const lab_cdp *c, const dt_stats *st, int step)
{
    int K = c->ranks;
    uint64_t ag = st->calls[DT_COLL_ALLGATHER], ar = st->calls[DT_COLL_ALLREDUCE];
    uint64_t a2a = st->calls[DT_COLL_ALLTOALL], want_ag = 0, want_ar = 0, want_a2a = 0;
    uint64_t bytes = 0;
    int exact_bytes = 1;
    switch (c->cfg.method) {
    case LAB_TOPK: want_ag = 1, bytes = (uint64_t)(K - 1) * 8 * c->k; break;
    case LAB_INT8: want_ar = 2, exact_bytes = 0; break;
    case LAB_SIGN: want_a2a = 1, want_ag = 1, bytes = 2 * (uint64_t)(K - 1) * c->block_bytes; break;
    default: break;
    }
    if (ag != want_ag || ar != want_ar || a2a != want_a2a)
        return dt_fail(DT_ERR_MISMATCH, "K=%d, rank %d, step %d: %s called %llu allgathers, "
                       "%llu allreduces and %llu alltoalls; its contract says %llu, %llu and %llu",
                       K, c->rank, step + 1, lab_method_name(c->cfg.method), (unsigned long long)ag,
                       (unsigned long long)ar, (unsigned long long)a2a,
                       (unsigned long long)want_ag, (unsigned long long)want_ar,
                       (unsigned long long)want_a2a);
    if (exact_bytes && st->bytes_sent != bytes)
        return dt_fail(DT_ERR_MISMATCH, "K=%d, rank %d, step %d: %s sent %llu bytes, expected "
                       "%llu", K, c->rank, step + 1, lab_method_name(c->cfg.method),
                       (unsigned long long)st->bytes_sent, (unsigned long long)bytes);
    return DT_OK;
}

/* One step: this rank's inputs into c, the reference, the sync, the checks. */
static dt_result ex_step(lab_cdp *c, const ex_args *a, ex_bufs *b, int step)
{
    int K = c->ranks, me = c->rank, ef = a->cc.error_feedback;
    size_t n = c->n, longest = c->block_len ? c->block_len[0] : 0;
    for (int q = 0; q < K; q++)
        cmp_exchange_grad(a->cc.method, K, q, step, n, ef ? b->e + (size_t)q * n : NULL,
                          b->g + (size_t)q * n);
    memcpy(c->model->grads, b->g + (size_t)me * n, n * sizeof(float));
    float *se_mine = c->server_error;
    DT_CHECK(cmp_reference(&a->cc, K, n, b->g, ef ? b->e : NULL, b->out, b->sent, b->e_new,
                           b->se));
    dt_stats st;
    DT_CHECK(dt_comm_stats_reset(c->comm));
    DT_CHECK(lab_cdp_sync(c));
    DT_CHECK(dt_comm_stats(c->comm, &st));
    const float *g = b->g + (size_t)me * n, *e_old = b->e + (size_t)me * n;
    for (size_t i = 0; ef && a->tol == 0 && i < n; i++) { /* nothing lost, nothing made up */
        float lhs = g[i] + e_old[i], rhs = c->sent[i] + c->error[i];
        if (memcmp(&lhs, &rhs, sizeof lhs) != 0)
            return dt_fail(DT_ERR_MISMATCH, "%s, K=%d, rank %d, step %d, element %zu: g + e_old "
                           "= %.9g but C(v) + e_new = %.9g + %.9g = %.9g: error feedback lost or "
                           "made up %.3g", lab_method_name(c->cfg.method), K, me, step + 1, i,
                           (double)lhs, (double)c->sent[i], (double)c->error[i], (double)rhs,
                           (double)rhs - (double)lhs);
    }
    DT_CHECK(ex_compare("the mean gradient", c->model->grads, b->out, n, a->tol, c, step));
    DT_CHECK(ex_compare("C(v), what this rank sent", c->sent, b->sent + (size_t)me * n, n,
                        a->tol, c, step));
    if (ef)
        DT_CHECK(ex_compare("the residual", c->error, b->e_new + (size_t)me * n, n, a->tol, c,
                            step));
    if (ef && se_mine)
        DT_CHECK(ex_compare("the server residual", se_mine, b->se + (size_t)me * longest,
                            c->block_len[me], a->tol, c, step));
    DT_CHECK(ex_calls(c, &st, step));
    memcpy(b->e, b->e_new, (size_t)K * n * sizeof(float));
    return DT_OK;
}

static dt_result ex_rank(dt_comm *w, void *arg)
{
    const ex_args *a = arg;
    int K = dt_comm_size(w), me = dt_comm_rank(w);
    dt_model m = {0};
    lab_cdp c;
    ex_bufs b;
    DT_CHECK(dt_model_create_spec(&m, a->spec ? a->spec : CMP_SPEC, 1));
    dt_result r = lab_cdp_init(&c, w, &m, &a->cc, NULL);
    if (r != DT_OK) {
        dt_model_free(&m);
        return r;
    }
    size_t n = c.n, longest = c.block_len ? c.block_len[0] : 0;
    r = ex_alloc(&b, K, n, longest);
    if (r == DT_OK && a->cc.error_feedback && !c.error)
        r = dt_fail(DT_ERR_STATE, "lab_cdp_init made no residual buffer");
    for (int q = 0; r == DT_OK && q < K; q++) {
        cmp_exchange_error(a->cc.method, q, n, b.e + (size_t)q * n);
        cmp_fill(b.se + (size_t)q * longest, longest, 3000, q, 8, 16.0f);
    }
    if (r == DT_OK && c.error)
        memcpy(c.error, b.e + (size_t)me * n, n * sizeof(float));
    if (r == DT_OK && c.server_error)
        memcpy(c.server_error, b.se + (size_t)me * longest, longest * sizeof(float));
    for (int s = 0; r == DT_OK && s < a->steps; s++)
        r = ex_step(&c, a, &b, s);
    if (r == DT_OK && !a->cc.error_feedback && c.error)
        r = dt_fail(DT_ERR_STATE, "without feedback there is no residual");
    ex_free(&b);
    lab_cdp_free(&c);
    dt_model_free(&m);
    return r;
}

void exchange_expect_on(const lab_compress_config *cc, int K, int steps, double tol,
                        dt_backend backend, const char *spec)
{
    ex_args a = {*cc, steps, tol, spec};
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = backend;
    o.net = "none";
    o.algo = DT_ALGO_RING;
    o.timeout_s = 20;
    dt_result r = dt_launch(&o, ex_rank, &a);
    if (r == DT_ERR_UNSUPPORTED && backend == DT_BACKEND_PROC) {
        dt_log("the proc backend is not available (%s): threads instead", dt_last_error());
        o.backend = DT_BACKEND_THREAD;
        r = dt_launch(&o, ex_rank, &a);
    }
    EXPECT(r == DT_OK, "%s%s on %d ranks (%s): %s", lab_method_name(cc->method),
           cc->error_feedback ? " with error feedback" : "", K, spec ? spec : CMP_SPEC,
           dt_last_error());
}

void exchange_expect(const lab_compress_config *cc, int K, int steps, double tol)
{
    exchange_expect_on(cc, K, steps, tol, DT_BACKEND_THREAD, NULL);
}

/* ---------------------------------------------------------------- predict, then measure */

typedef struct {
    const char *spec;
    lab_compress_config cc;
} cross_args;

typedef struct {
    double start, end; /* the rank's modeled clock before and after the sync */
    size_t k;          /* pairs sent (top-k) */
} cross_out;

/* One sync of cc's method on normal gradients, after a barrier (where the
 * ranks' clocks meet); the rank's clock around it. */
static dt_result cross_rank(dt_comm *w, void *arg)
{
    const cross_args *a = arg;
    cross_out *out = dt_rank_out(w);
    dt_model m = {0};
    lab_cdp c;
    DT_CHECK(dt_model_create_spec(&m, a->spec, 3));
    dt_result r = lab_cdp_init(&c, w, &m, &a->cc, NULL);
    if (r == DT_OK) {
        dt_rng rng;
        dt_rng_init(&rng, 11, (uint64_t)dt_comm_rank(w));
        for (size_t i = 0; i < m.num_params; i++)
            m.grads[i] = dt_rng_normal(&rng);
        r = dt_barrier(w);
        double t0 = dt_clock(w);
        if (r == DT_OK)
            r = lab_cdp_sync(&c);
        if (r == DT_OK)
            *out = (cross_out){t0, dt_clock(w), c.k};
        lab_cdp_free(&c);
    }
    dt_model_free(&m);
    return r;
}

/* The modeled time of one sync: from the latest start to the latest end. */
static double cross_time(const char *spec, int K, const char *net, lab_compress_config cc,
                         size_t want_k, const char *what)
{
    cross_args a = {spec, cc};
    cross_out got[CMP_MAX_RANKS];
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K, o.backend = DT_BACKEND_THREAD, o.net = net, o.algo = DT_ALGO_RING;
    o.timeout_s = 20, o.out = got, o.out_bytes = sizeof got[0];
    dt_result r = dt_launch(&o, cross_rank, &a);
    EXPECT(r == DT_OK, "%s: %s on %d ranks over %s: %s", what, lab_method_name(cc.method), K,
           net, dt_last_error());
    EXPECT(cc.method != LAB_TOPK || got[0].k == want_k, "%s: lab_cdp_init made %zu pairs of "
           "density %.9g, the test wanted %zu", what, got[0].k, cc.density, want_k);
    double start = 0, end = 0;
    for (int q = 0; q < K; q++)
        start = fmax(start, got[q].start), end = fmax(end, got[q].end);
    return end - start;
}

void crossover_expect(const char *spec, int K, const char *net)
{
    dt_model m;
    dt_net link;
    double d = -1;
    char what[160];
    EXPECT(K >= 2 && K <= CMP_MAX_RANKS, "crossover test: %d ranks", K);
    EXPECT_OK(dt_net_link(net, &link));
    EXPECT_OK(dt_model_create_spec(&m, spec, 3));
    size_t n = m.num_params;
    dt_model_free(&m);
    EXPECT(n % (size_t)K == 0, "crossover test: %zu values on %d ranks", n, K);
    double want = 1.0 / K + link.alpha * link.beta / (8.0 * (double)n);
    snprintf(what, sizeof what, "top-k against the dense allreduce, %s (n = %zu), K = %d, over %s",
             spec, n, K, net);
    dt_result r = lab_topk_crossover(&link, n, K, &d);
    EXPECT(r == DT_OK, "%s: lab_topk_crossover: %s", what, dt_last_error());
    EXPECT(fabs(d - want) <= 1e-12 * want, "%s: predicted the crossover at density %.9g; "
           "section 6's formula 1/K + alpha beta / (8 n) gives %.9g", what, d, want);
    /* d* n not an integer: top-k with one pair more is strictly slower */
    EXPECT(want < 1 && d * (double)n - floor(d * (double)n) > 0.1,
           "crossover test: d* = %g, d* n = %.3f", want, want * (double)n);
    size_t lo = (size_t)floor(d * (double)n), hi = lo + 1;
    double dense = cross_time(spec, K, net, (lab_compress_config){LAB_DENSE, 0, 0, 0, 0}, 0, what);
    double t_lo = cross_time(spec, K, net,
                             (lab_compress_config){LAB_TOPK, 1, (double)lo / (double)n, 0, 0},
                             lo, what);
    double t_hi = cross_time(spec, K, net,
                             (lab_compress_config){LAB_TOPK, 1, (double)hi / (double)n, 0, 0},
                             hi, what);
    EXPECT(t_lo <= dense * (1 + 1e-12) && dense < t_hi, "%s: predicted the "
           "crossover at density %.9g, %.2f pairs, as section 6 does; measured, top-k with %zu "
           "pairs took %.3f us, the dense allreduce %.3f us, top-k with %zu pairs %.3f us (the "
           "dense one must take no less than the first, less than the second)", what, d, d * (double)n, lo, t_lo * 1e6,
           dense * 1e6, hi, t_hi * 1e6);
}
