/* shortcut.h - collectives that use the ranks' shared memory directly
 * instead of messages (shortcut.c). Taken only by DT_ALGO_AUTO. */
#ifndef DT_COMM_SHORTCUT_H
#define DT_COMM_SHORTCUT_H

#include "../coll.h"
#include "../sync.h"

/* Allreduces of at most this many bytes ride in the barrier's records. */
#define DT_TINY_MAX 32
/* The one-pass allreduce, reduce-scatter and allgather from this many bytes
 * in all. */
#define DT_SHORTCUT_MIN 262144

/* Whether a collective of kind moving bytes in all takes a shortcut. */
int dt_shortcut_applies(int kind, size_t bytes);

_Static_assert(DT_TINY_MAX <= DT_REC_PAYLOAD, "a tiny allreduce fits in a record");

/* Runs a collective for which dt_shortcut_applies (more than one rank). */
dt_result dt_shortcut_collective(dt_call *call, const dt_coll_args *a);

#endif /* DT_COMM_SHORTCUT_H */
