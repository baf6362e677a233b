/* options.c - dttrain's command line: one table of options with their
 * ranges, read by the library's options module (dt/cli.h: every bad value
 * named with its option, exit status 2; --help from the table), and the
 * checks of options that go together. */
#include "dttrain.h"

#include "dt/cli.h"

#include <string.h>

static const char *const datas[] = {"digits", "synthetic", "spirals", NULL};
static const char *const optims[] = {"sgd", "adamw", NULL};
static const char *const schedules[] = {"gpipe", "1f1b", "interleaved", "zbh1", NULL};

/* --tp, --pp and what goes with them (m: the model; after --ranks is set). */
static int check_hybrid(options *o, const dt_model *m, const dt_cli *cli)
{
    int hybrid = o->tp > 1 || o->pp > 1, gpt = m->kind == DT_MODEL_GPT;
    long per = o->tp * o->pp, stages = o->pp * (o->vpp ? o->vpp : 1);
    if ((!hybrid || o->pp == 1) && (o->schedule || o->vpp))
        return dt_cli_fail(cli, "%s: goes with --pp (a pipeline)", o->schedule ? "--schedule" :
                           "--vpp");
    if (!hybrid)
        return 0;
    if (o->pp > 1 && !o->schedule)
        o->schedule = "1f1b";
    const char *sch = o->schedule ? o->schedule : ""; /* one of schedules[]: read by the table */
    int inter = !strcmp(sch, "interleaved");
    if (o->vpp && !inter)
        return dt_cli_fail(cli, "--vpp %ld: goes with --schedule interleaved", o->vpp);
    if (inter && !o->vpp)
        o->vpp = 2, stages = 2 * o->pp;
    if (inter && o->vpp < 2)
        return dt_cli_fail(cli, "--vpp 1: the interleaved schedule runs 2 or more stages per "
                           "rank");
    if (inter && o->micro_batches % o->pp)
        return dt_cli_fail(cli, "--micro-batches %ld: the interleaved schedule needs a multiple "
                           "of --pp %ld", o->micro_batches, o->pp);
    if (o->tp > 1 && !gpt)
        return dt_cli_fail(cli, "--tp %ld: tensor parallelism splits a GPT's heads, MLP and "
                           "vocabulary; --model %s is not a GPT", o->tp, o->model);
    if (o->tp > 1 && (m->gpt.heads % (size_t)o->tp || m->gpt.vocab % (size_t)o->tp))
        return dt_cli_fail(cli, "--tp %ld: the GPT's %zu %s do not split over %ld ranks", o->tp,
                           m->gpt.heads % (size_t)o->tp ? m->gpt.heads : m->gpt.vocab,
                           m->gpt.heads % (size_t)o->tp ? "heads" : "vocabulary entries", o->tp);
    if (stages > m->num_layers)
        return dt_cli_fail(cli, "--pp %ld%s: %ld stages of a %d-layer model (a stage needs a "
                           "layer)", o->pp, inter ? " --vpp" : "", stages, m->num_layers);
    if (!strcmp(sch, "zbh1") && gpt)
        return dt_cli_fail(cli, "--schedule zbh1: its split backward (W steps) runs stages of "
                           "linear layers; a GPT's blocks are not split");
    if (o->ranks % per)
        return dt_cli_fail(cli, "--ranks %ld: not a multiple of --tp %ld x --pp %ld (a "
                           "data-parallel replica holds tp x pp ranks)", o->ranks, o->tp, o->pp);
    if (o->fsdp || o->showcase || o->dump || (o->shard_optimizer && o->pp > 1))
        return dt_cli_fail(cli, "--%s: not with --tp or --pp%s", o->fsdp ? "fsdp" :
                           o->showcase ? "showcase" : o->dump ? "dump" : "shard-optimizer",
                           o->shard_optimizer && !o->fsdp ? " (a pipeline updates its own "
                           "stages)" : "");
    return 0;
}

/* The options that must go together, and the values only the library can
 * judge (the model spec, the network). */
static int check(options *o, const dt_cli *cli)
{
    dt_model m;
    if (dt_model_create_spec(&m, o->model, 1) != DT_OK)
        return dt_cli_fail(cli, "--model %s: %s", o->model, dt_last_error());
    int gpt = m.kind == DT_MODEL_GPT;
    if (o->ranks < 0 && (o->tp > 1 || o->pp > 1))
        o->ranks = o->tp * o->pp;
    int bad = check_hybrid(o, &m, cli);
    dt_model_free(&m);
    if (bad)
        return bad;
    if (gpt && strcmp(o->data, "synthetic"))
        return dt_cli_fail(cli, "--data %s: a GPT (--model %s) takes --data synthetic "
                           "(sequences)", o->data, o->model);
    if (o->batch % o->micro_batches)
        return dt_cli_fail(cli, "--micro-batches %ld does not divide --batch %ld",
                           o->micro_batches, o->batch);
    o->distributed = o->showcase || o->ranks > 0 || o->backend || o->net;
    if (o->ranks < 0)
        o->ranks = o->showcase ? 4 : 1;
    if (o->dump && (o->distributed || gpt))
        return dt_cli_fail(cli, "--dump %s: one rank (no --ranks, --backend, --net, "
                           "--showcase) and an MLP model", o->dump);
    if (o->time_budget > 0 && o->distributed)
        return dt_cli_fail(cli, "--time-budget %g: one rank only (ranks stopping on "
                           "their own clocks would leave the others waiting)", o->time_budget);
    if ((o->no_prefetch || o->no_reshard) && !o->fsdp)
        return dt_cli_fail(cli, "%s: goes with --fsdp", o->no_prefetch ?
                           "--no-prefetch" : "--no-reshard");
    if (o->fsdp && (o->shard_optimizer || o->showcase || o->micro_batches > 1 ||
                    !o->distributed || o->dump))
        return dt_cli_fail(cli, "--fsdp: %s", o->shard_optimizer ? "shards the "
                           "optimizer already (no --shard-optimizer)" : o->showcase ? "not with "
                           "--showcase" : o->micro_batches > 1 ? "one micro-batch a step (no "
                           "--micro-batches)" : o->dump ? "not with --dump" : "needs --ranks "
                           "(its ranks share the parameters)");
    if (o->showcase && o->ranks < 2)
        return dt_cli_fail(cli, "--ranks %ld: --showcase compares 1 rank with 2 or "
                           "more", o->ranks);
    return 0;
}

int dttrain_parse(int argc, char **argv, options *o)
{
    *o = (options){.model = "mlp:64,128,10", .batch = 32, .micro_batches = 1, .steps = 600,
                   .eval_every = 100, .threads = 1, .lr = 0.05, .momentum = 0.9,
                   .weight_decay = -1, .seed = 1, .ranks = -1, .tp = 1, .pp = 1};
    int data = 0, optim = 0, schedule = 1; /* 1f1b */
    dt_backend backend = DT_BACKEND_THREAD;
    const dt_opt opts[] = {
        {"--model", DT_OPT_TEXT, &o->model, .help = "mlp:W0,W1,...,Wn | "
         "deep:IN,WIDTH,BLOCKS,CLASSES | gpt:VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS", .arg = "SPEC"},
        {"--data", DT_OPT_CHOICE, &data, .help = "synthetic: blobs for the MLPs, next-token "
         "sequences for GPT, which takes only it", .choices = datas},
        {"--batch", DT_OPT_LONG, &o->batch, .help = "samples per step, per rank", .lo = 1,
         .hi = 1 << 20},
        {"--micro-batches", DT_OPT_LONG, &o->micro_batches, .help = "split each batch into N "
         "micro-batches whose gradients add up before one update (gradient accumulation)",
         .lo = 1, .hi = 1 << 20},
        {"--steps", DT_OPT_LONG, &o->steps, .help = "training steps", .lo = 1, .hi = 1e9},
        {"--epochs", DT_OPT_LONG, &o->epochs, .help = "train N epochs of the training set "
         "instead of --steps (with --showcase: default 10)", .lo = 1, .hi = 1e6,
         .flags = DT_OPT_NO_DEFAULT},
        {"--lr", DT_OPT_REAL, &o->lr, .help = "learning rate", .lo = 0, .hi = 1e6,
         .flags = DT_OPT_OPEN_LO}, /* a learning rate of 0 trains nothing */
        {"--optim", DT_OPT_CHOICE, &optim, .help = "the optimizer", .choices = optims},
        {"--momentum", DT_OPT_REAL, &o->momentum, .help = "SGD momentum", .lo = 0, .hi = 1,
         .flags = DT_OPT_OPEN_HI},
        {"--weight-decay", DT_OPT_REAL, &o->weight_decay, .help = "(default 0 for SGD, 0.01 "
         "for AdamW)", .lo = 0, .hi = 1e6, .flags = DT_OPT_NO_DEFAULT},
        {"--no-fuse", DT_OPT_FLAG, &o->no_fuse, .help = "plain SGD through the gradient buffer, "
         "not folded into the backward's products (fused: the default where it applies, plain "
         "SGD on one rank)"},
        {"--reference", DT_OPT_FLAG, &o->reference, .help = "the reference code: batch-major "
         "layers and the optimizer after the backward, as the chapters describe them "
         "(default: the fastest path that gives the same results)"},
        {"--seed", DT_OPT_LONG, &o->seed, .help = "parameters and data order", .lo = 0,
         .hi = 9007199254740992.0}, /* 2^53: exact in a double */
        {"--threads", DT_OPT_LONG, &o->threads, .help = "OpenBLAS threads", .lo = 1, .hi = 1024},
        {"--eval-every", DT_OPT_LONG, &o->eval_every, .help = "progress line with test accuracy "
         "every N steps (0: none)", .lo = 0, .hi = 1e9},
        {"--time-budget", DT_OPT_REAL, &o->time_budget, .help = "stop after S seconds (one rank; "
         "0: none)", .lo = 0, .hi = 1e9, .arg = "S"},
        {"--json", DT_OPT_FLAG, &o->json, .help = "print one JSON object: step_ms_median, "
         "samples_per_s, final_loss, accuracy, update, ..."},
        {"--dump", DT_OPT_FILE, &o->dump, .help = "write one step's parameters, batch and "
         "gradients, then exit"},
        {"--ranks", DT_OPT_LONG, &o->ranks, .help = "data parallelism (chapter 03): ranks, each "
         "taking --batch samples per step (default 1; 4 with --showcase; T x P with --tp, "
         "--pp)", .lo = 1, .hi = DT_MAX_RANKS, .flags = DT_OPT_NO_DEFAULT},
        {"--backend", DT_OPT_BACKEND, &backend, .help = "thread | proc | mpi (under mpirun -np "
         "RANKS dttrain --backend mpi ...)"},
        {"--net", DT_OPT_TOPO, &o->net, .help = "modeled network (default none; ib100 with "
         "--showcase)", .flags = DT_OPT_NO_DEFAULT},
        {"--showcase", DT_OPT_FLAG, &o->showcase, .help = "train on 1 rank with the global "
         "batch, then on --ranks ranks, and compare them (what `make run` does; its model: "
         SHOWCASE_MODEL " unless --model)"},
        {"--shard-optimizer", DT_OPT_FLAG, &o->shard_optimizer, .help = "each rank keeps the "
         "optimizer state of, and updates, only 1/K of the parameters (reduce-scatter, step, "
         "allgather: ZeRO stage 1, chapter 08) instead of one allreduce; the same parameters"},
        {"--fsdp", DT_OPT_FLAG, &o->fsdp, .help = "fully sharded data parallelism (chapter 09): "
         "each rank keeps 1/K of every layer's parameters, gradients and optimizer state; a "
         "layer is gathered before it runs (the next one prefetched) and freed after its "
         "forward; one micro-batch"},
        {"--no-prefetch", DT_OPT_FLAG, &o->no_prefetch, .help = "with --fsdp: gather each layer "
         "only when it runs (ZeRO-3)"},
        {"--no-reshard", DT_OPT_FLAG, &o->no_reshard, .help = "with --fsdp: keep a layer from "
         "its forward to its backward (the whole parameters at the peak, as ZeRO-2; 2 psi, "
         "not 3)"},
        {"--tp", DT_OPT_LONG, &o->tp, .help = "tensor and pipeline parallelism (chapters 07, 06, "
         "13; --ranks = DP x TP x PP): T ranks share every layer of a GPT (Megatron: heads, MLP "
         "and vocabulary split), consecutive ranks", .lo = 1, .hi = 1024, .arg = "T"},
        {"--pp", DT_OPT_LONG, &o->pp, .help = "the model's layers cut into P stages, a pipeline; "
         "--ranks defaults to T x P; the rest replicates it (DP)", .lo = 1,
         .hi = DT_SCHED_MAX_RANKS, .arg = "P"},
        {"--schedule", DT_OPT_CHOICE, &schedule, .help = "the pipeline's; its micro-batches are "
         "--micro-batches", .choices = schedules},
        {"--vpp", DT_OPT_LONG, &o->vpp, .help = "with --schedule interleaved: stages per rank "
         "(default 2)", .lo = 1, .hi = DT_SCHED_MAX_CHUNKS, .arg = "V",
         .flags = DT_OPT_NO_DEFAULT},
    };
    dt_cli cli = {.prog = "dttrain", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0])};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st == 0 ? 1 : 2;
    o->data = datas[data];
    o->optim = optims[optim];
    o->backend = dt_cli_given(&cli, &backend) ? dt_backend_name(backend) : NULL;
    o->model_set = dt_cli_given(&cli, &o->model);
    o->schedule = dt_cli_given(&cli, &schedule) ? schedules[schedule] : NULL;
    if (o->showcase && !o->model_set)
        o->model = SHOWCASE_MODEL;
    return check(o, &cli);
}
