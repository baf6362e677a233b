/* tp_test.c - what the lab 07 tests share (see tp_test.h). The
 * reference is one rank running the library's whole GPT; the shard rules
 * are chapter 07's, written again here so that the tests do not trust the
 * lab's own slicing. */
#include "tp_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dt_gpt_config tpt_config(size_t layers)
{
    dt_gpt_config c = {32, TPT_T, layers, 4, 32};
    return c;
}

float tpt_int(uint64_t s, size_t i, int k)
{
    return (float)((int64_t)(dt_hash64(TPT_DATA_SEED, s, i) % (uint64_t)(2 * k + 1)) - k);
}

void tpt_fill_int(float *x, size_t n, uint64_t s, int k)
{
    for (size_t i = 0; i < n; i++)
        x[i] = tpt_int(s, i, k);
}

void tpt_fill_normal(float *x, size_t n, uint64_t s, float scale)
{
    dt_rng rng;
    dt_rng_init(&rng, TPT_DATA_SEED, s);
    for (size_t i = 0; i < n; i++)
        x[i] = scale * dt_rng_normal(&rng);
}

void tpt_batch(int32_t *tokens, int32_t *labels, size_t N, size_t V, uint64_t seed)
{
    for (size_t i = 0; i < N; i++) {
        tokens[i] = (int32_t)(dt_hash64(seed, 1, i) % V);
        labels[i] = (int32_t)(dt_hash64(seed, 2, i) % V);
    }
}

/* The rank function tpt_launch wraps: the ring algorithm first. */
typedef struct {
    dt_rank_fn fn;
    void *arg;
} wrap;

static dt_result ring_then(dt_comm *world, void *arg)
{
    const wrap *w = arg;
    DT_CHECK(dt_comm_set_algo(world, DT_ALGO_RING));
    return w->fn(world, w->arg);
}

dt_result tpt_launch_1_2_4(dt_rank_fn fn, void *arg)
{
    for (int t = 1; t <= 4; t *= 2)
        DT_CHECK(tpt_launch(t, DT_BACKEND_THREAD, fn, arg));
    return DT_OK;
}

dt_result tpt_launch(int t, dt_backend b, dt_rank_fn fn, void *arg)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = t;
    o.backend = b;
    o.net = "none";
    o.timeout_s = 8;
    o.debug = 1;
    wrap w = {fn, arg};
    return dt_launch(&o, ring_then, &w);
}

uint64_t tpt_ring_allreduce_bytes(size_t n, int t)
{
    return 2 * tpt_ring_half_bytes(n, t);
}

uint64_t tpt_ring_half_bytes(size_t n, int t)
{
    return (uint64_t)(t - 1) * (n / (size_t)t) * sizeof(float);
}

dt_result tpt_expect_calls(dt_comm *comm, const char *what, tpt_calls want)
{
    dt_stats st;
    DT_CHECK(dt_comm_stats(comm, &st));
    DT_CHECK(dt_comm_stats_reset(comm));
    long others = 0;
    for (int k = 0; k < DT_NUM_COLLS; k++)
        if (k != DT_COLL_ALLREDUCE && k != DT_COLL_REDUCE_SCATTER && k != DT_COLL_ALLGATHER)
            others += (long)st.calls[k];
    if ((long)st.calls[DT_COLL_ALLREDUCE] != want.allreduce ||
        (long)st.calls[DT_COLL_REDUCE_SCATTER] != want.reduce_scatter ||
        (long)st.calls[DT_COLL_ALLGATHER] != want.allgather || others)
        return dt_fail(DT_ERR_MISMATCH, "%s: %llu allreduces, %llu reduce-scatters, %llu "
                       "allgathers and %ld other calls; expected %ld, %ld, %ld and 0", what,
                       (unsigned long long)st.calls[DT_COLL_ALLREDUCE],
                       (unsigned long long)st.calls[DT_COLL_REDUCE_SCATTER],
                       (unsigned long long)st.calls[DT_COLL_ALLGATHER], others, want.allreduce,
                       want.reduce_scatter, want.allgather);
    if (st.bytes_sent != want.bytes_sent)
        return dt_fail(DT_ERR_MISMATCH, "%s: this rank sent %llu bytes, expected %llu", what,
                       (unsigned long long)st.bytes_sent, (unsigned long long)want.bytes_sent);
    return DT_OK;
}

/* ------------------------------------------------------------ reference */

dt_result tpt_gpt_create(dt_model *m, const dt_gpt_config *cfg)
{
    DT_CHECK(dt_gpt_create(m, cfg, TPT_SEED));
    for (int k = 0; k < m->num_views; k++) {
        const dt_param_view *v = &m->views[k];
        if (v->init_std > 0)
            continue;
        dt_rng rng;
        dt_rng_init(&rng, TPT_SEED + 1, (uint64_t)k);
        for (size_t i = 0; i < v->count; i++)
            m->params[v->offset + i] = v->init_value + 0.1f * dt_rng_normal(&rng);
    }
    return DT_OK;
}

dt_result tpt_ref_run(tpt_ref *ref, const dt_gpt_config *cfg, const int32_t *tokens,
                      const int32_t *labels)
{
    memset(ref, 0, sizeof *ref);
    DT_CHECK(tpt_gpt_create(&ref->model, cfg));
    dt_model *m = &ref->model;
    DT_CHECK(dt_acts_create(&ref->acts, m, 0, m->num_layers, TPT_B, TPT_T));
    DT_CHECK(dt_model_forward(m, ref->acts, NULL, tokens));
    DT_CHECK(dt_model_loss(m, ref->acts, labels, &ref->loss, NULL));
    return dt_model_backward(m, ref->acts, NULL, NULL, NULL, NULL);
}

void tpt_ref_free(tpt_ref *ref)
{
    dt_acts_free(ref->acts);
    dt_model_free(&ref->model);
    memset(ref, 0, sizeof *ref);
}

/* ------------------------------------------------------------ shard rules */

/* How a whole tensor (rows, cols) becomes a rank's part: whole; rows
 * [r rows/t, ...) (column-parallel, vocabulary); columns [r cols/t, ...)
 * (row-parallel); or the q, k and v rows of the rank's heads. */
typedef enum { REPLICATED, ROWS, COLS, HEADS } rule;

typedef struct {
    char name[48];      /* the whole model's view */
    size_t at;          /* offset in the shard */
    size_t rows, cols;  /* whole shape (cols 1 for a vector) */
    rule how;
} part;

/* The parts of a shard, in no particular order; returns how many. */
static int parts(const lab_tp_model *m, const dt_model *whole, part *p)
{
    size_t C = whole->gpt.channels, V = whole->gpt.vocab, T = whole->gpt.context;
    int n = 0;
#define PART(nm, off, r_, c_, h_) \
    (snprintf(p[n].name, sizeof p[n].name, "%s", nm), p[n].at = (off), p[n].rows = (r_), \
     p[n].cols = (c_), p[n].how = (h_), n++)
    PART("embed.wte", m->wte, V, C, ROWS);
    PART("embed.wpe", m->wpe, T, C, REPLICATED);
    PART("head.lnf.weight", m->lnf_w, C, 1, REPLICATED);
    PART("head.lnf.bias", m->lnf_b, C, 1, REPLICATED);
    PART("head.lm_head.weight", m->lm_head, V, C, ROWS);
    for (size_t l = 0; l < m->layers; l++) {
        const lab_tp_block_at *b = &m->block[l];
        char nm[48];
#define BPART(suffix, off, r_, c_, h_) \
    (snprintf(nm, sizeof nm, "block%zu.%s", l + 1, suffix), PART(nm, off, r_, c_, h_))
        BPART("ln1.weight", b->ln1_w, C, 1, REPLICATED);
        BPART("ln1.bias", b->ln1_b, C, 1, REPLICATED);
        BPART("attn.qkv.weight", b->qkv_w, 3 * C, C, HEADS);
        BPART("attn.qkv.bias", b->qkv_b, 3 * C, 1, HEADS);
        BPART("attn.proj.weight", b->proj_w, C, C, COLS);
        BPART("attn.proj.bias", b->proj_b, C, 1, REPLICATED);
        BPART("ln2.weight", b->ln2_w, C, 1, REPLICATED);
        BPART("ln2.bias", b->ln2_b, C, 1, REPLICATED);
        BPART("mlp.fc.weight", b->fc_w, 4 * C, C, ROWS);
        BPART("mlp.fc.bias", b->fc_b, 4 * C, 1, ROWS);
        BPART("mlp.proj.weight", b->mproj_w, C, 4 * C, COLS);
        BPART("mlp.proj.bias", b->mproj_b, C, 1, REPLICATED);
#undef BPART
    }
#undef PART
    return n;
}

/* Whole element (i, j) of part p that shard element k holds, for rank r. */
static size_t source(const part *p, size_t k, size_t C, int t, int r)
{
    size_t rows = p->how == ROWS || p->how == HEADS ? p->rows / (size_t)t : p->rows;
    size_t cols = p->how == COLS ? p->cols / (size_t)t : p->cols;
    size_t i = k / cols, j = k % cols;
    (void)rows;
    switch (p->how) {
    case REPLICATED: break;
    case ROWS: i += (size_t)r * (p->rows / (size_t)t); break;
    case COLS: j += (size_t)r * cols; break;
    case HEADS: { /* local row i: part i / (C/t) of q, k, v, row i % (C/t) of this rank's heads */
        size_t Cl = C / (size_t)t;
        i = (i / Cl) * C + (size_t)r * Cl + i % Cl;
        break;
    }
    }
    return i * p->cols + j;
}

static size_t part_count(const part *p, int t)
{
    return p->how == REPLICATED ? p->rows * p->cols : p->rows * p->cols / (size_t)t;
}

/* The parts of m's shard in a new array (free it), *n of them; NULL when
 * out of memory. */
static part *all_parts(const lab_tp_model *m, const dt_model *whole, int *n)
{
    part *p = calloc(5 + 12 * m->layers, sizeof *p);
    if (!p)
        dt_fail(DT_ERR_NOMEM, "the shard's %zu tensors", 5 + 12 * m->layers);
    else
        *n = parts(m, whole, p);
    return p;
}

dt_result tpt_shard(const lab_tp_model *m, const dt_model *whole, const float *buf, int t,
                    int r, float *out)
{
    int n;
    part *p = all_parts(m, whole, &n);
    if (!p)
        return DT_ERR_NOMEM;
    dt_result res = DT_OK;
    for (int k = 0; k < n && res == DT_OK; k++) {
        const dt_param_view *v = dt_model_find_view(whole, p[k].name);
        if (!v) {
            res = dt_fail(DT_ERR_INTERNAL, "tpt_shard: no view %s", p[k].name);
            break;
        }
        for (size_t e = 0; e < part_count(&p[k], t); e++)
            out[p[k].at + e] = buf[v->offset + source(&p[k], e, whole->gpt.channels, t, r)];
    }
    free(p);
    return res;
}

dt_result tpt_compare_shard(const lab_tp_model *m, const dt_model *whole, const float *got,
                            const float *want, int t, double tol, const char *what)
{
    int n;
    part *p = all_parts(m, whole, &n);
    if (!p)
        return DT_ERR_NOMEM;
    dt_result res = DT_OK;
    for (int k = 0; k < n && res == DT_OK; k++) {
        size_t worst, c = part_count(&p[k], t);
        double e = tpt_rel_diff(got + p[k].at, want + p[k].at, c, &worst);
        if (!(e <= tol))
            res = dt_fail(DT_ERR_MISMATCH, "%s of %s, element %zu of this rank's part: %.9g, "
                          "one rank with the whole model gives %.9g (relative error %.3g > %g)",
                          what, p[k].name, worst, (double)got[p[k].at + worst],
                          (double)want[p[k].at + worst], e, tol);
    }
    free(p);
    return res;
}

dt_result tpt_compare(const char *what, const float *got, const float *want, size_t n)
{
    size_t worst;
    double e = tpt_rel_diff(got, want, n, &worst);
    if (!(e <= TPT_TOL))
        return dt_fail(DT_ERR_MISMATCH, "%s[%zu] = %.9g, one rank with the whole model gives "
                       "%.9g (relative error %.3g > %g)", what, worst, (double)got[worst],
                       (double)want[worst], e, TPT_TOL);
    return DT_OK;
}

double tpt_rel_diff(const float *a, const float *b, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax)) /* NaN counts as worst */
            dmax = d, *worst = i;
        if (fabs(b[i]) > bmax)
            bmax = fabs(b[i]);
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

size_t tpt_block_act_bytes(const lab_tp *tp)
{
    dt_mem_stats before, after;
    lab_tp_block_acts a;
    dt_mem_stats_get(&before);
    if (lab_tp_block_acts_create(&a, tp) != DT_OK)
        return 0;
    dt_mem_stats_get(&after);
    lab_tp_block_acts_free(&a);
    return after.current[DT_MEM_ACT] - before.current[DT_MEM_ACT];
}

int tpt_mentions(const char *text, long n)
{
    for (const char *p = text; *p; p++)
        if (*p >= '0' && *p <= '9' && (p == text || p[-1] < '0' || p[-1] > '9')) {
            char *end;
            if (strtol(p, &end, 10) == n)
                return 1;
            p = end - 1;
        }
    return 0;
}
