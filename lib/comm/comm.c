/* comm.c - communicator handles: the group state the members share, a
 * rank's handles on it, split and free, and the calls a handle runs. The
 * group's backend part and a split's new group are the backend's
 * (backend.h). */
#include "handle.h"

#include "backend.h"
#include "diag.h"
#include "progress.h"
#include "shm.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shared group state */

dt_comm_shared *dt_comm_shared_new(dt_job *job, int size, const int *world)
{
    dt_comm_shared *sh = dt_shm_alloc(job, sizeof *sh);
    if (!sh)
        return NULL;
    sh->world = dt_shm_alloc(job, sizeof(int) * (size_t)size);
    int ok = sh->world != NULL;
    for (int l = 0; l < DT_LANES; l++)
        for (int p = 0; p < 2; p++) {
            sh->rec[l][p] = dt_shm_alloc(job, sizeof(dt_rec) * (size_t)size);
            ok = ok && sh->rec[l][p];
        }
    if (!ok) {
        dt_comm_shared_unref(job, sh);
        return NULL;
    }
    for (int l = 0; l < DT_LANES; l++) /* an arena block may hold an old group's stamps */
        for (int p = 0; p < 2; p++)
            memset(sh->rec[l][p], 0, sizeof(dt_rec) * (size_t)size);
    sh->size = size;
    sh->id = atomic_fetch_add(&job->next_comm_id, 1);
    atomic_init(&sh->refs, size);
    memcpy(sh->world, world, sizeof(int) * (size_t)size);
    const dt_backend_ops *be = dt_backend_of(job->backend);
    if (be->group_init && be->group_init(job, sh) != DT_OK) {
        atomic_store(&sh->refs, 1);
        dt_comm_shared_unref(job, sh);
        return NULL;
    }
    return sh;
}

static void shared_destroy(dt_job *job, dt_comm_shared *sh)
{
    dt_backend_of(job->backend)->group_free(job, sh); /* be may be NULL */
    dt_shm_free(job, sh->world);
    for (int l = 0; l < DT_LANES; l++)
        for (int p = 0; p < 2; p++)
            dt_shm_free(job, sh->rec[l][p]);
    dt_shm_free(job, sh);
}

void dt_comm_shared_unref(dt_job *job, dt_comm_shared *sh)
{
    if (!sh)
        return;
    if (sh->size == 0 || atomic_fetch_sub(&sh->refs, 1) == 1)
        shared_destroy(job, sh);
}

/* ---------------------------------------------------------------- handles */

dt_result dt_comm_make(dt_rank_ctx *rc, dt_comm_shared *sh, int rank, dt_comm **out)
{
    dt_net link; /* the group's: a split inherits the links its members span */
    DT_TRY(dt_net_group_link(&rc->job->net, sh->world, sh->size, &link));
    dt_comm *c = calloc(1, sizeof *c);
    uint32_t *counts = calloc(2 * (size_t)sh->size, sizeof *counts);
    if (!c || !counts) {
        free(c);
        free(counts);
        return dt_fail(DT_ERR_NOMEM, "out of memory for a communicator");
    }
    c->sent_to = counts;
    c->posted_from = counts + sh->size;
    c->any_last = -1;
    c->rc = rc;
    c->sh = sh;
    c->rank = rank;
    c->size = sh->size;
    c->algo = rc->job->algo;
    c->link = link;
    pthread_mutex_init(&c->stats_lock, NULL);
    atomic_store(&c->magic, DT_COMM_LIVE);
    c->next_of_rank = rc->comms;
    rc->comms = c;
    *out = c;
    return DT_OK;
}

static void release_handle(dt_comm *c)
{
    dt_progress_stop(c);
    for (int l = 0; l < DT_LANES; l++) {
        dt_mem_free(c->scratch[l]);
        c->scratch[l] = NULL;
        free(c->memo[l]);
        c->memo[l] = NULL;
        c->scratch_bytes[l] = 0;
    }
    dt_comm_shared_unref(c->rc->job, c->sh);
    c->sh = NULL;
}

void dt_rank_free_comms(dt_rank_ctx *rc)
{
    dt_comm *c = rc->comms;
    while (c) {
        dt_comm *next = c->next_of_rank;
        if (atomic_load(&c->magic) == DT_COMM_LIVE)
            release_handle(c);
        atomic_store(&c->magic, 0);
        pthread_mutex_destroy(&c->stats_lock);
        free(c->sent_to);
        free(c);
        c = next;
    }
    rc->comms = NULL;
}

int dt_comm_rank(const dt_comm *comm)
{
    return comm && atomic_load(&((dt_comm *)comm)->magic) == DT_COMM_LIVE ? comm->rank : -1;
}

int dt_comm_size(const dt_comm *comm)
{
    return comm && atomic_load(&((dt_comm *)comm)->magic) == DT_COMM_LIVE ? comm->size : -1;
}

dt_result dt_comm_free(dt_comm *comm)
{
    if (!comm)
        return DT_OK;
    DT_TRY(dt_comm_check(comm, "dt_comm_free"));
    if (comm->sh == comm->rc->job->world)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_free: the world communicator is freed "
                       "by the launcher");
    release_handle(comm);
    atomic_store(&comm->magic, DT_COMM_FREED);
    return DT_OK;
}

dt_result dt_comm_set_algo(dt_comm *comm, dt_algo algo)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_set_algo"));
    if ((int)algo < 0 || algo >= DT_NUM_ALGOS)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_set_algo: unknown algorithm %d", (int)algo);
    comm->algo = algo;
    return DT_OK;
}

dt_algo dt_comm_get_algo(const dt_comm *comm)
{
    return dt_comm_check(comm, "dt_comm_get_algo") == DT_OK ? comm->algo : DT_ALGO_AUTO;
}

/* ---------------------------------------------------------------- split */

typedef struct {
    int color, key, rank;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

dt_result dt_comm_split(dt_comm *comm, int color, int key, dt_comm **newcomm)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_split"));
    if (!newcomm)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_split: newcomm is NULL");
    *newcomm = NULL;
    if (color < 0)
        color = DT_COLOR_NONE;
    long seq = ++comm->seq;
    dt_call call;
    dt_call_init(&call, comm, 0, DT_NUM_COLLS, seq, 0);
    dt_doing_set(comm, 0, DT_NUM_COLLS, seq, 0, -1, 0);
    dt_rec mine = {.u.split = {color, key, atomic_load(&comm->rc->job->next_comm_id)}};
    const dt_rec *all;
    dt_result r = dt_sync_exchange(&call, &mine, &all);
    /* this rank's group: the members of its color by key, then parent rank */
    member *mem = NULL;
    int *ranks = NULL, n = 0, me = -1;
    if (r == DT_OK && color >= 0) {
        mem = malloc(sizeof *mem * (size_t)comm->size);
        ranks = malloc(sizeof *ranks * (size_t)comm->size);
        if (!mem || !ranks)
            r = dt_fail(DT_ERR_NOMEM, "dt_comm_split: out of memory");
        for (int i = 0; r == DT_OK && i < comm->size; i++)
            if (all[i].u.split.color == color)
                mem[n++] = (member){color, (int)all[i].u.split.key, i};
        if (r == DT_OK)
            qsort(mem, (size_t)n, sizeof *mem, member_cmp);
        for (int i = 0; r == DT_OK && i < n; i++) {
            ranks[i] = mem[i].rank;
            if (mem[i].rank == comm->rank)
                me = i;
        }
    }
    if (r == DT_OK) /* every rank of the parent: it may exchange again */
        r = comm->rc->ops->split(&call, me >= 0 ? ranks : NULL, me >= 0 ? n : 0, me, all,
                                 newcomm);
    free(ranks);
    free(mem);
    dt_doing_set(comm, 0, -1, 0, 0, 0, 0);
    return r;
}
