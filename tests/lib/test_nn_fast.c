/* test_nn_fast.c - the feature-major path (lib/nn/feature_major.c) against
 * the reference stage (lib/nn/stage.c).
 *
 * Both compute the same products, biases and ReLUs; only the order of the
 * float additions inside each product differs (another orientation of the
 * same GEMM), and the bias is added after the product instead of before.
 * So:
 *  - on integer-valued data small enough that every sum is exact in float,
 *    the two must agree BIT FOR BIT: outputs, parameter gradients, input
 *    gradients, and the backward written into the parameters;
 *  - on real-valued data they agree up to rounding: a dot product of K
 *    terms summed in two orders differs by at most about K ulps of the
 *    largest partial sum; with K <= 64 here the relative difference stays
 *    below 64 x 6e-8 = 4e-6 of the largest value, and the tests allow 1e-5. */
#include "grader.h"
#include "dt/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Small integers in [-2, 2] from (i, salt). */
static float small_int(size_t i, unsigned salt)
{
    return (float)((int)((i * 2654435761u + salt * 40503u) % 5u) - 2);
}

typedef struct {
    float *out;       /* the stage's output */
    float *grads;     /* the model's gradients after the backward */
    float *dinp;      /* the input gradient */
    float *params;    /* after a backward into the parameters with scale -1/4 */
    int hooks[16], calls;
} stage_run;

static dt_result count_hook(void *arg, int layer, size_t offset, size_t count)
{
    stage_run *r = arg;
    (void)offset, (void)count;
    if (r->calls < 16)
        r->hooks[r->calls] = layer;
    r->calls++;
    return DT_OK;
}

/* Runs layers [first, last) of m on rows x, backward from dout, on one path. */
static void run_stage(dt_model *m, int first, int last, size_t B, const float *x,
                      const float *dout, dt_nn_path path, stage_run *r)
{
    size_t in = m->layers[first].in_width, ow = m->layers[last - 1].out_width;
    dt_acts *a;
    float *p0 = malloc(m->num_params * sizeof(float));
    memcpy(p0, m->params, m->num_params * sizeof(float));
    size_t widest = 0;
    for (int i = first; i < last; i++)
        widest = m->layers[i].out_width > widest ? m->layers[i].out_width : widest;
    EXPECT_OK(dt_acts_create_path(&a, m, first, last, B, 1, path));
    EXPECT((a->fm != NULL) == (path == DT_NN_FAST && B < widest),
           "layers [%d, %d), %zu rows, widest %zu: fast path %s", first, last, B, widest,
           a->fm ? "on" : "off");
    r->out = malloc(B * ow * sizeof(float));
    r->grads = malloc(m->num_params * sizeof(float));
    r->dinp = malloc(B * in * sizeof(float));
    r->params = malloc(m->num_params * sizeof(float));
    r->calls = 0;
    EXPECT_OK(dt_model_zero_grads(m));
    EXPECT_OK(dt_model_forward(m, a, x, NULL));
    memcpy(r->out, dt_acts_output(a), B * ow * sizeof(float));
    EXPECT_OK(dt_model_backward(m, a, dout, r->dinp, count_hook, r));
    memcpy(r->grads, m->grads, m->num_params * sizeof(float));
    EXPECT_OK(dt_model_forward(m, a, x, NULL));
    EXPECT_OK(dt_model_backward_into(m, a, dout, NULL, NULL, NULL, m->params, -0.25f));
    memcpy(r->params, m->params, m->num_params * sizeof(float));
    memcpy(m->params, p0, m->num_params * sizeof(float));
    dt_acts_free(a);
    free(p0);
}

static void free_run(stage_run *r)
{
    free(r->out), free(r->grads), free(r->dinp), free(r->params);
}

/* max |a - b| / max |b| over n */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return d / (m > 0 ? m : 1);
}

/* Compares the two paths on layers [first, last); tol 0 means bit for bit. */
static void compare_paths(dt_model *m, int first, int last, size_t B, const float *x,
                          const float *dout, double tol, const char *what)
{
    stage_run ref, fast;
    size_t in = m->layers[first].in_width, ow = m->layers[last - 1].out_width;
    run_stage(m, first, last, B, x, dout, DT_NN_REFERENCE, &ref);
    run_stage(m, first, last, B, x, dout, DT_NN_FAST, &fast);
    struct {
        const char *name;
        const float *a, *b;
        size_t n;
    } pairs[4] = {{"output", fast.out, ref.out, B * ow},
                  {"parameter gradients", fast.grads, ref.grads, m->num_params},
                  {"input gradient", fast.dinp, ref.dinp, B * in},
                  {"parameters after the backward into them", fast.params, ref.params,
                   m->num_params}};
    for (int k = 0; k < 4; k++) {
        if (tol == 0)
            EXPECT(memcmp(pairs[k].a, pairs[k].b, pairs[k].n * sizeof(float)) == 0,
                   "%s, layers [%d, %d), %zu rows: the %s differ between the paths", what,
                   first, last, B, pairs[k].name);
        else
            EXPECT(rel_diff(pairs[k].a, pairs[k].b, pairs[k].n) <= tol,
                   "%s, layers [%d, %d), %zu rows: the %s differ by %.3g relative (> %g)", what,
                   first, last, B, pairs[k].name, rel_diff(pairs[k].a, pairs[k].b, pairs[k].n),
                   tol);
    }
    EXPECT(fast.calls == ref.calls && fast.calls == last - first,
           "%s: hooks called %d and %d times for %d layers", what, fast.calls, ref.calls,
           last - first);
    for (int i = 0; i < ref.calls && i < 16; i++)
        EXPECT(fast.hooks[i] == ref.hooks[i], "%s: hook call %d: layer %d vs %d", what, i,
               fast.hooks[i], ref.hooks[i]);
    free_run(&ref), free_run(&fast);
}

TEST(nn_fast_path_equals_reference_bit_for_bit_when_sums_are_exact, 2)
{
    const char *specs[3] = {"mlp:12,16,8,4", "deep:7,16,3,5", "mlp:5,33,2"};
    for (int s = 0; s < 3; s++) {
        dt_model m;
        EXPECT_OK(dt_model_create_spec(&m, specs[s], 1));
        for (size_t i = 0; i < m.num_params; i++)
            m.params[i] = small_int(i, 1);
        size_t B = 5, maxw = 64;
        float x[5 * 64], dout[5 * 64];
        for (size_t i = 0; i < B * maxw; i++)
            x[i] = small_int(i, 2), dout[i] = small_int(i, 3);
        /* the whole model, and every stage that starts or ends inside it */
        for (int first = 0; first < m.num_layers; first++)
            for (int last = first + 1; last <= m.num_layers; last++)
                compare_paths(&m, first, last, B, x, dout, 0, specs[s]);
        dt_model_free(&m);
    }
}

TEST(nn_fast_path_equals_reference_within_rounding, 2)
{
    const char *specs[2] = {"mlp:64,48,10", "deep:20,64,2,10"};
    for (int s = 0; s < 2; s++) {
        dt_model m;
        EXPECT_OK(dt_model_create_spec(&m, specs[s], 3));
        size_t B = 7;
        float *x = malloc(B * 64 * sizeof(float)), *dout = malloc(B * 64 * sizeof(float));
        dt_rng rng;
        dt_rng_init(&rng, 5, 0);
        for (size_t i = 0; i < B * 64; i++)
            x[i] = dt_rng_normal(&rng), dout[i] = 0.1f * dt_rng_normal(&rng);
        compare_paths(&m, 0, m.num_layers, B, x, dout, 1e-5, specs[s]);
        compare_paths(&m, 1, m.num_layers, B, x, dout, 1e-5, specs[s]);
        /* the loss's own gradient, through dt_model_loss on both paths */
        int32_t lab[7] = {1, 9, 0, 3, 3, 7, 2};
        float loss[2], *g[2];
        for (int p = 0; p < 2; p++) {
            dt_acts *a;
            EXPECT_OK(dt_acts_create_path(&a, &m, 0, m.num_layers, B, 1, p ? DT_NN_FAST
                                                                             : DT_NN_REFERENCE));
            EXPECT_OK(dt_model_zero_grads(&m));
            EXPECT_OK(dt_model_forward(&m, a, x, NULL));
            EXPECT_OK(dt_model_loss(&m, a, lab, &loss[p], NULL));
            EXPECT_OK(dt_model_backward(&m, a, NULL, NULL, NULL, NULL));
            g[p] = malloc(m.num_params * sizeof(float));
            memcpy(g[p], m.grads, m.num_params * sizeof(float));
            dt_acts_free(a);
        }
        EXPECT(fabsf(loss[0] - loss[1]) <= 1e-5f * fabsf(loss[0]), "%s: loss %.9g vs %.9g",
               specs[s], loss[0], loss[1]);
        EXPECT(rel_diff(g[1], g[0], m.num_params) <= 1e-5, "%s: gradients of the loss differ "
               "by %.3g", specs[s], rel_diff(g[1], g[0], m.num_params));
        free(g[0]), free(g[1]), free(x), free(dout);
        dt_model_free(&m);
    }
}

/* The switch: DT_NN_FAST takes the feature-major path only where it
 * applies (linear layers, rows below the widest); elsewhere, and always on
 * the reference path, there are no feature-major copies. */
TEST(nn_fast_path_applies_to_thin_linear_stages_only, 1)
{
    dt_model m;
    dt_acts *a;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:6,9,4", 1));
    struct {
        size_t B;
        dt_nn_path path;
        int fm;
    } cases[4] = {{3, DT_NN_FAST, 1}, {8, DT_NN_FAST, 1}, {9, DT_NN_FAST, 0},
                  {3, DT_NN_REFERENCE, 0}};
    for (int c = 0; c < 4; c++) {
        EXPECT_OK(dt_acts_create_path(&a, &m, 0, 2, cases[c].B, 1, cases[c].path));
        EXPECT((a->fm != NULL) == cases[c].fm, "mlp 6-9-4, %zu rows, path %d: feature-major %s",
               cases[c].B, (int)cases[c].path, a->fm ? "on" : "off");
        dt_acts_free(a);
    }
    EXPECT_OK(dt_acts_create_path(&a, &m, 1, 2, 3, 1, DT_NN_FAST)); /* 4 wide: 3 rows thin */
    EXPECT(a->fm != NULL, "the last layer alone, 3 rows through 4: feature-major");
    dt_acts_free(a);
    EXPECT_ERR(dt_acts_create_path(&a, &m, 0, 2, 3, 1, (dt_nn_path)7), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
    EXPECT_OK(dt_model_create_spec(&m, "gpt:5,4,1,1,8", 1));
    EXPECT_OK(dt_acts_create_path(&a, &m, 0, m.num_layers, 1, 2, DT_NN_FAST));
    EXPECT(a->fm == NULL, "a GPT runs the reference path");
    dt_acts_free(a);
    dt_model_free(&m);
}
