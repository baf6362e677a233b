/* coll.h - a collective as issued, the backends' seam, and the algorithms'
 * entry points. Not a public header. */
#ifndef DT_COMM_COLL_H
#define DT_COMM_COLL_H

#include "handle.h"
#include "port.h"

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

/* The seam between the API and a backend. The emulation backends (thread,
 * proc) run the algorithms of lib/comm over the messages of port.h; an MPI
 * or NCCL backend would map each entry straight onto MPI_Allreduce,
 * ncclAllReduce, MPI_Isend, ... (its dt_msg wrapping an MPI_Request or a
 * CUDA event). The API layer (coll.c, p2p.c, async.c) checks arguments,
 * counts, times and traces, then calls these; nothing above them knows how
 * bytes move. */
typedef struct dt_backend_ops {
    const char *name;
    /* every collective of dt/comm.h, as issued */
    dt_result (*collective)(dt_call *call, const dt_coll_args *a);
    /* user point-to-point messages (peer may be DT_ANY_SOURCE in a receive) */
    dt_result (*post_send)(dt_call *call, int peer, const void *buf, size_t bytes, dt_msg **out);
    dt_result (*post_recv)(dt_call *call, int peer, void *buf, size_t bytes, dt_msg **out);
    /* completes a posted message (NULL: done at once); src: the sender */
    dt_result (*wait)(dt_call *call, dt_msg *m, int *src);
    int (*done)(const dt_msg *m);
} dt_backend_ops;

extern const dt_backend_ops dt_emulation_ops;

/* Runs a collective on the call's lane with the rank's backend (called by
 * the blocking API on lane 0 and by the progress thread on lane 1). */
dt_result dt_coll_run(dt_call *call, const dt_coll_args *a);

/* The debug check: all ranks exchange what they called; DT_ERR_MISMATCH
 * naming the rank that differs (mismatch.c). */
dt_result dt_coll_debug_check(dt_call *call, const dt_coll_args *a);

/* The algorithms of each collective (algo_coll.c), over the messages. */
dt_result dt_alg_allreduce(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_broadcast(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_reduce(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_allgather(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_reduce_scatter(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_alltoall(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_barrier(dt_call *call);

#endif /* DT_COMM_COLL_H */
