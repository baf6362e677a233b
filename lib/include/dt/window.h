/* dt/window.h - shared windows and a rank's buffer in the job's shared
 * memory. Part of the comm layer: dt/comm.h includes it; include
 * dt/comm.h, not this file. */
#ifndef DT_WINDOW_H
#define DT_WINDOW_H

#include <stddef.h>

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dt_comm dt_comm;
typedef struct dt_win dt_win;

/* Collective: every rank of comm gets *base pointing to the SAME region of
 * bytes zeroed bytes (64-byte aligned, shared by all ranks: C11 atomics on
 * it synchronize the ranks; in the proc backend it lies in the job's shared
 * arena, at one address; on mpi, MPI_Win_allocate_shared's, at each
 * process's own address, one machine only, else DT_ERR_UNSUPPORTED). Not charged to the ranks'
 * memory accounting. bytes must be > 0 and the same on every rank. */
dt_result dt_win_allocate(dt_comm *comm, size_t bytes, void **base, dt_win **win);

/* Collective: frees the window (after a barrier). NULL is ignored. */
dt_result dt_win_free(dt_win *win);

/* Not collective: *p points to bytes zeroed bytes (64-byte aligned) of the
 * job's shared memory, private to this rank by use but addressable by every
 * rank: collectives and messages on buffers inside it are copied directly,
 * without the cross-process copy the proc backend needs for other memory
 * (like NCCL's registered buffers). In the thread backend it is plain
 * memory. Free it with dt_free_shared before the rank's function returns
 * (the arena is unmapped when the job ends). Not charged to the memory
 * accounting. */
dt_result dt_alloc_shared(dt_comm *comm, size_t bytes, void **p);
void dt_free_shared(dt_comm *comm, void *p);

#ifdef __cplusplus
}
#endif

#endif /* DT_WINDOW_H */
