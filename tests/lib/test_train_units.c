/* test_train_units.c - the units runner (lib/train/units.c): a model run
 * unit by unit, each unit's parameters and gradients in buffers of its
 * own, trains exactly as the model's own forward and backward do; its
 * hooks come in the order the header says; the modeled clock is charged
 * per layer; what it cannot do is refused by name. */
#include "grader.h"
#include "dt/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hooks that hand each unit a copy of its slice of the model's flat
 * buffers, made for the hook and freed after it, and copy each unit's
 * gradients back into m->grads: with the default sync and update the
 * model then trains as with its own forward and backward. (The backward
 * accumulates into the copy of the gradients so far, as it would into
 * m->grads: a zeroed buffer added afterwards would round differently.) */
typedef struct {
    const dt_unit *units;
    float *p, *g;     /* the running unit's copies */
    char log[512];
    int n;
} copying;

static void note(copying *c, const char *what, int u)
{
    c->n += snprintf(c->log + c->n, sizeof c->log - (size_t)c->n, "%s%d ", what, u);
}

static float *copy_of(const float *src, size_t n)
{
    float *p = dt_mem_alloc(DT_MEM_OTHER, n * sizeof *p);
    if (p && src)
        memcpy(p, src, n * sizeof *p);
    return p;
}

static dt_result pre_forward(dt_trainer *t, void *self, int u, float **params)
{
    copying *c = self;
    note(c, "f", u);
    c->p = copy_of(t->model->params + c->units[u].offset, c->units[u].count);
    *params = c->p;
    return c->p ? DT_OK : DT_ERR_NOMEM;
}

static dt_result post_forward(dt_trainer *t, void *self, int u)
{
    copying *c = self;
    (void)t;
    note(c, "F", u);
    dt_mem_free(c->p);
    memset(&c->p, 0xff, sizeof c->p); /* a runner that kept the pointer would crash */
    return DT_OK;
}

static dt_result pre_backward(dt_trainer *t, void *self, int u, float **params, float **grads)
{
    copying *c = self;
    note(c, "b", u);
    c->p = copy_of(t->model->params + c->units[u].offset, c->units[u].count);
    c->g = copy_of(t->model->grads + c->units[u].offset, c->units[u].count);
    *params = c->p, *grads = c->g;
    return c->p && c->g ? DT_OK : DT_ERR_NOMEM;
}

static dt_result post_backward(dt_trainer *t, void *self, int u)
{
    copying *c = self;
    note(c, "B", u);
    memcpy(t->model->grads + c->units[u].offset, c->g, c->units[u].count * sizeof(float));
    dt_mem_free(c->p), dt_mem_free(c->g);
    return DT_OK;
}

static const dt_unit_hooks copying_hooks = {"copying", pre_forward, post_forward, pre_backward,
                                            post_backward, NULL};

/* Units of m starting at the layers in starts[0..n) (starts[0] = 0). */
static void make_units(const dt_model *m, const int *starts, int n, dt_unit *u)
{
    for (int i = 0; i < n; i++)
        EXPECT_OK(dt_unit_of(m, starts[i], i + 1 < n ? starts[i + 1] : m->num_layers, &u[i]));
}

/* Trains spec for 3 steps with AdamW, through the model's hooks (units
 * NULL) or through the runner with the copying hooks; returns the
 * parameters and the last loss. */
static float *train(const char *spec, const int *starts, int n, int micro, float *loss)
{
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_adamw_config(0.01f);
    int gpt = spec[0] == 'g';
    EXPECT_OK(dt_model_create_spec(&m, spec, 3));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, &tc));
    dt_unit units[8];
    copying c = {units, NULL, NULL, "", 0};
    dt_unit_hooks h = copying_hooks;
    h.self = &c;
    if (starts) {
        make_units(&m, starts, n, units);
        EXPECT_OK(dt_train_use_units(&t, units, n, &h));
    }
    size_t B = 3, T = gpt ? m.max_seq : 1, rows = (size_t)micro * B * T;
    float *x = calloc(rows * (m.in_width ? m.in_width : 1), sizeof *x);
    int32_t *tok = calloc(rows, sizeof *tok), *y = calloc(rows, sizeof *y);
    for (size_t i = 0; i < rows; i++) {
        tok[i] = (int32_t)((i * 7 + 3) % m.num_classes);
        y[i] = (int32_t)((i * 5 + 1) % m.num_classes);
        for (size_t k = 0; k < m.in_width; k++)
            x[i * m.in_width + k] = (float)((int)((i + 3 * k) % 7) - 3) / 4;
    }
    dt_batch b = {gpt ? NULL : x, gpt ? tok : NULL, y, B, T, micro};
    for (int s = 0; s < 3; s++)
        EXPECT_OK(dt_train_step(&t, &b));
    *loss = t.loss;
    float *p = malloc(m.num_params * sizeof *p);
    memcpy(p, m.params, m.num_params * sizeof *p);
    free(x), free(tok), free(y);
    dt_trainer_free(&t);
    dt_model_free(&m);
    return p;
}

/* The same layer calls on the same numbers in the same order: bit for
 * bit, for every split into units, on the three models. */
TEST(units_train_like_the_whole_model_bit_for_bit, 3)
{
    static const struct {
        const char *spec;
        int n, starts[4];
    } cases[] = {
        {"mlp:7,9,5,3", 1, {0}},        {"mlp:7,9,5,3", 3, {0, 1, 2}},
        {"mlp:7,9,5,3", 2, {0, 2}},     {"deep:5,8,4,3", 3, {0, 2, 5}},
        {"gpt:11,4,2,2,8", 4, {0, 1, 2, 3}}, {"gpt:11,4,2,2,8", 2, {0, 3}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int micro = 1; micro <= 2; micro++) {
            dt_model m;
            EXPECT_OK(dt_model_create_spec(&m, cases[i].spec, 3));
            size_t n = m.num_params;
            dt_model_free(&m);
            float l0, l1;
            float *whole = train(cases[i].spec, NULL, 0, micro, &l0);
            float *units = train(cases[i].spec, cases[i].starts, cases[i].n, micro, &l1);
            EXPECT(!memcmp(whole, units, n * sizeof(float)) && l0 == l1,
                   "%s in %d units, %d micro-batches: the parameters (or the loss %g vs %g) "
                   "differ from the whole model's", cases[i].spec, cases[i].n, micro,
                   (double)l1, (double)l0);
            free(whole), free(units);
        }
}

/* Layer hook of the sync: each layer's range in the model's flat layout. */
static dt_result layer_seen(dt_trainer *t, void *self, int layer, size_t off, size_t count)
{
    const dt_layer *l = &t->model->layers[layer];
    EXPECT(off == l->param_offset && count == l->param_count, "layer %d: [%zu, +%zu), the "
           "model's [%zu, +%zu)", layer, off, count, l->param_offset, l->param_count);
    note(self, "L", layer);
    return DT_OK;
}

static dt_result nothing(dt_trainer *t, void *self)
{
    (void)t, (void)self;
    return DT_OK;
}

/* f/F: before and after a unit's forward, b/B its backward, L a layer. */
TEST(units_hooks_run_in_order_with_the_models_offsets, 2)
{
    dt_model m;
    dt_trainer t;
    dt_unit units[2];
    copying c = {units, NULL, NULL, "", 0};
    dt_unit_hooks h = copying_hooks;
    h.self = &c;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:4,6,5,3", 1));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, NULL));
    make_units(&m, (const int[]){0, 1}, 2, units);
    EXPECT(units[1].offset == 30 && units[1].count == 35 + 18, "unit 1: [%zu, +%zu)",
           units[1].offset, units[1].count);
    EXPECT_OK(dt_train_use_units(&t, units, 2, &h));
    dt_train_set_hook(&t.sync, (dt_hook){"seen", nothing, layer_seen, NULL, &c});
    float x[2 * 2 * 4] = {0};
    int32_t y[4] = {0};
    dt_batch b = {x, NULL, y, 2, 1, 2};
    EXPECT_OK(dt_train_step(&t, &b));
    const char *want = "f0 F0 f1 F1 b1 L2 L1 B1 b0 L0 B0 f0 F0 f1 F1 b1 L2 L1 B1 b0 L0 B0 ";
    EXPECT(!strcmp(c.log, want), "ran %s, expected %s", c.log, want);
    /* GPipe's order keeps two micro-batches in flight: refused, named */
    static const dt_train_op gpipe[4] = {{0, DT_TRAIN_FORWARD, 0}, {1, DT_TRAIN_FORWARD, 0},
                                         {1, DT_TRAIN_BACKWARD, 0}, {0, DT_TRAIN_BACKWARD, 0}};
    t.schedule = gpipe, t.schedule_len = 4;
    c.n = 0;
    EXPECT_ERR(dt_train_step(&t, &b), DT_ERR_UNSUPPORTED);
    EXPECT(strstr(dt_last_error(), "one micro-batch in flight"), "message: %s", dt_last_error());
    t.schedule = NULL;
    EXPECT_OK(dt_train_step(&t, &b)); /* and the runner goes on after the refusal */
    dt_trainer_free(&t);
    dt_model_free(&m);
}

static dt_result clock_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_model m;
    dt_trainer t;
    dt_unit units[3];
    copying c = {units, NULL, NULL, "", 0};
    dt_unit_hooks h = copying_hooks;
    h.self = &c;
    static const double fwd[3] = {1, 2, 4}, bwd[3] = {8, 16, 32};
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    tc.clock = DT_CLOCK_MODELED;
    tc.forward_layer_s = fwd, tc.backward_s = bwd;
    DT_CHECK(dt_model_create_spec(&m, "mlp:4,6,5,3", 1));
    DT_CHECK(dt_trainer_init(&t, &m, w, &tc));
    make_units(&m, (const int[]){0, 1, 2}, 3, units);
    DT_CHECK(dt_train_use_units(&t, units, 3, &h));
    dt_train_set_hook(&t.sync, (dt_hook){"none", nothing, NULL, NULL, NULL});
    float x[2 * 4] = {0};
    int32_t y[2] = {0};
    dt_batch b = {x, NULL, y, 2, 1, 1};
    double t0 = dt_clock(w);
    DT_CHECK(dt_train_step(&t, &b));
    double spent = dt_clock(w) - t0;
    dt_trainer_free(&t);
    dt_model_free(&m);
    return spent == 63 ? DT_OK : dt_fail(DT_ERR_MISMATCH, "a step charged %g s, expected "
                                         "1 + 2 + 4 + 8 + 16 + 32 = 63", spent);
}

/* Each unit's forward costs its layers' times, each layer's backward its. */
TEST(units_charge_the_modeled_clock_per_layer, 1, .own_backend = 1)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 1;
    o.backend = DT_BACKEND_THREAD;
    o.net = "none";
    EXPECT_OK(dt_launch(&o, clock_rank, NULL));
}

TEST(units_refuse_what_does_not_fit, 1)
{
    dt_model m;
    dt_trainer t;
    dt_unit u[3];
    dt_unit_hooks h = copying_hooks;
    EXPECT_OK(dt_model_create_spec(&m, "mlp:4,6,5,3", 1));
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, NULL));
    EXPECT_ERR(dt_unit_of(&m, 1, 1, &u[0]), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_unit_of(&m, 0, 4, &u[0]), DT_ERR_INVALID_ARG);
    make_units(&m, (const int[]){0, 2}, 2, u);
    EXPECT_ERR(dt_train_use_units(&t, u, 1, &h), DT_ERR_INVALID_ARG); /* stops at layer 2 */
    EXPECT(strstr(dt_last_error(), "end at layer 2 of 3"), "message: %s", dt_last_error());
    u[1].count--; /* not the unit of its layers */
    EXPECT_ERR(dt_train_use_units(&t, u, 2, &h), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "unit 1"), "message: %s", dt_last_error());
    u[1].count++;
    u[2] = u[1]; /* overlaps */
    EXPECT_ERR(dt_train_use_units(&t, u, 3, &h), DT_ERR_INVALID_ARG);
    h.post_backward = NULL;
    EXPECT_ERR(dt_train_use_units(&t, u, 2, &h), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "every hook"), "message: %s", dt_last_error());
    EXPECT(!strcmp(t.forward.name, "model"), "a refusal leaves the trainer's hooks alone");
    dt_trainer_free(&t);
    /* a modeled forward given for the whole model cannot be split */
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    tc.clock = DT_CLOCK_MODELED, tc.forward_s = 1;
    EXPECT_OK(dt_trainer_init(&t, &m, NULL, &tc));
    h = copying_hooks;
    EXPECT_ERR(dt_train_use_units(&t, u, 2, &h), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "forward_layer_s"), "message: %s", dt_last_error());
    dt_trainer_free(&t);
    dt_model_free(&m);
}
