/* entry.c - the web book's planner: lib/sim's dt_sim_plan, built for
 * WebAssembly (tools/book/planner.sh: clang --target=wasm32-wasi) with
 * this file as its only addition: exports that the page's planner.js
 * calls. The page writes a plan's arguments into args() in the order
 * arg_name(0, 1, ...) gives (fields.h), calls plan(), and reads cost()
 * in the order cost_name gives, or error() when plan() refused them:
 * dt_last_error's message, the one dtsim prints. Strings are NUL-ended
 * in the module's memory; a NULL name ends each list. */
#include "dt/sim.h"
#include "fields.h"

#define EXPORT(name) __attribute__((export_name(#name)))
#define NAME(f) #f,
#define INDEX(f) ARG_##f,
#define COUNT(f) +1

enum { DT_BOOK_MODEL_ARGS(INDEX) DT_BOOK_LAYOUT_ARGS(INDEX) ARG_cluster, N_ARGS };
enum { N_COST = 0 DT_BOOK_COST_FIELDS(COUNT) };

static const char *const arg_names[N_ARGS + 1] = {
    DT_BOOK_MODEL_ARGS(NAME) DT_BOOK_LAYOUT_ARGS(NAME) "cluster", 0};
static const char *const cost_names[N_COST + 1] = {DT_BOOK_COST_FIELDS(NAME) 0};

static int args[N_ARGS];
static double cost[N_COST];

EXPORT(args) int *book_args(void) { return args; }
EXPORT(cost) double *book_cost(void) { return cost; }
EXPORT(error) const char *book_error(void) { return dt_last_error(); }

EXPORT(arg_name) const char *book_arg_name(int i)
{
    return i >= 0 && i < N_ARGS ? arg_names[i] : 0;
}

EXPORT(cost_name) const char *book_cost_name(int i)
{
    return i >= 0 && i < N_COST ? cost_names[i] : 0;
}

EXPORT(cluster_name) const char *book_cluster_name(int i)
{
    const dt_sim_cluster *c = dt_sim_cluster_at(i);
    return c ? c->name : 0;
}

/* The names of an argument's choices (recompute, dtype, schedule), the
 * i-th of them; NULL past the last or for an argument without names. */
EXPORT(choice_name) const char *book_choice_name(int arg, int i)
{
    switch (arg) {
    case ARG_recompute: return dt_sim_recompute_name((dt_sim_recompute)i);
    case ARG_dtype: return dt_sim_dtype_name((dt_sim_dtype)i);
    case ARG_schedule: return dt_sim_schedule_name((dt_sim_schedule)i);
    default: return 0;
    }
}

/* Writes preset model i's fields into args; returns its name, NULL past
 * the last. */
EXPORT(model_preset) const char *book_model_preset(int i)
{
    const char *name = dt_sim_model_preset_name(i);
    const dt_sim_model *m = name ? dt_sim_model_preset(name) : 0;
    if (!m)
        return 0;
    int j = 0;
#define PUT(f) args[j++] = m->f;
    DT_BOOK_MODEL_ARGS(PUT)
#undef PUT
    return name;
}

/* 0 with cost() filled, else the dt_result of the refusal (error()). */
EXPORT(plan) int book_plan(void)
{
    dt_sim_model m;
    dt_sim_layout l;
    int j = 0;
#define GET_M(f) m.f = args[j++];
#define GET_L(f) l.f = args[j++];
    DT_BOOK_MODEL_ARGS(GET_M)
    DT_BOOK_LAYOUT_ARGS(GET_L)
#undef GET_M
#undef GET_L
    const dt_sim_cluster *c = dt_sim_cluster_at(args[ARG_cluster]);
    if (!c)
        return dt_fail(DT_ERR_INVALID_ARG, "cluster = %d: no such preset", args[ARG_cluster]);
    dt_sim_cost k;
    dt_result r = dt_sim_plan(&m, &l, c, &k);
    if (r != DT_OK)
        return r;
    j = 0;
#define PUT(f) cost[j++] = k.f;
    DT_BOOK_COST_FIELDS(PUT)
#undef PUT
    return DT_OK;
}
