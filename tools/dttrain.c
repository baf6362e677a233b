/* dttrain - train a model on one rank and report how fast and how well.
 *
 *   dttrain --model mlp:64,128,10 --data digits --steps 600
 *   dttrain --model mlp:784,1024,1024,10 --data synthetic --batch 64 --lr 0.01 --json
 *   dttrain --ranks 4 --backend proc --net ib100     data parallel (chapter 03)
 *   dttrain --showcase                               what `make run` shows
 *
 * The loop is the library's (dt_train in lib/data/trainer.c); this program
 * parses options, builds the data, prints progress and the summary. With
 * --json it prints one JSON object and nothing else on stdout.
 *
 * --dump FILE writes one step's inputs and results (parameters, batch, loss,
 * gradients) for bench/compute_verify.py, which replays it in PyTorch. */
#include "dt/comm.h"
#include "dt/data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *model, *data, *optim, *dump;
    long batch, steps, eval_every, threads;
    double lr, momentum, weight_decay, time_budget;
    unsigned long long seed;
    int json, fuse; /* fuse: -1 auto (plain SGD), 0 never */
    /* Data parallelism (chapter 03): --ranks, --backend or --net given, or
     * --showcase (1 rank vs --ranks ranks, --epochs of the data set). */
    long ranks, epochs;
    const char *backend, *net;
    int distributed, showcase, model_set;
    int shard_optimizer; /* --shard-optimizer: ZeRO stage 1 */
} options;

#define SHOWCASE_MODEL "mlp:64,512,512,10" /* --showcase's digits MLP */

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
            "data parallelism (chapter 03): each rank takes --batch samples per step\n"
            "  --ranks N        ranks (default 1; 4 with --showcase)\n"
            "  --backend B      thread | proc (default thread)\n"
            "  --net NET        modeled network: none | nvlink | pcie4 | ib100 | ib400 |\n"
            "                   eth10 | eth100 | alpha=2us,bw=10GB/s (default none;\n"
            "                   ib100 with --showcase)\n"
            "  --showcase       train on 1 rank with the global batch, then on --ranks\n"
            "                   ranks, and compare them (what `make run` does; its\n"
            "                   model: " SHOWCASE_MODEL " unless --model)\n"
            "  --epochs N       with --showcase: epochs of the training set (default 10)\n"
            "  --shard-optimizer  each rank averages and updates only 1/K of the\n"
            "                   parameters (reduce-scatter, step, allgather: ZeRO stage 1,\n"
            "                   chapter 07) instead of one allreduce; the same parameters\n");
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
                   .weight_decay = -1, .seed = 1, .fuse = -1, .ranks = -1, .epochs = 10};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
        if (!strcmp(a, "--json")) { o->json = 1; continue; }
        if (!strcmp(a, "--no-fuse")) { o->fuse = 0; continue; }
        if (!strcmp(a, "--showcase")) { o->showcase = 1; continue; }
        if (!strcmp(a, "--shard-optimizer")) { o->shard_optimizer = 1; continue; }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); exit(0); }
        if (!v) { fprintf(stderr, "dttrain: %s needs a value\n", a); return 0; }
        i++;
        if (!strcmp(a, "--model")) o->model = v, o->model_set = 1;
        else if (!strcmp(a, "--data")) o->data = v;
        else if (!strcmp(a, "--optim")) o->optim = v;
        else if (!strcmp(a, "--dump")) o->dump = v;
        else if (!strcmp(a, "--backend")) o->backend = v;
        else if (!strcmp(a, "--net")) o->net = v;
        else if (!strcmp(a, "--batch") && num(v, 1, 1 << 20, &x)) o->batch = (long)x;
        else if (!strcmp(a, "--steps") && num(v, 1, 1e9, &x)) o->steps = (long)x;
        else if (!strcmp(a, "--eval-every") && num(v, 0, 1e9, &x)) o->eval_every = (long)x;
        else if (!strcmp(a, "--threads") && num(v, 1, 1024, &x)) o->threads = (long)x;
        else if (!strcmp(a, "--ranks") && num(v, 1, DT_MAX_RANKS, &x)) o->ranks = (long)x;
        else if (!strcmp(a, "--epochs") && num(v, 1, 1e6, &x)) o->epochs = (long)x;
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
    dt_backend be;
    double alpha, beta;
    if (o->backend && dt_backend_parse(o->backend, &be) != DT_OK) {
        fprintf(stderr, "dttrain: --backend %s: expected thread or proc\n", o->backend);
        return 0;
    }
    if (o->net && dt_net_parse(o->net, &alpha, &beta) != DT_OK) {
        fprintf(stderr, "dttrain: --net %s: %s\n", o->net, dt_last_error());
        return 0;
    }
    o->distributed = o->showcase || o->ranks > 0 || o->backend || o->net;
    if (o->ranks < 0)
        o->ranks = o->showcase ? 4 : 1;
    if (o->distributed && o->dump) {
        fprintf(stderr, "dttrain: --dump is for one rank, without --ranks/--backend/--net\n");
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

/* ================================================================ data parallel
 *
 * --ranks/--backend/--net (and --showcase) train with synchronous data
 * parallelism (chapter 03): every rank holds the model, rank 0's initial
 * parameters are broadcast, each rank takes its shard of every global batch
 * from the distributed sampler, and after each backward ONE dt_allreduce of
 * the flat gradient buffer (sum, then / K) gives every rank the same mean
 * gradient before the optimizer step. K ranks with batch B thus train like
 * one rank with batch K*B. */

/* What rank 0 reports; lives in a shared mapping so that proc ranks
 * (forked) can fill it too. */
typedef struct {
    int done;
    long steps;
    double seconds, step_ms_median, step_cpu_ms_median, samples_per_s, modeled_s;
    double bytes_per_step;
    float final_loss, accuracy;
    size_t mem_peak;
    uint64_t params_hash; /* FNV-1a of the final parameters' bytes */
} dp_result;

typedef struct {
    const options *o;
    int ranks;
    long epochs;            /* > 0: train whole epochs instead of o->steps */
    double compute_per_sample; /* > 0: modeled compute charged per sample (s);
                                  else compute regions are measured */
    const char *tag;        /* progress prefix, e.g. "4 ranks" */
    dp_result *res;
} dp_job;

static int cmp_ms(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_ms(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_ms);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* CPU seconds of the calling thread: a rank's own work, whatever the load. */
static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One rank's model, optimizer, data and step buffers. */
typedef struct {
    dt_dataset train, test;
    dt_model m;
    dt_acts *a;
    dt_optimizer opt, opt_tail; /* opt_tail: --shard-optimizer's last P mod K */
    float *own_params, *own_grads; /* the model's buffers while shared ones stand in */
    size_t *shard;
    float *x;
    int32_t *y;
    double *ms, *cpu_ms;
} dp_state;

/* --shard-optimizer (ZeRO stage 1, chapter 07): rank r averages and updates
 * only its shard [r P/K, (r+1) P/K) of the P parameters, then every rank
 * gathers the updated shards. A reduce-scatter and an allgather send the
 * same bytes as the allreduce, 2 (K-1)/K P floats, but each rank does 1/K
 * of the optimizer's work and keeps 1/K of its state. The last P mod K
 * parameters (fewer than K) are averaged with a small allreduce and updated
 * by every rank. Each parameter sees the same operations as with the
 * allreduce, so the parameters are the same, bit for bit. */
static dt_result shard_step(dt_comm *w, dt_model *m, dt_optimizer *opt, dt_optimizer *tail_opt)
{
    int r = dt_comm_rank(w), K = dt_comm_size(w);
    size_t chunk = m->num_params / (size_t)K, tail = m->num_params - chunk * (size_t)K;
    float *g = m->grads, *p = m->params;
    DT_CHECK(dt_reduce_scatter(g, g + (size_t)r * chunk, chunk, DT_F32, DT_AVG, w));
    if (tail)
        DT_CHECK(dt_allreduce(g + chunk * (size_t)K, g + chunk * (size_t)K, tail, DT_F32,
                              DT_AVG, w));
    DT_CHECK(dt_optim_step(opt, p, g));
    if (tail)
        DT_CHECK(dt_optim_step(tail_opt, p, g));
    return dt_allgather(p + (size_t)r * chunk, p, chunk, DT_F32, w);
}

/* One step on this rank's B samples: forward, backward, allreduce, update.
 * Returns the bytes the step's communication sent in *bytes. */
static dt_result dp_step(dt_comm *w, dp_state *s, const float *x, const int32_t *y,
                         const dp_job *j, size_t B, float *loss, uint64_t *bytes)
{
    dt_model *m = &s->m;
    dt_stats s0, s1;
    if (j->compute_per_sample <= 0)
        DT_CHECK(dt_compute_begin(w));
    DT_CHECK(dt_model_zero_grads(m));
    DT_CHECK(dt_model_forward(m, s->a, x, NULL));
    DT_CHECK(dt_model_loss(m, s->a, y, loss, NULL));
    DT_CHECK(dt_model_backward(m, s->a, NULL, NULL, NULL, NULL));
    if (j->compute_per_sample <= 0)
        DT_CHECK(dt_compute_end(w));
    else
        DT_CHECK(dt_clock_advance(w, j->compute_per_sample * (double)B));
    DT_CHECK(dt_comm_stats(w, &s0));
    dt_result r;
    if (j->o->shard_optimizer && dt_comm_size(w) > 1) {
        r = shard_step(w, m, &s->opt, &s->opt_tail);
    } else {
        /* g = (1/K) sum_k g_k: one allreduce (average) over the whole flat buffer */
        r = dt_allreduce(m->grads, m->grads, m->num_params, DT_F32, DT_AVG, w);
        if (r == DT_OK)
            r = dt_optim_step(&s->opt, m->params, m->grads);
    }
    DT_CHECK(dt_comm_stats(w, &s1));
    *bytes = s1.bytes_sent - s0.bytes_sent;
    return r;
}

/* FNV-1a of n bytes: a fingerprint to compare two runs' parameters. */
static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

/* The end of an epoch (or of eval_every steps): the loss averaged over the
 * ranks, and rank 0 evaluates and prints a line. */
static dt_result dp_report(dt_comm *w, dt_model *m, const dt_dataset *test, const dp_job *j,
                           long epoch, long epochs, long step, double loss_mean, double sps,
                           double bytes_per_step, float *acc)
{
    float l = (float)loss_mean;
    DT_CHECK(dt_allreduce(&l, &l, 1, DT_F32, DT_AVG, w));
    *acc = -1;
    if (dt_comm_rank(w) != 0)
        return DT_OK;
    if (test)
        DT_CHECK(dt_evaluate(m, test, 256, acc, NULL));
    if (j->o->json)
        return DT_OK;
    if (epochs > 0)
        printf("[%s] epoch %2ld/%ld  loss %.4f  accuracy %.4f  %8.0f samples/s  %8.1f KB "
               "sent/step/rank\n", j->tag, epoch, epochs, (double)l, (double)*acc, sps,
               bytes_per_step / 1e3);
    else
        printf("[%s] step %6ld  loss %.4f  accuracy %.4f  %8.0f samples/s  %8.1f KB "
               "sent/step/rank\n", j->tag, step, (double)l, (double)*acc, sps,
               bytes_per_step / 1e3);
    fflush(stdout);
    return DT_OK;
}


/* The flat buffers the collectives work on, moved into the job's shared
 * memory (dt_alloc_shared): in the proc backend the ranks then read and
 * write each other's directly instead of through cross-memory copies. */
static dt_result share_buffers(dt_comm *w, dp_state *s)
{
    dt_model *m = &s->m;
    size_t bytes = m->num_params * sizeof(float);
    float *p = NULL, *g = NULL;
    DT_CHECK(dt_alloc_shared(w, bytes, (void **)&p));
    dt_result r = dt_alloc_shared(w, bytes, (void **)&g);
    if (r != DT_OK) {
        dt_free_shared(w, p);
        return r;
    }
    memcpy(p, m->params, bytes);
    s->own_params = m->params, s->own_grads = m->grads;
    m->params = p, m->grads = g;
    return DT_OK;
}

static void unshare_buffers(dt_comm *w, dp_state *s)
{
    if (!s->own_params)
        return;
    dt_free_shared(w, s->m.params);
    dt_free_shared(w, s->m.grads);
    s->m.params = s->own_params, s->m.grads = s->own_grads;
    s->own_params = s->own_grads = NULL;
}

static void dp_free(dt_comm *w, dp_state *s)
{
    unshare_buffers(w, s);
    dt_acts_free(s->a);
    dt_optim_free(&s->opt);
    dt_optim_free(&s->opt_tail);
    dt_model_free(&s->m);
    dt_dataset_free(&s->train);
    dt_dataset_free(&s->test);
    free(s->shard), free(s->x), free(s->y), free(s->ms), free(s->cpu_ms);
}

static dt_result dp_rank(dt_comm *w, void *arg)
{
    const dp_job *j = arg;
    const options *o = j->o;
    int rank = dt_comm_rank(w), K = dt_comm_size(w);
    size_t B = (size_t)o->batch;
    dp_state s;
    dt_sampler smp;
    memset(&s, 0, sizeof s);
    dt_result r = dt_model_create_spec(&s.m, o->model, o->seed + (uint64_t)rank);
    if (r == DT_OK && s.m.kind == DT_MODEL_GPT)
        r = dt_fail(DT_ERR_UNSUPPORTED, "--ranks: MLP models only");
    if (r == DT_OK)
        r = make_data(o, &s.m, &s.train, &s.test);
    /* without room in the job's shared memory, each rank keeps its own */
    if (r == DT_OK && K > 1 && share_buffers(w, &s) != DT_OK && rank == 0 && !o->json)
        printf("[%s] shared memory too small for the gradients: private buffers (%s)\n",
               j->tag, dt_last_error());
    /* every rank starts from rank 0's parameters */
    if (r == DT_OK)
        r = dt_broadcast(s.m.params, s.m.params, s.m.num_params, DT_F32, 0, w);
    dt_optim_config cfg = !strcmp(o->optim, "adamw")
                              ? dt_adamw_config((float)o->lr)
                              : dt_sgd_config((float)o->lr, (float)o->momentum, 0);
    if (o->weight_decay >= 0)
        cfg.weight_decay = (float)o->weight_decay;
    if (r == DT_OK && o->shard_optimizer && K > 1) { /* this rank's shard, and the tail */
        size_t chunk = s.m.num_params / (size_t)K;
        r = dt_optim_init(&s.opt, &cfg, (size_t)rank * chunk, chunk);
        if (r == DT_OK)
            r = dt_optim_init(&s.opt_tail, &cfg, chunk * (size_t)K,
                              s.m.num_params - chunk * (size_t)K);
    } else if (r == DT_OK) {
        r = dt_optim_init(&s.opt, &cfg, 0, s.m.num_params);
    }
    if (r == DT_OK)
        r = dt_sampler_init(&smp, s.train.n, K, rank, 1, 1, o->seed);
    long per_epoch = r == DT_OK ? (long)(smp.num_samples / B) : 0;
    if (r == DT_OK && per_epoch == 0)
        r = dt_fail(DT_ERR_INVALID_ARG, "--batch %zu: a rank's shard holds %zu samples", B,
                    smp.num_samples);
    long steps = j->epochs > 0 ? j->epochs * per_epoch : o->steps;
    long every = j->epochs > 0 ? per_epoch : (o->eval_every > 0 ? o->eval_every : steps);
    if (r == DT_OK) {
        s.shard = malloc(smp.num_samples * sizeof *s.shard);
        s.x = malloc(B * s.train.features * sizeof *s.x);
        s.y = malloc(B * sizeof *s.y);
        s.ms = malloc((size_t)steps * sizeof *s.ms);
        s.cpu_ms = malloc((size_t)steps * sizeof *s.cpu_ms);
        if (!s.shard || !s.x || !s.y || !s.ms || !s.cpu_ms)
            r = dt_fail(DT_ERR_NOMEM, "--ranks: step buffers");
    }
    if (r == DT_OK)
        r = dt_acts_create(&s.a, &s.m, 0, s.m.num_layers, B, 1);
    if (r == DT_OK)
        r = dt_barrier(w); /* time the training only */
    double t_start = dt_now(), m_start = dt_clock(w), t_mark = t_start, loss_sum = 0;
    double recent[10] = {0};
    uint64_t bytes = 0, bytes_mark = 0;
    float acc = -1;
    long step = 0;
    for (; r == DT_OK && step < steps; step++) {
        if (step % per_epoch == 0)
            r = dt_sampler_indices(&smp, (uint64_t)(step / per_epoch), s.shard);
        if (r == DT_OK)
            r = dt_data_gather(&s.train, s.shard + (size_t)(step % per_epoch) * B, B, s.x, NULL,
                               s.y);
        float loss = 0;
        uint64_t b = 0;
        double t0 = dt_now(), c0 = thread_cpu();
        if (r == DT_OK)
            r = dp_step(w, &s, s.x, s.y, j, B, &loss, &b);
        s.ms[step] = 1e3 * (dt_now() - t0);
        s.cpu_ms[step] = 1e3 * (thread_cpu() - c0);
        bytes += b;
        loss_sum += loss;
        recent[step % 10] = loss;
        if (r == DT_OK && ((step + 1) % every == 0 || step + 1 == steps)) {
            long n = (step + 1) % every ? (step + 1) % every : every;
            double now = dt_now();
            r = dp_report(w, &s.m, &s.test, j, (step + 1) / per_epoch, j->epochs, step + 1,
                          loss_sum / (double)n, (double)n * (double)B * K / (now - t_mark),
                          (double)(bytes - bytes_mark) / (double)n, &acc);
            loss_sum = 0, bytes_mark = bytes, t_mark = dt_now();
        }
    }
    if (r == DT_OK && rank == 0) {
        dp_result *res = j->res;
        dt_mem_stats ms;
        dt_mem_stats_get(&ms);
        res->steps = steps;
        res->seconds = dt_now() - t_start;
        res->modeled_s = dt_clock(w) - m_start;
        res->step_ms_median = median_ms(s.ms, steps);
        res->step_cpu_ms_median = median_ms(s.cpu_ms, steps);
        res->samples_per_s = (double)B * K / (res->step_ms_median / 1e3);
        res->bytes_per_step = (double)bytes / (double)steps;
        long k = steps < 10 ? steps : 10;
        double sum = 0;
        for (long i = 0; i < k; i++)
            sum += recent[i];
        res->final_loss = (float)(sum / (double)k);
        res->accuracy = acc;
        res->mem_peak = ms.peak_total;
        res->params_hash = fnv1a(s.m.params, s.m.num_params * sizeof(float));
        res->done = 1;
    }
    dp_free(w, &s);
    return r;
}

/* Runs a data-parallel job; res must be a shared mapping (see dp_alloc). */
static dt_result dp_run(const options *o, dp_job *j)
{
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = j->ranks;
    if (o->backend)
        DT_CHECK(dt_backend_parse(o->backend, &lo.backend));
    lo.net = o->net ? o->net : "none";
    lo.timeout_s = 120;
    memset(j->res, 0, sizeof *j->res);
    fflush(stdout); /* forked ranks must not inherit unwritten output */
    DT_CHECK(dt_launch(&lo, dp_rank, j));
    if (!j->res->done)
        return dt_fail(DT_ERR_INTERNAL, "--ranks: rank 0 reported no result");
    return DT_OK;
}

/* A result block shared with forked ranks. */
static dp_result *dp_alloc(void)
{
    void *p = mmap(NULL, sizeof(dp_result), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void dp_print_json(const options *o, const dp_job *j, const dt_model *m)
{
    const dp_result *r = j->res;
    printf("{\"model\": \"%s\", \"data\": \"%s\", \"params\": %zu, \"ranks\": %d, "
           "\"backend\": \"%s\", \"net\": \"%s\", \"batch_per_rank\": %ld, \"steps\": %ld, "
           "\"step_ms_median\": %.4f, \"step_cpu_ms_median\": %.4f, \"samples_per_s\": %.1f, "
           "\"bytes_per_step\": %.0f, "
           "\"modeled_s\": %.6f, \"final_loss\": %.6f, \"accuracy\": %.6f, "
           "\"mem_peak_bytes\": %zu, \"shard_optimizer\": %s, \"params_hash\": \"%016llx\", "
           "\"seconds\": %.3f}\n",
           o->model, o->data, m->num_params, j->ranks, o->backend ? o->backend : "thread",
           o->net ? o->net : "none", o->batch, r->steps, r->step_ms_median,
           r->step_cpu_ms_median, r->samples_per_s,
           r->bytes_per_step, r->modeled_s, (double)r->final_loss, (double)r->accuracy,
           r->mem_peak, o->shard_optimizer ? "true" : "false",
           (unsigned long long)r->params_hash, r->seconds);
}

/* --ranks without --showcase: one data-parallel run. */
static int dp_main(const options *o)
{
    dt_model m;
    dt_result r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return fail(r);
    dp_result *res = dp_alloc();
    char tag[32];
    snprintf(tag, sizeof tag, "%ld rank%s", o->ranks, o->ranks > 1 ? "s" : "");
    dp_job j = {o, (int)o->ranks, 0, 0, tag, res};
    r = res ? dp_run(o, &j) : dt_fail(DT_ERR_NOMEM, "--ranks: result block");
    if (r == DT_OK && o->json)
        dp_print_json(o, &j, &m);
    else if (r == DT_OK)
        printf("done: %d ranks (%s), %ld steps, %.3f ms/step (median), %.0f samples/s, "
               "%.0f bytes sent/step/rank, modeled %.3f s on %s, final loss %.4f, "
               "test accuracy %.4f\n", j.ranks, o->backend ? o->backend : "thread", res->steps,
               res->step_ms_median, res->samples_per_s, res->bytes_per_step, res->modeled_s,
               o->net ? o->net : "none", (double)res->final_loss, (double)res->accuracy);
    if (res)
        munmap(res, sizeof *res);
    dt_model_free(&m);
    return r == DT_OK ? 0 : fail(r);
}

/* --showcase (`make run`): the digits MLP on one rank with the global
 * batch, then on K ranks with batch B each (the same training, section 3 of
 * chapter 03), and a table side by side. The K-rank run's compute is
 * charged to the modeled clock at the per-sample cost measured on one rank,
 * so that its modeled time is what K such cores on the named network would
 * take, whatever this machine's core count. */
static int showcase(options *o)
{
    int K = (int)o->ranks;
    if (!o->model_set)
        o->model = SHOWCASE_MODEL;
    const char *net = o->net ? o->net : "ib100", *be = o->backend ? o->backend : "thread";
    double alpha, beta;
    dt_model m;
    dt_result r = dt_net_preset(net, &alpha, &beta);
    if (r == DT_OK)
        r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return fail(r);
    dp_result *res = dp_alloc();
    if (!res) {
        dt_model_free(&m);
        return fail(dt_fail(DT_ERR_NOMEM, "--showcase: result block"));
    }
    long epochs = o->epochs, B = o->batch, ncores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t params = m.num_params;
    printf("dttrain: the %s (%s, %zu parameters) with data parallelism\n"
           "  %d ranks (%s backend) x batch %ld = global batch %ld, SGD lr %g momentum %g, "
           "%ld epochs\n  modeled network: %s (alpha %g us, %g GB/s)\n\n", o->data, o->model,
           m.num_params, K, be, B, K * B, o->lr, o->momentum, epochs, net, alpha * 1e6,
           beta / 1e9);
    dt_model_free(&m);

    /* 1 rank with the global batch: the reference and the per-sample cost */
    options one = *o;
    one.batch = K * B;
    one.backend = "thread";
    one.net = "none";
    dp_result r1;
    dp_job j1 = {&one, 1, epochs, 0, "1 rank ", res};
    r = dp_run(&one, &j1);
    r1 = *res;
    /* K ranks with batch B, on the named network */
    options many = *o;
    many.net = net;
    char tag[32];
    snprintf(tag, sizeof tag, "%d ranks", K);
    double c = r1.step_ms_median / 1e3 / (double)(K * B);
    dp_job jk = {&many, K, epochs, c, tag, res};
    if (r == DT_OK) {
        printf("\n");
        r = dp_run(&many, &jk);
    }
    if (r == DT_OK) {
        const dp_result *rk = res;
        printf("\nsummary (%ld epochs of the %s training set, global batch %ld)\n", epochs,
               o->data, K * B);
        printf("  %-26s %9s %11s %18s %13s %13s\n", "", "accuracy", "wall time",
               "modeled on", "samples/s", "memory/rank");
        printf("  %-26s %9s %11s %18s %13s %13s\n", "", "", "", net, "(median)", "(peak)");
        char row[48];
        snprintf(row, sizeof row, "1 rank, batch %ld", K * B);
        printf("  %-26s %9.4f %9.2f s %16.3f s %13.0f %10.2f MB\n", row, (double)r1.accuracy, r1.seconds, r1.step_ms_median / 1e3 * (double)r1.steps,
               r1.samples_per_s, r1.mem_peak / 1e6);
        snprintf(row, sizeof row, "%d ranks (%s), batch %ld", K, be, B);
        printf("  %-26s %9.4f %9.2f s %16.3f s %13.0f %10.2f MB\n", row, (double)rk->accuracy,
               rk->seconds, rk->modeled_s, rk->samples_per_s, rk->mem_peak / 1e6);
        printf("  %-26s %9s %10.2fx %17.2fx %12.2fx\n", "speedup", "", r1.seconds / rk->seconds,
               r1.step_ms_median / 1e3 * (double)r1.steps / rk->modeled_s,
               rk->samples_per_s / r1.samples_per_s);
        printf("  each rank sent %.1f KB per step: one ring allreduce of the gradient (%zu "
               "floats),\n  2(K-1)/K x %zu bytes\n", rk->bytes_per_step / 1e3, params,
               4 * params);
        printf("  wall time: the %d ranks share this machine's %ld core%s; modeled time: each "
               "rank's compute\n  at the per-sample cost measured on 1 rank, on a core of its "
               "own, plus its messages on %s\n", K, ncores, ncores == 1 ? "" : "s", net);
    }
    munmap(res, sizeof *res);
    return r == DT_OK ? 0 : fail(r);
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
    if (o.showcase)
        return showcase(&o);
    if (o.distributed)
        return dp_main(&o);
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
