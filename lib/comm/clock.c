/* clock.c - the modeled clock of dt/comm.h: reading it, compute regions,
 * advancing it by a known time, and the network it runs on. */
#include "handle.h"

#include "diag.h"

#include <math.h>

double dt_clock(const dt_comm *comm)
{
    if (dt_comm_check(comm, "dt_clock") != DT_OK)
        return 0.0;
    return comm->rc->clock;
}

dt_result dt_compute_begin(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_compute_begin"));
    if (comm->rc->compute_t0 >= 0)
        return dt_fail(DT_ERR_STATE, "dt_compute_begin: a compute region is already open");
    comm->rc->compute_t0 = dt_now();
    return DT_OK;
}

dt_result dt_compute_end(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_compute_end"));
    dt_rank_ctx *rc = comm->rc;
    if (rc->compute_t0 < 0)
        return dt_fail(DT_ERR_STATE, "dt_compute_end: no compute region is open");
    double now = dt_now(), m0 = rc->clock;
    rc->clock += now - rc->compute_t0;
    dt_clock_publish(rc);
    dt_trace_add(rc, DT_NUM_COLLS, 0, rc->compute_t0, now, m0, rc->clock);
    rc->compute_t0 = -1;
    return DT_OK;
}

dt_result dt_clock_advance(dt_comm *comm, double seconds)
{
    DT_TRY(dt_comm_check(comm, "dt_clock_advance"));
    if (!(seconds >= 0) || isinf(seconds))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_clock_advance: seconds = %g, expected >= 0",
                       seconds);
    double now = dt_now(), m0 = comm->rc->clock;
    comm->rc->clock += seconds;
    dt_clock_publish(comm->rc);
    dt_trace_add(comm->rc, DT_NUM_COLLS, 0, now, now, m0, comm->rc->clock);
    return DT_OK;
}

dt_result dt_comm_net(const dt_comm *comm, double *alpha, double *beta)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_net"));
    if (alpha)
        *alpha = comm->link.alpha;
    if (beta)
        *beta = comm->link.beta;
    return DT_OK;
}

dt_result dt_comm_link(const dt_comm *comm, dt_net *out)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_link"));
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_link: out is NULL");
    *out = comm->link;
    return DT_OK;
}

dt_result dt_comm_topo(const dt_comm *comm, dt_net_topo *out)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_topo"));
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_topo: out is NULL");
    *out = comm->rc->job->net;
    return DT_OK;
}

int dt_comm_world_rank(const dt_comm *comm, int rank)
{
    if (dt_comm_check(comm, "dt_comm_world_rank") != DT_OK)
        return -1;
    if (rank < 0 || rank >= comm->size) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_comm_world_rank: rank %d of a communicator of %d",
                rank, comm->size);
        return -1;
    }
    return comm->sh->world[rank];
}
