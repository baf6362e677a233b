/* naive.c - lab 02, task (a): allreduce as a reduce to rank 0 followed by a
 * broadcast from rank 0 (chapter 02, section 4). */
#include "collectives.h"

#include <string.h>

dt_result lab_naive_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                              dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* On return, recvbuf on every rank is the reduction over all ranks of
     * their sendbuf, gathered at rank 0 and sent back from there: rank 0
     * sends K-1 messages of the whole buffer, every other rank one. Full
     * contract: collectives.h. Derived in chapter 02, section 4; the rules
     * of section 3 hold (count 0, in place, uneven counts, the argument
     * check). Stuck? chapters/hints/02.md, hints (a). */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
