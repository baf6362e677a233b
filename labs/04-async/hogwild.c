/* hogwild.c - lab 04, task 5: Hogwild! (chapter 04, section 7).
 *
 * The shared parameters are words that several threads (or processes
 * sharing the window) read and write at the same time without a lock. In
 * C11 that is only defined behaviour when the words are atomic objects: a
 * plain float written by one thread while another reads it is a data race
 * (undefined behaviour, and ThreadSanitizer reports it). Relaxed atomic loads and stores cost the same as plain ones
 * on x86 and ARM (an ordinary mov / ldr / str), order nothing, and still
 * let updates be lost between a load and the store that follows it: the
 * algorithm is exactly Hogwild!'s, with its races made explicit. */
#include "async.h"

dt_result lab_hogwild_read(float *dst, const _Atomic float *src, size_t n)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): dst holds a word-by-word relaxed copy of
     * src. Section 8, "Races in C, done honestly". */
    (void)dst, (void)src, (void)n;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_hogwild_apply(_Atomic float *params, const float *grad, size_t n, float lr)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): each word moved by -lr * grad[i], without a
     * lock and without a read-modify-write: a concurrent update of the
     * same word may be lost (section 8). Stuck? chapters/hints/04.md, hints (5). */
    (void)params, (void)grad, (void)n, (void)lr;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_hogwild_worker(dt_comm *comm, const lab_hogwild_config *cfg,
                             lab_hogwild_result *res)
{
    const int w = dt_comm_rank(comm);
    lab_trainer t;
    DT_CHECK(lab_trainer_init(&t, cfg->train, cfg->batch, cfg->seed,
                              w == cfg->slow_worker ? cfg->slow_compute_s : cfg->compute_s));
    const size_t n = t.model.num_params;
    dt_result r;
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): exactly cfg->updates gradients were applied
     * to the shared parameters in all, each claimed once; res holds each
     * worker's count and, from rank 0, the final parameters; barriers were
     * the only communication. Section 8, task 5. Stuck? chapters/hints/04.md, hints
     * (5). */
    (void)w, (void)n, (void)res;
    r = DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
    lab_trainer_free(&t);
    return r;
}
