/* bandwidth.c - algorithm and bus bandwidth, data-parallel step time and
 * the pipeline bubble. */
#include "dt/sim.h"

#include <math.h>

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

static int time_ok(double t) { return isfinite(t) && t >= 0; }

const char *dt_sim_collective_name(dt_sim_collective c)
{
    static const char *const names[DT_SIM_NUM_COLLECTIVES] = {
        [DT_SIM_SENDRECV] = "sendrecv",   [DT_SIM_ALLREDUCE] = "allreduce",
        [DT_SIM_REDUCE_SCATTER] = "reduce_scatter", [DT_SIM_ALLGATHER] = "allgather",
        [DT_SIM_ALLTOALL] = "alltoall",   [DT_SIM_BROADCAST] = "broadcast",
        [DT_SIM_REDUCE] = "reduce",
    };
    return (unsigned)c < DT_SIM_NUM_COLLECTIVES ? names[c] : "?";
}

double dt_sim_busbw_factor(dt_sim_collective c, int k)
{
    if (k < 1) return domain_error("K (ranks)", k);
    switch (c) {
    case DT_SIM_ALLREDUCE: return 2.0 * (k - 1) / k; /* each rank sends and receives 2(K-1)/K n */
    case DT_SIM_REDUCE_SCATTER:
    case DT_SIM_ALLGATHER:
    case DT_SIM_ALLTOALL: return (double)(k - 1) / k;
    case DT_SIM_BROADCAST:
    case DT_SIM_REDUCE:
    case DT_SIM_SENDRECV: return 1.0;
    default: return domain_error("collective", (double)c);
    }
}

double dt_sim_algbw(double n, double seconds)
{
    if (!(isfinite(n) && n >= 0)) return domain_error("n (bytes)", n);
    if (!(isfinite(seconds) && seconds > 0)) return domain_error("seconds", seconds);
    return n / seconds;
}

double dt_sim_busbw(dt_sim_collective c, double n, double seconds, int k)
{
    double factor = dt_sim_busbw_factor(c, k);
    if (isnan(factor)) return NAN;
    return dt_sim_algbw(n, seconds) * factor;
}

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
