/* stats.c - each rank's figures per communicator (dt_comm_stats), and the
 * bookkeeping around each top-level call: its count, wall and modeled time,
 * trace event and the doing board. */
#include "stats.h"

#include "diag.h"

#include <string.h>

void dt_stats_msg(dt_comm *comm, int sent, uint64_t bytes, uint64_t msgs)
{
    pthread_mutex_lock(&comm->stats_lock);
    if (sent) {
        comm->stats.bytes_sent += bytes;
        comm->stats.msgs_sent += msgs;
    } else {
        comm->stats.bytes_recv += bytes;
        comm->stats.msgs_recv += msgs;
    }
    pthread_mutex_unlock(&comm->stats_lock);
}

void dt_stats_traffic(dt_comm *comm, uint64_t bytes_sent, uint64_t msgs_sent,
                      uint64_t bytes_recv, uint64_t msgs_recv)
{
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.bytes_sent += bytes_sent;
    comm->stats.msgs_sent += msgs_sent;
    comm->stats.bytes_recv += bytes_recv;
    comm->stats.msgs_recv += msgs_recv;
    pthread_mutex_unlock(&comm->stats_lock);
}

void dt_stats_call(dt_comm *comm, int kind)
{
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.calls[kind]++;
    pthread_mutex_unlock(&comm->stats_lock);
}

/* The call is counted in dt_api_leave: one lock per call. */
dt_result dt_api_enter(dt_comm *comm, int kind, long seq, size_t count, int root)
{
    DT_TRY(dt_fault_check(comm, kind));
    dt_doing_set(comm, 0, kind, seq, count, root);
    return DT_OK;
}

void dt_api_leave(dt_comm *comm, double w0, double m0, int kind, int new_call)
{
    double w1 = dt_now();
    dt_rank_ctx *rc = comm->rc;
    pthread_mutex_lock(&comm->stats_lock);
    comm->stats.calls[kind] += new_call != 0;
    comm->stats.time_comm_wall += w1 - w0;
    comm->stats.time_comm_modeled += rc->clock - m0;
    pthread_mutex_unlock(&comm->stats_lock);
    dt_trace_add(rc, kind, 0, w0, w1, m0, rc->clock);
    dt_clock_publish(rc);
    dt_doing_set(comm, 0, -1, 0, 0, 0);
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
