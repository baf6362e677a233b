/* bcast.c - lab 01, task 2: broadcast from any root, linear then binomial
 * tree, over dt_send / dt_recv (chapter 01, sections 5 and 6). */
#include "ranks.h"

/* The checks both broadcasts start with: every rank returns the same error
 * for a bad root, before any message is sent. (Given.) */
static dt_result check_root(const char *what, int root, dt_comm *comm)
{
    int n = dt_comm_size(comm);
    if (n < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: comm is NULL or freed", what);
    if (root < 0 || root >= n)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: root %d outside [0, %d)", what, root, n);
    return DT_OK;
}

dt_result lab_bcast_linear(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm)
{
    DT_CHECK(check_root("lab_bcast_linear", root, comm));
    /* BEGIN STUDENT CODE */
    int n = dt_comm_size(comm), rank = dt_comm_rank(comm);
    if (rank != root)
        return dt_recv(buf, count, dtype, root, comm);
    /* The root's link carries N-1 copies one after another:
     * T = alpha + (N-1) n / beta for the last one to arrive. */
    for (int peer = 0; peer < n; peer++)
        if (peer != root)
            DT_CHECK(dt_send(buf, count, dtype, peer, comm));
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_bcast_tree(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm)
{
    DT_CHECK(check_root("lab_bcast_tree", root, comm));
    /* BEGIN STUDENT CODE */
    int n = dt_comm_size(comm), rank = dt_comm_rank(comm);
    /* Work in ranks relative to the root, so that the root is 0. */
    int rel = (rank - root + n) % n;
    /* A rank rel > 0 receives once, from rel minus its lowest set bit, in
     * the round whose distance is that bit; the root "received" at the
     * smallest power of two >= N. */
    int dist;
    if (rel == 0) {
        dist = 1;
        while (dist < n)
            dist <<= 1;
    } else {
        dist = rel & -rel;
        DT_CHECK(dt_recv(buf, count, dtype, (rel - dist + root) % n, comm));
    }
    /* Then it sends at every smaller distance, largest first: the rank
     * rel + dist/2 heads the largest subtree, so it must start earliest.
     * T = ceil(log2 N) (alpha + n / beta). */
    for (dist >>= 1; dist >= 1; dist >>= 1)
        if (rel + dist < n)
            DT_CHECK(dt_send(buf, count, dtype, (rel + dist + root) % n, comm));
    return DT_OK;
    /* END STUDENT CODE */
}
