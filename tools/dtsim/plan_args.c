/* plan_args.c - the planner's flags (dtsim's plan and search modes), kept
 * apart from the network mode's (net.c): one table, read by the library's
 * options module (dt/cli.h) like every program's, so that a number, a
 * choice or a missing value is refused as everywhere else.
 *
 *   model    --model NAME (a published model: sets the six sizes), or
 *            --layers --hidden --heads --seq --vocab [--ffn 4h] [--dropout 1]
 *   layout   --tp --pp --dp --vpp (1 each) --sp 0|1 --micro-batch (1)
 *            --recompute none|selective|full --zero 0..3 --schedule 1f1b|gpipe
 *   step     --global-batch B  --dtype bf16|fp16|fp32  --cluster NAME
 *   output   --json  --explain
 *   search   --devices N  --top K (10; 0: every layout that fits)
 * Each flag takes "--flag value" or "--flag=value". None is a size in
 * bytes (a cluster's memory comes from its preset); a size flag added here
 * is DT_OPT_BYTES, read by dt_parse_bytes as in every tool. */
#include "dtsim.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* What the table writes: dtsim_opts, the size flags apart (they are laid
 * over --model's sizes once both are read), the choices as indices. */
typedef struct {
    dtsim_opts o;
    dt_sim_model sizes;
    int recompute, dtype, schedule;
    const char *model, *cluster;
} parsed;

enum where { PLAN = 1, SEARCH = 2, BOTH = 3 };

/* The choices' names, the core's (index = enum value); filled by plan_cli. */
static const char *recomputes[DT_SIM_NUM_RECOMPUTE + 1];
static const char *dtypes[DT_SIM_NUM_DTYPES + 1];
static const char *schedules[DT_SIM_NUM_SCHEDULES + 1];

typedef struct {
    const char *name;
    dt_opt_kind kind;
    size_t at;          /* offsetof(parsed, ...) */
    double lo, hi;      /* INT: the range */
    enum where where;
    const char *field;  /* the core's name for it (dt_sim_bad.field) */
    const char *help;
    const char *const *choices;
    int flags;
} flag;

#define MAXN 100000000
#define AT(f) offsetof(parsed, f)
#define SIZE_FLAG(name, f, lo, hi, help) \
    {name, DT_OPT_INT, AT(sizes.f), lo, hi, BOTH, #f, help, NULL, DT_OPT_NO_DEFAULT}

static const flag flags[] = {
    {"--model", DT_OPT_TEXT, AT(model), 0, 0, BOTH, "model", "a published model (sets the six "
     "sizes; a size flag overrides its own)", NULL, 0},
    SIZE_FLAG("--layers", layers, 1, MAXN, "transformer layers l"),
    SIZE_FLAG("--hidden", hidden, 1, MAXN, "hidden size h"),
    SIZE_FLAG("--heads", heads, 1, MAXN, "attention heads a"),
    SIZE_FLAG("--ffn", ffn, 1, MAXN, "MLP width f; default 4 x hidden"),
    SIZE_FLAG("--seq", seq, 1, MAXN, "sequence length s"),
    SIZE_FLAG("--vocab", vocab, 1, MAXN, "vocabulary V"),
    {"--dropout", DT_OPT_INT, AT(sizes.dropout), 0, 1, BOTH, "dropout", "1: dropout after "
     "attention, after the MLP and on the scores (GPT-3's and Megatron's runs)", NULL, 0},
    {"--global-batch", DT_OPT_INT, AT(o.layout.global_batch), 1, MAXN, BOTH, "global_batch",
     "sequences per step B", NULL, DT_OPT_NO_DEFAULT},
    {"--micro-batch", DT_OPT_INT, AT(o.layout.micro_batch), 1, MAXN, PLAN, "micro_batch",
     "sequences per micro-batch b", NULL, 0},
    {"--tp", DT_OPT_INT, AT(o.layout.tp), 1, MAXN, PLAN, "tp", "tensor-parallel ranks t", NULL,
     0},
    {"--pp", DT_OPT_INT, AT(o.layout.pp), 1, MAXN, PLAN, "pp", "pipeline stages p", NULL, 0},
    {"--dp", DT_OPT_INT, AT(o.layout.dp), 1, MAXN, PLAN, "dp", "data-parallel replicas d", NULL,
     0},
    {"--vpp", DT_OPT_INT, AT(o.layout.vpp), 1, MAXN, PLAN, "vpp", "model chunks per pipeline "
     "rank v (> 1: interleaved)", NULL, 0},
    {"--sp", DT_OPT_INT, AT(o.layout.sp), 0, 1, PLAN, "sp", "1: sequence parallelism inside "
     "the TP group", NULL, 0},
    {"--zero", DT_OPT_INT, AT(o.layout.zero), 0, 3, PLAN, "zero", "ZeRO stage over the DP "
     "group", NULL, 0},
    {"--recompute", DT_OPT_CHOICE, AT(recompute), 0, 0, PLAN, "recompute", "activation "
     "recomputation", recomputes, 0},
    {"--schedule", DT_OPT_CHOICE, AT(schedule), 0, 0, PLAN, "schedule", "the pipeline's",
     schedules, 0},
    {"--dtype", DT_OPT_CHOICE, AT(dtype), 0, 0, BOTH, "dtype", "training precision", dtypes, 0},
    {"--cluster", DT_OPT_TEXT, AT(cluster), 0, 0, BOTH, "cluster", "the devices and links (a "
     "preset, below)", NULL, 0},
    {"--devices", DT_OPT_INT, AT(o.devices), 1, 10000000, SEARCH, "devices", "search: the "
     "devices to lay out", NULL, DT_OPT_NO_DEFAULT},
    {"--top", DT_OPT_INT, AT(o.top), 0, MAXN, SEARCH, "top", "search: the layouts shown (0: "
     "every one that fits)", NULL, 0},
    {"--json", DT_OPT_FLAG, AT(o.json), 0, 0, BOTH, "json", "one JSON object", NULL, 0},
    {"--explain", DT_OPT_FLAG, AT(o.explain), 0, 0, PLAN, "explain", "each term beside its "
     "formula", NULL, 0},
};

#define NUM_FLAGS ((int)(sizeof flags / sizeof flags[0]))

/* The flag arg names ("--tp" or "--tp=8"), or -1. */
static int find_flag(const char *arg)
{
    size_t len = strcspn(arg, "=");
    for (int i = 0; i < NUM_FLAGS; i++)
        if (strlen(flags[i].name) == len && !strncmp(arg, flags[i].name, len))
            return i;
    return -1;
}

int dtsim_is_plan_flag(const char *arg) { return find_flag(arg) >= 0; }

static const char *flag_of_field(const char *field)
{
    for (int i = 0; i < NUM_FLAGS; i++)
        if (!strcmp(flags[i].field, field))
            return flags[i].name;
    return field; /* a cluster's figure: no flag sets it */
}

int dtsim_refused(const dt_sim_bad *bad)
{
    fprintf(stderr, "dtsim: %s %g: %s", flag_of_field(bad->field), bad->value, bad->need);
    if (bad->other)
        fprintf(stderr, " (%s %g)", flag_of_field(bad->other), bad->other_value);
    fprintf(stderr, "\n");
    return 2;
}

/* The defaults: one device, --ffn 4 x hidden (after the parse), dropout. */
static void defaults(parsed *p)
{
    memset(p, 0, sizeof *p);
    p->o.layout = (dt_sim_layout){1, 1, 1, 1, 0, 0, 1, DT_SIM_RECOMPUTE_NONE, 0, DT_SIM_BF16,
                                  DT_SIM_1F1B};
    p->sizes.dropout = 1;
    p->o.top = 10;
    p->recompute = (int)p->o.layout.recompute;
    p->dtype = (int)p->o.layout.dtype;
    p->schedule = (int)p->o.layout.schedule;
}

/* The table on p's variables, with --help's text (more: the presets). */
static dt_cli plan_cli(parsed *p, dt_opt opts[NUM_FLAGS], const char *more)
{
    for (int i = 0; i < DT_SIM_NUM_RECOMPUTE; i++)
        recomputes[i] = dt_sim_recompute_name((dt_sim_recompute)i);
    for (int i = 0; i < DT_SIM_NUM_DTYPES; i++)
        dtypes[i] = dt_sim_dtype_name((dt_sim_dtype)i);
    for (int i = 0; i < DT_SIM_NUM_SCHEDULES; i++)
        schedules[i] = dt_sim_schedule_name((dt_sim_schedule)i);
    for (int i = 0; i < NUM_FLAGS; i++) {
        const flag *f = &flags[i];
        opts[i] = (dt_opt){f->name, f->kind, (char *)p + f->at, .help = f->help, .lo = f->lo,
                           .hi = f->hi, .flags = f->flags, .choices = f->choices,
                           .arg = f->kind == DT_OPT_TEXT ? "NAME" : NULL};
    }
    return (dt_cli){
        .prog = "dtsim", .opts = opts, .nopts = NUM_FLAGS, .more = more,
        .synopsis = "(--model NAME | --layers L --hidden H --heads A --seq S --vocab V\n"
                    "             [--ffn F] [--dropout 0|1]) --global-batch B --cluster NAME\n"
                    "             [--tp T] [--pp P] [--dp D] [--vpp V] [--sp 0|1] [--micro-batch b]\n"
                    "             [--recompute none|selective|full] [--zero 0..3]\n"
                    "             [--dtype bf16|fp16|fp32] [--schedule 1f1b|gpipe] [--json | --explain]\n"
                    "       dtsim search --devices N --cluster NAME (--model NAME | model flags)\n"
                    "             --global-batch B [--dtype T] [--top K] [--json]",
        .about = "The planner: memory per device by kind, compute, each communication by group\n"
                 "and algorithm, the pipeline bubble, step time, tokens/s, model TFLOP/s per\n"
                 "device and MFU of one training step, and whether it fits; --explain gives\n"
                 "each term's formula. `dtsim search` ranks every layout that fits."};
}

/* "a, b, c": the presets' names, for --help and the refusals. */
static void list_clusters(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; dt_sim_cluster_at(i) && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                                dt_sim_cluster_at(i)->name);
}

static void list_models(char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; dt_sim_model_preset_name(i) && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "",
                                dt_sim_model_preset_name(i));
}

void dtsim_plan_usage(FILE *out)
{
    char clusters[512], models[512], more[1200];
    list_clusters(clusters, sizeof clusters);
    list_models(models, sizeof models);
    snprintf(more, sizeof more, "clusters: %s\nmodels: %s", clusters, models);
    parsed p;
    defaults(&p);
    dt_opt opts[NUM_FLAGS];
    dt_cli cli = plan_cli(&p, opts, more);
    dt_cli_usage(&cli, out);
}

int dtsim_plan_parse(int argc, char **argv, int search, dtsim_opts *out)
{
    parsed p;
    defaults(&p);
    dt_opt opts[NUM_FLAGS];
    dt_cli cli = plan_cli(&p, opts, NULL);
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    for (int i = 0; i < NUM_FLAGS; i++)
        if (cli.given[i] && !(flags[i].where & (search ? SEARCH : PLAN)))
            return dt_cli_fail(&cli, "%s %s", flags[i].name,
                               !search                         ? "belongs to `dtsim search`"
                               : flags[i].kind == DT_OPT_FLAG ? "does not apply to `dtsim search`"
                                                               : "is chosen by the search: leave "
                                                                 "it out");
    char list[512];
    if (p.cluster && !(p.o.cluster = dt_sim_cluster_preset(p.cluster))) {
        list_clusters(list, sizeof list);
        return dt_cli_fail(&cli, "--cluster '%s': unknown cluster (%s)", p.cluster, list);
    }
    if (p.model && !dt_sim_model_preset(p.model)) {
        list_models(list, sizeof list);
        return dt_cli_fail(&cli, "--model '%s': unknown model (%s)", p.model, list);
    }
    if (!p.o.cluster)
        return dt_cli_fail(&cli, "--cluster is needed");
    /* --model's sizes, then each size flag given over its own */
    p.o.model = p.model ? *dt_sim_model_preset(p.model) : (dt_sim_model){.dropout = 1};
    p.o.model_name = p.model;
    const dt_sim_model *z = &p.sizes;
#define OVER(f)                          \
    if (dt_cli_given(&cli, &z->f))       \
        p.o.model.f = z->f
    OVER(layers);
    OVER(hidden);
    OVER(heads);
    OVER(ffn);
    OVER(seq);
    OVER(vocab);
    OVER(dropout);
#undef OVER
    if (!p.model) {
        static const char *const need[] = {"--layers", "--hidden", "--heads", "--seq", "--vocab"};
        for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
            if (!cli.given[find_flag(need[i])])
                return dt_cli_fail(&cli, "%s is needed (or --model NAME)", need[i]);
    }
    if (!cli.given[find_flag("--global-batch")])
        return dt_cli_fail(&cli, "--global-batch is needed");
    if (search && !cli.given[find_flag("--devices")])
        return dt_cli_fail(&cli, "--devices is needed");
    if (p.o.json && p.o.explain)
        return dt_cli_fail(&cli, "--json and --explain go one at a time");
    if (!cli.given[find_flag("--ffn")])
        p.o.model.ffn = 4 * p.o.model.hidden; /* > 1e8 is the core's to refuse */
    p.o.layout.recompute = (dt_sim_recompute)p.recompute;
    p.o.layout.dtype = (dt_sim_dtype)p.dtype;
    p.o.layout.schedule = (dt_sim_schedule)p.schedule;
    *out = p.o;
    return DT_CLI_GO;
}
