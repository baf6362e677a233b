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
    DT_CHECK(lab_check_args(sendbuf, recvbuf, count, dtype, op, comm));
    int rank = dt_comm_rank(comm), k = dt_comm_size(comm);
    int next = (rank + 1) % k, prev = (rank - 1 + k) % k;
    size_t es = dt_dtype_size(dtype), my_off, my_len;
    lab_block(count, k, rank, &my_off, &my_len);
    if (count == 0)
        return DT_OK;
    if (k == 1) {
        if (recvbuf != sendbuf)
            memcpy(recvbuf, sendbuf, count * es);
        return DT_OK;
    }
    /* Two scratch blocks: the partial sum I send, the one I receive. */
    size_t max_len = count / (size_t)k + (count % (size_t)k ? 1 : 0);
    char *acc = dt_mem_alloc(DT_MEM_COMM, 2 * max_len * es);
    if (!acc)
        return DT_ERR_NOMEM;
    char *tmp = acc + max_len * es, *scratch = acc;
    /* Step s: send the partial of block r-s-1, receive the partial of block
     * r-s-2 and add my own part of it. Step 0 sends my raw block r-1; after
     * step K-2 the block received is r - K = r, complete. */
    const void *out = NULL;
    dt_result r = DT_OK;
    for (int s = 0; s < k - 1 && r == DT_OK; s++) {
        int sb = (rank - s - 1 + 2 * k) % k, rb = (rank - s - 2 + 2 * k) % k;
        size_t so, sl, ro, rl;
        lab_block(count, k, sb, &so, &sl);
        lab_block(count, k, rb, &ro, &rl);
        if (s == 0)
            out = (const char *)sendbuf + so * es;
        r = dt_sendrecv(out, sl, next, tmp, rl, prev, dtype, comm);
        if (r != DT_OK)
            break;
        lab_reduce_local(tmp, (const char *)sendbuf + ro * es, rl, dtype, op);
        /* What I just completed is what I send next. */
        char *t = acc;
        acc = tmp;
        tmp = t;
        out = acc;
    }
    if (r == DT_OK)
        memcpy(recvbuf, acc, my_len * es);
    dt_mem_free(scratch);
    return r;
    /* END STUDENT CODE */
}

dt_result lab_ring_allgather(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(lab_check_args(sendbuf, recvbuf, count, dtype, DT_SUM, comm));
    int rank = dt_comm_rank(comm), k = dt_comm_size(comm);
    int next = (rank + 1) % k, prev = (rank - 1 + k) % k;
    size_t es = dt_dtype_size(dtype), my_off, my_len;
    lab_block(count, k, rank, &my_off, &my_len);
    if (count == 0)
        return DT_OK;
    char *buf = recvbuf;
    if (sendbuf != buf + my_off * es)
        memcpy(buf + my_off * es, sendbuf, my_len * es);
    /* Step s: pass on block r-s (mine at step 0), receive block r-s-1. */
    for (int s = 0; s < k - 1; s++) {
        int sb = (rank - s + k) % k, rb = (rank - s - 1 + k) % k;
        size_t so, sl, ro, rl;
        lab_block(count, k, sb, &so, &sl);
        lab_block(count, k, rb, &ro, &rl);
        DT_CHECK(dt_sendrecv(buf + so * es, sl, next, buf + ro * es, rl, prev, dtype, comm));
    }
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_ring_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_redop op, dt_comm *comm)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(lab_check_args(sendbuf, recvbuf, count, dtype, op, comm));
    if (count == 0)
        return DT_OK;
    if (sendbuf != recvbuf)
        memcpy(recvbuf, sendbuf, count * dt_dtype_size(dtype));
    size_t off, len;
    lab_block(count, dt_comm_size(comm), dt_comm_rank(comm), &off, &len);
    void *mine = lab_elem(recvbuf, off, dtype);
    /* Both halves in place: my block is reduced where it lies, then the
     * completed blocks travel round the ring into everyone's buffer. */
    DT_CHECK(lab_ring_reduce_scatter(recvbuf, mine, count, dtype, op, comm));
    return lab_ring_allgather(mine, recvbuf, count, dtype, comm);
    /* END STUDENT CODE */
}
