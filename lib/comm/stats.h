/* stats.h - each rank's statistics per communicator (stats.c), and the
 * bookkeeping around a top-level call. Not a public header. */
#ifndef DT_COMM_STATS_H
#define DT_COMM_STATS_H

#include "handle.h"

/* Adds to the stats, under the comm's lock (both lanes update them). */
void dt_stats_msg(dt_comm *comm, int sent, uint64_t bytes, uint64_t msgs);
/* Both directions at once (a shortcut's replayed traffic). */
void dt_stats_traffic(dt_comm *comm, uint64_t bytes_sent, uint64_t msgs_sent,
                      uint64_t bytes_recv, uint64_t msgs_recv);
/* One more call of kind (an async call is counted when issued). */
void dt_stats_call(dt_comm *comm, int kind);

/* Bookkeeping around a top-level call on lane 0: at the start, fault
 * injection and the doing board; at the end the call count (new_call: 0
 * for dt_wait, whose call was counted when issued), time, clock and trace. */
dt_result dt_api_enter(dt_comm *comm, int kind, long seq, size_t count, int root);
void dt_api_leave(dt_comm *comm, double w0, double m0, int kind, int new_call);

#endif /* DT_COMM_STATS_H */
