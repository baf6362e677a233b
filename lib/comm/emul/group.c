/* group.c - the emulation's groups: each group's ports (its backend part,
 * one per member, in the job's shared memory), the new group of a split,
 * made once and shared by its members, and windows, one region of the
 * job's shared memory that rank 0 allocates (the heap in the thread
 * backend, the arena in the proc backend, which every process maps at the
 * same address). */
#include "emul.h"

#include "../shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- ports */

dt_result dt_emul_group_init(dt_job *job, dt_comm_shared *sh)
{
    dt_port *ports = dt_shm_alloc(job, sizeof(dt_port) * (size_t)sh->size);
    if (!ports)
        return DT_ERR_NOMEM;
    for (int i = 0; i < sh->size; i++)
        dt_port_init(&ports[i]);
    sh->be = ports;
    return DT_OK;
}

void dt_emul_group_free(dt_job *job, dt_comm_shared *sh)
{
    if (!sh->be)
        return;
    for (int i = 0; i < sh->size; i++)
        dt_port_destroy(job, dt_port_of(sh, i));
    dt_shm_free(job, sh->be);
    sh->be = NULL;
}

/* ---------------------------------------------------------------- split */

/* The first member of each new group makes its shared state; a second
 * exchange over the parent hands the address to the others. */
dt_result dt_emul_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                        dt_comm **out)
{
    dt_comm *comm = call->comm;
    dt_comm_shared *sh = NULL;
    int made_failed = 0;
    if (me == 0) {
        int *world = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; world && i < n; i++)
            world[i] = comm->sh->world[ranks[i]];
        sh = world ? dt_comm_shared_new(comm->rc->job, n, world) : NULL;
        made_failed = sh == NULL;
        free(world);
    }
    (void)all; /* the colors and keys: ranks says what this rank needs of them */
    dt_rec made = {.u.made = {(uint64_t)(uintptr_t)sh, (uint64_t)made_failed}};
    const dt_rec *got;
    DT_TRY(dt_sync_exchange(call, &made, &got));
    if (me < 0)
        return DT_OK;
    sh = (dt_comm_shared *)(uintptr_t)got[ranks[0]].u.made.group;
    if (!sh)
        return dt_fail(DT_ERR_NOMEM, "dt_comm_split: rank %d could not make the group", ranks[0]);
    return dt_comm_make(comm->rc, sh, me, out);
}

/* ---------------------------------------------------------------- windows */

/* Rank 0 allocates the region before the exchange that hands its address
 * to the others (or, failing, the words of its reason before ':'). */
dt_result dt_emul_win_allocate(dt_comm *comm, size_t bytes, void **base, void **handle)
{
    dt_job *job = comm->rc->job;
    void *p = comm->rank == 0 ? dt_shm_alloc(job, bytes) : NULL;
    dt_rec mine = {.sig = comm->rank == 0 && !p, .u.win = {bytes, {(uint64_t)(uintptr_t)p}}};
    char err[256] = "";
    if (mine.sig) { /* the others learn why: the words before ':' */
        snprintf(err, sizeof err, "%s", dt_last_error());
        snprintf(mine.u.win.to.why, sizeof mine.u.win.to.why, "%.*s", (int)strcspn(err, ":"),
                 err);
    }
    const dt_rec *all;
    dt_result r = dt_win_exchange(comm, &mine, &all);
    if (r != DT_OK) {
        dt_shm_free(job, p);
        return r;
    }
    if (mine.sig)
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: %s", err);
    if (all[0].sig) {
        char why[sizeof all[0].u.win.to.why + 1];
        snprintf(why, sizeof why, "%.*s", (int)sizeof all[0].u.win.to.why, all[0].u.win.to.why);
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: rank 0 could not allocate %zu bytes: %s",
                       bytes, why);
    }
    *base = (void *)(uintptr_t)all[0].u.win.to.base;
    *handle = NULL;
    return DT_OK;
}

/* After the window's last barrier nobody touches the region: rank 0
 * releases it. */
void dt_emul_win_free(dt_comm *comm, void *base, void *handle, int synced)
{
    (void)handle;
    if (synced && comm->rank == 0)
        dt_shm_free(comm->rc->job, base);
}
