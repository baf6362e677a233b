/* memory_test.c - lab 11's shared test code: models, data, the
 * mixed-precision step written from the chapter's rules, comparisons,
 * the scalers' rules, and the executor walked allocation by allocation. */
#include "memory_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- part A */

dt_result mt_mlp(dt_model *m)
{
    const size_t widths[] = {64, 48, 10};
    return dt_mlp_create(m, widths, 3, MT_SEED);
}

void mt_batch(float *x, int32_t *labels, size_t rows, size_t in, size_t classes, uint64_t seed)
{
    dt_rng g;
    dt_rng_init(&g, seed, 0);
    for (size_t i = 0; i < rows * in; i++)
        x[i] = dt_rng_uniform(&g);
    for (size_t n = 0; n < rows; n++)
        labels[n] = (int32_t)dt_rng_below(&g, (uint32_t)classes);
}

float mt_round(dt_dtype t, float v)
{
    return t == DT_F16 ? dt_f16_to_f32(dt_f32_to_f16(v)) : dt_bf16_to_f32(dt_f32_to_bf16(v));
}

double mt_eps(dt_dtype t)
{
    return t == DT_F16 ? 1.0 / 1024 : 1.0 / 128;
}

static float *floats(size_t n)
{
    return calloc(n ? n : 1, sizeof(float));
}

/* y (rows x out) = round(relu?(b + x w^T)), fp32 sums from the bias on. */
static void ref_layer_forward(dt_dtype t, const dt_layer *l, const float *W, const float *x,
                              float *y, size_t rows)
{
    size_t in = l->in_width, out = l->out_width;
    const float *b = W + out * in;
    for (size_t n = 0; n < rows; n++)
        for (size_t o = 0; o < out; o++) {
            float s = b[o];
            for (size_t k = 0; k < in; k++)
                s += x[n * in + k] * W[o * in + k];
            if (l->kind == DT_LAYER_LINEAR_RELU && s < 0)
                s = 0;
            y[n * out + o] = mt_round(t, s);
        }
}

/* dy (rows x out, masked here) -> dW, db rounded into g; dx rounded (may be NULL). */
static void ref_layer_backward(dt_dtype t, const dt_layer *l, const float *W, const float *x,
                               const float *y, float *dy, float *g, float *dx, size_t rows)
{
    size_t in = l->in_width, out = l->out_width;
    if (l->kind == DT_LAYER_LINEAR_RELU)
        for (size_t i = 0; i < rows * out; i++)
            dy[i] = y[i] > 0 ? dy[i] : 0;
    for (size_t o = 0; o < out; o++) {
        float sb = 0;
        for (size_t k = 0; k < in; k++) {
            float s = 0;
            for (size_t n = 0; n < rows; n++)
                s += dy[n * out + o] * x[n * in + k];
            g[o * in + k] = mt_round(t, s);
        }
        for (size_t n = 0; n < rows; n++)
            sb += dy[n * out + o];
        g[out * in + o] = mt_round(t, sb);
    }
    for (size_t n = 0; dx && n < rows; n++)
        for (size_t k = 0; k < in; k++) {
            float s = 0;
            for (size_t o = 0; o < out; o++)
                s += dy[n * out + o] * W[o * in + k];
            dx[n * in + k] = mt_round(t, s);
        }
}

dt_result mt_mp_reference(mt_mp_ref *ref, const dt_model *m, dt_dtype t, const float *x,
                          const int32_t *labels, size_t rows, float scale)
{
    int L = m->num_layers;
    size_t V = m->num_classes, widest = m->in_width;
    memset(ref, 0, sizeof *ref);
    ref->w16 = floats(m->num_params);
    ref->g16 = floats(m->num_params);
    ref->act = calloc((size_t)L + 1, sizeof *ref->act);
    for (int i = 0; i < L; i++)
        widest = m->layers[i].out_width > widest ? m->layers[i].out_width : widest;
    float *probs = floats(rows * V), *d0 = floats(rows * widest), *d1 = floats(rows * widest);
    int ok = ref->w16 && ref->g16 && ref->act && probs && d0 && d1;
    for (int i = 0; ok && i <= L; i++)
        ok = (ref->act[i] = floats(rows * (i ? m->layers[i - 1].out_width : m->in_width))) != NULL;
    dt_result r = ok ? DT_OK : dt_fail(DT_ERR_NOMEM, "mt_mp_reference");
    for (size_t i = 0; r == DT_OK && i < m->num_params; i++)
        ref->w16[i] = mt_round(t, m->params[i]);
    for (size_t i = 0; r == DT_OK && i < rows * m->in_width; i++)
        ref->act[0][i] = mt_round(t, x[i]);
    for (int i = 0; r == DT_OK && i < L; i++)
        ref_layer_forward(t, &m->layers[i], ref->w16 + m->layers[i].param_offset, ref->act[i],
                          ref->act[i + 1], rows);
    double mean = 0;
    if (r == DT_OK)
        r = dt_softmax_xent_forward(probs, NULL, &mean, ref->act[L], labels, rows, V);
    ref->loss = (float)mean;
    for (size_t n = 0; r == DT_OK && n < rows; n++) {
        size_t best = 0;
        for (size_t v = 1; v < V; v++)
            best = ref->act[L][n * V + v] > ref->act[L][n * V + best] ? v : best;
        ref->correct += best == (size_t)labels[n];
        for (size_t v = 0; v < V; v++) {
            float onehot = (size_t)labels[n] == v ? 1.0f : 0.0f;
            d0[n * V + v] = mt_round(t, scale / (float)rows * (probs[n * V + v] - onehot));
        }
    }
    float *dy = d0, *dx = d1;
    for (int i = L - 1; r == DT_OK && i >= 0; i--) {
        const dt_layer *l = &m->layers[i];
        ref_layer_backward(t, l, ref->w16 + l->param_offset, ref->act[i], ref->act[i + 1], dy,
                           ref->g16 + l->param_offset, i ? dx : NULL, rows);
        float *tmp = dy;
        dy = dx, dx = tmp;
    }
    free(probs), free(d0), free(d1);
    if (r != DT_OK)
        mt_mp_ref_free(ref, m);
    return r;
}

void mt_mp_ref_free(mt_mp_ref *ref, const dt_model *m)
{
    for (int i = 0; ref->act && i <= m->num_layers; i++)
        free(ref->act[i]);
    free(ref->act), free(ref->w16), free(ref->g16);
    memset(ref, 0, sizeof *ref);
}

static float decode(dt_dtype t, uint16_t v)
{
    return t == DT_F16 ? dt_f16_to_f32(v) : dt_bf16_to_f32(v);
}

static dt_result compare(const char *what, dt_dtype t, const uint16_t *g16, const float *g32,
                         const float *want, size_t n, double tol)
{
    double scale = 0, worst = -1;
    size_t at = 0;
    for (size_t i = 0; i < n; i++)
        scale = fabs(want[i]) > scale ? fabs(want[i]) : scale;
    for (size_t i = 0; i < n; i++) {
        double got = g16 ? decode(t, g16[i]) : g32[i], d = fabs(got - want[i]);
        if (isnan(d))
            d = INFINITY;
        if (d > worst)
            worst = d, at = i;
    }
    if (n && worst > tol * scale) {
        double got = g16 ? decode(t, g16[at]) : g32[at];
        return dt_fail(DT_ERR_MISMATCH, "%s: element %zu is %.9g, expected %.9g (difference %.3g, "
                       "more than %.3g x the tensor's largest |value| %.6g)", what, at, got,
                       (double)want[at], worst, tol, scale);
    }
    return DT_OK;
}

dt_result mt_compare16(const char *what, dt_dtype t, const uint16_t *got, const float *want,
                       size_t n, double tol)
{
    return compare(what, t, got, NULL, want, n, tol);
}

dt_result mt_compare32(const char *what, const float *got, const float *want, size_t n,
                       double tol)
{
    return compare(what, DT_F32, NULL, got, want, n, tol);
}

dt_result mt_fp32_grads(dt_model *m, const float *x, const int32_t *labels, size_t rows,
                        float *grads)
{
    dt_acts *a = NULL;
    float loss;
    DT_CHECK(dt_model_zero_grads(m));
    DT_CHECK(dt_acts_create(&a, m, 0, m->num_layers, rows, 1));
    dt_result r = dt_model_forward(m, a, x, NULL);
    if (r == DT_OK)
        r = dt_model_loss(m, a, labels, &loss, NULL);
    if (r == DT_OK)
        r = dt_model_backward(m, a, NULL, NULL, NULL, NULL);
    dt_acts_free(a);
    if (r == DT_OK)
        memcpy(grads, m->grads, m->num_params * sizeof(float));
    return r;
}

void mt_scaler_step(mt_scaler *s, const lab_scaler_config *c, int found_inf)
{
    if (!c->dynamic)
        return;
    if (found_inf) {
        s->tracker = 0;
        if (--s->hyst <= 0)
            s->scale = fmax(s->scale * c->backoff_factor, c->min_scale);
    } else if (++s->tracker == c->growth_interval) {
        s->tracker = 0;
        s->hyst = c->hysteresis;
        if (isfinite((float)(s->scale * c->growth_factor)))
            s->scale *= c->growth_factor;
    }
}

/* ---------------------------------------------------------------- part B */

dt_result mt_deep(dt_model *m, int L, size_t w)
{
    return dt_deep_mlp_create(m, w, w, (size_t)(L - 2), w, MT_SEED);
}

void mt_walk(const lab_chain *c, const unsigned char *keep, size_t *peak, int *recomputed,
             double *flops)
{
    int L = c->num_layers;
    unsigned char *alive = calloc((size_t)L, 1);
    size_t live = c->fixed_bytes, top = live;
    *recomputed = 0, *flops = 0;
    for (int i = 0; alive && i < L; i++) {
        alive[i] = 1, live += c->out_bytes[i];
        top = live > top ? live : top;
        if (i > 0 && !keep[i - 1] && i - 1 != L - 1)
            alive[i - 1] = 0, live -= c->out_bytes[i - 1];
    }
    for (int i = L - 1; alive && i >= 0; i--) {
        if (i > 0 && !alive[i - 1]) {
            int p = i - 1;
            while (p > 0 && !alive[p - 1])
                p--;
            for (int j = p; j < i; j++) {
                alive[j] = 1, live += c->out_bytes[j];
                ++*recomputed, *flops += c->flops[j];
            }
            top = live > top ? live : top;
        }
        alive[i] = 0, live -= c->out_bytes[i];
    }
    free(alive);
    *peak = top;
}

dt_result mt_ckpt_measure(lab_ckpt *c, const lab_plan *p, const float *x,
                          const int32_t *labels, size_t *peak, long *recomputed)
{
    dt_mem_stats st;
    float loss;
    DT_CHECK(dt_model_zero_grads(c->model));
    dt_mem_stats_get(&st);
    size_t before = st.current[DT_MEM_ACT];
    dt_mem_reset_peak();
    DT_CHECK(lab_ckpt_step(c, p, x, labels, &loss));
    dt_mem_stats_get(&st);
    for (int i = 0; i < c->num_layers; i++)
        if (c->out[i])
            return dt_fail(DT_ERR_STATE, "after the backward the output of layer %d is still in "
                           "memory (every output is freed once its layer's backward is done)", i);
    if (st.current[DT_MEM_ACT] != before)
        return dt_fail(DT_ERR_STATE, "the step left %zu bytes of ACT allocated (it began with "
                       "%zu)", st.current[DT_MEM_ACT], before);
    *peak = st.peak[DT_MEM_ACT] - (before - c->chain.fixed_bytes);
    *recomputed = c->layers_run - c->num_layers;
    return DT_OK;
}
