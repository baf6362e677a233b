/* options.c - dttrain's command line: one table of options with their
 * ranges, a parser that names the option and the value of every bad one
 * (exit status 2), and the checks of options that go together. */
#include "dttrain.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dttrain [options]\n"
            "  --model SPEC     mlp:W0,W1,...,Wn | deep:IN,WIDTH,BLOCKS,CLASSES |\n"
            "                   gpt:VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS (default mlp:64,128,10)\n"
            "  --data SET       digits | synthetic | spirals (default digits; synthetic: blobs\n"
            "                   for the MLPs, next-token sequences for GPT, which takes only it)\n"
            "  --batch N        samples per step, per rank (default 32)\n"
            "  --micro-batches N  split each batch into N micro-batches whose gradients\n"
            "                   add up before one update (gradient accumulation; default 1)\n"
            "  --steps N        training steps (default 600)\n"
            "  --epochs N       train N epochs of the training set instead of --steps\n"
            "                   (with --showcase: default 10)\n"
            "  --lr X           learning rate (default 0.05)\n"
            "  --optim NAME     sgd | adamw (default sgd)\n"
            "  --momentum X     SGD momentum, in [0, 1) (default 0.9)\n"
            "  --weight-decay X (default 0 for SGD, 0.01 for AdamW)\n"
            "  --no-fuse        plain SGD through the gradient buffer, not folded into the\n"
            "                   backward's products (fused: the default where it applies,\n"
            "                   plain SGD on one rank)\n"
            "  --reference      the reference code: batch-major layers and the optimizer\n"
            "                   after the backward, as the chapters describe them (default:\n"
            "                   the fastest path that gives the same results)\n"
            "  --seed N         parameters and data order (default 1)\n"
            "  --threads N      OpenBLAS threads (default 1)\n"
            "  --eval-every N   progress line with test accuracy every N steps (default 100;\n"
            "                   0: none)\n"
            "  --time-budget S  stop after S seconds (one rank; default: none)\n"
            "  --json           print one JSON object: step_ms_median, samples_per_s,\n"
            "                   final_loss, accuracy, update, ...\n"
            "  --dump FILE      write one step's parameters, batch and gradients, then exit\n"
            "data parallelism (chapter 03): each rank takes --batch samples per step\n"
            "  --ranks N        ranks (default 1; 4 with --showcase)\n"
            "  --backend B      thread | proc | mpi (under mpirun -np RANKS; default thread)\n"
            "  --net NET        modeled network: none | nvlink | pcie4 | ib100 | ib400 |\n"
            "                   eth10 | eth100 | alpha=2us,bw=10GB/s, or a topology:\n"
            "                   dgx-a100 | dgx-h100 | laptop | nodes=2,per_node=4,\n"
            "                   intra=nvlink,inter=ib100 (default none; ib100 with\n"
            "                   --showcase)\n"
            "  --showcase       train on 1 rank with the global batch, then on --ranks\n"
            "                   ranks, and compare them (what `make run` does; its\n"
            "                   model: " SHOWCASE_MODEL " unless --model)\n"
            "  --shard-optimizer  each rank keeps the optimizer state of, and updates, only\n"
            "                   1/K of the parameters (reduce-scatter, step, allgather:\n"
            "                   ZeRO stage 1, chapter 08) instead of one allreduce; the same\n"
            "                   parameters\n"
            "  --fsdp           fully sharded data parallelism (chapter 09): each rank keeps\n"
            "                   1/K of every layer's parameters, gradients and optimizer\n"
            "                   state; a layer is gathered before it runs (the next one\n"
            "                   prefetched) and freed after its forward; one micro-batch\n"
            "  --no-prefetch    with --fsdp: gather each layer only when it runs (ZeRO-3)\n"
            "  --no-reshard     with --fsdp: keep a layer from its forward to its backward\n"
            "                   (the whole parameters at the peak, as ZeRO-2; 2 psi, not 3)\n");
}

typedef enum { FLAG, INT, REAL, TEXT } kind;

enum { CLOSED = 0, LO_OPEN = 1, HI_OPEN = 2 }; /* which ends of a REAL range are outside */

typedef struct {
    const char *name;
    kind kind;
    size_t field;   /* offsetof(options, ...) */
    double lo, hi;  /* INT and REAL: the range */
    int open;       /* REAL: LO_OPEN, HI_OPEN */
} spec;

#define AT(f) offsetof(options, f)
static const spec specs[] = {
    {"--json", FLAG, AT(json), 0, 0, 0},
    {"--no-fuse", FLAG, AT(no_fuse), 0, 0, 0},
    {"--reference", FLAG, AT(reference), 0, 0, 0},
    {"--showcase", FLAG, AT(showcase), 0, 0, 0},
    {"--shard-optimizer", FLAG, AT(shard_optimizer), 0, 0, 0},
    {"--fsdp", FLAG, AT(fsdp), 0, 0, 0},
    {"--no-prefetch", FLAG, AT(no_prefetch), 0, 0, 0},
    {"--no-reshard", FLAG, AT(no_reshard), 0, 0, 0},
    {"--model", TEXT, AT(model), 0, 0, 0},
    {"--data", TEXT, AT(data), 0, 0, 0},
    {"--optim", TEXT, AT(optim), 0, 0, 0},
    {"--dump", TEXT, AT(dump), 0, 0, 0},
    {"--backend", TEXT, AT(backend), 0, 0, 0},
    {"--net", TEXT, AT(net), 0, 0, 0},
    {"--batch", INT, AT(batch), 1, 1 << 20, 0},
    {"--micro-batches", INT, AT(micro_batches), 1, 1 << 20, 0},
    {"--steps", INT, AT(steps), 1, 1e9, 0},
    {"--epochs", INT, AT(epochs), 1, 1e6, 0},
    {"--eval-every", INT, AT(eval_every), 0, 1e9, 0},
    {"--threads", INT, AT(threads), 1, 1024, 0},
    {"--ranks", INT, AT(ranks), 1, DT_MAX_RANKS, 0},
    {"--seed", INT, AT(seed), 0, 9007199254740992.0, 0}, /* 2^53: exact in a double */
    {"--lr", REAL, AT(lr), 0, 1e6, LO_OPEN}, /* a learning rate of 0 trains nothing */
    {"--momentum", REAL, AT(momentum), 0, 1, HI_OPEN},
    {"--weight-decay", REAL, AT(weight_decay), 0, 1e6, 0},
    {"--time-budget", REAL, AT(time_budget), 0, 1e9, 0},
};
#undef AT

/* 0, or prints why s is no value of sp and returns 2. */
static int set_value(options *o, const spec *sp, const char *s)
{
    char *at = (char *)o + sp->field, *end;
    errno = 0;
    if (sp->kind == TEXT) {
        *(const char **)at = s;
        return 0;
    }
    if (sp->kind == INT) {
        long long v = strtoll(s, &end, 10);
        if (end == s || *end || errno || v < sp->lo || (double)v > sp->hi) {
            fprintf(stderr, "dttrain: %s %s: expected a whole number in [%.0f, %.0f]\n",
                    sp->name, s, sp->lo, sp->hi);
            return 2;
        }
        if (sp->field == offsetof(options, seed))
            o->seed = (unsigned long long)v;
        else
            *(long *)at = (long)v;
        return 0;
    }
    double v = strtod(s, &end);
    int below = sp->open & LO_OPEN ? !(v > sp->lo) : !(v >= sp->lo);
    int above = sp->open & HI_OPEN ? !(v < sp->hi) : !(v <= sp->hi);
    if (end == s || *end || errno || !isfinite(v) || above || below) {
        fprintf(stderr, "dttrain: %s %s: expected a number in %s%g, %g%s\n", sp->name, s,
                sp->open & LO_OPEN ? "(" : "[", sp->lo, sp->hi, sp->open & HI_OPEN ? ")" : "]");
        return 2;
    }
    *(double *)at = v;
    return 0;
}

/* 0 when v is a, b or c (c may be NULL), else says so and returns 2. */
static int one_of(const char *opt, const char *v, const char *a, const char *b, const char *c)
{
    if (!strcmp(v, a) || !strcmp(v, b) || (c && !strcmp(v, c)))
        return 0;
    if (c)
        fprintf(stderr, "dttrain: %s %s: expected %s, %s or %s\n", opt, v, a, b, c);
    else
        fprintf(stderr, "dttrain: %s %s: expected %s or %s\n", opt, v, a, b);
    return 2;
}

/* The options that must go together, and the values only the library can
 * judge (the model spec, the network). */
static int check(options *o)
{
    dt_backend be;
    dt_net_topo topo;
    if (one_of("--data", o->data, "digits", "synthetic", "spirals") ||
        one_of("--optim", o->optim, "sgd", "adamw", NULL))
        return 2;
    if (o->backend && (dt_backend_parse(o->backend, &be) != DT_OK || be == DT_BACKEND_NCCL))
        return fprintf(stderr, "dttrain: --backend %s: expected thread, proc or mpi (under "
                       "mpirun)\n", o->backend), 2;
    if (o->backend && be == DT_BACKEND_MPI && !getenv("OMPI_COMM_WORLD_SIZE") &&
        !getenv("PMI_SIZE"))
        return fprintf(stderr, "dttrain: --backend mpi: expected thread or proc outside an MPI "
                       "job (mpirun -np RANKS dttrain --backend mpi ...)\n"), 2;
    if (o->net && dt_net_topo_parse(o->net, &topo) != DT_OK)
        return fprintf(stderr, "dttrain: --net %s: %s\n", o->net, dt_last_error()), 2;
    dt_model m;
    if (dt_model_create_spec(&m, o->model, 1) != DT_OK)
        return fprintf(stderr, "dttrain: --model %s: %s\n", o->model, dt_last_error()), 2;
    int gpt = m.kind == DT_MODEL_GPT;
    dt_model_free(&m);
    if (gpt && strcmp(o->data, "synthetic"))
        return fprintf(stderr, "dttrain: --data %s: a GPT (--model %s) takes --data synthetic "
                       "(sequences)\n", o->data, o->model), 2;
    if (o->batch % o->micro_batches)
        return fprintf(stderr, "dttrain: --micro-batches %ld does not divide --batch %ld\n",
                       o->micro_batches, o->batch), 2;
    o->distributed = o->showcase || o->ranks > 0 || o->backend || o->net;
    if (o->ranks < 0)
        o->ranks = o->showcase ? 4 : 1;
    if (o->dump && (o->distributed || gpt))
        return fprintf(stderr, "dttrain: --dump %s: one rank (no --ranks, --backend, --net, "
                       "--showcase) and an MLP model\n", o->dump), 2;
    if (o->time_budget > 0 && o->distributed)
        return fprintf(stderr, "dttrain: --time-budget %g: one rank only (ranks stopping on "
                       "their own clocks would leave the others waiting)\n", o->time_budget), 2;
    if ((o->no_prefetch || o->no_reshard) && !o->fsdp)
        return fprintf(stderr, "dttrain: %s: goes with --fsdp\n", o->no_prefetch ?
                       "--no-prefetch" : "--no-reshard"), 2;
    if (o->fsdp && (o->shard_optimizer || o->showcase || o->micro_batches > 1 ||
                    !o->distributed || o->dump))
        return fprintf(stderr, "dttrain: --fsdp: %s\n", o->shard_optimizer ? "shards the "
                       "optimizer already (no --shard-optimizer)" : o->showcase ? "not with "
                       "--showcase" : o->micro_batches > 1 ? "one micro-batch a step (no "
                       "--micro-batches)" : o->dump ? "not with --dump" : "needs --ranks "
                       "(its ranks share the parameters)"), 2;
    if (o->showcase && o->ranks < 2)
        return fprintf(stderr, "dttrain: --ranks %ld: --showcase compares 1 rank with 2 or "
                       "more\n", o->ranks), 2;
    return 0;
}

int dttrain_parse(int argc, char **argv, options *o)
{
    *o = (options){.model = "mlp:64,128,10", .data = "digits", .optim = "sgd", .batch = 32,
                   .micro_batches = 1, .steps = 600, .eval_every = 100, .threads = 1,
                   .lr = 0.05, .momentum = 0.9, .weight_decay = -1, .seed = 1, .ranks = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const spec *sp = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        for (size_t k = 0; k < sizeof specs / sizeof specs[0] && !sp; k++)
            sp = strcmp(a, specs[k].name) ? NULL : &specs[k];
        if (!sp) {
            fprintf(stderr, "dttrain: unknown option %s\nusage: dttrain [options] "
                    "(dttrain --help lists them)\n", a);
            return 2;
        }
        if (sp->kind == FLAG) {
            *(int *)((char *)o + sp->field) = 1;
            continue;
        }
        if (i + 1 == argc) {
            fprintf(stderr, "dttrain: %s needs a value\n", a);
            return 2;
        }
        if (set_value(o, sp, argv[++i]))
            return 2;
        o->model_set |= sp->field == offsetof(options, model);
    }
    if (o->showcase && !o->model_set)
        o->model = SHOWCASE_MODEL;
    return check(o);
}
