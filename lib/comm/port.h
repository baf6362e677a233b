/* port.h - point-to-point messages between the ranks of a communicator,
 * the one layer every collective algorithm is written over: msg.c hands
 * each to the rank's backend (backend.h; the emulation's ports are
 * emul/port.c, mpi's messages mpi/mpi_port.c). Not a public header. */
#ifndef DT_COMM_PORT_H
#define DT_COMM_PORT_H

#include "handle.h"

#define DT_EAGER_MAX DT_NET_EAGER_MAX /* sends up to this many bytes are copied */
#define DT_ANY_SOURCE (-1)

typedef enum { DT_MSG_SEND = 0, DT_MSG_RECV } dt_msg_dir;
typedef enum { DT_MSG_PENDING = 0, DT_MSG_DONE, DT_MSG_ERROR } dt_msg_state;

/* A posted send or receive: the start of every backend's record of one.
 * The modeled times are THE RULE's of dt/net.h: the sender's departure d,
 * the time the receive was posted; each side learns the other's (the
 * emulation's matcher fills the got_ fields, mpi's header and ack carry
 * them). */
typedef struct dt_msg {
    struct dt_msg *next;
    dt_msg_dir dir;
    int src;            /* sender (comm rank); DT_ANY_SOURCE in a receive */
    uint64_t tag;
    size_t bytes;
    void *buf;          /* the data (send) or where it goes (receive) */
    int pid;            /* process owning buf (0: the shared arena) */
    int owner_world;    /* whose doorbell rings on completion */
    int port_rank;      /* the port it waits in: the receiver's */
    int eager;          /* a send whose copy of the data follows the header */
    uint32_t sig;       /* the collective it belongs to (coll.h); 0: a user message */
    uint64_t count;     /* ... and the count that collective was called with */
    double depart;      /* send: d, when it left the sender's send port */
    double posted;      /* receive: the receiver's clock when it posted it */
    _Atomic int state;  /* dt_msg_state */
    /* filled by the matcher */
    int got_src;        /* receive: the sender */
    double got_depart;  /* receive: the send's d */
    size_t got_bytes;   /* receive: the sender's size (an error when it differs) */
    uint32_t got_sig;   /* the other side's collective (an error when it differs) */
    uint64_t got_count;
    double got_posted;  /* send: when its receive was posted */
} dt_msg;

/* A transfer in progress, as a post gives it back: the backend's record to
 * wait for (a dt_msg, or a record that starts with one), or (m NULL) a
 * send that completed when it was posted (an eager send, or one whose
 * receive was waiting), with the modeled time it completed at. Waiting for
 * it is what brings the call's clock to its completion. */
typedef struct {
    dt_msg *m;
    double done;
} dt_xfer;

/* Tags: [kind+1: 8 bits][seq: 36 bits][step: 20 bits]; user messages: 0.
 * An algorithm adds its step to the call's base tag, so that the messages
 * of different steps and calls never match each other. */
#define DT_TAG(kind, seq) ((((uint64_t)(kind) + 1) << 56) | (((uint64_t)(seq) & 0xfffffffffULL) << 20))

/* Posts a send (receive) of bytes to (from) peer with tag, at the call's
 * clock (a send's departure follows the rank's send port, THE RULE step 1);
 * *out is what to wait for. */
dt_result dt_msg_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
dt_result dt_msg_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
/* Waits for a transfer, frees its message, brings the call's clock to its
 * completion (a receive: its arrival, through the rank's receive port, in
 * the order the program waits) and counts it; *src (may be NULL): the
 * sender of a receive. The transfer is spent (x->m set to NULL). */
dt_result dt_msg_wait(dt_call *call, dt_xfer *x, int *src);
/* Gives up a transfer after a failure elsewhere (its record freed; no
 * byte written into its buffer after it returns). */
void dt_msg_cancel(dt_call *call, dt_xfer *x);
/* dt_msg_wait on x[0..n) in order; the first failure. */
dt_result dt_msg_waitall(dt_call *call, dt_xfer *x, int n);

/* A send and a receive that do not match: DT_ERR_MISMATCH with the message
 * of the side that finds it (sending: 1 on the sender), naming both calls;
 * a collective's mismatch poisons the communicator. */
dt_result dt_msg_mismatch(dt_call *call, int peer, size_t my_bytes, uint32_t sig, uint64_t count,
                          size_t bytes, int sending);

dt_result dt_msg_send(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag);
dt_result dt_msg_recv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag);
/* Both at once: no order of the peers' calls deadlocks. */
dt_result dt_msg_sendrecv(dt_call *call, int dest, const void *sbuf, size_t sbytes, int source,
                          void *rbuf, size_t rbytes, uint64_t tag);

#endif /* DT_COMM_PORT_H */
