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
    /* Postcondition: buf on every rank holds the root's count elements; the
     * root sent N-1 messages, every other rank received one. Section 6
     * derives what it costs. Stuck? chapters/hints/01.md, hints (2a). */
    (void)buf, (void)count, (void)dtype;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_bcast_tree(void *buf, size_t count, dt_dtype dtype, int root, dt_comm *comm)
{
    DT_CHECK(check_root("lab_bcast_tree", root, comm));
    /* BEGIN STUDENT CODE */
    /* Postcondition: buf on every rank holds the root's count elements;
     * every rank but the root received exactly once, N-1 copies were sent
     * in all, and the last rank has them ceil(log2 N) message times after
     * the start. Section 6 derives the tree: whom each rank hears from, whom
     * it sends to and in which order, for any root. Stuck? chapters/hints/01.md,
     * hints (2b). */
    (void)buf, (void)count, (void)dtype;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
