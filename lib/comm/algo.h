/* algo.h - the building blocks of the collective algorithms (algo_blocks.c),
 * shared by the algorithm files. Not a public header. */
#ifndef DT_COMM_ALGO_H
#define DT_COMM_ALGO_H

#include "comm_internal.h"

dt_result dt_tp_waitall(dt_op *op, dt_msg **m, int n);
dt_result dt_ring_rs(dt_op *op, const void *in, void *out, size_t count, dt_dtype t,
                     dt_redop red, void *tmp, int step0);
dt_result dt_ring_ag(dt_op *op, void *buf, size_t count, dt_dtype t, int step0);
dt_result dt_direct_rs(dt_op *op, const void *in, void *out, size_t count, dt_dtype t,
                       dt_redop red, void *tmp, int step);
dt_result dt_direct_ag(dt_op *op, void *buf, size_t count, dt_dtype t, int step);
dt_result dt_bcast_tree(dt_op *op, void *buf, size_t bytes, int root, int step);
dt_result dt_reduce_tree(dt_op *op, void *acc, void *tmp, size_t count, dt_dtype t,
                         dt_redop red, int root, int step);
dt_result dt_gather_tree(dt_op *op, void *buf, size_t count, dt_dtype t, int step);

/* The one-pass shared-memory collectives (shortcut.c). */
dt_result dt_shortcut_allreduce(dt_op *op, const dt_coll_args *a);
dt_result dt_shortcut_reduce_scatter(dt_op *op, const dt_coll_args *a);
dt_result dt_shortcut_allgather(dt_op *op, const dt_coll_args *a);

#endif /* DT_COMM_ALGO_H */
