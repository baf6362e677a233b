/* progress.h - requests (async.c): a rank's async collectives run on its
 * progress thread (lane 1); async point-to-point messages are posted on
 * lane 0 and need no thread. Not a public header. */
#ifndef DT_COMM_PROGRESS_H
#define DT_COMM_PROGRESS_H

#include "coll.h"

/* Posts a p2p send or receive for dt_isend / dt_irecv. */
dt_result dt_p2p_post(dt_comm *c, int send, void *buf, size_t bytes, int peer, dt_request **req);

/* Queues a collective on the communicator's progress thread (started on
 * first use); seq is its number on the communicator. */
dt_result dt_progress_submit(dt_comm *comm, const dt_coll_args *a, long seq, dt_request **req);

/* Runs what is queued, then stops the thread (a handle being freed). */
void dt_progress_stop(dt_comm *comm);

#endif /* DT_COMM_PROGRESS_H */
