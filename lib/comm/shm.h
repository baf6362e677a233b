/* shm.h - the job's shared memory (arena.c): where the structures that
 * several ranks touch live. Not a public header. */
#ifndef DT_COMM_SHM_H
#define DT_COMM_SHM_H

#include "job.h"

#include <pthread.h>

/* Shared memory of the job: the proc backend's arena, else the heap.
 * Zeroed, 64-byte aligned; NULL (with a message) when out of memory. */
void *dt_shm_alloc(dt_job *job, size_t bytes);
void dt_shm_free(dt_job *job, void *p);

/* The arena allocator of the proc backend. */
dt_result dt_arena_init(void *arena, size_t size);
void *dt_arena_alloc(void *arena, size_t bytes);
void dt_arena_free(void *arena, void *p);

/* pid, or 0 when [p, p + bytes) lies in the job's shared arena: memory that
 * every process addresses directly, at the same address. */
int dt_owner_pid(const dt_job *job, int pid, const void *p, size_t bytes);

/* Mutexes in shared memory: process-shared and robust, so that a process
 * killed while holding one does not block the others forever. */
void dt_shared_mutex_init(pthread_mutex_t *m);
void dt_shared_lock(pthread_mutex_t *m);

#endif /* DT_COMM_SHM_H */
