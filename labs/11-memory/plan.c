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
    (void)p, (void)segments;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_plan_cost_of(const lab_chain *c, const lab_plan *p, lab_plan_cost *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out = the executor's peak (fixed + the most layer
     * outputs alive at once), the layers it recomputes and their FLOPs.
     * Section 6 derives the peak. */
    (void)c, (void)p, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- selection */

/* BEGIN STUDENT CODE */
/* Room for the helpers of your lab_plan_select. */
/* END STUDENT CODE */

dt_result lab_plan_select(const lab_chain *c, size_t budget, lab_plan *p)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: p's peak (lab_plan_cost_of) <= budget, and no plan
     * with that property recomputes fewer FLOPs. A budget no plan fits
     * fails, naming it. Section 7. */
    (void)c, (void)budget, (void)p;
    return DT_ERR_NOT_IMPLEMENTED;
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
    /* Postcondition: *peak and *recomputed are what the executor holds
     * at its peak (in layer outputs beyond the fixed working set) and runs
     * twice with lab_plan_segments(k) on L equal layers, from section 6's
     * formulas (memory.h, task 5). */
    (void)L, (void)k, (void)peak, (void)recomputed;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
