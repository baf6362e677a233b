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
    /* Spin with lab_cpu_relax() while poll < b->spin_polls, then
     * sched_yield() for the next b->yield_polls polls, then nap with
     * dt_sleep(20e-6). Count each poll in b->polls, each yield in b->yields
     * and each nap in b->sleeps. */
    /* END STUDENT CODE */
}

dt_result lab_barrier_wait(lab_barrier *b)
{
    /* BEGIN STUDENT CODE */
    /* 1. Check b (NULL, or b->shared NULL: DT_ERR_INVALID_ARG).
     * 2. Flip b->my_sense: that is the sense of this episode.
     * 3. atomic_fetch_add_explicit on shared->arrived (which memory order?
     *    section 4). The last rank to arrive resets arrived to 0 and then
     *    stores the new sense (release): that opens the barrier.
     * 4. Every other rank polls shared->sense (acquire) until it equals
     *    the episode's sense, calling lab_pause(b, poll) after each failed
     *    poll and returning dt_fail(DT_ERR_TIMEOUT, ...) once dt_now()
     *    passes the deadline (check the clock every few dozen polls). */
    (void)b;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
