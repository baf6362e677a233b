/* stats.c - each rank's figures per communicator (dt_comm_stats), and the
 * bookkeeping around each top-level call: its count, wall and modeled time,
 * trace event and the doing board. */
#include "stats.h"

#include "diag.h"

#include <string.h>

static void add_traffic(dt_comm *comm, const dt_traffic *t)
{
    comm->stats.bytes_sent += t->bytes_sent;
    comm->stats.msgs_sent += t->msgs_sent;
    comm->stats.bytes_recv += t->bytes_recv;
    comm->stats.msgs_recv += t->msgs_recv;
}

void dt_stats_traffic(dt_comm *comm, const dt_traffic *t)
{
    pthread_mutex_lock(&comm->stats_lock);
    add_traffic(comm, t);
    pthread_mutex_unlock(&comm->stats_lock);
}

void dt_stats_call(dt_comm *comm, int kind)
{
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.calls[kind]++;
    pthread_mutex_unlock(&comm->stats_lock);
}

/* The call is counted in dt_api_leave: one lock per call. */
dt_result dt_api_enter(dt_comm *comm, int kind, long seq, size_t count, int root, uint32_t sig)
{
    DT_TRY(dt_fault_check(comm, kind));
    dt_doing_set(comm, 0, kind, seq, count, root, sig);
    return DT_OK;
}

void dt_api_leave(dt_comm *comm, double w0, double m0, int kind, int new_call,
                  const dt_traffic *traffic)
{
    double w1 = dt_now();
    dt_rank_ctx *rc = comm->rc;
    pthread_mutex_lock(&comm->stats_lock);
    if (traffic)
        add_traffic(comm, traffic);
    comm->stats.calls[kind] += new_call != 0;
    comm->stats.time_comm_wall += w1 - w0;
    comm->stats.time_comm_modeled += rc->clock - m0;
    pthread_mutex_unlock(&comm->stats_lock);
    dt_trace_add(rc, kind, 0, w0, w1, m0, rc->clock);
    dt_clock_publish(rc);
    dt_doing_set(comm, 0, -1, 0, 0, 0, 0);
}

dt_result dt_comm_stats(const dt_comm *comm, dt_stats *out)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_stats"));
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_stats: out is NULL");
    dt_comm *c = (dt_comm *)comm;
    pthread_mutex_lock(&c->stats_lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->stats_lock);
    return DT_OK;
}

dt_result dt_comm_stats_reset(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_stats_reset"));
    pthread_mutex_lock(&comm->stats_lock);
    memset(&comm->stats, 0, sizeof comm->stats);
    pthread_mutex_unlock(&comm->stats_lock);
    return DT_OK;
}
