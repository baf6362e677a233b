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
    if (n > 0 && (!dst || !src))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_hogwild_read: NULL buffer");
    for (size_t i = 0; i < n; i++)
        dst[i] = atomic_load_explicit(&src[i], memory_order_relaxed);
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_hogwild_apply(_Atomic float *params, const float *grad, size_t n, float lr)
{
    /* BEGIN STUDENT CODE */
    if (n > 0 && (!params || !grad))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_hogwild_apply: NULL buffer");
    for (size_t i = 0; i < n; i++) {
        /* load, compute, store: another worker's store in between is lost */
        float p = atomic_load_explicit(&params[i], memory_order_relaxed);
        atomic_store_explicit(&params[i], p - lr * grad[i], memory_order_relaxed);
    }
    return DT_OK;
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
    void *base = NULL;
    dt_win *win = NULL;
    r = dt_win_allocate(comm, LAB_HOGWILD_PARAMS + n * sizeof(float), &base, &win);
    lab_hogwild_header *head = base;
    _Atomic float *shared = (_Atomic float *)((char *)base + LAB_HOGWILD_PARAMS);
    if (r == DT_OK && w == 0)
        for (size_t i = 0; i < n; i++)
            atomic_store_explicit(&shared[i], t.model.params[i], memory_order_relaxed);
    /* the barrier orders rank 0's stores before every worker's first read */
    if (r == DT_OK)
        r = dt_barrier(comm);
    /* the counter is the only read-modify-write: one per gradient, not per word */
    for (int step = 0; r == DT_OK; step++) {
        if (atomic_fetch_add_explicit(&head->claimed, 1, memory_order_relaxed) >= cfg->updates)
            break;
        r = lab_hogwild_read(t.model.params, shared, n);
        if (r == DT_OK)
            r = lab_trainer_gradient(&t, w, step, comm, NULL);
        if (r == DT_OK)
            r = lab_hogwild_apply(shared, t.model.grads, n, cfg->lr);
        if (r == DT_OK)
            res->steps[w]++;
    }
    if (r == DT_OK)
        r = dt_barrier(comm);
    if (r == DT_OK && w == 0)
        r = lab_hogwild_read(res->params, shared, n);
    if (r == DT_OK)
        r = dt_win_free(win);
    /* END STUDENT CODE */
    lab_trainer_free(&t);
    return r;
}
