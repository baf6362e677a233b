/* plan.c - lab 11, tasks 3 to 5: which layer outputs the forward keeps
 * (chapter 11, sections 6 and 7): checkpoint_sequential's segments, what
 * a plan costs the executor, the cheapest plan under a byte budget, what
 * a segment plan costs predicted from the formulas; and, given for
 * comparison, the rule that counts kept bytes only. */
#include "memory.h"

#include <stdlib.h>
#include <string.h>

dt_result lab_plan_init(lab_plan *p, int L)
{
    if (!p || L < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_init: %s", p ? "layers < 1" : "NULL plan");
    p->num_layers = L;
    p->keep = malloc((size_t)L);
    if (!p->keep)
        return dt_fail(DT_ERR_NOMEM, "lab_plan_init: %d layers", L);
    memset(p->keep, 1, (size_t)L);
    return DT_OK;
}

void lab_plan_free(lab_plan *p)
{
    if (p) {
        free(p->keep);
        p->keep = NULL, p->num_layers = 0;
    }
}

dt_result lab_chain_alloc(lab_chain *c, int L)
{
    if (!c || L < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_chain_alloc: %s", c ? "layers < 1" : "NULL chain");
    memset(c, 0, sizeof *c);
    c->out_bytes = calloc((size_t)L, sizeof *c->out_bytes);
    c->flops = calloc((size_t)L, sizeof *c->flops);
    if (!c->out_bytes || !c->flops) {
        lab_chain_free(c);
        return dt_fail(DT_ERR_NOMEM, "lab_chain_alloc: %d layers", L);
    }
    c->num_layers = L;
    return DT_OK;
}

void lab_chain_free(lab_chain *c)
{
    if (c) {
        free(c->out_bytes), free(c->flops);
        memset(c, 0, sizeof *c);
    }
}

static dt_result check_pair(const char *fn, const lab_chain *c, const lab_plan *p)
{
    if (!c || !p || !c->out_bytes || !p->keep)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s", fn, !c || !c->out_bytes ? "chain" : "plan");
    if (c->num_layers != p->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a plan of %d layers for a chain of %d", fn,
                       p->num_layers, c->num_layers);
    return DT_OK;
}

dt_result lab_plan_segments(lab_plan *p, int segments)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: keep[i] as memory.h states for checkpoint_sequential's
     * cut into `segments` segments. Section 6. */
    if (!p || !p->keep)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_segments: NULL plan");
    int L = p->num_layers;
    if (segments < 1 || segments > L)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_segments: %d segments of %d layers (need "
                       "1 <= segments <= layers)", segments, L);
    int s = L / segments, last = (segments - 1) * s;
    for (int i = 0; i < L; i++)
        p->keep[i] = i >= last || (i + 1) % s == 0;
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_plan_cost_of(const lab_chain *c, const lab_plan *p, lab_plan_cost *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out = the executor's peak (fixed + the most layer
     * outputs alive at once), the layers it recomputes and their FLOPs.
     * Section 6 derives the peak. */
    DT_CHECK(check_pair("lab_plan_cost_of", c, p));
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_cost_of: NULL result");
    int L = c->num_layers;
    size_t kept = 0, peak = 0;
    lab_plan_cost r = {0, 0, 0};
    for (int i = 0; i < L; i++) {
        if (p->keep[i] || i == L - 1) {
            kept += c->out_bytes[i];
            continue;
        }
        /* the run of dropped layers [i, q], then kept output q + 1 */
        size_t run = 0;
        int q = i;
        for (; q < L - 1 && !p->keep[q]; q++) {
            run += c->out_bytes[q];
            r.recomputed_layers++;
            r.recompute_flops += c->flops[q];
        }
        size_t at_run = kept + run + c->out_bytes[q]; /* q: the kept layer after the run */
        peak = at_run > peak ? at_run : peak;
        i = q - 1;
    }
    peak = kept > peak ? kept : peak; /* the start of the backward: every kept output */
    r.peak_bytes = c->fixed_bytes + peak;
    *out = r;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- selection */

/* BEGIN STUDENT CODE */
/* Room for the helpers of your lab_plan_select. */
/* One state of the search: the plan so far keeps layer `layer` (or is at
 * the input, layer -1), with `kept` bytes of kept outputs and `cost` FLOPs
 * recomputed; `from` is the state before it. */
typedef struct {
    int layer;
    size_t kept;
    double cost;
    int from;
} sel_state;

typedef struct {
    sel_state *v;
    int n, cap;
} sel_list;

static dt_result sel_push(sel_list *l, sel_state s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        sel_state *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return dt_fail(DT_ERR_NOMEM, "lab_plan_select: %d states", cap);
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = s;
    return DT_OK;
}
/* END STUDENT CODE */

dt_result lab_plan_select(const lab_chain *c, size_t budget, lab_plan *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: p's peak (lab_plan_cost_of) <= budget, and no plan
     * with that property recomputes fewer FLOPs. A budget no plan fits
     * fails, naming it. Section 7. */
    DT_CHECK(check_pair("lab_plan_select", c, p));
    int L = c->num_layers;
    if (budget < c->fixed_bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_select: budget %zu bytes is below the "
                       "fixed working set (%zu)", budget, c->fixed_bytes);
    size_t M = budget - c->fixed_bytes;
    /* Dynamic programming over the kept layers from left to right: from a
     * state keeping layer i with kept bytes K, keep j > i next, dropping
     * (i, j): the run needs K + bytes(i+1 .. j) <= M, the new state has
     * K + bytes(j) <= M and costs flops(i+1 .. j-1) more. A state is
     * useless when another at the same layer keeps no more bytes and
     * costs no more (Pareto), since the future depends on K only. */
    sel_list all = {0};
    dt_result r = sel_push(&all, (sel_state){-1, 0, 0, -1});
    /* the states keeping layer j are all.v[start[j + 1] .. start[j + 2]) */
    int *start = malloc((size_t)(L + 2) * sizeof *start);
    if (!start)
        r = dt_fail(DT_ERR_NOMEM, "lab_plan_select");
    if (start)
        start[0] = 0, start[1] = 1;
    for (int j = 0; r == DT_OK && j < L; j++) {
        int first_new = all.n;
        for (int i = j - 1; r == DT_OK && i >= -1; i--) {
            size_t run = 0;
            double flops = 0;
            for (int k = i + 1; k < j; k++)
                run += c->out_bytes[k], flops += c->flops[k];
            for (int s = start[i + 1]; r == DT_OK && s < start[i + 2]; s++) {
                sel_state st = all.v[s];
                size_t kept = st.kept + c->out_bytes[j];
                if (kept > M || (i + 1 < j && st.kept + run + c->out_bytes[j] > M))
                    continue;
                sel_state nx = {j, kept, st.cost + flops, s};
                int dominated = 0;
                for (int t = first_new; t < all.n && !dominated; t++)
                    dominated = all.v[t].kept <= nx.kept && all.v[t].cost <= nx.cost;
                if (!dominated)
                    r = sel_push(&all, nx);
            }
        }
        start[j + 2] = all.n;
    }
    int best = -1;
    for (int s = r == DT_OK ? start[L] : 0; r == DT_OK && s < start[L + 1]; s++)
        if (best < 0 || all.v[s].cost < all.v[best].cost)
            best = s;
    if (r == DT_OK && best < 0)
        r = dt_fail(DT_ERR_INVALID_ARG, "lab_plan_select: no plan fits in a budget of %zu bytes",
                    budget);
    if (r == DT_OK) {
        memset(p->keep, 0, (size_t)L);
        for (int s = best; all.v[s].layer >= 0; s = all.v[s].from)
            p->keep[all.v[s].layer] = 1;
    }
    free(all.v);
    free(start);
    return r;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- the kept-bytes rule */

dt_result lab_plan_greedy(const lab_chain *c, size_t budget, lab_plan *p)
{
    DT_CHECK(check_pair("lab_plan_greedy", c, p));
    int L = c->num_layers;
    size_t kept = c->fixed_bytes;
    memset(p->keep, 1, (size_t)L);
    for (int i = 0; i < L; i++)
        kept += c->out_bytes[i];
    while (kept > budget) {
        int best = -1; /* the cheapest FLOPs per byte among the layers still kept */
        for (int i = 0; i < L - 1; i++)
            if (p->keep[i] && c->out_bytes[i] &&
                (best < 0 || c->flops[i] * (double)c->out_bytes[best] <
                                 c->flops[best] * (double)c->out_bytes[i]))
                best = i;
        if (best < 0)
            return dt_fail(DT_ERR_INVALID_ARG, "lab_plan_greedy: no plan fits in a budget of "
                           "%zu bytes", budget);
        p->keep[best] = 0;
        kept -= c->out_bytes[best];
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- predict, then measure */

dt_result lab_predict_segments(int L, int k, int *peak, int *recomputed)
{
    /* BEGIN STUDENT CODE */
    if (!peak || !recomputed)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_predict_segments: NULL result");
    if (L < 1 || k < 1 || k > L)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_predict_segments: %d segments of %d layers "
                       "(need 1 <= segments <= layers)", k, L);
    /* k - 1 segments of s = floor(L / k) layers keep their last output; the
     * last segment, L - (k - 1) s >= s layers, keeps all of its own. The
     * peak is at the start of the backward: k - 1 + L - (k - 1) s outputs
     * (a recomputed run holds at most k - 2 + s). Each of the first k - 1
     * segments recomputes its s - 1 dropped layers. */
    int s = L / k;
    *peak = k - 1 + L - (k - 1) * s;
    *recomputed = (k - 1) * (s - 1);
    return DT_OK;
    /* END STUDENT CODE */
}
