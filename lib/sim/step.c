/* step.c - above the collectives: a data-parallel step with and without
 * overlap, and the pipeline bubble. */
#include "dt/sim.h"

#include <math.h>

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

static int time_ok(double t) { return isfinite(t) && t >= 0; }

double dt_sim_step_serial(double t_comp, double t_comm)
{
    if (!time_ok(t_comp)) return domain_error("T_comp", t_comp);
    if (!time_ok(t_comm)) return domain_error("T_comm", t_comm);
    return t_comp + t_comm;
}

double dt_sim_step_overlapped(double t_comp, double t_comm)
{
    if (!time_ok(t_comp)) return domain_error("T_comp", t_comp);
    if (!time_ok(t_comm)) return domain_error("T_comm", t_comm);
    return t_comp > t_comm ? t_comp : t_comm;
}

double dt_sim_bubble_fraction(int stages, int microbatches)
{
    if (stages < 1) return domain_error("stages", stages);
    if (microbatches < 1) return domain_error("micro-batches", microbatches);
    /* (p - 1) / (m + p - 1) */
    return (double)(stages - 1) / (microbatches + stages - 1);
}
