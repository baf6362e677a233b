/* test_par_util.c - see test_par_util.h. */
#include "test_par_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

dt_result par_launch(int n, dt_rank_fn fn, void *arg)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = n;
    o.backend = DT_BACKEND_THREAD;
    o.algo = DT_ALGO_RING;
    o.net = "none";
    o.timeout_s = 20;
    o.debug = 1;
    return dt_launch(&o, fn, arg);
}

dt_gpt_config par_gpt_config(size_t layers)
{
    dt_gpt_config c = {32, 8, layers, 4, 32};
    return c;
}

void par_fill_int(float *x, size_t n, uint64_t s, int k)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int64_t)(dt_hash64(PAR_SEED, s, i) % (uint64_t)(2 * k + 1)) - k);
}

void par_fill_normal(float *x, size_t n, uint64_t s, float scale)
{
    dt_rng rng;
    dt_rng_init(&rng, PAR_SEED, s);
    for (size_t i = 0; i < n; i++)
        x[i] = scale * dt_rng_normal(&rng);
}

void par_batch(int32_t *tokens, int32_t *labels, size_t N, size_t V, uint64_t seed)
{
    for (size_t i = 0; i < N; i++) {
        tokens[i] = (int32_t)(dt_hash64(seed, 1, i) % V);
        labels[i] = (int32_t)(dt_hash64(seed, 2, i) % V);
    }
}

dt_result par_gpt_create(dt_model *m, const dt_gpt_config *cfg)
{
    DT_CHECK(dt_gpt_create(m, cfg, PAR_SEED));
    for (int v = 0; v < m->num_views; v++) {
        const dt_param_view *pv = &m->views[v];
        if (pv->init_std > 0)
            continue; /* a weight: keep it */
        float *p = m->params + pv->offset;
        dt_rng rng;
        dt_rng_init(&rng, PAR_SEED + 1, (uint64_t)v);
        for (size_t i = 0; i < pv->count; i++)
            p[i] += 0.1f * dt_rng_normal(&rng);
    }
    return DT_OK;
}

double par_rel_diff(const float *a, const float *b, size_t n, size_t *worst)
{
    double d = 0, mx = 0;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]);
        if (isnan(e))
            e = INFINITY;
        if (e > d)
            d = e, w = i;
        mx = fmax(mx, fabs((double)b[i]));
    }
    if (worst)
        *worst = w;
    return d / (mx > 0 ? mx : 1);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

void par_slice(const dt_model *whole, int v, const float *src, int t, int r, float *dst)
{
    const dt_param_view *pv = &whole->views[v];
    const float *s = src + pv->offset;
    size_t rows = pv->shape[0], cols = pv->ndim == 2 ? pv->shape[1] : 1;
    size_t T = (size_t)t, R = (size_t)r, C = whole->gpt.channels;
    const char *n = pv->name;
    if (ends_with(n, "attn.qkv.weight") || ends_with(n, "attn.qkv.bias")) {
        /* the q, k and v rows of heads [r NH/t, (r+1) NH/t), one third each */
        for (size_t part = 0; part < 3; part++)
            memcpy(dst + part * (C / T) * cols, s + (part * C + R * (C / T)) * cols,
                   C / T * cols * sizeof(float));
    } else if (ends_with(n, "wte") || ends_with(n, "lm_head.weight") ||
               ends_with(n, "mlp.fc.weight") || ends_with(n, "mlp.fc.bias")) {
        memcpy(dst, s + R * (rows / T) * cols, rows / T * cols * sizeof(float));
    } else if (ends_with(n, "attn.proj.weight") || ends_with(n, "mlp.proj.weight")) {
        for (size_t i = 0; i < rows; i++)
            memcpy(dst + i * (cols / T), s + i * cols + R * (cols / T), cols / T * sizeof(float));
    } else {
        memcpy(dst, s, pv->count * sizeof(float));
    }
}

dt_result par_compare_shard(const dt_model *shard, const dt_model *whole, const float *got,
                            const float *want, double tol, const char *what)
{
    return par_compare_layers(shard, whole, got, want, 0, whole->num_layers, tol, what);
}

dt_result par_compare_layers(const dt_model *shard, const dt_model *whole, const float *got,
                             const float *want, int first, int last, double tol,
                             const char *what)
{
    if (shard->num_views != whole->num_views)
        return dt_fail(DT_ERR_MISMATCH, "%s: the shard has %d views, the whole model %d", what,
                       shard->num_views, whole->num_views);
    int t = shard->tp_size > 1 ? shard->tp_size : 1;
    for (int v = 0; v < whole->num_views; v++) {
        const dt_param_view *sv = &shard->views[v];
        if (sv->layer < first || sv->layer >= last)
            continue;
        float *slice = malloc(sv->count * sizeof *slice);
        if (!slice)
            return dt_fail(DT_ERR_NOMEM, "par_compare_shard");
        par_slice(whole, v, want, t, shard->tp_rank, slice);
        size_t worst;
        double e = par_rel_diff(got + sv->offset, slice, sv->count, &worst);
        float g = got[sv->offset + worst], w = slice[worst];
        free(slice);
        if (!(e <= tol))
            return dt_fail(DT_ERR_MISMATCH, "%s %s[%zu] on rank %d of %d: %.9g, one rank with the "
                           "whole model gives %.9g (relative error %.3g > %.0e)", what,
                           sv->name, worst, shard->tp_rank, t, (double)g, (double)w, e, tol);
    }
    return DT_OK;
}
