/* plan_error.c - the planner's calls that record why they refused their
 * arguments (dt_last_error), around the pure core (plan.c,
 * plan_search.c), which only fills a dt_sim_bad. */
#include "dt/sim.h"

#include <math.h>

static dt_result record(dt_result r, const dt_sim_bad *bad)
{
    if (r == DT_OK)
        return r;
    if (bad->other)
        return dt_fail(r, "%s = %g: %s (%s = %g)", bad->field, bad->value, bad->need, bad->other,
                       bad->other_value);
    return dt_fail(r, "%s = %g: %s", bad->field, bad->value, bad->need);
}

dt_result dt_sim_plan(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_cost *plan)
{
    dt_sim_bad bad = {"?", NAN, "is out of range", 0, 0};
    return record(dt_sim_plan_eval(m, l, c, plan, &bad), &bad);
}

dt_result dt_sim_search(const dt_sim_model *m, const dt_sim_search_opts *o,
                        const dt_sim_cluster *c, dt_sim_ranked *best, int cap, long *feasible,
                        long *tried)
{
    dt_sim_bad bad = {"?", NAN, "is out of range", 0, 0};
    return record(dt_sim_search_eval(m, o, c, best, cap, feasible, tried, &bad), &bad);
}
