/* barrier.c - lab 01, task 1: a sense-reversing barrier over C11 atomics in
 * a shared window (chapter 01, sections 3 and 4). Fill in lab_pause and
 * lab_barrier_wait between the fences. */
#include "ranks.h"

#include <sched.h>
#include <string.h>

dt_result lab_barrier_init(lab_barrier *b, dt_comm *comm, double timeout_s)
{
    if (!b)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_barrier_init: b is NULL");
    if (!(timeout_s > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_barrier_init: timeout_s %g: must be > 0",
                       timeout_s);
    memset(b, 0, sizeof *b);
    void *base = NULL;
    /* The window is zeroed: arrived = 0 and sense = 0, the state before the
     * first episode, whose sense will be 1. */
    DT_CHECK(dt_win_allocate(comm, sizeof(lab_barrier_shared), &base, &b->win));
    b->shared = base;
    b->nranks = dt_comm_size(comm);
    b->my_sense = 0;
    b->timeout_s = timeout_s;
    b->spin_polls = LAB_SPIN_POLLS;
    b->yield_polls = LAB_YIELD_POLLS;
    return DT_OK;
}

dt_result lab_barrier_destroy(lab_barrier *b)
{
    if (!b)
        return DT_OK;
    dt_result r = dt_win_free(b->win);
    b->win = NULL;
    b->shared = NULL;
    return r;
}

void lab_pause(lab_barrier *b, uint64_t poll)
{
    (void)b, (void)poll; /* (so that the empty stub compiles without warnings) */
    /* BEGIN STUDENT CODE */
    /* Postcondition (ranks.h, lab_pause): after poll number `poll` of a
     * wait, this rank has spun, yielded or napped as the policy in b says,
     * and counted it in b->polls, b->yields and b->sleeps. Section 4, "How
     * to wait", says why each phase exists. Stuck? chapters/hints/01.md, hints (1a). */
    /* END STUDENT CODE */
}

dt_result lab_barrier_wait(lab_barrier *b)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (ranks.h, lab_barrier_wait): returns DT_OK only once
     * every rank has entered this episode; the barrier can be entered again
     * at once; what a rank wrote before its wait is visible to every rank
     * after theirs; DT_ERR_TIMEOUT after b->timeout_s. Section 4 derives the
     * sense-reversing barrier and the memory order of each access (section 3
     * explains the orders). Stuck? chapters/hints/01.md, hints (1b). */
    (void)b;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
