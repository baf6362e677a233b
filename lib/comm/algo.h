/* algo.h - the building blocks of the collective algorithms (algo_blocks.c),
 * shared by the algorithm files. Not a public header. */
#ifndef DT_COMM_ALGO_H
#define DT_COMM_ALGO_H

#include "coll.h"

/* dst = a op b over n elements of t (dst may alias a or b), on the call's
 * clock: gamma per byte reduced (THE RULE of dt/net.h). The vectorized
 * kernel when the job's fast paths are on: the same bits. */
void dt_alg_combine(dt_call *call, void *dst, const void *a, const void *b, size_t n,
                   dt_dtype t, dt_redop op);
/* buf /= nranks, AVG's last step (not charged: a scaling, not a reduction). */
void dt_alg_avg(dt_call *call, void *buf, size_t n, dt_dtype t, int nranks);

/* Element ranges of chunk i when count is split in n parts (the first
 * count % n chunks have one element more). */
size_t dt_chunk_off(size_t count, int n, int i);
size_t dt_chunk_len(size_t count, int n, int i);

/* Ring reduce-scatter and allgather; their messages use tags call->tag +
 * step0 + s for the ring's steps s. */
dt_result dt_ring_rs(dt_call *call, const void *in, void *out, size_t count, dt_dtype t,
                     dt_redop red, void *tmp, int step0);
dt_result dt_ring_ag(dt_call *call, void *buf, size_t count, dt_dtype t, int step0);
/* Direct (every rank to every rank at once) reduce-scatter and allgather. */
dt_result dt_direct_rs(dt_call *call, const void *in, void *out, size_t count, dt_dtype t,
                       dt_redop red, void *tmp, int step);
dt_result dt_direct_ag(dt_call *call, void *buf, size_t count, dt_dtype t, int step);
/* Binomial trees: broadcast from root, reduce to root, gather to rank 0
 * (of a vector of count elements cut into the ranks' blocks). */
dt_result dt_bcast_tree(dt_call *call, void *buf, size_t bytes, int root, int step);
dt_result dt_reduce_tree(dt_call *call, void *acc, void *tmp, size_t count, dt_dtype t,
                         dt_redop red, int root, int step);
dt_result dt_gather_tree(dt_call *call, void *buf, size_t count, dt_dtype t, int step);

#endif /* DT_COMM_ALGO_H */
