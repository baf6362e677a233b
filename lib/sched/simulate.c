/* simulate.c - when each step of a schedule runs, given what steps cost,
 * and the bubble that results (chapter 06, sections 2 to 5).
 *
 * The replay of the run (sched_replay) visits the steps in an order in
 * which everything a step needs has run before it, so one pass computes
 *     start = max(the rank is free, max over needed steps of end + t_msg)
 *     end   = start + cost
 * with t_msg only for a step run on another rank. This is the earliest
 * each step can run under the schedule's order; the result does not
 * depend on the order of the visits, only on the schedule. */
#include "sched_internal.h"

#include <math.h>
#include <string.h>

typedef struct {
    const sched_index *ix;
    const dt_sched_costs *c;
    dt_sched_timing *t;
    double free_at[DT_SCHED_MAX_RANKS];
} sim_state;

static double step_cost(const dt_sched_costs *c, const dt_step *st)
{
    switch (st->kind) {
    case DT_STEP_F: return c->stage_f ? c->stage_f[st->stage] : c->t_f;
    case DT_STEP_B: return c->stage_b ? c->stage_b[st->stage] : c->t_b;
    default: return c->stage_w ? c->stage_w[st->stage] : c->t_w;
    }
}

static dt_result check_cost(const char *name, int index, double v)
{
    if (isfinite(v) && v >= 0) return DT_OK;
    if (index < 0) return dt_fail(DT_ERR_INVALID_ARG, "schedule costs: %s = %g, need a finite time >= 0", name, v);
    return dt_fail(DT_ERR_INVALID_ARG, "schedule costs: %s[%d] = %g, need a finite time >= 0", name,
                   index, v);
}

/* One kind's cost: the array when given, else the scalar. */
static dt_result check_kind(const char *scalar, const char *array, double v, const double *per,
                            int stages)
{
    if (!per) return check_cost(scalar, -1, v);
    for (int i = 0; i < stages; i++) DT_CHECK(check_cost(array, i, per[i]));
    return DT_OK;
}

static dt_result check_costs(const dt_sched_costs *c, int stages, int split)
{
    DT_CHECK(check_kind("t_f", "stage_f", c->t_f, c->stage_f, stages));
    DT_CHECK(check_kind("t_b", "stage_b", c->t_b, c->stage_b, stages));
    if (split) DT_CHECK(check_kind("t_w", "stage_w", c->t_w, c->stage_w, stages));
    return check_cost("t_msg", -1, c->t_msg);
}

static void time_step(void *arg, int rank, int i)
{
    sim_state *st = arg;
    const dt_schedule *s = st->ix->s;
    const dt_step *step = &s->steps[rank][i];
    double start = st->free_at[rank];
    dt_step deps[2];
    int nd = sched_deps(s, step, deps);
    for (int d = 0; d < nd; d++) {
        int a = dt_sched_rank_of(s, deps[d].stage);
        int j = sched_pos(st->ix, deps[d].kind, deps[d].stage, deps[d].micro);
        double ready = st->t->end[a][j] + (a != rank ? st->c->t_msg : 0);
        if (ready > start) start = ready;
    }
    double cost = step_cost(st->c, step);
    st->t->start[rank][i] = start;
    st->t->end[rank][i] = start + cost;
    st->t->busy[rank] += cost;
    st->free_at[rank] = start + cost;
}

void dt_sched_timing_free(dt_sched_timing *t)
{
    if (!t) return;
    for (int r = 0; r < t->ranks; r++) {
        if (t->start) dt_mem_free(t->start[r]);
        if (t->end) dt_mem_free(t->end[r]);
    }
    dt_mem_free(t->start);
    dt_mem_free(t->end);
    dt_mem_free(t);
}

static dt_result timing_alloc(const dt_schedule *s, dt_sched_timing **out)
{
    dt_sched_timing *t = dt_mem_alloc(DT_MEM_OTHER, sizeof *t);
    if (!t) return dt_fail(DT_ERR_NOMEM, "no memory for a schedule's timing");
    t->ranks = s->ranks;
    t->start = dt_mem_alloc(DT_MEM_OTHER, (size_t)s->ranks * sizeof(double *));
    t->end = dt_mem_alloc(DT_MEM_OTHER, (size_t)s->ranks * sizeof(double *));
    int ok = t->start && t->end;
    for (int r = 0; ok && r < s->ranks; r++) {
        size_t bytes = (size_t)s->nsteps[r] * sizeof(double);
        ok = (t->start[r] = dt_mem_alloc(DT_MEM_OTHER, bytes)) &&
             (t->end[r] = dt_mem_alloc(DT_MEM_OTHER, bytes));
    }
    if (!ok) {
        dt_sched_timing_free(t);
        return dt_fail(DT_ERR_NOMEM, "no memory for a schedule's timing");
    }
    *out = t;
    return DT_OK;
}

/* idle = makespan - busy per rank; the bubble both ways (dt/sched.h). */
static dt_result summarise(dt_sched_timing *t, const double *free_at)
{
    double idle = 0, busy = 0;
    t->makespan = 0;
    for (int r = 0; r < t->ranks; r++)
        if (free_at[r] > t->makespan) t->makespan = free_at[r];
    if (!(t->makespan > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "schedule costs: every step costs 0, nothing to time");
    for (int r = 0; r < t->ranks; r++) {
        t->idle[r] = t->makespan - t->busy[r];
        t->rank_bubble[r] = t->idle[r] / t->makespan;
        idle += t->idle[r];
        busy += t->busy[r];
    }
    t->bubble_fraction = idle / (t->ranks * t->makespan);
    t->bubble_ratio = busy > 0 ? idle / busy : INFINITY;
    return DT_OK;
}

dt_result dt_sched_simulate(const dt_schedule *s, const dt_sched_costs *costs,
                            dt_sched_timing **out)
{
    if (!s || !costs || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule simulate: NULL %s",
                       !s ? "schedule" : !costs ? "costs" : "out");
    sched_index ix;
    dt_result r = sched_check(&ix, s);
    if (r != DT_OK) return r;
    dt_sched_timing *t = NULL;
    r = check_costs(costs, s->stages, ix.split);
    if (r == DT_OK) r = timing_alloc(s, &t);
    if (r == DT_OK) {
        sim_state st = {.ix = &ix, .c = costs, .t = t};
        r = sched_replay(&ix, time_step, &st);
        if (r == DT_OK) r = summarise(t, st.free_at);
    }
    sched_index_free(&ix);
    if (r != DT_OK) {
        dt_sched_timing_free(t);
        return r;
    }
    *out = t;
    return DT_OK;
}

/* ---------------------------------------------------------------- a run's own times */

dt_result dt_sched_timing_create(const dt_schedule *s, dt_sched_timing **out)
{
    if (!s || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sched_timing_create: NULL %s", s ? "out" : "schedule");
    return timing_alloc(s, out);
}

dt_result dt_sched_timing_finish(dt_sched_timing *t, const dt_schedule *s)
{
    if (!t || !s || t->ranks != s->ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sched_timing_finish: %s", !t || !s ? "NULL argument"
                       : "a timing made for another schedule");
    double origin = INFINITY, last[DT_SCHED_MAX_RANKS] = {0};
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++) {
            if (!(t->end[r][i] >= t->start[r][i]))
                return dt_fail(DT_ERR_INVALID_ARG, "dt_sched_timing_finish: rank %d step %d ends "
                               "at %g, before its start %g", r, i, t->end[r][i], t->start[r][i]);
            origin = fmin(origin, t->start[r][i]);
        }
    for (int r = 0; r < s->ranks; r++) { /* from the earliest start, as the simulator's */
        t->busy[r] = 0;
        for (int i = 0; i < s->nsteps[r]; i++) {
            t->start[r][i] -= origin, t->end[r][i] -= origin;
            t->busy[r] += t->end[r][i] - t->start[r][i];
            last[r] = fmax(last[r], t->end[r][i]);
        }
    }
    return summarise(t, last);
}
