/* wait.h - how an emulated rank waits (wait.c): the wait policy (spin,
 * yield, sleep on the doorbell, deadline, mismatches, failed peers). Every
 * blocking wait of the emulation goes through dt_wait_until, the
 * wait_until entry of its tables (backend.h). */
#ifndef DT_COMM_WAIT_H
#define DT_COMM_WAIT_H

#include "../bell.h"
#include "../handle.h"

/* Waits until cond(arg) is true, within the job's deadline: a spin, a
 * while yielding, then sleeps on the rank's doorbell. DT_ERR_TIMEOUT with
 * what every rank does, or DT_ERR_PEER_DIED when a rank of the job failed. */
dt_result dt_wait_until(dt_call *call, int (*cond)(const void *), const void *arg);

/* DT_ERR_PEER_DIED with the name of a failed rank, if any rank failed. */
dt_result dt_check_peers(dt_job *job);

#endif /* DT_COMM_WAIT_H */
