/* proc.c - the proc backend: ranks are forked processes over one POSIX
 * shared-memory arena per job; and dt_init / dt_finalize for programs
 * started by tools/dtrun. */
#include "launch.h"

#include <stdlib.h>

dt_result dt_launch_proc(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    (void)res;
    (void)fn;
    (void)arg;
    return dt_fail(DT_ERR_UNSUPPORTED, "dt_launch: the proc backend is not built yet");
}

/* A job of one rank on the calling thread, for a program run alone. */
typedef struct {
    dt_job job;
    dt_rank_ctx rc;
    dt_comm *world;
} solo_job;

static _Thread_local solo_job *solo;

dt_result dt_init(dt_comm **world)
{
    if (!world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_init: world is NULL");
    *world = NULL;
    if (dt_env_str("RANK", NULL) && dt_env_long("WORLD_SIZE", 1) > 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_init: joining a dtrun job needs the proc backend");
    if (solo)
        return dt_fail(DT_ERR_STATE, "dt_init: already initialized");
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 1;
    o.backend = DT_BACKEND_THREAD;
    dt_resolved res;
    DT_TRY(dt_opts_resolve(&o, &res));
    solo_job *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(DT_ERR_NOMEM, "dt_init: out of memory");
    dt_result r = dt_job_init(&s->job, &res, NULL);
    if (r == DT_OK) {
        dt_rank_ctx_init(&s->rc, &s->job, 0, &res);
        r = dt_comm_make(&s->rc, s->job.world, 0, &s->world);
    }
    if (r != DT_OK) {
        free(s);
        return r;
    }
    dt_log_set_rank(0);
    solo = s;
    *world = s->world;
    return DT_OK;
}

dt_result dt_finalize(dt_comm *world)
{
    DT_TRY(dt_comm_check(world, "dt_finalize"));
    if (!solo || solo->world != world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_finalize: not the communicator of dt_init");
    dt_rank_ctx_destroy(&solo->rc);
    dt_shm_free(&solo->job, solo->job.board);
    free(solo);
    solo = NULL;
    return DT_OK;
}
