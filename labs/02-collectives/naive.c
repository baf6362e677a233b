/* naive.c - lab 02, task (a): allreduce as a reduce to rank 0 followed by a
 * broadcast from rank 0 (chapter 02, section 4). */
#include "collectives.h"

#include <string.h>

dt_result lab_naive_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                              dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* 1. lab_check_args; nothing to do for count 0.
     * 2. Ranks other than 0: dt_send the whole sendbuf to rank 0, then
     *    dt_recv the result from it into recvbuf.
     * 3. Rank 0: copy sendbuf into recvbuf (unless in place), then for each
     *    other rank receive its buffer into a scratch buffer
     *    (dt_mem_alloc(DT_MEM_COMM, bytes)) and fold it in with
     *    lab_reduce_local; finally dt_send recvbuf to every other rank. */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
