/* comm_internal.h - what the files of lib/comm share (not a public header).
 *
 * The picture:
 *
 *   dt_job (one per launch, shared by all ranks: plain memory in the thread
 *     backend, the start of the POSIX shm arena in the proc backend)
 *     +- board[world rank]: doorbell, liveness, what the rank is doing
 *   dt_comm_shared (one per communicator group, shared memory)
 *     +- port[member]: the member's inbox of posted sends and receives
 *     +- sync[lane]: a barrier that also exchanges one small record per rank
 *   dt_rank_ctx (one per rank, private): modeled clock, fault counters, trace
 *   dt_comm (one per rank and communicator, private): the handle
 *
 * Shared structures hold raw pointers: in the proc backend the arena is
 * mapped at the same address in every process of the job (forked children
 * inherit it; dtrun's programs map it at the recorded address).
 *
 * Lanes: lane 0 runs the rank's blocking calls, lane 1 (the progress
 * thread) its async collectives. Each lane has its own barrier/exchange and
 * its own modeled timeline, so the two never mix.
 */
#ifndef DT_COMM_INTERNAL_H
#define DT_COMM_INTERNAL_H

#include "dt/comm.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define DT_JOB_MAGIC 0x64746a6f62303031ULL /* "dtjob001" */
#define DT_JOB_VERSION 1
#define DT_COMM_LIVE 0x636f6d6dU  /* "comm" */
#define DT_COMM_FREED 0x66726565U /* "free" */
#define DT_LANES 2
#define DT_EAGER_MAX 16384        /* sends up to this many bytes are copied */
#define DT_ANY_SOURCE (-1)
#define DT_TINY_MAX 40            /* allreduces this small ride in the barrier */

/* ---------------------------------------------------------------- job */

/* A doorbell per rank: whoever completes something a rank may wait for
 * bumps seq and wakes the rank's threads if any sleeps (futex). */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleepers;
} dt_bell;

/* What a rank's lane is doing, for the timeout report. Written by the lane,
 * read by any rank: every field is atomic. */
typedef struct {
    _Atomic int active;  /* 1 while inside a call */
    _Atomic int kind;    /* dt_coll_kind, or DT_NUM_COLLS for internal work */
    _Atomic int comm_id;
    _Atomic long seq;    /* the collective's number on its communicator, from 1 */
    _Atomic long count;
    _Atomic int root;    /* root or peer; -1 when none */
} dt_doing;

enum { DT_RANK_RUNNING = 0, DT_RANK_DONE, DT_RANK_FAILED, DT_RANK_DIED };

/* The bell has a cache line of its own: others ring it while the rank
 * writes its doing fields. */
typedef struct {
    _Alignas(64) dt_bell bell;
    _Alignas(64) _Atomic int state; /* DT_RANK_* */
    _Atomic int pid;
    dt_doing doing[DT_LANES];
    _Atomic int result;  /* the rank's dt_result once it has ended */
    _Atomic int order;   /* 1 + its place among the ranks that ended badly */
    char msg[400];       /* its message (written before state is set) */
} dt_board;

typedef struct dt_job {
    uint64_t magic;
    uint32_t version;
    int nranks;
    dt_backend backend;
    double alpha, beta;  /* the modeled network */
    double timeout_s;
    double spin_s;           /* how long a wait spins before it yields */
    int bind;                /* DT_BIND=1: rank r runs on core r mod cores */
    int debug;
    dt_algo algo;
    _Atomic int failed;      /* 1 once a rank failed or died */
    _Atomic int fail_order;  /* ranks that ended badly, counted in time */
    _Atomic int next_comm_id;
    void *arena;             /* proc backend: the shm arena (NULL: malloc) */
    size_t arena_bytes;      /* its size */
    struct dt_comm_shared *world;
    dt_board *board;         /* [nranks] */
} dt_job;

/* Shared memory of the job: the proc backend's arena, else the heap.
 * Zeroed, 64-byte aligned; NULL (with a message) when out of memory. */
void *dt_shm_alloc(dt_job *job, size_t bytes);
void dt_shm_free(dt_job *job, void *p);
/* The arena allocator of the proc backend (lib/comm/arena.c). */
dt_result dt_arena_init(void *arena, size_t size);
void *dt_arena_alloc(void *arena, size_t bytes);
void dt_arena_free(void *arena, void *p);
/* pid, or 0 when [p, p + bytes) lies in the job's shared arena: memory that
 * every process addresses directly, at the same address. */
int dt_owner_pid(const dt_job *job, int pid, const void *p, size_t bytes);

void dt_bell_ring(dt_bell *b);
/* Copies between this process (self) and another rank's memory
 * (process_vm_* when pid is another process; memcpy when pid is self, or
 * 0 for memory in the shared arena). */
dt_result dt_copy_from(int pid, int self, void *dst, const void *src, size_t n);
dt_result dt_copy_to(int pid, int self, void *dst, const void *src, size_t n);
/* The message of a failed process_vm_* copy (errno set): UNSUPPORTED when
 * the system forbids it, PEER_DIED otherwise. */
dt_result dt_cma_fail(const char *what, size_t n, int pid);

/* Mutexes in shared memory: process-shared and robust, so that a process
 * killed while holding one does not block the others forever. */
void dt_shared_mutex_init(pthread_mutex_t *m);
void dt_shared_lock(pthread_mutex_t *m);

/* ---------------------------------------------------------------- transport */

enum { DT_MSG_SEND = 0, DT_MSG_RECV };
enum { DT_MSG_PENDING = 0, DT_MSG_DONE, DT_MSG_ERROR };

/* A posted send or receive, waiting in the receiver's port for its match. */
typedef struct dt_msg {
    struct dt_msg *next;
    int dir;            /* DT_MSG_SEND / DT_MSG_RECV */
    int src;            /* sender (comm rank); DT_ANY_SOURCE in a receive */
    uint64_t tag;
    size_t bytes;
    void *buf;          /* the data (send) or where it goes (receive) */
    int pid;            /* process owning buf */
    int owner_world;    /* whose doorbell rings on completion */
    int port_rank;      /* the port it waits in: the receiver's */
    int eager;          /* a send whose copy of the data follows the header */
    double stamp;       /* send: the sender's modeled clock at departure */
    _Atomic int state;  /* DT_MSG_* */
    /* filled by the matcher for a receive */
    int got_src;
    double got_stamp;
    size_t got_bytes;   /* the sender's size (an error when it differs) */
} dt_msg;

typedef struct {
    pthread_mutex_t lock; /* guards both lists */
    dt_msg *sends, *sends_tail;
    dt_msg *recvs, *recvs_tail;
} dt_port;

/* A barrier that also exchanges one record per rank (signatures for the
 * debug check, buffer addresses for shared-memory shortcuts, clocks).
 * Each rank writes its record into a cache line of its own and stamps it
 * with the exchange's number; the others poll the stamps. Records are
 * double-buffered by the parity of the exchange: a rank can be at most one
 * exchange ahead of the slowest reader. */
typedef struct {
    _Alignas(64) uint64_t w[6]; /* one cache line per rank */
    double clock;
    _Atomic uint32_t stamp;     /* set by dt_sync_exchange: 1 + the exchange's number */
} dt_rec;

typedef struct {
    dt_rec *rec[2];       /* [size] each, zeroed when made */
} dt_sync;

typedef struct dt_comm_shared {
    int id;
    int size;
    _Atomic int refs;     /* members still holding it */
    int *world;           /* [size] world rank of each member */
    dt_port *port;        /* [size] */
    dt_sync sync[DT_LANES];
} dt_comm_shared;

dt_comm_shared *dt_comm_shared_new(dt_job *job, int size, const int *world);
void dt_comm_shared_unref(dt_job *job, dt_comm_shared *sh);

/* ---------------------------------------------------------------- rank and handle */

typedef struct dt_trace_ev {
    int kind; /* dt_coll_kind, or DT_NUM_COLLS for compute */
    int lane;
    double w0, w1, m0, m1;
} dt_trace_ev;

typedef enum { DT_FAULT_NONE = 0, DT_FAULT_KILL, DT_FAULT_DELAY } dt_fault_type;

typedef struct dt_fault {
    dt_fault_type type;
    int rank;
    int kind;     /* kill: the kind of call */
    long at;      /* kill: its number on the rank, from 1 */
    double delay_s;
} dt_fault;

#define DT_MAX_FAULTS 8

struct dt_backend_ops;

typedef struct dt_rank_ctx {
    const struct dt_backend_ops *ops; /* how this rank's calls are carried out */
    dt_job *job;
    int world_rank;
    int pid;               /* of the rank's process */
    double clock;          /* modeled seconds; lane 0 only */
    double compute_t0;     /* wall start of a compute region, < 0 outside */
    double stream_clock;   /* end of the async timeline; lane 1 only */
    dt_mem_ctx *mem;
    long kind_calls[DT_NUM_COLLS]; /* for DT_FAULT's at=kind#K */
    dt_fault faults[DT_MAX_FAULTS];
    int nfaults;
    pthread_mutex_t trace_lock;
    dt_trace_ev *trace;
    size_t ntrace, captrace;
    int tracing;
    struct dt_comm *comms; /* every handle of the rank, freed at its end */
} dt_rank_ctx;

typedef struct dt_progress dt_progress;

struct dt_comm {
    _Atomic uint32_t magic; /* DT_COMM_LIVE, DT_COMM_FREED */
    dt_rank_ctx *rc;
    dt_comm_shared *sh;
    int rank, size;
    dt_algo algo;
    long seq;               /* collectives issued on this comm (lane 0 counts) */
    long p2p_seq;           /* blocking p2p calls, for the timeout report */
    uint32_t sync_gen[DT_LANES];
    pthread_mutex_t stats_lock;
    dt_stats stats;
    void *scratch[DT_LANES]; /* kept between calls: no page faults each time */
    size_t scratch_bytes[DT_LANES];
    dt_progress *progress;  /* the async lane, started on first use */
    struct dt_comm *next_of_rank;
};

/* One operation in progress on one lane: the transport charges its
 * messages to this timeline and these stats. */
typedef struct {
    dt_comm *comm;
    int lane;
    double t;           /* the op's modeled clock */
    uint64_t tag;       /* base tag: kind, sequence; low bits = step */
    int counted;        /* 0: internal traffic, not in the stats */
    double deadline;    /* wall time */
    int kind;
    long seq;
} dt_op;

/* Tags: [kind+1: 8 bits][seq: 36 bits][step: 20 bits]; user p2p = 0. */
#define DT_TAG(kind, seq) ((((uint64_t)(kind) + 1) << 56) | (((uint64_t)(seq) & 0xfffffffffULL) << 20))

void dt_op_begin(dt_op *op, dt_comm *comm, int lane, int kind, long seq, int counted);

dt_result dt_tp_isend(dt_op *op, int peer, const void *buf, size_t bytes, uint64_t tag,
                      dt_msg **out);
dt_result dt_tp_irecv(dt_op *op, int peer, void *buf, size_t bytes, uint64_t tag,
                      dt_msg **out);
/* Waits for a posted message (NULL: already complete), frees it, charges
 * the op's clock (receives) and stats. */
dt_result dt_tp_wait(dt_op *op, dt_msg *m);
int dt_tp_done(const dt_msg *m);
dt_result dt_tp_send(dt_op *op, int peer, const void *buf, size_t bytes, uint64_t tag);
dt_result dt_tp_recv(dt_op *op, int peer, void *buf, size_t bytes, uint64_t tag);
dt_result dt_tp_sendrecv(dt_op *op, int dest, const void *sbuf, size_t sbytes, int source,
                         void *rbuf, size_t rbytes, uint64_t tag);
/* dt_tp_wait that also gives a receive's sender (for dt_recv_any). */
dt_result dt_tp_wait_src(dt_op *op, dt_msg *m, int *src);

/* Waits until cond(arg) is true, with the op's deadline; a spin, then
 * sleeps on the rank's doorbell. what names the wait in messages. */
dt_result dt_wait_until(dt_op *op, int (*cond)(const void *), const void *arg);

/* The barrier-exchange on the op's lane: publishes mine, waits for all,
 * returns the array of records (valid until this lane's next sync). */
dt_result dt_sync_exchange(dt_op *op, const dt_rec *mine, const dt_rec **all);

/* The timeout report: what every rank does. */
void dt_describe_job(dt_job *job, char *out, size_t n);
/* DT_ERR_PEER_DIED with the name of a failed rank, if any rank failed. */
dt_result dt_check_peers(dt_job *job);

/* Stats, under the comm's lock (both lanes update them). */
void dt_stats_msg(dt_comm *comm, int sent, uint64_t bytes, uint64_t msgs);
/* Both directions at once (a shortcut's symmetric traffic). */
void dt_stats_both(dt_comm *comm, uint64_t bytes, uint64_t msgs);

/* Scratch memory of a lane, grown as needed and kept (DT_MEM_COMM). */
void *dt_scratch(dt_comm *comm, int lane, size_t bytes);

/* ---------------------------------------------------------------- reduction */

/* dst[i] = dst[i] op src[i] for i < n (AVG sums). */
void dt_reduce_into(void *dst, const void *src, size_t n, dt_dtype dt, dt_redop op);
/* dst[i] = a[i] op b[i]; dst may alias a or b. */
void dt_reduce3(void *dst, const void *a, const void *b, size_t n, dt_dtype dt, dt_redop op);
/* dst[i] /= nranks (the last step of AVG). */
void dt_reduce_avg(void *buf, size_t n, dt_dtype dt, int nranks);

/* ---------------------------------------------------------------- collectives */

/* The arguments of one collective, as issued. */
typedef struct {
    int kind;          /* dt_coll_kind */
    const void *sendbuf;
    void *recvbuf;
    size_t count;      /* per the call's definition */
    dt_dtype dtype;
    dt_redop op;
    int root;
    dt_algo algo;      /* resolved: never AUTO unless a shortcut may be used */
    int shortcut;      /* 1: the shared-memory shortcut may be taken */
} dt_coll_args;

/* Runs a collective on op's lane (called by the blocking API on lane 0 and
 * by the progress thread on lane 1). */
dt_result dt_coll_run(dt_op *op, const dt_coll_args *a);

/* Algorithms (lib/comm/algo_*.c), over the transport. */
dt_result dt_alg_allreduce(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_broadcast(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_reduce(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_allgather(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_reduce_scatter(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_alltoall(dt_op *op, const dt_coll_args *a);
dt_result dt_alg_barrier(dt_op *op);

/* Element ranges of chunk i when count is split in n parts (the first
 * count % n chunks have one element more). */
size_t dt_chunk_off(size_t count, int n, int i);
size_t dt_chunk_len(size_t count, int n, int i);

/* The modeled cost of ring allreduce of bytes on n ranks (the shortcut's
 * price), with the bytes and messages one rank sends. */
double dt_model_allreduce(const dt_job *job, dt_algo algo, size_t count, size_t esize, int n,
                          int rank, uint64_t *bytes, uint64_t *msgs);

/* ---------------------------------------------------------------- backends */

/* The seam between the API and a backend. The emulation backends (thread,
 * proc) run the algorithms of lib/comm over the transport above; an MPI or
 * NCCL backend would map each entry straight onto MPI_Allreduce,
 * ncclAllReduce, MPI_Isend, ... (its dt_msg wrapping an MPI_Request or a
 * CUDA event). The API layer (coll.c, p2p.c, async.c) checks arguments,
 * counts, times and traces, then calls these; nothing above them knows how
 * bytes move. */
typedef struct dt_backend_ops {
    const char *name;
    /* every collective of dt/comm.h, as issued */
    dt_result (*collective)(dt_op *op, const dt_coll_args *a);
    /* user point-to-point messages (peer may be DT_ANY_SOURCE in a receive) */
    dt_result (*post_send)(dt_op *op, int peer, const void *buf, size_t bytes, dt_msg **out);
    dt_result (*post_recv)(dt_op *op, int peer, void *buf, size_t bytes, dt_msg **out);
    /* completes a posted message (NULL: done at once); src: the sender */
    dt_result (*wait)(dt_op *op, dt_msg *m, int *src);
    int (*done)(const dt_msg *m);
} dt_backend_ops;

extern const dt_backend_ops dt_emulation_ops;

/* ---------------------------------------------------------------- async */

/* Posts a p2p send or receive for dt_isend / dt_irecv. */
dt_result dt_p2p_post(dt_comm *c, int send, void *buf, size_t bytes, int peer, dt_request **req);
dt_result dt_progress_submit(dt_comm *comm, const dt_coll_args *a, long seq, dt_request **req);
void dt_progress_stop(dt_comm *comm);

/* ---------------------------------------------------------------- misc */

/* Like DT_CHECK, without prefixing file:line: the messages of this layer
 * already say which call and argument failed. */
#define DT_TRY(expr)                                                         \
    do {                                                                     \
        dt_result dt_try_r_ = (expr);                                        \
        if (dt_try_r_ != DT_OK)                                              \
            return dt_try_r_;                                                \
    } while (0)

/* Bookkeeping around a top-level call on lane 0: fault injection and the
 * doing board; at the end the call count (new_call: 0 for dt_wait, whose
 * call was counted when issued), time, clock and trace. */
dt_result dt_call_begin(dt_comm *comm, int kind, long seq, size_t count, int root);
void dt_call_end(dt_comm *comm, double w0, double m0, int kind, int new_call);

/* Validates a handle: DT_ERR_INVALID_ARG for NULL, DT_ERR_STATE after free. */
dt_result dt_comm_check(const dt_comm *comm, const char *fn);

/* Publishes what lane does (for the timeout report); kind -1 clears. */
void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root);

/* DT_FAULT at the start of a call of kind on this rank: DT_OK, or
 * DT_ERR_FAULT (thread backend) after marking the rank failed. */
dt_result dt_fault_check(dt_comm *comm, int kind);
dt_result dt_fault_parse(const char *spec, dt_fault *out, int max, int *n);

/* Pins the calling thread to the rank's core when the job binds ranks. */
void dt_rank_bind(const dt_job *job, int world_rank);

/* Marks a rank ended (DT_RANK_DONE or DT_RANK_FAILED) with its result. */
void dt_rank_end(dt_job *job, int world_rank, dt_result r, const char *msg);

/* Records a trace event when tracing. */
void dt_trace_add(dt_rank_ctx *rc, int kind, int lane, double w0, double w1, double m0,
                  double m1);
dt_result dt_trace_write(const char *path, dt_rank_ctx *const *rcs, int n, double wall0);

/* The rank's world communicator, made by the launcher. */
dt_result dt_comm_make(dt_rank_ctx *rc, dt_comm_shared *sh, int rank, dt_comm **out);
void dt_rank_free_comms(dt_rank_ctx *rc);

#endif /* DT_COMM_INTERNAL_H */
