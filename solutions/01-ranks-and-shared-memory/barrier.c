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
    /* A few hundred polls cost well under a microsecond each: when the other
     * ranks run on other cores, the episode usually ends within them. After
     * that, this rank may be keeping the very rank it waits for off the
     * core (more ranks than cores): hand the core over. After a long wait,
     * sleep briefly so that an idle waiter costs no CPU at all. */
    b->polls++;
    if (poll < b->spin_polls) {
        lab_cpu_relax();
    } else if (poll - b->spin_polls < b->yield_polls) {
        sched_yield();
        b->yields++;
    } else {
        dt_sleep(20e-6);
        b->sleeps++;
    }
    /* END STUDENT CODE */
}

dt_result lab_barrier_wait(lab_barrier *b)
{
    /* BEGIN STUDENT CODE */
    if (!b || !b->shared || b->nranks < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_barrier_wait: barrier not initialised");
    lab_barrier_shared *s = b->shared;
    /* This episode's sense: the opposite of the previous one's. */
    int sense = !b->my_sense;
    b->my_sense = sense;
    /* acq_rel: release publishes what this rank wrote before the barrier;
     * acquire lets the last rank see what every earlier arrival released
     * (the increments form one release sequence). */
    int before = atomic_fetch_add_explicit(&s->arrived, 1, memory_order_acq_rel);
    if (before == b->nranks - 1) {
        /* The last one: reset the count for the next episode, then open the
         * barrier. The reset is ordered before the flip by the release, and
         * nobody increments again before seeing the flip. */
        atomic_store_explicit(&s->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&s->sense, sense, memory_order_release);
        return DT_OK;
    }
    double deadline = dt_now() + b->timeout_s;
    for (uint64_t poll = 0;; poll++) {
        /* acquire: pairs with the last rank's release of the flip. */
        if (atomic_load_explicit(&s->sense, memory_order_acquire) == sense)
            return DT_OK;
        lab_pause(b, poll);
        if (poll % 64 == 63 && dt_now() > deadline)
            return dt_fail(DT_ERR_TIMEOUT,
                           "lab_barrier_wait: %d of %d ranks arrived after %g s",
                           atomic_load_explicit(&s->arrived, memory_order_relaxed),
                           b->nranks, b->timeout_s);
    }
    /* END STUDENT CODE */
}
