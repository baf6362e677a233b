/* handle.h - a rank, its communicator handles, and one call in progress
 * (not a public header).
 *
 *   dt_comm_shared (one per communicator group, shared memory)
 *     +- rec[lane][parity]: the barrier-exchange's records, one per member
 *     +- be: the backend's part (the emulation's ports, one per member)
 *   dt_rank_ctx (one per rank, private): modeled clock, faults, trace
 *   dt_comm (one per rank and communicator, private): the handle
 *   dt_call (one per call in progress on a lane): its clock, tags, stats
 */
#ifndef DT_COMM_HANDLE_H
#define DT_COMM_HANDLE_H

#include "fault.h"
#include "job.h"
#include "trace.h"

#include <pthread.h>

#define DT_COMM_LIVE 0x636f6d6dU  /* "comm" */
#define DT_COMM_FREED 0x66726565U /* "free" */

struct dt_rec;

typedef struct dt_comm_shared {
    int id;
    int size;
    _Atomic int refs;          /* members still holding it */
    int *world;                /* [size] world rank of each member */
    struct dt_rec *rec[DT_LANES][2]; /* [size] each: the barrier-exchange (sync.c) */
    _Atomic int poison;        /* DT_POISON_*: the members called different things */
    char poison_why[360];      /* the first rank's message, once DT_POISON_SET */
    void *be;                  /* the backend's part (its group_init, group_free) */
} dt_comm_shared;

enum { DT_POISON_NONE = 0, DT_POISON_WRITING, DT_POISON_SET };

dt_comm_shared *dt_comm_shared_new(dt_job *job, int size, const int *world);
void dt_comm_shared_unref(dt_job *job, dt_comm_shared *sh);

struct dt_backend_ops;

typedef struct dt_rank_ctx {
    const struct dt_backend_ops *ops; /* how this rank's calls are carried out */
    dt_job *job;
    int world_rank;
    int pid;               /* of the rank's process */
    double clock;          /* modeled seconds of lane 0, the rank's calls */
    dt_net_ports ports;    /* lane 0's ports (THE RULE of dt/net.h) */
    double compute_t0;     /* wall start of a compute region, < 0 outside */
    dt_mem_ctx *mem;
    long kind_calls[DT_NUM_COLLS]; /* for DT_FAULT's at=kind#K */
    dt_fault faults[DT_MAX_FAULTS];
    int nfaults;
    pthread_mutex_t trace_lock;
    dt_trace_ev *trace;
    size_t ntrace, captrace;
    int tracing;
    dt_trace_open open[DT_TRACE_DEPTH]; /* dt_trace_begin's regions not ended */
    int nopen;
    struct dt_comm *comms; /* every handle of the rank, freed at its end */
} dt_rank_ctx;

typedef struct dt_progress dt_progress;

struct dt_comm {
    _Atomic uint32_t magic; /* DT_COMM_LIVE, DT_COMM_FREED */
    dt_rank_ctx *rc;
    dt_comm_shared *sh;
    int rank, size;
    dt_algo algo;
    dt_net link;            /* the slowest link between two members
                               (dt_net_group_link): what dt_comm_link gives,
                               the barrier's rounds and a combine's gamma */
    long seq;               /* collectives issued on this comm (lane 0 counts) */
    long p2p_seq;           /* blocking p2p calls, for the timeout report */
    uint32_t *sent_to;      /* [size] user messages sent to each rank ... */
    uint32_t *posted_from;  /* [size] ... and receives posted from each: the
                               k-th receive from a rank takes its k-th send */
    int any_last;           /* the rank dt_recv_any took last (-1: none) */
    uint32_t sync_gen[DT_LANES];
    pthread_mutex_t stats_lock;
    dt_stats stats;
    void *scratch[DT_LANES]; /* kept between calls: no page faults each time */
    size_t scratch_bytes[DT_LANES];
    struct dt_replay_memo *memo[DT_LANES]; /* the tiny allreduce's last replay */
    dt_progress *progress;  /* the async lane, started on first use */
    double stream_clock;    /* the end of its timeline (lane 1) ... */
    dt_net_ports stream_ports; /* ... and its ports: its progress thread's only */
    struct dt_comm *next_of_rank;
};

/* Traffic of a call, added to its communicator's stats when it ends. */
typedef struct {
    uint64_t bytes_sent, msgs_sent, bytes_recv, msgs_recv;
} dt_traffic;

/* One call in progress on one lane (a collective, a point-to-point call):
 * its messages are charged to this timeline and these stats. */
typedef struct {
    dt_comm *comm;
    int lane;
    double t;           /* the call's modeled clock */
    dt_net_ports *ports; /* the lane's ports */
    uint64_t tag;       /* base tag: kind, sequence; low bits = step */
    int counted;        /* 0: internal traffic, not in the stats */
    dt_traffic traffic; /* what it sent and received so far (when counted) */
    int kind;           /* dt_coll_kind, or DT_NUM_COLLS for internal work */
    long seq;
    double poll_s;      /* a sleeping wait looks again this often (0: 0.1 s) */
    uint32_t sig;       /* a collective's signature (coll.h); 0 for other calls */
    uint64_t count;     /* and its count */
} dt_call;

void dt_call_init(dt_call *call, dt_comm *comm, int lane, int kind, long seq, int counted);

static inline dt_job *dt_call_job(const dt_call *call) { return call->comm->rc->job; }

/* The link a message between members a and b of comm crosses: the intra-
 * or inter-node link of the job's topology, by their world ranks. */
static inline const dt_net *dt_comm_pair_link(const dt_comm *c, int a, int b)
{
    return dt_net_topo_pair(&c->rc->job->net, c->sh->world[a], c->sh->world[b]);
}

/* Validates a handle: DT_ERR_INVALID_ARG for NULL, DT_ERR_STATE after free. */
dt_result dt_comm_check(const dt_comm *comm, const char *fn);

/* A new handle of the rank on a group (the world's, made by the launcher,
 * or a split's); freed with the rank's others at its end. */
dt_result dt_comm_make(dt_rank_ctx *rc, dt_comm_shared *sh, int rank, dt_comm **out);
void dt_rank_free_comms(dt_rank_ctx *rc);

/* Scratch memory of a lane, grown as needed and kept (DT_MEM_COMM). */
void *dt_scratch(dt_comm *comm, int lane, size_t bytes);

#endif /* DT_COMM_HANDLE_H */
