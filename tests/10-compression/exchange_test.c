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
                            double tol, int K, int step)
{
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - want[i]), m = fabs((double)want[i]);
        int same = tol == 0 ? memcmp(&a[i], &want[i], sizeof *a) == 0
                            : d <= tol * (m > 1e-30 ? m : 1e-30);
        if (!same)
            return dt_fail(DT_ERR_MISMATCH, "K=%d, step %d: %s[%zu] = %.9g, expected %.9g", K,
                           step, what, i, (double)a[i], (double)want[i]);
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
        return dt_fail(DT_ERR_MISMATCH, "K=%d, step %d: %s called %llu allgathers, %llu "
                       "allreduces and %llu alltoalls; its contract says %llu, %llu and %llu", K,
                       step, lab_method_name(c->cfg.method), (unsigned long long)ag,
                       (unsigned long long)ar, (unsigned long long)a2a,
                       (unsigned long long)want_ag, (unsigned long long)want_ar,
                       (unsigned long long)want_a2a);
    if (exact_bytes && st->bytes_sent != bytes)
        return dt_fail(DT_ERR_MISMATCH, "K=%d, step %d: %s sent %llu bytes, expected %llu",
                       K, step, lab_method_name(c->cfg.method),
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
            return dt_fail(DT_ERR_MISMATCH, "K=%d, step %d, rank %d, element %zu: g + e_old = "
                           "%.9g but C(v) + e_new = %.9g + %.9g = %.9g", K, step, me, i,
                           (double)lhs, (double)c->sent[i], (double)c->error[i], (double)rhs);
    }
    DT_CHECK(ex_compare("the mean gradient", c->model->grads, b->out, n, a->tol, K, step));
    DT_CHECK(ex_compare("C(v), what this rank sent", c->sent, b->sent + (size_t)me * n, n,
                        a->tol, K, step));
    if (ef)
        DT_CHECK(ex_compare("the residual", c->error, b->e_new + (size_t)me * n, n, a->tol, K,
                            step));
    if (ef && se_mine)
        DT_CHECK(ex_compare("the server residual", se_mine, b->se + (size_t)me * longest,
                            c->block_len[me], a->tol, K, step));
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
