/* model.c - building the three models: one flat parameter buffer, a table
 * of named views laid out layer after layer, and the layer table.
 *
 * A model is built in two passes over the same description: the first only
 * counts views and floats, the second fills the tables. Each layer's views
 * follow each other, so a layer (and a stage of consecutive layers) owns one
 * contiguous range of the flat buffer. */
#include "model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- builder */

typedef struct {
    dt_model *m;
    int counting;      /* first pass: only count */
    int layers, views; /* filled so far */
    int layer_views;   /* views of the current layer so far */
    const char *misplaced; /* a view added out of its dt_*_view place */
    size_t floats;
} builder;

static void add_layer(builder *b, dt_layer_kind kind, const char *name, size_t in, size_t out)
{
    if (!b->counting) {
        dt_layer *l = &b->m->layers[b->layers];
        l->kind = kind;
        snprintf(l->name, sizeof l->name, "%s", name);
        l->in_width = in;
        l->out_width = out;
        l->param_offset = b->floats;
        l->first_view = b->views;
    }
    b->layers++;
    b->layer_views = 0;
}

/* Adds view k (its dt_*_view name) of shape (d0) or (d0, d1) (d1 = 0) to
 * the current layer. k must be the layer's next view: the enums of dt/nn.h
 * are the layout, and the stage code finds views by them. */
static void add_view(builder *b, int k, const char *suffix, size_t d0, size_t d1, float std,
                     float value)
{
    size_t count = d1 ? d0 * d1 : d0;
    if (k != b->layer_views++ && !b->misplaced)
        b->misplaced = suffix;
    if (!b->counting) {
        dt_layer *l = &b->m->layers[b->layers - 1];
        dt_param_view *v = &b->m->views[b->views];
        snprintf(v->name, sizeof v->name, "%s.%s", l->name, suffix);
        v->offset = b->floats;
        v->count = count;
        v->ndim = d1 ? 2 : 1;
        v->shape[0] = d0;
        v->shape[1] = d1;
        v->layer = b->layers - 1;
        v->init_std = std;
        v->init_value = value;
        l->num_views++;
        l->param_count += count;
    }
    b->views++;
    b->floats += count;
}

/* A linear layer's weight (out, in) and bias (out); He initialisation
 * (std sqrt(2 / fan_in)) before a ReLU, sqrt(1 / fan_in) for logits. */
static void add_linear(builder *b, const char *name, size_t in, size_t out, int relu)
{
    add_layer(b, relu ? DT_LAYER_LINEAR_RELU : DT_LAYER_LINEAR, name, in, out);
    add_view(b, DT_LINEAR_WEIGHT, "weight", out, in, sqrtf((relu ? 2.0f : 1.0f) / (float)in), 0);
    add_view(b, DT_LINEAR_BIAS, "bias", out, 0, 0, 0);
}

typedef void (*describe_fn)(builder *b, const void *cfg);

static void describe_mlp(builder *b, const void *cfg)
{
    const size_t *w = ((const size_t *const *)cfg)[0];
    int n = (int)(size_t)((const size_t *const *)cfg)[1];
    char name[32];
    for (int i = 0; i + 1 < n; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        add_linear(b, name, w[i], w[i + 1], i + 2 < n);
    }
}

static void describe_deep(builder *b, const void *cfg)
{
    const size_t *c = cfg; /* in, width, blocks, classes */
    char name[32];
    add_linear(b, "in", c[0], c[1], 1);
    for (size_t i = 0; i < c[2]; i++) {
        snprintf(name, sizeof name, "block%zu", i + 1);
        add_linear(b, name, c[1], c[1], 1);
    }
    add_linear(b, "out", c[1], c[3], 0);
}

/* GPT-2's initialisation: normal(0, 0.02), the projections that write into
 * the residual stream scaled by 1/sqrt(2 L), norm gains 1, biases 0.
 * With t > 1 the shapes of a tensor-parallel shard (dt/tp.h): the
 * column-parallel tensors (wte, qkv, fc, lm_head) keep 1/t of their rows,
 * the row-parallel weights (proj, mproj) 1/t of their columns. */
static void describe_gpt(builder *b, const void *cfg)
{
    const nn_gpt_shape *sh = cfg;
    const dt_gpt_config *g = &sh->g;
    size_t C = g->channels, V = g->vocab, T = g->context, t = sh->t;
    float std = 0.02f, proj_std = 0.02f / sqrtf(2.0f * (float)g->layers);
    char name[32];
    add_layer(b, DT_LAYER_EMBED, "embed", 0, C);
    add_view(b, DT_EMBED_WTE, "wte", V / t, C, std, 0);
    add_view(b, DT_EMBED_WPE, "wpe", T, C, std, 0);
    for (size_t l = 0; l < g->layers; l++) {
        snprintf(name, sizeof name, "block%zu", l + 1);
        add_layer(b, DT_LAYER_BLOCK, name, C, C);
        add_view(b, DT_BLOCK_LN1_WEIGHT, "ln1.weight", C, 0, 0, 1);
        add_view(b, DT_BLOCK_LN1_BIAS, "ln1.bias", C, 0, 0, 0);
        add_view(b, DT_BLOCK_QKV_WEIGHT, "attn.qkv.weight", 3 * C / t, C, std, 0);
        add_view(b, DT_BLOCK_QKV_BIAS, "attn.qkv.bias", 3 * C / t, 0, 0, 0);
        add_view(b, DT_BLOCK_PROJ_WEIGHT, "attn.proj.weight", C, C / t, proj_std, 0);
        add_view(b, DT_BLOCK_PROJ_BIAS, "attn.proj.bias", C, 0, 0, 0);
        add_view(b, DT_BLOCK_LN2_WEIGHT, "ln2.weight", C, 0, 0, 1);
        add_view(b, DT_BLOCK_LN2_BIAS, "ln2.bias", C, 0, 0, 0);
        add_view(b, DT_BLOCK_FC_WEIGHT, "mlp.fc.weight", 4 * C / t, C, std, 0);
        add_view(b, DT_BLOCK_FC_BIAS, "mlp.fc.bias", 4 * C / t, 0, 0, 0);
        add_view(b, DT_BLOCK_MPROJ_WEIGHT, "mlp.proj.weight", C, 4 * C / t, proj_std, 0);
        add_view(b, DT_BLOCK_MPROJ_BIAS, "mlp.proj.bias", C, 0, 0, 0);
    }
    add_layer(b, DT_LAYER_HEAD, "head", C, V / t);
    add_view(b, DT_HEAD_LNF_WEIGHT, "lnf.weight", C, 0, 0, 1);
    add_view(b, DT_HEAD_LNF_BIAS, "lnf.bias", C, 0, 0, 0);
    add_view(b, DT_HEAD_LM_WEIGHT, "lm_head.weight", V / t, C, std, 0);
}

/* The number of views of a layer kind: the last dt_*_view name. */
static int views_of_kind(dt_layer_kind kind)
{
    switch (kind) {
    case DT_LAYER_LINEAR:
    case DT_LAYER_LINEAR_RELU: return DT_LINEAR_VIEWS;
    case DT_LAYER_EMBED: return DT_EMBED_VIEWS;
    case DT_LAYER_BLOCK: return DT_BLOCK_VIEWS;
    case DT_LAYER_HEAD: return DT_HEAD_VIEWS;
    }
    return -1;
}

/* Runs the description twice (count, fill) and allocates the buffers. */
static dt_result build(dt_model *m, dt_model_kind kind, describe_fn describe, const void *cfg,
                       uint64_t seed)
{
    builder b = {m, 1, 0, 0, 0, NULL, 0};
    describe(&b, cfg);
    if (b.misplaced)
        return dt_fail(DT_ERR_INTERNAL, "model.c: view '%s' is added out of its dt_*_view place",
                       b.misplaced);
    m->kind = kind;
    m->layers = calloc((size_t)b.layers, sizeof *m->layers);
    m->views = calloc((size_t)b.views, sizeof *m->views);
    m->params = dt_mem_alloc(DT_MEM_PARAM, b.floats * sizeof(float));
    m->grads = dt_mem_alloc(DT_MEM_GRAD, b.floats * sizeof(float));
    if (!m->layers || !m->views || !m->params || !m->grads) {
        dt_model_free(m);
        return dt_fail(DT_ERR_NOMEM, "model of %zu parameters: out of memory", b.floats);
    }
    m->num_layers = b.layers;
    m->num_views = b.views;
    m->num_params = b.floats;
    builder fill = {m, 0, 0, 0, 0, NULL, 0};
    describe(&fill, cfg);
    for (int i = 0; i < m->num_layers; i++)
        if (m->layers[i].num_views != views_of_kind(m->layers[i].kind)) {
            dt_result r = dt_fail(DT_ERR_INTERNAL, "model.c: layer %s has %d views, its kind %d",
                                  m->layers[i].name, m->layers[i].num_views,
                                  views_of_kind(m->layers[i].kind));
            dt_model_free(m);
            return r;
        }
    return dt_model_init_params(m, seed);
}

/* ---------------------------------------------------------------- constructors */

static dt_result check_out(dt_model *m, const char *fn)
{
    if (!m)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL model", fn);
    memset(m, 0, sizeof *m);
    m->tp_size = 1; /* a whole model */
    return DT_OK;
}

dt_result dt_mlp_create(dt_model *m, const size_t *widths, int n, uint64_t seed)
{
    DT_CHECK(check_out(m, "dt_mlp_create"));
    if (!widths)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_mlp_create: NULL widths");
    if (n < 2 || n > DT_MLP_MAX_WIDTHS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_mlp_create: %d widths (need 2..%d)", n,
                       DT_MLP_MAX_WIDTHS);
    for (int i = 0; i < n; i++)
        if (widths[i] == 0)
            return dt_fail(DT_ERR_INVALID_ARG, "dt_mlp_create: width %d is 0", i);
    const void *cfg[2] = {widths, (const void *)(size_t)n};
    DT_CHECK(build(m, DT_MODEL_MLP, describe_mlp, cfg, seed));
    m->in_width = widths[0];
    m->num_classes = widths[n - 1];
    m->max_seq = 1;
    return DT_OK;
}

dt_result dt_deep_mlp_create(dt_model *m, size_t in, size_t width, size_t blocks,
                             size_t classes, uint64_t seed)
{
    DT_CHECK(check_out(m, "dt_deep_mlp_create"));
    if (!in || !width || !classes)
        return dt_fail(DT_ERR_INVALID_ARG,
                       "dt_deep_mlp_create: zero size (in=%zu width=%zu classes=%zu)", in, width,
                       classes);
    if (blocks > 4096)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_deep_mlp_create: %zu blocks (at most 4096)",
                       blocks);
    size_t cfg[4] = {in, width, blocks, classes};
    DT_CHECK(build(m, DT_MODEL_DEEP_MLP, describe_deep, cfg, seed));
    m->in_width = in;
    m->num_classes = classes;
    m->max_seq = 1;
    return DT_OK;
}

dt_result dt_gpt_create(dt_model *m, const dt_gpt_config *cfg, uint64_t seed)
{
    DT_CHECK(check_out(m, "dt_gpt_create"));
    if (!cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpt_create: NULL config");
    if (!cfg->vocab || !cfg->context || !cfg->layers || !cfg->heads || !cfg->channels)
        return dt_fail(DT_ERR_INVALID_ARG,
                       "dt_gpt_create: zero size (vocab=%zu context=%zu layers=%zu heads=%zu "
                       "channels=%zu)",
                       cfg->vocab, cfg->context, cfg->layers, cfg->heads, cfg->channels);
    if (cfg->channels % cfg->heads)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpt_create: %zu channels do not split into %zu heads",
                       cfg->channels, cfg->heads);
    if (cfg->vocab > INT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_gpt_create: vocab %zu above 2^31", cfg->vocab);
    return nn_gpt_build(m, cfg, 1, seed);
}

dt_result nn_gpt_build(dt_model *m, const dt_gpt_config *cfg, size_t t, uint64_t seed)
{
    nn_gpt_shape sh = {*cfg, t};
    DT_CHECK(build(m, DT_MODEL_GPT, describe_gpt, &sh, seed));
    m->gpt = *cfg;
    m->in_width = 0;
    m->num_classes = cfg->vocab;
    m->max_seq = cfg->context;
    return DT_OK;
}

/* Parses "a,b,c" into at most max numbers, all > 0. */
static dt_result parse_list(const char *spec, const char *list, size_t *out, int max, int *n)
{
    *n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        unsigned long long v = strtoull(p, &end, 10);
        if (end == p || v == 0 || (*end && *end != ',') || (*end == ',' && !end[1]))
            return dt_fail(DT_ERR_INVALID_ARG, "model spec '%s': bad number at '%s'", spec, p);
        if (*n == max)
            return dt_fail(DT_ERR_INVALID_ARG, "model spec '%s': more than %d numbers", spec, max);
        out[(*n)++] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return DT_OK;
}

dt_result dt_model_create_spec(dt_model *m, const char *spec, uint64_t seed)
{
    DT_CHECK(check_out(m, "dt_model_create_spec"));
    if (!spec)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_create_spec: NULL spec");
    const char *colon = strchr(spec, ':');
    if (!colon)
        return dt_fail(DT_ERR_INVALID_ARG,
                       "model spec '%s': expected mlp:W0,W1,..., deep:IN,WIDTH,BLOCKS,CLASSES "
                       "or gpt:VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS", spec);
    size_t v[DT_MLP_MAX_WIDTHS];
    int n;
    DT_CHECK(parse_list(spec, colon + 1, v, DT_MLP_MAX_WIDTHS, &n));
    size_t kind_len = (size_t)(colon - spec);
    if (kind_len == 3 && !strncmp(spec, "mlp", 3))
        return dt_mlp_create(m, v, n, seed);
    if (kind_len == 4 && !strncmp(spec, "deep", 4)) {
        if (n != 4)
            return dt_fail(DT_ERR_INVALID_ARG, "model spec '%s': deep takes 4 numbers", spec);
        return dt_deep_mlp_create(m, v[0], v[1], v[2], v[3], seed);
    }
    if (kind_len == 3 && !strncmp(spec, "gpt", 3)) {
        if (n != 5)
            return dt_fail(DT_ERR_INVALID_ARG, "model spec '%s': gpt takes 5 numbers", spec);
        dt_gpt_config g = {v[0], v[1], v[2], v[3], v[4]};
        return dt_gpt_create(m, &g, seed);
    }
    return dt_fail(DT_ERR_INVALID_ARG, "model spec '%s': unknown kind (mlp, deep, gpt)", spec);
}

/* ---------------------------------------------------------------- buffers */

void dt_model_free(dt_model *m)
{
    if (!m)
        return;
    free(m->layers);
    free(m->views);
    dt_mem_free(m->params);
    dt_mem_free(m->grads);
    memset(m, 0, sizeof *m);
}

dt_result dt_model_alloc_grads(dt_model *m)
{
    if (!m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_alloc_grads: no model");
    if (m->grads)
        return dt_fail(DT_ERR_STATE, "dt_model_alloc_grads: gradients already allocated");
    m->grads = dt_mem_alloc(DT_MEM_GRAD, m->num_params * sizeof(float));
    if (!m->grads)
        return dt_fail(DT_ERR_NOMEM, "dt_model_alloc_grads: %zu floats", m->num_params);
    return DT_OK;
}

void dt_model_free_grads(dt_model *m)
{
    if (!m)
        return;
    dt_mem_free(m->grads);
    m->grads = NULL;
}

dt_result dt_model_zero_grads(dt_model *m)
{
    if (!m || !m->grads)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_zero_grads: no gradient buffer");
    memset(m->grads, 0, m->num_params * sizeof(float));
    return DT_OK;
}

dt_result dt_model_init_params(dt_model *m, uint64_t seed)
{
    if (!m || !m->params)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_init_params: no model");
    for (int i = 0; i < m->num_views; i++) {
        const dt_param_view *v = &m->views[i];
        float *p = m->params + v->offset;
        if (v->init_std > 0) {
            dt_rng rng;
            dt_rng_init(&rng, seed, (uint64_t)i); /* a view's values depend on (seed, i) only */
            dt_rng_fill_normal(&rng, p, v->count);
            for (size_t j = 0; j < v->count; j++)
                p[j] = v->init_std * p[j];
        } else {
            for (size_t j = 0; j < v->count; j++)
                p[j] = v->init_value;
        }
    }
    m->seed = seed;
    return DT_OK;
}

const dt_param_view *dt_model_find_view(const dt_model *m, const char *name)
{
    if (!m || !name)
        return NULL;
    for (int i = 0; i < m->num_views; i++)
        if (!strcmp(m->views[i].name, name))
            return &m->views[i];
    return NULL;
}

dt_result dt_model_layer_range(const dt_model *m, int first, int last, size_t *offset,
                               size_t *count)
{
    if (!m || !offset || !count)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_layer_range: NULL argument");
    if (first < 0 || last > m->num_layers || first >= last)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_model_layer_range: layers [%d, %d) of %d", first,
                       last, m->num_layers);
    const dt_layer *lf = &m->layers[first], *ll = &m->layers[last - 1];
    *offset = lf->param_offset;
    *count = ll->param_offset + ll->param_count - lf->param_offset;
    return DT_OK;
}

double dt_model_flops_per_sample(const dt_model *m)
{
    if (!m)
        return 0;
    if (m->kind != DT_MODEL_GPT) { /* forward 2 in out per layer; backward twice that */
        double f = 0;
        for (int i = 0; i < m->num_layers; i++)
            f += 6.0 * (double)m->layers[i].in_width * (double)m->layers[i].out_width;
        return f;
    }
    /* per token 6 x (weights used in products); attention's two products,
     * halved by the causal mask, cost 2 T C per token forward; a
     * tensor-parallel shard does 1/t of each */
    double C = (double)m->gpt.channels, T = (double)m->gpt.context, L = (double)m->gpt.layers;
    double V = (double)m->gpt.vocab, t = m->tp_size > 1 ? (double)m->tp_size : 1.0;
    return T * (6.0 * (L * 12.0 * C * C + V * C) + 6.0 * L * T * C) / t;
}
