/* ring.c - lab 02, task (b): the ring reduce-scatter, the ring allgather,
 * and the ring allreduce made of the two (chapter 02, section 5).
 *
 * The ranks form a ring: rank r sends to r + 1 and receives from r - 1
 * (mod K). The vector is cut into K blocks by lab_block. */
#include "collectives.h"

#include <string.h>

dt_result lab_ring_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                  dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* On return, recvbuf holds this rank's block of the reduced vector,
     * after K-1 steps of one block to rank + 1 and one from rank - 1 at the
     * same time. Full contract: collectives.h. Section 5 derives which block
     * travels at each step, and why the block a rank completes last is its
     * own. Mind the in-place case (recvbuf lies inside sendbuf), blocks of
     * unequal and of zero length, and one rank. Stuck? chapters/hints/02.md, hints
     * (b1). */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_allgather(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* On return, recvbuf on every rank holds all K blocks, block b from
     * rank b, after K-1 steps of one block to rank + 1 and one from
     * rank - 1. Full contract: collectives.h; section 5. No reduction here,
     * only moving complete blocks. Stuck? chapters/hints/02.md, hints (b2). */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* On return, recvbuf is what lab_naive_allreduce gives, computed by
     * your reduce-scatter and then your allgather: 2 (K-1) steps in all.
     * Section 5 ("In place, and composing the two halves") says how the
     * two compose. Stuck? chapters/hints/02.md, hints (b3). */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
