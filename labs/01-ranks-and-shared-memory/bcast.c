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
    /* The root sends buf to every other rank in turn (dt_send); every
     * other rank receives it from the root (dt_recv). */
    (void)buf, (void)count, (void)dtype;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_bcast_tree(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm)
{
    DT_CHECK(check_root("lab_bcast_tree", root, comm));
    /* BEGIN STUDENT CODE */
    /* Work with rel = (rank - root + N) mod N, so that the root is 0.
     * A rank rel > 0 receives once, from rel - lowbit(rel) (lowbit(x) is
     * x & -x); the root starts from the smallest power of two >= N.
     * Then it sends to rel + d for d = lowbit/2, lowbit/4, ..., 1 (largest
     * first: section 6 says why), skipping rel + d >= N. Convert back to
     * real ranks with (rel' + root) mod N. */
    (void)buf, (void)count, (void)dtype;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
