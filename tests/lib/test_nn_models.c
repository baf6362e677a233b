/* test_nn_models.c - the three models: full backward against finite
 * differences on tiny configs, stages that compose to the whole model, the
 * gradient hook, the fused SGD backward, the flat layout and its memory. */
#include "grader.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "test_nn_gradcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-3

typedef struct {
    dt_model *m;
    dt_acts *a;
    const float *x;
    const int32_t *tok, *labels;
} model_ctx;

/* The mean cross-entropy of the model's logits, recomputed in double so
 * that the finite differences see no rounding of the loss itself. */
static double model_loss(void *p)
{
    model_ctx *c = p;
    EXPECT_OK(dt_model_forward(c->m, c->a, c->x, c->tok));
    const float *z = dt_acts_output(c->a);
    size_t V = c->m->num_classes, rows = c->a->rows;
    double total = 0;
    for (size_t r = 0; r < rows; r++) {
        double mx = z[r * V], s = 0;
        for (size_t v = 1; v < V; v++)
            mx = z[r * V + v] > mx ? z[r * V + v] : mx;
        for (size_t v = 0; v < V; v++)
            s += exp(z[r * V + v] - mx);
        total += log(s) + mx - z[r * V + c->labels[r]];
    }
    return total / (double)rows;
}

/* Checks every layer's parameter gradient (and the input gradient when x
 * is given) of a whole-model backward against finite differences. */
static void check_model(dt_model *m, size_t B, size_t T, const float *x0, const int32_t *tok,
                        const int32_t *labels, float eps, const char *what)
{
    dt_acts *a;
    EXPECT_OK(dt_acts_create(&a, m, 0, m->num_layers, B, T));
    size_t nx = x0 ? B * T * m->in_width : 0;
    float *x = nx ? malloc(nx * sizeof(float)) : NULL, *dx = nx ? calloc(nx, sizeof(float)) : NULL;
    if (nx)
        memcpy(x, x0, nx * sizeof(float));
    model_ctx c = {m, a, x, tok, labels};
    float loss;
    double want = model_loss(&c);
    EXPECT_OK(dt_model_zero_grads(m));
    EXPECT_OK(dt_model_forward(m, a, x, tok));
    EXPECT_OK(dt_model_loss(m, a, labels, &loss, NULL));
    EXPECT(fabs(loss - want) < 1e-5, "%s: loss %g vs %g", what, loss, want);
    EXPECT_OK(dt_model_backward(m, a, NULL, dx, NULL, NULL));
    for (int l = 0; l < m->num_layers; l++) {
        const dt_layer *L = &m->layers[l];
        double e = gc_rel_error(model_loss, &c, m->params + L->param_offset,
                                m->grads + L->param_offset, L->param_count, eps);
        EXPECT(e < TOL, "%s: layer %s: relative error %g", what, L->name, e);
    }
    if (nx) {
        double e = gc_rel_error(model_loss, &c, x, dx, nx, eps);
        EXPECT(e < TOL, "%s: input gradient: relative error %g", what, e);
    }
    dt_acts_free(a);
    free(x), free(dx);
}

static void fill_x(float *x, size_t n, uint64_t seed) { gc_fill(x, n, seed, 1, 0); }

TEST(nn_model_mlp_gradcheck, 2)
{
    dt_model m;
    size_t w1[3] = {5, 7, 3}, w2[4] = {6, 4, 5, 2};
    float x[4 * 6];
    int32_t lab[4] = {2, 0, 1, 1};
    EXPECT_OK(dt_mlp_create(&m, w1, 3, 11));
    fill_x(x, 5, 1);
    check_model(&m, 1, 1, x, NULL, lab, 1e-3f, "mlp 5-7-3 batch 1");
    fill_x(x, 20, 2);
    check_model(&m, 4, 1, x, NULL, lab, 1e-3f, "mlp 5-7-3 batch 4");
    dt_model_free(&m);
    EXPECT_OK(dt_mlp_create(&m, w2, 4, 12));
    fill_x(x, 18, 3);
    int32_t lab2[3] = {1, 0, 1};
    check_model(&m, 3, 1, x, NULL, lab2, 1e-3f, "mlp 6-4-5-2 batch 3");
    dt_model_free(&m);
}

TEST(nn_model_deep_mlp_gradcheck, 1)
{
    dt_model m;
    /* with ReLU the data matter: for this seed no pre-activation lies within a
     * finite-difference step of its kink (see test_nn_gradcheck.h) */
    EXPECT_OK(dt_deep_mlp_create(&m, 4, 6, 3, 3, 6));
    EXPECT(m.num_layers == 5, "in + 3 blocks + out = %d layers", m.num_layers);
    EXPECT(m.layers[1].param_count == m.layers[3].param_count, "blocks are equal");
    float x[8];
    int32_t lab[2] = {2, 0};
    fill_x(x, 8, 4);
    check_model(&m, 2, 1, x, NULL, lab, 1e-3f, "deep 4-6x3-3 batch 2");
    check_model(&m, 1, 1, x, NULL, lab, 1e-3f, "deep batch 1");
    dt_model_free(&m);
}

TEST(nn_model_gpt_gradcheck, 3)
{
    dt_gpt_config g = {7, 4, 2, 2, 8};
    dt_model m;
    EXPECT_OK(dt_gpt_create(&m, &g, 3));
    EXPECT(m.num_layers == 4, "embed + 2 blocks + head: %d", m.num_layers);
    /* make layernorm gains and biases non-trivial so their gradients are tested */
    for (int v = 0; v < m.num_views; v++)
        if (m.views[v].init_std == 0)
            gc_fill(m.params + m.views[v].offset, m.views[v].count, (uint64_t)v, 0.5f, 0.5f);
    int32_t tok[6] = {1, 6, 3, 0, 2, 6}, lab[6] = {6, 3, 0, 2, 6, 5};
    check_model(&m, 2, 3, NULL, tok, lab, 1e-2f, "gpt B=2 T=3");
    int32_t tok1[4] = {5, 5, 1, 4}, lab1[4] = {5, 1, 4, 0};
    check_model(&m, 1, 4, NULL, tok1, lab1, 1e-2f, "gpt B=1 T=4");
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- stages */

/* Runs the model whole, then as two stages [0, k) and [k, n) chained by
 * hand; parameter gradients and the loss must be identical. */
static void check_stages(dt_model *m, int k, size_t B, size_t T, const float *x,
                         const int32_t *tok, const int32_t *lab)
{
    int n = m->num_layers;
    dt_acts *all, *s1, *s2;
    float loss_all, loss_split;
    EXPECT_OK(dt_acts_create(&all, m, 0, n, B, T));
    EXPECT_OK(dt_model_zero_grads(m));
    EXPECT_OK(dt_model_forward(m, all, x, tok));
    EXPECT_OK(dt_model_loss(m, all, lab, &loss_all, NULL));
    EXPECT_OK(dt_model_backward(m, all, NULL, NULL, NULL, NULL));
    float *g_all = malloc(m->num_params * sizeof(float));
    memcpy(g_all, m->grads, m->num_params * sizeof(float));

    EXPECT_OK(dt_acts_create(&s1, m, 0, k, B, T));
    EXPECT_OK(dt_acts_create(&s2, m, k, n, B, T));
    EXPECT_OK(dt_model_zero_grads(m));
    EXPECT_OK(dt_model_forward(m, s1, x, tok));
    EXPECT(dt_acts_output_width(s1) == m->layers[k].in_width, "boundary width");
    EXPECT_OK(dt_model_forward(m, s2, dt_acts_output(s1), NULL));
    EXPECT_OK(dt_model_loss(m, s2, lab, &loss_split, NULL));
    size_t nb = B * T * m->layers[k].in_width;
    float *dmid = malloc(nb * sizeof(float));
    EXPECT_OK(dt_model_backward(m, s2, NULL, dmid, NULL, NULL));
    EXPECT_OK(dt_model_backward(m, s1, dmid, NULL, NULL, NULL));
    EXPECT(loss_all == loss_split, "loss %g whole vs %g in stages", loss_all, loss_split);
    EXPECT(memcmp(g_all, m->grads, m->num_params * sizeof(float)) == 0,
           "gradients of the stages equal the whole model's");
    dt_acts_free(all), dt_acts_free(s1), dt_acts_free(s2);
    free(g_all), free(dmid);
}

TEST(nn_model_stages_compose, 2)
{
    dt_model m;
    float x[3 * 4];
    int32_t lab[3] = {0, 2, 1};
    fill_x(x, 12, 8);
    EXPECT_OK(dt_deep_mlp_create(&m, 4, 5, 4, 3, 9));
    for (int k = 1; k < m.num_layers; k++)
        check_stages(&m, k, 3, 1, x, NULL, lab);
    dt_model_free(&m);
    dt_gpt_config g = {9, 5, 3, 2, 4};
    EXPECT_OK(dt_gpt_create(&m, &g, 1));
    int32_t tok[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 0}, tl[10] = {1, 2, 3, 4, 5, 6, 7, 8, 0, 1};
    for (int k = 1; k < m.num_layers; k++)
        check_stages(&m, k, 2, 5, NULL, tok, tl);
    dt_model_free(&m);
}

typedef struct {
    dt_model *m;
    int calls, layers[16];
    float *snap; /* grads as each hook saw its slice */
} hook_log;

static dt_result record_hook(void *arg, int layer, size_t offset, size_t count)
{
    hook_log *h = arg;
    const dt_layer *l = &h->m->layers[layer];
    EXPECT(offset == l->param_offset && count == l->param_count, "hook range of layer %d", layer);
    h->layers[h->calls++] = layer;
    memcpy(h->snap + offset, h->m->grads + offset, count * sizeof(float));
    return DT_OK;
}

static dt_result failing_hook(void *arg, int layer, size_t offset, size_t count)
{
    (void)arg, (void)offset, (void)count;
    return dt_fail(DT_ERR_FAULT, "hook refused layer %d", layer);
}

TEST(nn_model_backward_hook_sees_complete_layers, 2)
{
    dt_gpt_config g = {6, 4, 2, 2, 4};
    dt_model m;
    EXPECT_OK(dt_gpt_create(&m, &g, 2));
    dt_acts *a;
    EXPECT_OK(dt_acts_create(&a, &m, 0, m.num_layers, 2, 4));
    int32_t tok[8] = {1, 2, 3, 4, 5, 0, 1, 2}, lab[8] = {2, 3, 4, 5, 0, 1, 2, 3};
    hook_log h = {&m, 0, {0}, calloc(m.num_params, sizeof(float))};
    float loss;
    EXPECT_OK(dt_model_zero_grads(&m));
    EXPECT_OK(dt_model_forward(&m, a, NULL, tok));
    EXPECT_OK(dt_model_loss(&m, a, lab, &loss, NULL));
    EXPECT_OK(dt_model_backward(&m, a, NULL, NULL, record_hook, &h));
    EXPECT(h.calls == m.num_layers, "%d hook calls for %d layers", h.calls, m.num_layers);
    for (int i = 0; i < h.calls; i++)
        EXPECT(h.layers[i] == m.num_layers - 1 - i, "call %d was layer %d (last to first)", i,
               h.layers[i]);
    /* each slice was already final when its hook ran */
    EXPECT(memcmp(h.snap, m.grads, m.num_params * sizeof(float)) == 0, "slices complete at hook");
    /* a failing hook stops the backward with its result */
    EXPECT_OK(dt_model_forward(&m, a, NULL, tok));
    EXPECT_OK(dt_model_loss(&m, a, lab, &loss, NULL));
    EXPECT_ERR(dt_model_backward(&m, a, NULL, NULL, failing_hook, NULL), DT_ERR_FAULT);
    dt_acts_free(a);
    free(h.snap);
    dt_model_free(&m);
}

/* The backward into another buffer with a scale: grads += scale * dL/dp.
 * Into a second buffer with scale 0.25 it is a quarter of the ordinary
 * gradient, exactly (a power of two); into the parameters with scale -lr
 * it is the SGD step (fused_sgd.c's use); a GPT refuses both. */
TEST(nn_model_backward_into_scales_and_may_write_params, 2)
{
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "deep:6,9,2,4", 4));
    size_t B = 3;
    float x[18], loss, lr = 0.1f, d;
    int32_t lab[3] = {1, 2, 3};
    fill_x(x, 18, 5);
    dt_acts *a;
    EXPECT_OK(dt_acts_create(&a, &m, 0, m.num_layers, B, 1));
    float *p0 = malloc(m.num_params * sizeof(float)), *g = calloc(m.num_params, sizeof(float));
    memcpy(p0, m.params, m.num_params * sizeof(float));
    EXPECT_OK(dt_model_zero_grads(&m));
    EXPECT_OK(dt_model_forward(&m, a, x, NULL));
    EXPECT_OK(dt_model_loss(&m, a, lab, &loss, NULL));
    EXPECT_OK(dt_model_backward(&m, a, NULL, NULL, NULL, NULL));
    EXPECT_OK(dt_model_forward(&m, a, x, NULL));
    EXPECT_OK(dt_model_loss(&m, a, lab, &loss, NULL));
    EXPECT_OK(dt_model_backward_into(&m, a, NULL, NULL, NULL, NULL, g, 0.25f));
    for (size_t i = 0; i < m.num_params; i++)
        EXPECT(g[i] == 0.25f * m.grads[i], "grads[%zu]: %g, a quarter of %g", i, g[i],
               m.grads[i]);
    float *want = malloc(m.num_params * sizeof(float));
    for (size_t i = 0; i < m.num_params; i++)
        want[i] = p0[i] - lr * m.grads[i];
    EXPECT_OK(dt_model_forward(&m, a, x, NULL));
    EXPECT_OK(dt_model_loss(&m, a, lab, &loss, NULL));
    EXPECT_OK(dt_model_backward_into(&m, a, NULL, NULL, NULL, NULL, m.params, -lr));
    EXPECT_OK(dt_vec_max_abs_diff(want, m.params, m.num_params, &d));
    EXPECT(d < 1e-6f, "the backward into the parameters differs from the step by %g", d);
    dt_acts_free(a);
    dt_model_free(&m);
    /* a transformer block reads its parameters after writing gradients */
    int32_t tok[3] = {0, 1, 2};
    EXPECT_OK(dt_model_create_spec(&m, "gpt:5,3,1,1,4", 4));
    EXPECT_OK(dt_acts_create(&a, &m, 0, m.num_layers, 1, 3));
    EXPECT_OK(dt_model_forward(&m, a, NULL, tok));
    EXPECT_OK(dt_model_loss(&m, a, tok, &loss, NULL));
    EXPECT_ERR(dt_model_backward_into(&m, a, NULL, NULL, NULL, NULL, m.params, -lr),
               DT_ERR_UNSUPPORTED);
    EXPECT(strstr(dt_last_error(), "embed"), "names the layer: %s", dt_last_error());
    EXPECT_ERR(dt_model_backward_into(&m, a, NULL, NULL, NULL, NULL, m.grads, 0.5f),
               DT_ERR_UNSUPPORTED);
    EXPECT_OK(dt_model_backward_into(&m, a, NULL, NULL, NULL, NULL, m.grads, 1));
    dt_acts_free(a);
    free(p0), free(g), free(want);
    dt_model_free(&m);
}

/* ---------------------------------------------------------------- layout, memory */

TEST(nn_model_views_are_one_contiguous_layout, 1)
{
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "gpt:11,6,2,2,8", 1));
    size_t next = 0;
    for (int v = 0; v < m.num_views; v++) {
        EXPECT(m.views[v].offset == next, "view %s starts where the last ended", m.views[v].name);
        next += m.views[v].count;
    }
    EXPECT(next == m.num_params, "views cover the buffer: %zu of %zu", next, m.num_params);
    /* 88 = 11*8 + 6*8 (embed); 12 C^2 + 13 C per block; 2C + V C (head) */
    size_t C = 8, want = 11 * C + 6 * C + 2 * (12 * C * C + 13 * C) + 2 * C + 11 * C;
    EXPECT(m.num_params == want, "GPT parameters %zu, expected %zu", m.num_params, want);
    const dt_param_view *q = dt_model_find_view(&m, "block2.attn.qkv.weight");
    EXPECT(q && q->ndim == 2 && q->shape[0] == 24 && q->shape[1] == 8 && q->layer == 2,
           "qkv view of block 2");
    EXPECT(dt_model_find_view(&m, "nope") == NULL, "unknown view");
    size_t off, cnt;
    EXPECT_OK(dt_model_layer_range(&m, 1, 3, &off, &cnt));
    EXPECT(off == m.layers[1].param_offset && cnt == 2 * (12 * C * C + 13 * C), "blocks' range");
    EXPECT_ERR(dt_model_layer_range(&m, 2, 2, &off, &cnt), DT_ERR_INVALID_ARG);
    /* the same seed gives the same parameters, another seed others */
    dt_model m2;
    EXPECT_OK(dt_model_create_spec(&m2, "gpt:11,6,2,2,8", 1));
    EXPECT(memcmp(m.params, m2.params, m.num_params * sizeof(float)) == 0, "same seed");
    EXPECT_OK(dt_model_init_params(&m2, 2));
    EXPECT(memcmp(m.params, m2.params, m.num_params * sizeof(float)) != 0, "other seed");
    EXPECT(m.params[dt_model_find_view(&m, "block1.ln1.weight")->offset] == 1, "norm gain 1");
    /* the dt_*_view names are the layout: each names its view */
    static const struct {
        int layer, k;
        const char *name;
    } named[] = {
        {0, DT_EMBED_WTE, "embed.wte"}, {0, DT_EMBED_WPE, "embed.wpe"},
        {1, DT_BLOCK_LN1_WEIGHT, "block1.ln1.weight"}, {1, DT_BLOCK_LN1_BIAS, "block1.ln1.bias"},
        {2, DT_BLOCK_QKV_WEIGHT, "block2.attn.qkv.weight"},
        {2, DT_BLOCK_QKV_BIAS, "block2.attn.qkv.bias"},
        {2, DT_BLOCK_PROJ_WEIGHT, "block2.attn.proj.weight"},
        {2, DT_BLOCK_PROJ_BIAS, "block2.attn.proj.bias"},
        {1, DT_BLOCK_LN2_WEIGHT, "block1.ln2.weight"}, {1, DT_BLOCK_LN2_BIAS, "block1.ln2.bias"},
        {1, DT_BLOCK_FC_WEIGHT, "block1.mlp.fc.weight"}, {1, DT_BLOCK_FC_BIAS, "block1.mlp.fc.bias"},
        {2, DT_BLOCK_MPROJ_WEIGHT, "block2.mlp.proj.weight"},
        {2, DT_BLOCK_MPROJ_BIAS, "block2.mlp.proj.bias"},
        {3, DT_HEAD_LNF_WEIGHT, "head.lnf.weight"}, {3, DT_HEAD_LNF_BIAS, "head.lnf.bias"},
        {3, DT_HEAD_LM_WEIGHT, "head.lm_head.weight"},
    };
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        const dt_param_view *v = dt_model_find_view(&m, named[i].name);
        EXPECT(v && dt_model_view(&m, m.params, named[i].layer, named[i].k) == m.params + v->offset,
               "view %d of layer %d is %s", named[i].k, named[i].layer, named[i].name);
    }
    EXPECT(m.layers[1].num_views == DT_BLOCK_VIEWS && m.layers[3].num_views == DT_HEAD_VIEWS,
           "a block has %d views, the head %d", m.layers[1].num_views, m.layers[3].num_views);
    dt_model_free(&m), dt_model_free(&m2);
}

TEST(nn_model_memory_accounting_is_exact, 1)
{
    dt_mem_ctx *ctx = dt_mem_ctx_create();
    dt_mem_bind(ctx);
    dt_model m;
    size_t w[4] = {784, 128, 64, 10};
    EXPECT_OK(dt_mlp_create(&m, w, 4, 1));
    size_t n = 784 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10;
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    EXPECT(m.num_params == n, "MLP parameters %zu, expected %zu", m.num_params, n);
    EXPECT(s.current[DT_MEM_PARAM] == 4 * n && s.current[DT_MEM_GRAD] == 4 * n,
           "param %zu grad %zu bytes, expected %zu each", s.current[DT_MEM_PARAM],
           s.current[DT_MEM_GRAD], 4 * n);
    EXPECT(s.current[DT_MEM_ACT] == 0, "no activations yet");
    dt_acts *a;
    /* input copy + three outputs + two gradient buffers of the widest row +
     * probs */
    EXPECT_OK(dt_acts_create(&a, &m, 0, 3, 32, 1));
    dt_mem_stats_get(&s);
    size_t act = 32 * (784 + 128 + 64 + 10 + 2 * 784 + 10) * 4;
    EXPECT(!a->fm, "the reference path keeps no feature-major copies");
    EXPECT(s.current[DT_MEM_ACT] == act, "activations %zu bytes, expected %zu",
           s.current[DT_MEM_ACT], act);
    dt_acts_free(a);
    /* the fast path on 32 rows, thinner than the 128-wide layer, also keeps
     * the input and the three outputs feature-major */
    EXPECT_OK(dt_acts_create_path(&a, &m, 0, 3, 32, 1, DT_NN_FAST));
    dt_mem_stats_get(&s);
    act += 32 * (784 + 128 + 64 + 10) * 4;
    EXPECT(a->fm, "32 rows through a 128-wide layer run feature-major");
    EXPECT(s.current[DT_MEM_ACT] == act, "fast path's activations %zu bytes, expected %zu",
           s.current[DT_MEM_ACT], act);
    dt_acts_free(a);
    /* 128 rows: the fast path does not apply, no copies */
    EXPECT_OK(dt_acts_create_path(&a, &m, 0, 3, 128, 1, DT_NN_FAST));
    dt_mem_stats_get(&s);
    act = 128 * (784 + 128 + 64 + 10 + 2 * 784 + 10) * 4;
    EXPECT(!a->fm, "128 rows run batch-major");
    EXPECT(s.current[DT_MEM_ACT] == act, "activations of 128 rows %zu bytes, expected %zu",
           s.current[DT_MEM_ACT], act);
    dt_acts_free(a);
    dt_model_free_grads(&m);
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_ACT] == 0 && s.current[DT_MEM_GRAD] == 0, "freed");
    dt_model_free(&m);
    dt_mem_stats_get(&s);
    EXPECT(s.current_total == 0, "all returned: %zu", s.current_total);
    dt_mem_bind(NULL);
    dt_mem_ctx_release(ctx);
}

/* For each model: parameters, gradients and AdamW state, in bytes, are
 * exactly 4, 4 and 8 per parameter, with the parameter count from the
 * formula of the architecture. */
TEST(nn_model_memory_of_each_model_with_adamw, 1)
{
    size_t C = 16, V = 13, T = 8, L = 2;
    struct {
        const char *spec;
        size_t params;
    } cases[3] = {
        {"mlp:10,20,5", 10 * 20 + 20 + 20 * 5 + 5},
        {"deep:6,12,3,4", (6 * 12 + 12) + 3 * (12 * 12 + 12) + (12 * 4 + 4)},
        /* embed V C + T C; per block 12 C^2 + 13 C; head 2 C + V C */
        {"gpt:13,8,2,2,16", V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + V * C},
    };
    for (int k = 0; k < 3; k++) {
        dt_mem_ctx *ctx = dt_mem_ctx_create();
        dt_mem_bind(ctx);
        dt_model m;
        dt_optimizer o;
        EXPECT_OK(dt_model_create_spec(&m, cases[k].spec, 1));
        dt_optim_config adam = dt_adamw_config(1e-3f);
        EXPECT_OK(dt_optim_init(&o, &adam, 0, m.num_params));
        dt_mem_stats s;
        dt_mem_stats_get(&s);
        size_t n = cases[k].params;
        EXPECT(m.num_params == n, "%s: %zu parameters, expected %zu", cases[k].spec,
               m.num_params, n);
        EXPECT(s.current[DT_MEM_PARAM] == 4 * n && s.current[DT_MEM_GRAD] == 4 * n &&
                   s.current[DT_MEM_OPTIM] == 8 * n,
               "%s: param %zu, grad %zu, optim %zu bytes; expected %zu, %zu, %zu",
               cases[k].spec, s.current[DT_MEM_PARAM], s.current[DT_MEM_GRAD],
               s.current[DT_MEM_OPTIM], 4 * n, 4 * n, 8 * n);
        dt_optim_free(&o);
        dt_model_free(&m);
        dt_mem_bind(NULL);
        dt_mem_ctx_release(ctx);
    }
}

TEST(nn_model_rejects_bad_input, 1)
{
    dt_model m;
    EXPECT_ERR(dt_model_create_spec(&m, "mlp:784,0,10", 1), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "bad number"), "message: %s", dt_last_error());
    EXPECT_ERR(dt_model_create_spec(&m, "cnn:3,4", 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_model_create_spec(&m, "gpt:5,4,1,3,8", 1), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "heads"), "message: %s", dt_last_error());
    EXPECT_ERR(dt_model_create_spec(&m, "mlp:5", 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_model_create_spec(&m, "mlp:5,3,", 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_model_create_spec(&m, "mlp:", 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_model_create_spec(&m, NULL, 1), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_model_create_spec(&m, "gpt:5,4,1,1,4", 1));
    dt_acts *a;
    EXPECT_ERR(dt_acts_create(&a, &m, 0, m.num_layers, 1, 5), DT_ERR_INVALID_ARG); /* T > context */
    EXPECT_ERR(dt_acts_create(&a, &m, 0, m.num_layers, 0, 2), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_acts_create(&a, &m, 2, 1, 1, 2), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_acts_create(&a, &m, 0, 2, 1, 2));
    int32_t tok[2] = {0, 9}, lab[2] = {0, 1};
    float loss;
    EXPECT_ERR(dt_model_backward(&m, a, NULL, NULL, NULL, NULL), DT_ERR_STATE);
    EXPECT_ERR(dt_model_forward(&m, a, NULL, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_model_forward(&m, a, NULL, tok), DT_ERR_INVALID_ARG); /* token 9 >= vocab */
    tok[1] = 3;
    EXPECT_OK(dt_model_forward(&m, a, NULL, tok));
    EXPECT_ERR(dt_model_loss(&m, a, lab, &loss, NULL), DT_ERR_STATE); /* not the last layer */
    dt_acts_free(a);
    EXPECT_OK(dt_acts_create(&a, &m, 0, m.num_layers, 1, 2));
    EXPECT_OK(dt_model_forward(&m, a, NULL, tok));
    lab[0] = 5;
    EXPECT_ERR(dt_model_loss(&m, a, lab, &loss, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "label 5 of row 0"), "message: %s", dt_last_error());
    dt_acts_free(a);
    dt_model_free(&m);
}
