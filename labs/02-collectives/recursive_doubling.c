/* recursive_doubling.c - lab 02, task (c): allreduce by recursive doubling,
 * for any number of ranks (chapter 02, section 6). */
#include "collectives.h"

#include <string.h>

dt_result lab_recursive_doubling_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                           dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    /* On return, recvbuf is what lab_naive_allreduce gives, computed in
     * log2 P rounds of whole-buffer exchanges among ranks 0 .. P-1 (P the
     * largest power of two <= K), with ranks P .. K-1 served by a partner
     * below P. Full contract: collectives.h. Section 6 derives the rounds
     * and what they cost. Stuck? chapters/hints/02.md, hints (c). */
    (void)sendbuf, (void)recvbuf, (void)count, (void)dtype, (void)op, (void)comm;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
