/* job.h - the job: what every rank of one launch shares (not a public header).
 *
 *   dt_job (one per launch: plain memory in the thread backend, the start
 *     of the POSIX shm arena in the proc backend)
 *     +- board[world rank]: doorbell, liveness, what the rank is doing
 *
 * Shared structures hold raw pointers: in the proc backend the arena is
 * mapped at the same address in every process of the job (forked children
 * inherit it; dtrun's programs map it at the recorded address).
 *
 * Lanes: lane 0 runs a rank's blocking calls, lane 1 (its progress thread)
 * its async collectives. Each lane has its own barrier-exchange and its own
 * modeled timeline, so the two never mix. */
#ifndef DT_COMM_JOB_H
#define DT_COMM_JOB_H

#include "dt/comm.h"

#include <stdatomic.h>
#include <stdint.h>

#define DT_JOB_MAGIC 0x64746a6f62303031ULL /* "dtjob001" */
#define DT_JOB_VERSION 2 /* 2: net became a topology */
#define DT_LANES 2

/* Like DT_CHECK, without prefixing file:line: the messages of this layer
 * already say which call and argument failed. */
#define DT_TRY(expr)                                                         \
    do {                                                                     \
        dt_result dt_try_r_ = (expr);                                        \
        if (dt_try_r_ != DT_OK)                                              \
            return dt_try_r_;                                                \
    } while (0)

/* A doorbell per rank: whoever completes something a rank may wait for
 * bumps seq and wakes the rank's threads if any sleeps (futex). */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleepers;
} dt_bell;

#define DT_SITE_WORDS 4 /* a call site's file name: 8 bytes a word */
#define DT_MSG_MAX 1000 /* a rank's message: a timeout lists every rank */

/* What a rank's lane is doing: for the timeout report, the mismatch check
 * and dt_recv_any's rule. Written by the lane (diag.c), read by any rank:
 * every field is atomic, and version (odd while the lane writes) lets a
 * reader take a consistent snapshot (dt_doing_read). */
typedef struct {
    _Atomic uint32_t version;
    _Atomic int active;  /* 1 while inside a call */
    _Atomic int kind;    /* dt_coll_kind, or DT_NUM_COLLS for internal work */
    _Atomic int comm_id;
    _Atomic long seq;    /* the collective's number on its communicator, from 1 */
    _Atomic long count;
    _Atomic uint32_t sig; /* a collective's signature (coll.h), else 0 */
    _Atomic int root;    /* root or peer; -1 when none */
    _Atomic int from;    /* a receive's source (comm rank); DT_FROM_ANY, DT_FROM_NONE */
    _Atomic uint32_t want; /* ... and which of its messages: the k-th it sends */
    _Atomic int waiting; /* 1: dt_wait on an async collective (lane 1 runs it) */
    _Atomic int peer_world; /* root's or peer's world rank; -1 when none */
    _Atomic int line;    /* the call's site in the caller's code (dt_call_site) ... */
    _Atomic uint64_t file[DT_SITE_WORDS]; /* ... and its file's name, without folders */
    _Atomic int timed_out; /* 1: the call ran past its deadline (kept after it returned) */
} dt_doing;

#define DT_FROM_ANY (-1)  /* dt_recv_any */
#define DT_FROM_NONE (-2) /* not a receive */

typedef enum { DT_RANK_RUNNING = 0, DT_RANK_DONE, DT_RANK_FAILED, DT_RANK_DIED } dt_rank_state;

/* The bell has a cache line of its own: others ring it while the rank
 * writes its doing fields. */
typedef struct {
    _Alignas(64) dt_bell bell;
    _Alignas(64) _Atomic int state; /* dt_rank_state */
    _Atomic int pid;
    dt_doing doing[DT_LANES];
    _Atomic uint64_t clock; /* the bits of its lane-0 clock (a double), as of
                               its last call's end: a lower bound on the
                               departure of its next message */
    _Atomic int result;  /* the rank's dt_result once it has ended */
    _Atomic int order;   /* 1 + its place among the ranks that ended badly */
    char msg[DT_MSG_MAX]; /* its message (written before state is set) */
} dt_board;

struct dt_comm_shared;

typedef struct dt_job {
    uint64_t magic;
    uint32_t version;
    int nranks;
    dt_backend backend;
    dt_net_topo net;         /* the modeled network (dt/net.h): each pair of
                                ranks pays its link (dt_comm_pair_link) */
    double timeout_s;
    double spin_s;           /* how long a wait spins before it yields */
    int bind;                /* DT_BIND=1: rank r runs on core r mod cores */
    int debug;
    int fast;                /* the fast paths (dt_launch_opts.fast) */
    dt_algo algo;
    _Atomic int failed;      /* 1 once a rank failed or died */
    _Atomic int fail_order;  /* ranks that ended badly, counted in time */
    _Atomic int next_comm_id;
    void *arena;             /* proc backend: the shm arena (NULL: malloc) */
    size_t arena_bytes;      /* its size */
    struct dt_comm_shared *world;
    dt_board *board;         /* [nranks] */
    char *out;               /* the ranks' result blocks (dt_rank_out): the
                                caller's memory (thread, mpi) or the arena's
                                (proc, copied back at the end); NULL: none */
    size_t out_bytes;        /* one rank's block */
} dt_job;

#endif /* DT_COMM_JOB_H */
