/* join.c - dt_init and dt_finalize: a program joins the job that started
 * it (backend.c picks whose: dtrun's, mpirun's, or a job of one rank run
 * alone), through that backend's attach and detach (backend.h). One job
 * per process. */
#include "backend.h"

/* The world dt_init gave this process: dt_init is once per process, as
 * MPI_Init is (thread ranks of a launch never call it). */
static dt_comm *joined;

dt_result dt_init(dt_comm **world)
{
    if (!world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_init: world is NULL");
    *world = NULL;
    if (joined)
        return dt_fail(DT_ERR_STATE, "dt_init: already initialized");
    const dt_backend_ops *be;
    DT_TRY(dt_backend_joining(&be));
    DT_TRY(be->attach(world));
    joined = *world;
    return DT_OK;
}

dt_result dt_finalize(dt_comm *world)
{
    DT_TRY(dt_comm_check(world, "dt_finalize"));
    if (!joined || world != joined)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_finalize: not the communicator of dt_init");
    dt_result r = world->rc->ops->detach(world); /* world is freed there */
    joined = NULL;
    return r;
}
