/* copy.h - copies between the ranks' memories (copy.c). Threads address
 * each other's buffers; processes cross with process_vm_readv / writev
 * (cross-memory attach), except buffers in the job's shared arena, which
 * every process addresses at the same address. A buffer's owner is a pid:
 * the owning process, or 0 for the arena (dt_owner_pid). Not public. */
#ifndef DT_COMM_COPY_H
#define DT_COMM_COPY_H

#include "dt/core.h"

/* Whether a process (self) addresses a buffer owned by pid directly: its
 * own, or 0, the shared arena's. */
static inline int dt_addressable(int pid, int self)
{
    return pid == self || pid == 0;
}

/* Copies n bytes from src in process pid into our dst (dt_copy_from), or
 * from our src into dst in process pid (dt_copy_to); memcpy when the
 * buffer is addressable. DT_ERR_UNSUPPORTED when the system forbids
 * cross-memory attach, DT_ERR_PEER_DIED when the other process is gone. */
dt_result dt_copy_from(int pid, int self, void *dst, const void *src, size_t n);
dt_result dt_copy_to(int pid, int self, void *dst, const void *src, size_t n);

#endif /* DT_COMM_COPY_H */
