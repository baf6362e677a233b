/* naive.c - lab 02, task (a): allreduce as a reduce to rank 0 followed by a
 * broadcast from rank 0 (chapter 02, section 4). */
#include "collectives.h"

#include <string.h>

dt_result lab_naive_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                              dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(lab_check_args(sendbuf, recvbuf, count, dtype, op, comm));
    int rank = dt_comm_rank(comm), k = dt_comm_size(comm);
    size_t bytes = count * dt_dtype_size(dtype);
    if (count == 0)
        return DT_OK;
    if (rank != 0) {
        /* Send my contribution, then wait for the total. */
        DT_CHECK(dt_send(sendbuf, count, dtype, 0, comm));
        return dt_recv(recvbuf, count, dtype, 0, comm);
    }
    /* Rank 0: start from my own data, fold in the others one by one. */
    if (sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, bytes);
    void *tmp = dt_mem_alloc(DT_MEM_COMM, bytes);
    if (!tmp)
        return DT_ERR_NOMEM;
    dt_result r = DT_OK;
    for (int src = 1; src < k && r == DT_OK; src++) {
        r = dt_recv(tmp, count, dtype, src, comm);
        if (r == DT_OK)
            lab_reduce_local(recvbuf, tmp, count, dtype, op);
    }
    dt_mem_free(tmp);
    /* The broadcast: K-1 messages of n bytes through rank 0's one link. */
    for (int dst = 1; dst < k && r == DT_OK; dst++)
        r = dt_send(recvbuf, count, dtype, dst, comm);
    return r;
    /* END STUDENT CODE */
}
