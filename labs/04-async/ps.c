/* ps.c - lab 04, tasks 1 to 4: a parameter server (chapter 04, sections 3
 * to 6). Fill in the fences; async.h says what each function must do. */
#include "async.h"

#include <string.h>

/* ---------------------------------------------------------------- task 1 */

dt_result lab_shard_range(size_t n, int parts, int part, size_t *offset, size_t *count)
{
    /* BEGIN STUDENT CODE */
    /* Shard `part` of `parts`: n / parts elements, one more for the first
     * n % parts shards; each starts where the previous one ends. Check the
     * arguments first (async.h). */
    (void)n, (void)parts, (void)part, (void)offset, (void)count;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 4 */

dt_result lab_ps_admit(const lab_server *s, int w, int *admit)
{
    /* BEGIN STUDENT CODE */
    /* Synchronous: pushes[w] == V. No bound: always. Bound b: (V - v0) + F
     * <= b over the workers in flight (async.h, chapter section 6). */
    (void)s, (void)w, (void)admit;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ---------------------------------------------------------------- task 3 */

dt_result lab_ps_apply(lab_server *s, int w, int version)
{
    /* BEGIN STUDENT CODE */
    /* tau = V - version, recorded with lab_ps_record; then the update of
     * async.h, asynchronous or synchronous. */
    (void)s, (void)w, (void)version;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* BEGIN STUDENT CODE */
/* Your helpers for the server's loop, if any: for example one that takes
 * in one message and one that answers the waiting pulls. */
/* END STUDENT CODE */

dt_result lab_ps_server(dt_comm *comm, const lab_ps_config *cfg, lab_ps_result *res)
{
    lab_server s;
    DT_CHECK(lab_server_setup(&s, comm, cfg, res));
    dt_result r;
    /* BEGIN STUDENT CODE */
    /* Until s.open is 0: dt_recv_any a header; PULL, PUSH (then dt_recv the
     * gradient from the same rank and lab_ps_apply it) or BYE; then answer
     * what waits (stop from server 0 when the budget is spent, else
     * lab_ps_admit, then lab_ps_reply and update the state). */
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
    /* The shard ranges; then steps until server 0 says stop: pull every
     * shard in server order, lab_trainer_gradient(&t, w, step, comm,
     * NULL), push every shard with its version. */
    (void)w, (void)res;
    r = DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
    lab_trainer_free(&t);
    return r;
}
