/* ps.c - lab 04, tasks 1 to 4: a parameter server (chapter 04, sections 3
 * to 6). Fill in the fences; async.h says what each function must do. */
#include "async.h"

#include <string.h>

/* ---------------------------------------------------------------- task 1 */

dt_result lab_shard_range(size_t n, int parts, int part, size_t *offset, size_t *count)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): DT_OK with shard `part` of the even cut of
     * section 4, task 1, or DT_ERR_INVALID_ARG for a bad argument with the
     * outputs untouched. Stuck? chapters/hints/04.md, hints (1). */
    (void)n, (void)parts, (void)part, (void)offset, (void)count;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 4 */

dt_result lab_ps_admit(const lab_server *s, int w, int *admit)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): *admit says whether answering w's pull now
     * keeps the mode's promise: the synchronous round (section 5), or every
     * applied gradient's staleness <= the bound (section 7 derives the
     * rule). Reads the state only. Stuck? chapters/hints/04.md, hints (4). */
    (void)s, (void)w, (void)admit;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 3 */

dt_result lab_ps_apply(lab_server *s, int w, int version)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): the gradient is recorded with its staleness
     * (section 2's definition) and applied as the mode says (section 4,
     * task 3); w is no longer in flight. Stuck? chapters/hints/04.md, hints (3). */
    (void)s, (void)w, (void)version;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* BEGIN STUDENT CODE */
/* Your helpers for the server's loop, if any. */
/* END STUDENT CODE */

dt_result lab_ps_server(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res)
{
    lab_server s;
    DT_CHECK(lab_server_setup(&s, comm, cfg, res));
    dt_result r;
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): returns once no worker is open, every
     * message received has been handled, and every pull was answered as
     * soon as lab_ps_admit allowed it (stop from server 0 once the budget
     * is spent). Section 4, task 3, and section 6 say why the order of
     * messages makes this safe. Stuck? chapters/hints/04.md, hints (3). */
    (void)comm;
    r = DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
    lab_server_teardown(&s, r);
    return r;
}

/* ---------------------------------------------------------------- task 2 */

/* BEGIN STUDENT CODE */
/* Your helpers for the worker, if any (pulling one shard, for example). */
/* END STUDENT CODE */

dt_result lab_ps_worker(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res)
{
    const int S = cfg->servers, w = dt_comm_rank(comm) - S;
    lab_trainer t;
    DT_CHECK(lab_trainer_init(&t, cfg->train, cfg->batch, cfg->seed,
                              w == cfg->slow_worker ? cfg->slow_compute_s : cfg->compute_s));
    dt_result r;
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): the worker has pushed one gradient per
     * granted pull, each tagged with the version it was computed on, and
     * returned after server 0 said stop (BYE sent to the other servers).
     * Section 4, task 2; section 7 says why the pulls go in server order.
     * Stuck? chapters/hints/04.md, hints (2). */
    (void)w, (void)res;
    r = DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
    lab_trainer_free(&t);
    return r;
}

/* ================================================================ predict, then measure */

dt_result lab_ps_predict_sync(const lab_ps_config *cfg, int workers, const dt_net *link,
                              double *seconds)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (async.h): *seconds = the synchronous run's modeled
     * time that section 9.1 predicts, from the formula alone (nothing
     * runs). */
    (void)cfg, (void)workers, (void)link, (void)seconds;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
