/* mpi_group.c - the mpi backend's communicator groups and windows.
 *
 * Each group has an MPI communicator of exactly its members, ranked as they
 * are; each process keeps its own copy of the group state (one reference:
 * the handle this process holds). A group's id (dt_comm_shared.id) is the
 * same in every member: dt_recv_any's questions name the communicator by
 * it (mpi_any.c). */
#include "mpi_backend.h"

#include <stdlib.h>
#include <string.h>

#define CREATE_TAG 0x6474 /* MPI_Comm_create_group's tag */

/* ---------------------------------------------------------------- groups */

static dt_mpi_group *group_new(MPI_Comm comm, int n, dt_mpi_launch *l)
{
    dt_mpi_group *g = calloc(1, sizeof *g);
    if (g) {
        g->early = calloc((size_t)n, sizeof *g->early);
        g->claimed = calloc((size_t)n, sizeof *g->claimed);
        g->unmatched = calloc((size_t)n, sizeof *g->unmatched);
    }
    if (!g || !g->early || !g->claimed || !g->unmatched) {
        if (g)
            free(g->early), free(g->claimed), free(g->unmatched);
        free(g);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        g->early[i].req = MPI_REQUEST_NULL; /* not 0 in every MPI */
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    g->comm = comm;
    g->launch = l;
    return g;
}

/* The communicator goes to the launch, which frees it at its end (unless
 * the launch failed: see dt_mpi_launch). */
static void retire(dt_mpi_launch *l, MPI_Comm comm)
{
    pthread_mutex_lock(&l->lock);
    if (l->nretired == l->cap_retired) {
        int cap = l->cap_retired ? 2 * l->cap_retired : 8;
        MPI_Comm *more = realloc(l->retired, sizeof *more * (size_t)cap);
        if (more) {
            l->retired = more;
            l->cap_retired = cap;
        }
    }
    if (l->nretired < l->cap_retired)
        l->retired[l->nretired++] = comm;
    /* else: out of memory; the communicator is kept, never freed */
    pthread_mutex_unlock(&l->lock);
}

void dt_mpi_group_free(dt_job *job, dt_comm_shared *sh)
{
    (void)job;
    dt_mpi_group *g = sh->be;
    if (!g)
        return; /* dt_job_init's world, before this backend's took its place */
    if (g->comm != MPI_COMM_NULL)
        retire(g->launch, g->comm);
    for (int i = 0; i < sh->size; i++)
        if (g->early[i].req == MPI_REQUEST_NULL) /* else MPI may still write it: left */
            free(g->early[i].buf);
        else
            MPI_Request_free(&g->early[i].req);
    free(g->early);
    free(g->claimed);
    free(g->unmatched); /* a receive still listed is its request's to free */
    free(g);
    sh->be = NULL;
}

dt_comm_shared *dt_mpi_shared_new(dt_job *job, int n, const int *world, MPI_Comm comm,
                                  dt_mpi_launch *l)
{
    dt_comm_shared *sh = dt_comm_shared_new(job, n, world);
    dt_mpi_group *g = sh ? group_new(comm, n, l) : NULL;
    if (!g) {
        if (sh) {
            atomic_store(&sh->refs, 1);
            dt_comm_shared_unref(job, sh);
        }
        MPI_Comm_free(&comm);
        return NULL;
    }
    atomic_store(&sh->refs, 1);
    sh->be = g;
    return sh;
}

dt_result dt_mpi_create_group(MPI_Comm parent, const int *ranks, int n, MPI_Comm *out)
{
    MPI_Group all, sub;
    int rc = MPI_Comm_group(parent, &all);
    if (rc == MPI_SUCCESS)
        rc = MPI_Group_incl(all, n, ranks, &sub);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Comm_create_group(parent, sub, CREATE_TAG, out);
        MPI_Group_free(&sub);
    }
    MPI_Group_free(&all);
    return rc == MPI_SUCCESS ? DT_OK : dt_mpi_fail(rc, "MPI_Comm_create_group");
}

dt_result dt_mpi_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                       dt_comm **out)
{
    if (me < 0)
        return DT_OK; /* in no group: MPI_Comm_create_group is the members' only */
    /* each process makes its own, and the members agree on its id: the
     * highest any of them would give (dt_recv_any names groups by id across
     * processes, mpi_any.c) */
    int id = 0;
    for (int i = 0; i < n; i++)
        if (all[ranks[i]].u.split.next_id > id)
            id = (int)all[ranks[i]].u.split.next_id;
    dt_comm *parent = call->comm;
    dt_mpi_group *pg = parent->sh->be;
    MPI_Comm comm;
    DT_TRY(dt_mpi_create_group(pg->comm, ranks, n, &comm));
    int *world = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; world && i < n; i++)
        world[i] = parent->sh->world[ranks[i]];
    dt_job *job = parent->rc->job;
    dt_comm_shared *sh = NULL;
    if (world)
        sh = dt_mpi_shared_new(job, n, world, comm, pg->launch);
    else
        MPI_Comm_free(&comm);
    free(world);
    if (!sh)
        return dt_fail(DT_ERR_NOMEM, "dt_comm_split: out of memory");
    sh->id = id; /* the members' agreed id; this process's next ones come after it */
    int next = atomic_load(&job->next_comm_id);
    while (next <= id && !atomic_compare_exchange_weak(&job->next_comm_id, &next, id + 1))
        ;
    return dt_comm_make(parent->rc, sh, me, out);
}

/* ---------------------------------------------------------------- windows */

typedef struct {
    MPI_Win win;
    MPI_Comm node;
} mpi_window;

/* MPI aligns a shared window as it likes: rank 0 asks for 63 bytes more
 * and every rank starts at the first 64-byte boundary of the same region. */
#define WIN_ALIGN 64

dt_result dt_mpi_win_allocate(dt_comm *comm, size_t bytes, void **base, void **handle)
{
    /* MPI allocates it once every rank has come and asked for the same size */
    dt_rec ask = {.u.win.bytes = bytes};
    const dt_rec *all;
    DT_TRY(dt_win_exchange(comm, &ask, &all));
    dt_mpi_group *g = comm->sh->be;
    mpi_window *mw = calloc(1, sizeof *mw);
    if (!mw)
        return dt_fail(DT_ERR_NOMEM, "dt_win_allocate: out of memory");
    int rc = MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, comm->rank, MPI_INFO_NULL,
                                 &mw->node);
    int node_size = 0;
    if (rc == MPI_SUCCESS)
        MPI_Comm_size(mw->node, &node_size);
    if (rc != MPI_SUCCESS || node_size != comm->size) {
        /* every rank sees the same split: all refuse */
        if (rc == MPI_SUCCESS)
            MPI_Comm_free(&mw->node);
        free(mw);
        return rc != MPI_SUCCESS ? dt_mpi_fail(rc, "dt_win_allocate: MPI_Comm_split_type")
            : dt_fail(DT_ERR_UNSUPPORTED, "dt_win_allocate: the %d ranks are not all on one "
                      "machine (%d share rank %d's memory): a window is one machine's shared "
                      "memory", comm->size, node_size, comm->rank);
    }
    void *mine = NULL;
    char *shared = NULL;
    size_t padded = bytes + WIN_ALIGN - 1;
    rc = MPI_Win_allocate_shared(comm->rank == 0 ? (MPI_Aint)padded : 0, 1, MPI_INFO_NULL,
                                 mw->node, &mine, &mw->win);
    MPI_Aint size = 0;
    int disp = 0;
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_shared_query(mw->win, 0, &size, &disp, &shared);
    if (rc == MPI_SUCCESS) /* the same boundary in every process: the same offset */
        shared += (WIN_ALIGN - (uintptr_t)shared % WIN_ALIGN) % WIN_ALIGN;
    if (rc == MPI_SUCCESS && comm->rank == 0)
        memset(shared, 0, bytes);
    if (rc == MPI_SUCCESS) /* nobody uses it before it is zeroed */
        rc = MPI_Barrier(mw->node);
    if (rc != MPI_SUCCESS) {
        MPI_Comm_free(&mw->node);
        free(mw);
        return dt_mpi_fail(rc, "dt_win_allocate: MPI_Win_allocate_shared");
    }
    *base = shared;
    *handle = mw;
    return DT_OK;
}

void dt_mpi_win_free(dt_comm *comm, void *base, void *handle, int synced)
{
    (void)comm, (void)base, (void)synced; /* MPI_Win_free is a barrier of its own */
    mpi_window *mw = handle;
    MPI_Win_free(&mw->win);
    MPI_Comm_free(&mw->node);
    free(mw);
}
