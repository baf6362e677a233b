/* dttrain - train a model on one rank and report how fast and how well.
 *
 *   dttrain --model mlp:64,128,10 --data digits --steps 600
 *   dttrain --model mlp:784,1024,1024,10 --data synthetic --batch 64 --lr 0.01 --json
 *
 * The loop is the library's (dt_train in lib/data/trainer.c); this program
 * parses options, builds the data, prints progress and the summary. With
 * --json it prints one JSON object and nothing else on stdout.
 *
 * --dump FILE writes one step's inputs and results (parameters, batch, loss,
 * gradients) for bench/compute_verify.py, which replays it in PyTorch. */
#include "dt/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *model, *data, *optim, *dump;
    long batch, steps, eval_every, threads;
    double lr, momentum, weight_decay, time_budget;
    unsigned long long seed;
    int json, fuse; /* fuse: -1 auto (plain SGD), 0 never */
    /* Distributed runs (--ranks, --backend, --net) belong here: they need the
     * communicator and the data-parallel trainer of chapter 03. Until they
     * exist, only one rank is accepted. */
    long ranks;
    const char *backend, *net;
} options;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dttrain [options]\n"
            "  --model SPEC     mlp:W0,W1,...,Wn | deep:IN,WIDTH,BLOCKS,CLASSES |\n"
            "                   gpt:VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS (default mlp:64,128,10)\n"
            "  --data SET       digits | synthetic | spirals (default digits; synthetic: blobs\n"
            "                   for the MLPs, next-token sequences for GPT)\n"
            "  --batch N        samples per step (default 32)\n"
            "  --steps N        training steps (default 600)\n"
            "  --lr X           learning rate (default 0.05)\n"
            "  --optim NAME     sgd | adamw (default sgd)\n"
            "  --momentum X     SGD momentum (default 0.9)\n"
            "  --weight-decay X (default 0 for SGD, 0.01 for AdamW)\n"
            "  --no-fuse        plain SGD through the gradient buffer instead of folded\n"
            "                   into the backward's GEMMs\n"
            "  --seed N         parameters and data order (default 1)\n"
            "  --threads N      OpenBLAS threads (default 1)\n"
            "  --eval-every N   progress line with test accuracy every N steps (default 100)\n"
            "  --time-budget S  stop after S seconds (default: none)\n"
            "  --json           print one JSON object: step_ms_median, samples_per_s,\n"
            "                   final_loss, accuracy, ...\n"
            "  --dump FILE      write one step's parameters, batch and gradients, then exit\n"
            "  --ranks N        (1 only for now: data-parallel runs come with chapter 03)\n"
            "  --backend B, --net NET   (reserved for distributed runs)\n");
}

/* Parses a number option; returns 0 when it is not a number in [lo, hi]. */
static int num(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        return 0;
    *out = v;
    return 1;
}

static int parse(int argc, char **argv, options *o)
{
    *o = (options){.model = "mlp:64,128,10", .data = "digits", .optim = "sgd", .batch = 32,
                   .steps = 600, .eval_every = 100, .threads = 1, .lr = 0.05, .momentum = 0.9,
                   .weight_decay = -1, .seed = 1, .fuse = -1, .ranks = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--no-fuse")) { o->fuse = 0; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
        if (!v) { fprintf(stderr, "dttrain: %s needs a value\n", a); return 0; }
        i++;
        if (!strcmp(a, "--model")) o->model = v;
        else if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--optim")) o->optim = v;
        else if (!strcmp(a, "--dump")) o->dump = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--net")) o->net = v;
        else if (!strcmp(a, "--batch") && num(v, 1, 1 << 20, &x)) o->batch = (long)x;
        else if (!strcmp(a, "--steps") && num(v, 1, 1e9, &x)) o->steps = (long)x;
        else if (!strcmp(a, "--eval-every") && num(v, 0, 1e9, &x)) o->eval_every = (long)x;
        else if (!strcmp(a, "--threads") && num(v, 1, 1024, &x)) o->threads = (long)x;
        else if (!strcmp(a, "--ranks") && num(v, 1, 4096, &x)) o->ranks = (long)x;
        else if (!strcmp(a, "--lr") && num(v, 1e-12, 1e6, &x)) o->lr = x;
        else if (!strcmp(a, "--momentum") && num(v, 0, 0.999999, &x)) o->momentum = x;
        else if (!strcmp(a, "--weight-decay") && num(v, 0, 1e6, &x)) o->weight_decay = x;
        else if (!strcmp(a, "--time-budget") && num(v, 0, 1e9, &x)) o->time_budget = x;
        else if (!strcmp(a, "--seed") && num(v, 0, 1.8e19, &x)) o->seed = (unsigned long long)x;
        else {
            fprintf(stderr, "dttrain: bad option or value: %s %s\n", a, v);
            return 0;
        }
    }
    if (strcmp(o->optim, "sgd") && strcmp(o->optim, "adamw")) {
        fprintf(stderr, "dttrain: --optim %s: expected sgd or adamw\n", o->optim);
        return 0;
    }
    if (o->ranks != 1 || o->backend || o->net) {
        fprintf(stderr, "dttrain: --ranks, --backend and --net need the data-parallel trainer "
                        "(chapter 03), not available in this build\n");
        return 0;
    }
    return 1;
}

/* Builds the train and test sets for the model. */
static dt_result make_data(const options *o, const dt_model *m, dt_dataset *train,
                           dt_dataset *test)
{
    uint64_t seed = o->seed;
    if (!strcmp(o->data, "digits")) {
        dt_dataset all;
        DT_CHECK(dt_data_load_digits(&all, NULL));
        dt_result r = dt_data_split(&all, 0.2, seed, train, test);
        dt_dataset_free(&all);
        return r;
    }
    size_t n = 4096 > 4 * (size_t)o->batch ? 4096 : 4 * (size_t)o->batch;
    if (!strcmp(o->data, "synthetic") && m->kind == DT_MODEL_GPT) {
        DT_CHECK(dt_data_sequences(train, n, m->max_seq, m->num_classes, seed, 0));
        return dt_data_sequences(test, 512, m->max_seq, m->num_classes, seed, 1 << 20);
    }
    if (!strcmp(o->data, "synthetic")) { /* centres 2 apart per feature: learnable, not trivial */
        DT_CHECK(dt_data_blobs(train, n, m->in_width, m->num_classes, 0.5f, seed, 0));
        return dt_data_blobs(test, 1024, m->in_width, m->num_classes, 0.5f, seed, 1 << 20);
    }
    if (!strcmp(o->data, "spirals")) {
        DT_CHECK(dt_data_spirals(train, n, m->num_classes, 0.02f, seed, 0));
        return dt_data_spirals(test, 1024, m->num_classes, 0.02f, seed, 1 << 20);
    }
    return dt_fail(DT_ERR_INVALID_ARG, "--data %s: expected digits, synthetic or spirals",
                   o->data);
}

static void progress(void *arg, const dt_train_progress *p)
{
    (void)arg;
    printf("step %6d  epoch %3d  loss %.4f  test accuracy %s%.4f  %.0f samples/s\n", p->step,
           p->epoch, (double)p->loss, p->accuracy < 0 ? "-" : "", (double)p->accuracy,
           p->samples_per_s);
    fflush(stdout);
}

/* --dump: one step of the first batch, non-fused, written as
 *   "DTDUMP1\0", then int64: num_layers, widths[num_layers + 1], B;
 *   float32 params[num_params]; float32 x[B * in]; int32 y[B];
 *   float32 loss; float32 grads[num_params]        (little-endian) */
static dt_result dump_step(dt_model *m, const dt_dataset *d, size_t B, const char *path)
{
    if (m->kind == DT_MODEL_GPT)
        return dt_fail(DT_ERR_UNSUPPORTED, "--dump: MLP models only");
    size_t in = m->in_width, *idx = malloc(B * sizeof *idx);
    float *x = malloc(B * in * sizeof(float)), loss;
    int32_t *y = malloc(B * sizeof(int32_t));
    dt_acts *a = NULL;
    FILE *f = NULL;
    dt_result r = idx && x && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "--dump: buffers");
    for (size_t i = 0; r == DT_OK && i < B; i++)
        idx[i] = i;
    if (r == DT_OK && (r = dt_data_gather(d, idx, B, x, NULL, y)) == DT_OK &&
        (r = dt_acts_create(&a, m, 0, m->num_layers, B, 1)) == DT_OK) {
        float *p0 = malloc(m->num_params * sizeof(float));
        if (!p0)
            r = dt_fail(DT_ERR_NOMEM, "--dump: parameter copy");
        else
            memcpy(p0, m->params, m->num_params * sizeof(float));
        if (r == DT_OK && (r = dt_model_zero_grads(m)) == DT_OK &&
            (r = dt_model_forward(m, a, x, NULL)) == DT_OK &&
            (r = dt_model_loss(m, a, y, &loss, NULL)) == DT_OK &&
            (r = dt_model_backward(m, a, NULL, NULL, NULL, NULL)) == DT_OK) {
            if (!(f = fopen(path, "wb")))
                r = dt_fail(DT_ERR_IO, "--dump: cannot write %s", path);
        }
        if (f) {
            int64_t nl = m->num_layers, b64 = (int64_t)B, w = (int64_t)in;
            fwrite("DTDUMP1", 1, 8, f);
            fwrite(&nl, 8, 1, f);
            fwrite(&w, 8, 1, f);
            for (int l = 0; l < m->num_layers; l++) {
                w = (int64_t)m->layers[l].out_width;
                fwrite(&w, 8, 1, f);
            }
            fwrite(&b64, 8, 1, f);
            fwrite(p0, sizeof(float), m->num_params, f);
            fwrite(x, sizeof(float), B * in, f);
            fwrite(y, sizeof(int32_t), B, f);
            fwrite(&loss, sizeof(float), 1, f);
            fwrite(m->grads, sizeof(float), m->num_params, f);
            if (fclose(f))
                r = dt_fail(DT_ERR_IO, "--dump: writing %s failed", path);
        }
        free(p0);
    }
    dt_acts_free(a);
    free(idx), free(x), free(y);
    return r;
}

static void print_json(const options *o, const dt_model *m, const dt_train_config *c,
                       const dt_train_result *r)
{
    printf("{\"model\": \"%s\", \"data\": \"%s\", \"params\": %zu, \"batch\": %ld, "
           "\"steps\": %ld, \"optim\": \"%s\", \"lr\": %g, \"fused_sgd\": %s, "
           "\"threads\": %ld, \"blas\": \"%s\", \"step_ms_median\": %.4f, "
           "\"step_cpu_ms_median\": %.4f, "
           "\"samples_per_s\": %.1f, \"final_loss\": %.6f, \"accuracy\": ",
           o->model, o->data, m->num_params, o->batch, r->steps, o->optim, o->lr,
           c->fused_sgd ? "true" : "false", o->threads,
           dt_blas_available() ? "openblas" : "builtin", r->step_ms_median,
           r->step_cpu_ms_median, r->samples_per_s,
           (double)r->final_loss);
    if (r->accuracy < 0)
        printf("null");
    else
        printf("%.6f", (double)r->accuracy);
    printf(", \"seconds\": %.3f}\n", r->seconds);
}

static int fail(dt_result r)
{
    fprintf(stderr, "dttrain: %s: %s\n", dt_strerror(r), dt_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    dt_result r = dt_blas_set_threads((int)o.threads);
    if (r != DT_OK)
        return fail(r);
    dt_model m;
    if ((r = dt_model_create_spec(&m, o.model, o.seed)) != DT_OK)
        return fail(r);
    dt_dataset train = {0}, test = {0};
    if ((r = make_data(&o, &m, &train, &test)) != DT_OK) {
        dt_model_free(&m);
        return fail(r);
    }
    int adamw = !strcmp(o.optim, "adamw");
    dt_train_config c = dt_train_defaults();
    c.batch = (size_t)o.batch;
    c.steps = o.steps;
    c.seed = o.seed;
    c.time_budget_s = o.time_budget;
    c.eval_every = o.json ? 0 : o.eval_every;
    c.progress = progress;
    c.optim = adamw ? dt_adamw_config((float)o.lr) : dt_sgd_config((float)o.lr,
                                                                   (float)o.momentum, 0);
    if (o.weight_decay >= 0)
        c.optim.weight_decay = (float)o.weight_decay;
    c.fused_sgd = o.fuse != 0 && !adamw && c.optim.momentum == 0 && c.optim.weight_decay == 0;
    dt_train_result res;
    if (o.dump)
        r = dump_step(&m, &train, c.batch, o.dump);
    else
        r = dt_train(&m, &train, &test, &c, &res);
    if (r == DT_OK && !o.dump) {
        if (o.json)
            print_json(&o, &m, &c, &res);
        else
            printf("done: %ld steps, %.3f ms/step (median), %.0f samples/s, final loss %.4f, "
                   "test accuracy %.4f\n", res.steps, res.step_ms_median, res.samples_per_s,
                   (double)res.final_loss, (double)res.accuracy);
    }
    dt_model_free(&m);
    dt_dataset_free(&train);
    dt_dataset_free(&test);
    return r == DT_OK ? 0 : fail(r);
}
