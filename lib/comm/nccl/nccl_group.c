/* nccl_group.c - the nccl backend's communicators: a rank's NCCL state on
 * each of its handles, made at the rank's start or by a split (the unique
 * id through the barrier-exchange), and dt_comm_split through ncclCommSplit.
 *
 * NCCL's setup (chapter 15, "one rank per GPU"): rank 0 calls
 * ncclGetUniqueId, which opens the bootstrap's listening socket in its
 * process; every rank then calls ncclCommInitRank(size, id, rank) on its
 * own GPU. The id travels as llm.c passes it, through memory every rank
 * can read: here the host table's barrier-exchange, the job's arena on
 * one machine (proc), MPI's messages across machines (mpi). */
#include "nccl_backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rank's states, one per handle (a rank is a process: nothing here is
 * shared with another rank). The lock: the progress thread makes one too. */
static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;
static dt_nccl_comm *states;

/* The host table under the nccl one (nccl_ops.c sets it, once). */
static const dt_backend_ops *host;

void dt_nccl_set_host(const dt_backend_ops *h) { host = h; }

const dt_backend_ops *dt_nccl_host(void) { return host; }

static dt_nccl_comm *find(const dt_comm *comm)
{
    for (dt_nccl_comm *s = states; s; s = s->next)
        if (s->comm == comm)
            return s;
    return NULL;
}

/* The NCCL_HOSTID route: one GPU, each rank a process that NCCL takes for
 * a host of its own, over sockets on loopback (P2P and SHM off). Correct
 * results at a speed that means nothing: for functional tests only. */
static int hostid_route(void)
{
    const char *v = getenv("DT_NCCL_HOSTID");
    return v && strcmp(v, "1") == 0;
}

dt_result dt_nccl_device(int world_rank, int *device)
{
    int n = 0;
    DT_TRY(dt_cuda_check(cudaGetDeviceCount(&n), "nccl: cudaGetDeviceCount"));
    if (n < 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "nccl: no GPU is visible (make doctor says why)");
    *device = hostid_route() ? 0 : world_rank % n;
    return DT_OK;
}

/* The state's lane parts: a stream each, and lane 1's communicator split
 * off lane 0's (a communicator of its own: the two lanes' calls are
 * ordered differently on different ranks). */
static dt_result finish_state(dt_nccl_comm *s, int rank)
{
    for (int l = 0; l < DT_LANES; l++)
        DT_TRY(dt_cuda_check(cudaStreamCreateWithFlags(&s->stream[l], cudaStreamNonBlocking),
                             "nccl: cudaStreamCreate"));
    DT_TRY(dt_cuda_check(cudaMalloc(&s->scratch, 4), "nccl: cudaMalloc (barrier word)"));
    for (int l = 1; l < DT_LANES; l++)
        DT_TRY(dt_nccl_check(ncclCommSplit(s->nc[0], 0, rank, &s->nc[l], NULL), s->nc[0],
                             "nccl: ncclCommSplit (lane)"));
    return DT_OK;
}

static void add_state(dt_nccl_comm *s)
{
    s->next = states;
    states = s;
}

/* Rank 0's unique id to every rank, in the records of the host table's
 * barrier-exchange (the arena's stamps on proc, messages on mpi): 128
 * bytes, 32 per exchange. failed: rank 0 could not make it (every rank
 * then gets DT_ERR_PEER_DIED). */
static dt_result send_id(dt_call *call, ncclUniqueId *id, int failed)
{
    char *bytes = (char *)id;
    size_t part = sizeof(((dt_rec *)0)->u.words);
    for (size_t off = 0; off < sizeof *id; off += part) {
        dt_rec mine = {.sig = (uint32_t)failed};
        size_t n = sizeof *id - off < part ? sizeof *id - off : part;
        if (call->comm->rank == 0)
            memcpy(mine.u.words, bytes + off, n);
        const dt_rec *got;
        DT_TRY(dt_sync_exchange(call, &mine, &got));
        if (got[0].sig)
            failed = 1;
        else
            memcpy(bytes + off, got[0].u.words, n);
    }
    return failed ? dt_fail(DT_ERR_PEER_DIED, "nccl: rank 0 could not make NCCL's unique id")
                  : DT_OK;
}

/* The setup of comm's first NCCL communicator, on every rank: rank 0's id
 * through the barrier-exchange, ncclCommInitRank, then every rank's
 * verdict, so that all fail together and name who failed. */
static dt_result init_state(dt_call *call, dt_nccl_comm **out)
{
    dt_comm *comm = call->comm;
    dt_nccl_comm *s = calloc(1, sizeof *s);
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    dt_result r = s ? DT_OK : DT_ERR_NOMEM;
    if (r == DT_OK && hostid_route()) { /* before NCCL reads its environment */
        char host[64];
        snprintf(host, sizeof host, "dtlab-rank-%d", comm->rc->world_rank);
        setenv("NCCL_HOSTID", host, 1);
        setenv("NCCL_P2P_DISABLE", "1", 1);
        setenv("NCCL_SHM_DISABLE", "1", 1);
        setenv("NCCL_SOCKET_IFNAME", "lo", 1);
    }
    if (r == DT_OK)
        r = dt_nccl_device(comm->rc->world_rank, &s->device);
    if (r == DT_OK)
        r = dt_cuda_check(cudaSetDevice(s->device), "nccl: cudaSetDevice");
    if (r == DT_OK && comm->rank == 0)
        r = dt_nccl_check(ncclGetUniqueId(&id), NULL, "nccl: ncclGetUniqueId");
    dt_result x = send_id(call, &id, r != DT_OK);
    if (x == DT_ERR_PEER_DIED && r == DT_OK)
        r = x;
    else if (x == DT_OK && r == DT_OK)
        r = dt_nccl_check(ncclCommInitRank(&s->nc[0], comm->size, id, comm->rank), NULL,
                          "nccl: ncclCommInitRank");
    if (x == DT_ERR_PEER_DIED)
        x = DT_OK; /* rank 0's failure: the verdicts below still go round */
    const dt_rec *got;
    if (x == DT_OK) { /* every rank's verdict */
        char why[256];
        snprintf(why, sizeof why, "%s", r != DT_OK ? dt_last_error() : "");
        dt_rec verdict = {.sig = r != DT_OK};
        x = dt_sync_exchange(call, &verdict, &got);
        for (int i = 0; x == DT_OK && r == DT_OK && i < comm->size; i++)
            if (got[i].sig)
                r = dt_fail(DT_ERR_PEER_DIED, "nccl: rank %d could not join the NCCL "
                            "communicator (its own error says why)", i);
        if (r != DT_OK && why[0])
            dt_fail(r, "%s", why);
    }
    if (x != DT_OK)
        r = x;
    if (r == DT_OK)
        r = finish_state(s, comm->rank);
    if (r != DT_OK) {
        if (s && s->nc[0])
            ncclCommAbort(s->nc[0]);
        free(s);
        return r;
    }
    s->comm = comm;
    add_state(s);
    *out = s;
    return DT_OK;
}

dt_result dt_nccl_comm_of(dt_call *call, int may_init, dt_nccl_comm **out)
{
    pthread_mutex_lock(&states_lock);
    dt_nccl_comm *s = find(call->comm);
    dt_result r = DT_OK;
    if (!s && !may_init)
        r = dt_fail(DT_ERR_STATE, "nccl: this communicator has no NCCL communicator yet: its "
                    "first call must be a collective on every rank (dt_barrier), which "
                    "makes it");
    else if (!s)
        r = init_state(call, &s);
    pthread_mutex_unlock(&states_lock);
    if (r == DT_OK && atomic_load(&s->aborted))
        r = dt_fail(DT_ERR_STATE, "nccl: this communicator's NCCL communicator was aborted "
                    "after an earlier failure (a timeout, a failed rank, an NCCL error)");
    if (r == DT_OK && cudaSetDevice(s->device) != cudaSuccess)
        r = dt_fail(DT_ERR_INTERNAL, "nccl: cudaSetDevice(%d) failed", s->device);
    *out = s;
    return r;
}

/* A rank's start: its GPU made current (before the rank's function
 * allocates a buffer), then the world's NCCL communicators, made by every
 * rank together, as internal work on lane 0. */
dt_result dt_nccl_rank_start(dt_comm *world)
{
    int device;
    DT_TRY(dt_nccl_device(world->rc->world_rank, &device));
    DT_TRY(dt_cuda_check(cudaSetDevice(device), "nccl: cudaSetDevice"));
    dt_call call;
    dt_call_init(&call, world, 0, DT_NUM_COLLS, 0, 0);
    dt_nccl_comm *s;
    return dt_nccl_comm_of(&call, 1, &s);
}

/* A rank's end: its NCCL communicators (ncclCommDestroy waits for their
 * work; a failed one was aborted, its handle spent), streams and words. */
void dt_nccl_rank_end(dt_rank_ctx *rc)
{
    pthread_mutex_lock(&states_lock);
    for (dt_nccl_comm **p = &states; *p;) {
        dt_nccl_comm *s = *p;
        if (s->comm->rc != rc) {
            p = &s->next;
            continue;
        }
        *p = s->next;
        for (int l = 0; l < DT_LANES; l++) {
            if (s->nc[l] && !s->aborted)
                ncclCommDestroy(s->nc[l]);
            if (s->stream[l])
                cudaStreamDestroy(s->stream[l]);
            cudaFree(s->stage[l]);
        }
        cudaFree(s->scratch);
        free(s);
    }
    pthread_mutex_unlock(&states_lock);
}

/* dt_comm_split: the host side as the host table makes it, then the parent's NCCL communicator split by the same colors
 * and keys: the new group's first parent rank names it, and a rank's place
 * in it is its key. ncclCommSplit is a collective of the whole parent, as
 * dt_comm_split is. */
dt_result dt_nccl_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                        dt_comm **out)
{
    dt_nccl_comm *parent;
    DT_TRY(dt_nccl_comm_of(call, 1, &parent));
    DT_TRY(dt_nccl_host()->split(call, ranks, n, me, all, out));
    dt_nccl_comm *s = me >= 0 ? calloc(1, sizeof *s) : NULL;
    if (me >= 0 && !s)
        return DT_ERR_NOMEM;
    ncclComm_t nc = NULL;
    dt_result r = dt_nccl_check(ncclCommSplit(parent->nc[0], me >= 0 ? ranks[0] : NCCL_SPLIT_NOCOLOR,
                                              me >= 0 ? me : 0, &nc, NULL),
                                parent->nc[0], "dt_comm_split: ncclCommSplit");
    if (r != DT_OK || me < 0) {
        free(s);
        return r;
    }
    s->nc[0] = nc;
    s->device = parent->device;
    r = finish_state(s, me);
    if (r != DT_OK) {
        ncclCommAbort(nc);
        free(s);
        return r;
    }
    s->comm = *out;
    pthread_mutex_lock(&states_lock);
    add_state(s);
    pthread_mutex_unlock(&states_lock);
    return DT_OK;
}
