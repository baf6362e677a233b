/* recursive_doubling.c - lab 02, task (c): allreduce by recursive doubling,
 * for any number of ranks (chapter 02, section 6). */
#include "collectives.h"

#include <string.h>

dt_result lab_recursive_doubling_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                           dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* Copy sendbuf to recvbuf (unless in place). P = the largest power of
     * two <= K. Ranks >= P: send to rank - P, receive the result from it.
     * Ranks < K - P: first receive rank + P's buffer and reduce it in.
     * Ranks < P: for mask = 1, 2, 4, ... < P, dt_sendrecv the whole buffer
     * with rank ^ mask and reduce what arrives. Then ranks < K - P send the
     * result to rank + P. */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
