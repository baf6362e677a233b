/* stats.h - each rank's statistics per communicator (stats.c), and the
 * bookkeeping around a top-level call. Not a public header. */
#ifndef DT_COMM_STATS_H
#define DT_COMM_STATS_H

#include "handle.h"

/* A message of the call: counted in the call's traffic when the call
 * counts (internal traffic does not), added to the stats when it ends. */
static inline void dt_call_traffic(dt_call *call, int sent, uint64_t bytes, uint64_t msgs)
{
    if (!call->counted)
        return;
    if (sent) {
        call->traffic.bytes_sent += bytes;
        call->traffic.msgs_sent += msgs;
    } else {
        call->traffic.bytes_recv += bytes;
        call->traffic.msgs_recv += msgs;
    }
}

/* Adds a call's traffic to the stats, under the comm's lock (both lanes
 * update them): for a call that ends without dt_api_leave. */
void dt_stats_traffic(dt_comm *comm, const dt_traffic *t);
/* One more call of kind (an async call is counted when issued). */
void dt_stats_call(dt_comm *comm, int kind);

/* Bookkeeping around a top-level call on lane 0: at the start, fault
 * injection and the doing board (sig: a collective's signature, else 0);
 * at the end, under one lock, the call count (new_call: 0 for dt_wait,
 * whose call was counted when issued), its traffic (may be NULL), wall and
 * modeled time; then the trace and the published clock. */
dt_result dt_api_enter(dt_comm *comm, int kind, long seq, size_t count, int root, uint32_t sig);
void dt_api_leave(dt_comm *comm, double w0, double m0, int kind, int new_call,
                  const dt_traffic *traffic);

#endif /* DT_COMM_STATS_H */
