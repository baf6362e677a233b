/* plan_args.c - the planner's flags (dtsim's plan and search modes), kept
 * apart from the network mode's parsing (net.c): one table, one loop.
 *
 *   model    --model NAME (a published model: sets the six sizes), or
 *            --layers --hidden --heads --seq --vocab [--ffn 4h] [--dropout 1]
 *   layout   --tp --pp --dp --vpp (1 each) --sp 0|1 --micro-batch (1)
 *            --recompute none|selective|full --zero 0..3 --schedule 1f1b|gpipe
 *   step     --global-batch B  --dtype bf16|fp16|fp32  --cluster NAME
 *   output   --json  --explain
 *   search   --devices N  --top K (10; 0: every layout that fits)
 * Each flag takes "--flag value" or "--flag=value". */
#include "dtsim.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum kind { INT, ENUM_RECOMPUTE, ENUM_DTYPE, ENUM_SCHEDULE, CLUSTER, MODEL, SWITCH };
enum where { PLAN = 1, SEARCH = 2, BOTH = 3 };

typedef struct {
    const char *name;
    enum kind kind;
    enum where where;
    size_t offset; /* of the int in dtsim_opts (INT, SWITCH) */
    long min, max;
    const char *field; /* the core's name for it (dt_sim_bad.field) */
} flag;

#define MAXN 100000000L
#define AT(f) offsetof(dtsim_opts, f)

static const flag flags[] = {
    {"--model", MODEL, BOTH, 0, 0, 0, "model"},
    {"--layers", INT, BOTH, AT(model.layers), 1, MAXN, "layers"},
    {"--hidden", INT, BOTH, AT(model.hidden), 1, MAXN, "hidden"},
    {"--heads", INT, BOTH, AT(model.heads), 1, MAXN, "heads"},
    {"--ffn", INT, BOTH, AT(model.ffn), 1, MAXN, "ffn"},
    {"--seq", INT, BOTH, AT(model.seq), 1, MAXN, "seq"},
    {"--vocab", INT, BOTH, AT(model.vocab), 1, MAXN, "vocab"},
    {"--dropout", INT, BOTH, AT(model.dropout), 0, 1, "dropout"},
    {"--global-batch", INT, BOTH, AT(layout.global_batch), 1, MAXN, "global_batch"},
    {"--micro-batch", INT, PLAN, AT(layout.micro_batch), 1, MAXN, "micro_batch"},
    {"--tp", INT, PLAN, AT(layout.tp), 1, MAXN, "tp"},
    {"--pp", INT, PLAN, AT(layout.pp), 1, MAXN, "pp"},
    {"--dp", INT, PLAN, AT(layout.dp), 1, MAXN, "dp"},
    {"--vpp", INT, PLAN, AT(layout.vpp), 1, MAXN, "vpp"},
    {"--sp", INT, PLAN, AT(layout.sp), 0, 1, "sp"},
    {"--zero", INT, PLAN, AT(layout.zero), 0, 3, "zero"},
    {"--recompute", ENUM_RECOMPUTE, PLAN, 0, 0, 0, "recompute"},
    {"--schedule", ENUM_SCHEDULE, PLAN, 0, 0, 0, "schedule"},
    {"--dtype", ENUM_DTYPE, BOTH, 0, 0, 0, "dtype"},
    {"--cluster", CLUSTER, BOTH, 0, 0, 0, "cluster"},
    {"--devices", INT, SEARCH, AT(devices), 1, 10000000L, "devices"},
    {"--top", INT, SEARCH, AT(top), 0, MAXN, "top"},
    {"--json", SWITCH, BOTH, AT(json), 0, 1, "json"},
    {"--explain", SWITCH, PLAN, AT(explain), 0, 1, "explain"},
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

static void list_clusters(FILE *out)
{
    for (int i = 0; dt_sim_cluster_at(i); i++)
        fprintf(out, "%s%s", i ? ", " : "", dt_sim_cluster_at(i)->name);
}

static void list_models(FILE *out)
{
    for (int i = 0; dt_sim_model_preset_name(i); i++)
        fprintf(out, "%s%s", i ? ", " : "", dt_sim_model_preset_name(i));
}

void dtsim_plan_usage(FILE *out)
{
    fprintf(out,
            "       dtsim (--model NAME | --layers L --hidden H --heads A --seq S --vocab V\n"
            "             [--ffn F] [--dropout 0|1]) --global-batch B --cluster NAME\n"
            "             [--tp T] [--pp P] [--dp D] [--vpp V] [--sp 0|1] [--micro-batch b]\n"
            "             [--recompute none|selective|full] [--zero 0..3]\n"
            "             [--dtype bf16|fp16|fp32] [--schedule 1f1b|gpipe] [--json | --explain]\n"
            "       dtsim search --devices N --cluster NAME (--model NAME | model flags)\n"
            "             --global-batch B [--dtype T] [--top K] [--json]\n"
            "\n"
            "The planner: memory per device by kind, compute, each communication by group\n"
            "and algorithm, the pipeline bubble, step time, tokens/s, model TFLOP/s per\n"
            "device and MFU of one training step, and whether it fits; --explain gives\n"
            "each term's formula. `dtsim search` ranks every layout that fits.\n"
            "  --ffn defaults to 4 x hidden; --dtype to bf16; the layout to one device.\n"
            "  clusters: ");
    list_clusters(out);
    fprintf(out, "\n  models:   ");
    list_models(out);
    fprintf(out, "\n");
}

static int bad_value(const char *name, const char *val, const char *expected)
{
    fprintf(stderr, "dtsim: %s '%s': expected %s\n", name, val, expected);
    return 2;
}

/* Sets the flag f from val; 0, or 2 with a message. */
static int set_flag(const flag *f, const char *val, dtsim_opts *o)
{
    int e;
    long v;
    switch (f->kind) {
    case INT:
        if (dt_parse_long(f->name, val, f->min, f->max, &v) != DT_OK)
            return fprintf(stderr, "dtsim: %s\n", dt_last_error()), 2;
        *(int *)((char *)o + f->offset) = (int)v;
        return 0;
    case ENUM_RECOMPUTE:
        if ((e = dt_sim_recompute_parse(val)) < 0)
            return bad_value(f->name, val, "none, selective or full");
        o->layout.recompute = (dt_sim_recompute)e;
        return 0;
    case ENUM_DTYPE:
        if ((e = dt_sim_dtype_parse(val)) < 0)
            return bad_value(f->name, val, "bf16, fp16 or fp32");
        o->layout.dtype = (dt_sim_dtype)e;
        return 0;
    case ENUM_SCHEDULE:
        if ((e = dt_sim_schedule_parse(val)) < 0)
            return bad_value(f->name, val, "1f1b or gpipe");
        o->layout.schedule = (dt_sim_schedule)e;
        return 0;
    case CLUSTER:
        if (!(o->cluster = dt_sim_cluster_preset(val))) {
            fprintf(stderr, "dtsim: --cluster '%s': unknown cluster (", val);
            list_clusters(stderr);
            fprintf(stderr, ")\n");
            return 2;
        }
        return 0;
    case MODEL:
        if (!dt_sim_model_preset(val)) {
            fprintf(stderr, "dtsim: --model '%s': unknown model (", val);
            list_models(stderr);
            fprintf(stderr, ")\n");
            return 2;
        }
        return 0; /* applied before the other flags: see dtsim_plan_parse */
    case SWITCH:
        *(int *)((char *)o + f->offset) = 1;
        return 0;
    }
    return 2;
}

int dtsim_plan_parse(int argc, char **argv, int search, dtsim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->layout = (dt_sim_layout){1, 1, 1, 1, 0, 0, 1, DT_SIM_RECOMPUTE_NONE, 0, DT_SIM_BF16,
                                DT_SIM_1F1B};
    o->model.dropout = 1;
    o->top = 10;
    int given[NUM_FLAGS] = {0};
    /* two passes: --model's sizes first, so that any size flag overrides them */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 1; i < argc; i++) {
            const char *arg = argv[i], *eq = strchr(arg, '='), *val;
            int fi = find_flag(arg);
            if (fi < 0) {
                fprintf(stderr, "dtsim: unknown option '%s'\n", arg);
                return 2;
            }
            const flag *f = &flags[fi];
            if (f->kind == SWITCH && eq)
                return bad_value(f->name, eq + 1, "no value");
            if (f->kind == SWITCH)
                val = "1";
            else if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                return fprintf(stderr, "dtsim: %s needs a value\n", f->name), 2;
            if (!(f->where & (search ? SEARCH : PLAN))) {
                fprintf(stderr, "dtsim: %s %s\n", f->name,
                        !search               ? "belongs to `dtsim search`"
                        : f->kind == SWITCH   ? "does not apply to `dtsim search`"
                                              : "is chosen by the search: leave it out");
                return 2;
            }
            if ((pass == 0) != (f->kind == MODEL))
                continue;
            int r = set_flag(f, val, o);
            if (r)
                return r;
            if (f->kind == MODEL) {
                o->model = *dt_sim_model_preset(val);
                o->model_name = val;
            }
            given[fi] = 1;
        }
    if (!o->cluster)
        return fprintf(stderr, "dtsim: --cluster is needed\n"), 2;
    if (!o->model_name) {
        static const char *const need[] = {"--layers", "--hidden", "--heads", "--seq", "--vocab"};
        for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
            if (!given[find_flag(need[i])])
                return fprintf(stderr, "dtsim: %s is needed (or --model NAME)\n", need[i]), 2;
    }
    if (!given[find_flag("--global-batch")])
        return fprintf(stderr, "dtsim: --global-batch is needed\n"), 2;
    if (search && !given[find_flag("--devices")])
        return fprintf(stderr, "dtsim: --devices is needed\n"), 2;
    if (o->json && o->explain)
        return fprintf(stderr, "dtsim: --json and --explain go one at a time\n"), 2;
    if (!given[find_flag("--ffn")])
        o->model.ffn = 4 * o->model.hidden; /* > 1e8 is the core's to refuse */
    return 0;
}
