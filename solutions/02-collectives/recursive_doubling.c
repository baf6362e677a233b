/* recursive_doubling.c - lab 02, task (c): allreduce by recursive doubling,
 * for any number of ranks (chapter 02, section 6). */
#include "collectives.h"

#include <string.h>

dt_result lab_recursive_doubling_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                           dt_dtype dtype, dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(lab_check_args(sendbuf, recvbuf, count, dtype, op, comm));
    int rank = dt_comm_rank(comm), k = dt_comm_size(comm);
    size_t bytes = count * dt_dtype_size(dtype);
    if (count == 0)
        return DT_OK;
    if (sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, bytes);
    if (k == 1)
        return DT_OK;
    int p = 1; /* the largest power of two <= K */
    while (2 * p <= k)
        p *= 2;
    int extra = k - p;
    if (rank >= p) {
        /* An extra rank: hand my data to my partner, get the total back. */
        DT_CHECK(dt_send(recvbuf, count, dtype, rank - p, comm));
        return dt_recv(recvbuf, count, dtype, rank - p, comm);
    }
    void *tmp = dt_mem_alloc(DT_MEM_COMM, bytes);
    if (!tmp)
        return DT_ERR_NOMEM;
    dt_result r = DT_OK;
    if (rank < extra) {
        r = dt_recv(tmp, count, dtype, rank + p, comm);
        if (r == DT_OK)
            lab_reduce_local(recvbuf, tmp, count, dtype, op);
    }
    /* Round j: swap partial results with the rank that differs in bit j;
     * afterwards each rank holds the reduction of a group of 2^(j+1). */
    for (int mask = 1; mask < p && r == DT_OK; mask <<= 1) {
        int partner = rank ^ mask;
        r = dt_sendrecv(recvbuf, count, partner, tmp, count, partner, dtype, comm);
        if (r == DT_OK)
            lab_reduce_local(recvbuf, tmp, count, dtype, op);
    }
    dt_mem_free(tmp);
    if (r == DT_OK && rank < extra)
        r = dt_send(recvbuf, count, dtype, rank + p, comm);
    return r;
    /* END STUDENT CODE */
}
