/* state.c - lab 10, task 6: a checkpoint of one rank's training state
 * (chapter 10, section 7), in the library's checkpoint format (dt/ckpt.h).
 * compress.h lists the records the file holds. */
#include "compress.h"

/* ================================================================ task 6 */

/* BEGIN STUDENT CODE */
/* The records of a rank's state, visited through io: the same code saves
 * and loads, so the two cannot disagree, and a load copies nothing until
 * every record has been checked (dt_ckpt_io_end). */
static dt_result records(lab_cdp *c, dt_ckpt_io *io)
{
    dt_optimizer *o;
    DT_CHECK(dt_train_optimizer(&c->trainer, &o));
    DT_CHECK(dt_ckpt_io_long(io, "step", &c->step));
    DT_CHECK(dt_ckpt_io_f32(io, "params", c->model->params, c->n));
    DT_CHECK(dt_optim_state(o, io, "optimizer"));
    /* error feedback: each rank's residuals are its own state */
    if (c->error)
        DT_CHECK(dt_ckpt_io_f32(io, "error", c->error, c->n));
    if (c->server_error)
        DT_CHECK(dt_ckpt_io_f32(io, "server_error", c->server_error, c->block_len[0]));
    /* PowerSGD's warm start */
    if (c->lr_q)
        DT_CHECK(dt_ckpt_io_f32(io, "powersgd.q", c->lr_q, c->lr_q_count));
    return DT_OK;
}
/* END STUDENT CODE */

dt_result lab_cdp_save(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    dt_ckpt_io *io;
    if (!c || !c->model)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_save: no state");
    DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, c->rank, c->ranks));
    return dt_ckpt_io_end(io, records(c, io), NULL);
    /* END STUDENT CODE */
}

dt_result lab_cdp_load(lab_cdp *c, const char *path)
{
    /* BEGIN STUDENT CODE */
    dt_ckpt_io *io;
    if (!c || !c->model)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_load: no state");
    DT_CHECK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, c->rank, c->ranks));
    return dt_ckpt_io_end(io, records(c, io), NULL);
    /* END STUDENT CODE */
}
