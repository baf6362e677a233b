/* comm.c - communicator handles: shared group state, split and free, the
 * barrier-exchange every collective synchronizes with, stats, the modeled
 * clock and compute regions. */
#include "comm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- shared group state */

dt_comm_shared *dt_comm_shared_new(dt_job *job, int size, const int *world)
{
    dt_comm_shared *sh = dt_shm_alloc(job, sizeof *sh);
    if (!sh)
        return NULL;
    sh->world = dt_shm_alloc(job, sizeof(int) * (size_t)size);
    sh->port = dt_shm_alloc(job, sizeof(dt_port) * (size_t)size);
    for (int l = 0; l < DT_LANES; l++)
        for (int p = 0; p < 2; p++)
            sh->sync[l].rec[p] = dt_shm_alloc(job, sizeof(dt_rec) * (size_t)size);
    int ok = sh->world && sh->port;
    for (int l = 0; l < DT_LANES; l++)
        ok = ok && sh->sync[l].rec[0] && sh->sync[l].rec[1];
    if (!ok) {
        dt_comm_shared_unref(job, sh);
        return NULL;
    }
    for (int l = 0; l < DT_LANES; l++) /* an arena block may hold an old group's stamps */
        for (int p = 0; p < 2; p++)
            memset(sh->sync[l].rec[p], 0, sizeof(dt_rec) * (size_t)size);
    sh->size = size;
    sh->id = atomic_fetch_add(&job->next_comm_id, 1);
    atomic_init(&sh->refs, size);
    memcpy(sh->world, world, sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++)
        dt_shared_mutex_init(&sh->port[i].lock);
    return sh;
}

static void shared_destroy(dt_job *job, dt_comm_shared *sh)
{
    if (sh->port) {
        for (int i = 0; i < sh->size; i++) {
            /* Eager messages nobody received are freed with the group. */
            for (dt_msg *m = sh->port[i].sends, *next; m; m = next) {
                next = m->next;
                if (m->eager)
                    dt_shm_free(job, m);
            }
            pthread_mutex_destroy(&sh->port[i].lock);
        }
    }
    dt_shm_free(job, sh->port);
    dt_shm_free(job, sh->world);
    for (int l = 0; l < DT_LANES; l++)
        for (int p = 0; p < 2; p++)
            dt_shm_free(job, sh->sync[l].rec[p]);
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
    dt_comm *c = calloc(1, sizeof *c);
    if (!c)
        return dt_fail(DT_ERR_NOMEM, "out of memory for a communicator");
    c->rc = rc;
    c->sh = sh;
    c->rank = rank;
    c->size = sh->size;
    c->algo = rc->job->algo;
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
        free(c);
        c = next;
    }
    rc->comms = NULL;
}

dt_result dt_comm_check(const dt_comm *comm, const char *fn)
{
    if (!comm)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: communicator is NULL", fn);
    uint32_t m = atomic_load(&((dt_comm *)comm)->magic);
    if (m == DT_COMM_FREED)
        return dt_fail(DT_ERR_STATE, "%s: communicator used after free", fn);
    if (m != DT_COMM_LIVE)
        return dt_fail(DT_ERR_STATE, "%s: not a live communicator", fn);
    return DT_OK;
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

/* ---------------------------------------------------------------- ops, sync */

void dt_op_begin(dt_op *op, dt_comm *comm, int lane, int kind, long seq, int counted)
{
    memset(op, 0, sizeof *op);
    op->comm = comm;
    op->lane = lane;
    op->kind = kind;
    op->seq = seq;
    op->counted = counted;
    op->tag = DT_TAG(kind, seq);
    op->t = lane == 0 ? comm->rc->clock : comm->rc->stream_clock;
}

void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root)
{
    dt_doing *d = &comm->rc->job->board[comm->rc->world_rank].doing[lane];
    if (kind < 0) {
        atomic_store_explicit(&d->active, 0, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&d->kind, kind, memory_order_relaxed);
    atomic_store_explicit(&d->comm_id, comm->sh->id, memory_order_relaxed);
    atomic_store_explicit(&d->seq, seq, memory_order_relaxed);
    atomic_store_explicit(&d->count, (long)count, memory_order_relaxed);
    atomic_store_explicit(&d->root, root, memory_order_relaxed);
    atomic_store_explicit(&d->active, 1, memory_order_relaxed);
}

typedef struct {
    const dt_rec *rec;
    int size;
    uint32_t stamp;
} all_stamped_arg;

static int all_stamped(const void *arg)
{
    const all_stamped_arg *a = arg;
    for (int i = 0; i < a->size; i++)
        if (atomic_load_explicit(&a->rec[i].stamp, memory_order_seq_cst) != a->stamp)
            return 0;
    return 1;
}

/* A barrier of stamps: each rank writes its record into its own cache line
 * and stamps it, then polls the others' stamps. A waiter sees the last
 * arrival after one cache-line transfer (a counter and a generation flag
 * take three in a row). Who wakes sleepers: a rank that, after its own
 * stamp, sees every stamp set. Stamps are stored and read sequentially
 * consistent, so the rank whose store comes last in that one order sees
 * all of them: at least one rank rings; the others only wait. */
dt_result dt_sync_exchange(dt_op *op, const dt_rec *mine, const dt_rec **all)
{
    dt_comm *c = op->comm;
    dt_sync *s = &c->sh->sync[op->lane];
    uint32_t g = c->sync_gen[op->lane];
    dt_rec *rec = s->rec[g & 1], *slot = &rec[c->rank];
    memcpy(slot->w, mine->w, sizeof slot->w);
    slot->clock = mine->clock;
    all_stamped_arg arg = {rec, c->size, g + 1};
    atomic_store_explicit(&slot->stamp, g + 1, memory_order_seq_cst);
    if (all_stamped(&arg)) {
        dt_job *job = c->rc->job;
        for (int i = 0; i < c->size; i++)
            if (i != c->rank)
                dt_bell_ring(&job->board[c->sh->world[i]].bell);
    } else {
        DT_TRY(dt_wait_until(op, all_stamped, &arg));
    }
    c->sync_gen[op->lane] = g + 1;
    *all = rec;
    return DT_OK;
}

void *dt_scratch(dt_comm *comm, int lane, size_t bytes)
{
    if (bytes == 0)
        bytes = 64;
    if (comm->scratch_bytes[lane] >= bytes)
        return comm->scratch[lane];
    dt_mem_free(comm->scratch[lane]);
    comm->scratch_bytes[lane] = 0;
    comm->scratch[lane] = dt_mem_alloc(DT_MEM_COMM, bytes);
    if (comm->scratch[lane])
        comm->scratch_bytes[lane] = bytes;
    return comm->scratch[lane];
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
    dt_op op;
    dt_op_begin(&op, comm, 0, DT_NUM_COLLS, seq, 0);
    dt_doing_set(comm, 0, DT_NUM_COLLS, seq, 0, -1);
    dt_rec mine = {.w = {(uint64_t)(int64_t)color, (uint64_t)(int64_t)key}};
    const dt_rec *all;
    dt_result r = dt_sync_exchange(&op, &mine, &all);
    member *mem = NULL;
    int n = 0, me = -1;
    if (r == DT_OK && color >= 0) {
        mem = malloc(sizeof *mem * (size_t)comm->size);
        if (!mem)
            r = dt_fail(DT_ERR_NOMEM, "dt_comm_split: out of memory");
        for (int i = 0; r == DT_OK && i < comm->size; i++)
            if ((int)(int64_t)all[i].w[0] == color)
                mem[n++] = (member){color, (int)(int64_t)all[i].w[1], i};
        if (mem)
            qsort(mem, (size_t)n, sizeof *mem, member_cmp);
        for (int i = 0; i < n; i++)
            if (mem[i].rank == comm->rank)
                me = i;
    }
    /* The first member of each group makes its shared state; a second
     * exchange hands the address to the others. */
    dt_comm_shared *sh = NULL;
    int made_failed = 0;
    if (r == DT_OK && me == 0) {
        int *world = malloc(sizeof(int) * (size_t)n);
        for (int i = 0; world && i < n; i++)
            world[i] = comm->sh->world[mem[i].rank];
        sh = world ? dt_comm_shared_new(comm->rc->job, n, world) : NULL;
        made_failed = sh == NULL;
        free(world);
    }
    if (r == DT_OK) {
        dt_rec rec2 = {.w = {(uint64_t)(uintptr_t)sh, (uint64_t)made_failed}};
        r = dt_sync_exchange(&op, &rec2, &all);
    }
    if (r == DT_OK && me >= 0) {
        int leader = mem[0].rank;
        sh = (dt_comm_shared *)(uintptr_t)all[leader].w[0];
        if (!sh)
            r = dt_fail(DT_ERR_NOMEM, "dt_comm_split: rank %d could not make the group", leader);
        else
            r = dt_comm_make(comm->rc, sh, me, newcomm);
    }
    free(mem);
    dt_doing_set(comm, 0, -1, 0, 0, 0);
    return r;
}

/* ---------------------------------------------------------------- stats */

dt_result dt_comm_stats(const dt_comm *comm, dt_stats *out)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_stats"));
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_comm_stats: out is NULL");
    dt_comm *c = (dt_comm *)comm;
    pthread_mutex_lock(&c->stats_lock);
    *out = c->stats;
    pthread_mutex_unlock(&c->stats_lock);
    return DT_OK;
}

dt_result dt_comm_stats_reset(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_stats_reset"));
    pthread_mutex_lock(&comm->stats_lock);
    memset(&comm->stats, 0, sizeof comm->stats);
    pthread_mutex_unlock(&comm->stats_lock);
    return DT_OK;
}

/* ---------------------------------------------------------------- modeled clock */

double dt_clock(const dt_comm *comm)
{
    if (dt_comm_check(comm, "dt_clock") != DT_OK)
        return 0.0;
    return comm->rc->clock;
}

dt_result dt_compute_begin(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_compute_begin"));
    if (comm->rc->compute_t0 >= 0)
        return dt_fail(DT_ERR_STATE, "dt_compute_begin: a compute region is already open");
    comm->rc->compute_t0 = dt_now();
    return DT_OK;
}

dt_result dt_compute_end(dt_comm *comm)
{
    DT_TRY(dt_comm_check(comm, "dt_compute_end"));
    dt_rank_ctx *rc = comm->rc;
    if (rc->compute_t0 < 0)
        return dt_fail(DT_ERR_STATE, "dt_compute_end: no compute region is open");
    double now = dt_now(), m0 = rc->clock;
    rc->clock += now - rc->compute_t0;
    dt_trace_add(rc, DT_NUM_COLLS, 0, rc->compute_t0, now, m0, rc->clock);
    rc->compute_t0 = -1;
    return DT_OK;
}

dt_result dt_clock_advance(dt_comm *comm, double seconds)
{
    DT_TRY(dt_comm_check(comm, "dt_clock_advance"));
    if (!(seconds >= 0) || isinf(seconds))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_clock_advance: seconds = %g, expected >= 0",
                       seconds);
    double now = dt_now(), m0 = comm->rc->clock;
    comm->rc->clock += seconds;
    dt_trace_add(comm->rc, DT_NUM_COLLS, 0, now, now, m0, comm->rc->clock);
    return DT_OK;
}

dt_result dt_comm_net(const dt_comm *comm, double *alpha, double *beta)
{
    DT_TRY(dt_comm_check(comm, "dt_comm_net"));
    if (alpha)
        *alpha = comm->rc->job->alpha;
    if (beta)
        *beta = comm->rc->job->beta;
    return DT_OK;
}
