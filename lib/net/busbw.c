/* busbw.c - the collectives' names, and algorithm and bus bandwidth as
 * nccl-tests reports them. */
#include "dt/net.h"

#include <math.h>

static const char *const coll_names[DT_NUM_COLLS] = {
    "allreduce", "broadcast", "reduce", "allgather", "reduce_scatter",
    "alltoall", "barrier", "send", "recv", "sendrecv"};

const char *dt_coll_name(dt_coll_kind k)
{
    return ((int)k >= 0 && k < DT_NUM_COLLS) ? coll_names[k] : "?";
}

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

double dt_net_busbw_factor(dt_coll_kind c, int k)
{
    if (k < 1) return domain_error("K (ranks)", k);
    switch (c) {
    case DT_COLL_ALLREDUCE: return 2.0 * (k - 1) / k; /* each rank sends and receives 2(K-1)/K n */
    case DT_COLL_REDUCE_SCATTER:
    case DT_COLL_ALLGATHER:
    case DT_COLL_ALLTOALL: return (double)(k - 1) / k;
    case DT_COLL_BROADCAST:
    case DT_COLL_REDUCE:
    case DT_COLL_SEND:
    case DT_COLL_RECV:
    case DT_COLL_SENDRECV: return 1.0;
    case DT_COLL_BARRIER: return 0.0;
    default: return domain_error("collective", (double)c);
    }
}

double dt_net_algbw(double n, double seconds)
{
    if (!(isfinite(n) && n >= 0)) return domain_error("n (bytes)", n);
    if (!(isfinite(seconds) && seconds > 0)) return domain_error("seconds", seconds);
    return n / seconds;
}

double dt_net_busbw(dt_coll_kind c, double n, double seconds, int k)
{
    double factor = dt_net_busbw_factor(c, k);
    if (isnan(factor)) return NAN;
    return dt_net_algbw(n, seconds) * factor;
}
