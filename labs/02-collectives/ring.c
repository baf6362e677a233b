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
    /* K-1 steps with dt_sendrecv to rank+1 / from rank-1. At step s, send
     * your running partial of block (rank - s - 1) mod K (at step 0: your own
     * data of that block, straight from sendbuf) and receive the partial of
     * block (rank - s - 2) mod K into a scratch block; add your own data of
     * that block to it (lab_reduce_local). The block received at the last
     * step is your own, complete: copy it to recvbuf. Mind the in-place
     * case (recvbuf lies inside sendbuf) and blocks of 0 elements. */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_allgather(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* Put your block at its place in recvbuf (unless in place), then K-1
     * steps: at step s, dt_sendrecv block (rank - s) mod K to rank+1 and
     * receive block (rank - s - 1) mod K from rank-1, both straight in
     * recvbuf. */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ring_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* Copy sendbuf to recvbuf (unless in place), then
     * lab_ring_reduce_scatter in place on recvbuf (your block's address is
     * lab_elem(recvbuf, offset, dtype)), then lab_ring_allgather in place. */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
