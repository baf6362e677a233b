/* mpi_backend.h - the mpi backend: ranks are the processes of an MPI job
 * started by mpirun; libdt's algorithms (algo_coll.c, above the seam) run
 * unchanged over MPI point-to-point messages. Its table is mpi_ops.c's
 * dt_mpi_ops (backend.h); this folder is compiled only with MPI
 * (DT_HAVE_MPI). Not a public header.
 *
 *   mpi_launch.c  dt_launch inside an MPI job, and its end
 *   mpi_init.c    dt_init and dt_finalize inside an MPI job
 *   mpi_group.c   communicator groups and windows
 *   mpi_port.c    messages and the barrier-exchange
 *   mpi_wait.c    waits: deadlines, failure notices, the others' state
 *   mpi_board.c   the other ranks' boards, asked across processes
 *   mpi_any.c     dt_recv_any: the first message in modeled time
 *   mpi_trace.c   DT_TRACE
 *   mpi_ops.c     the table */
#ifndef DT_COMM_MPI_BACKEND_H
#define DT_COMM_MPI_BACKEND_H

#include "../backend.h"
#include "../diag.h"

#include <mpi.h>

/* The tags of the control communicator. */
enum {
    DT_MPI_TAG_FAILED = 1, /* a rank's failure notice */
    DT_MPI_TAG_END,        /* a process's end record */
    DT_MPI_TAG_OUT,        /* a rank's out block (dt_rank_out) */
    DT_MPI_TAG_TRACE,      /* a rank's trace events */
    DT_MPI_TAG_ASK,        /* dt_recv_any: "what are you doing?" */
    DT_MPI_TAG_TELL,       /* ... and the answer */
};

/* What crosses the wire before a message's data: the sender's departure d
 * (THE RULE of dt/net.h, step 1), its size, and the signature and count of
 * the collective it belongs to (0 for a user message). An ack carries the
 * time the receive was posted in depart. */
typedef struct {
    double depart;
    uint64_t bytes, count;
    uint32_t sig, pad;
} dt_wire_hdr;

/* The largest MPI tag the backend uses (mpi_port.c): MPICH's MPI_TAG_UB,
 * 2^28 - 1 (Open MPI's is 2^31 - 1; the standard promises only 2^15 - 1). */
#define DT_MPI_TAG_MAX 0x0fffffff

/* The MPI tag of user messages (channel 0, mpi_port.c). */
#define DT_MPI_USER_TAG 0

struct dt_mpi_peer;
struct dt_mpi_sent;
struct dt_mpi_outbox;

/* What one launch (or a dt_init job) shares among this process's calls:
 * the control communicator over every process of the MPI job (the side
 * channel of failure notices, the ends, dt_recv_any's questions) and the
 * first failure it heard. */
typedef struct {
    MPI_Comm ctl;
    int procs, me;          /* its size and this process's rank in it */
    uint32_t epoch;         /* which launch of this process: the same in all */
    double timeout_s;       /* the job's deadline of each wait */
    _Atomic int failed;     /* 1 + the rank whose failure notice came, else 0 */
    char failed_msg[DT_MSG_MAX];
    pthread_mutex_t lock;   /* guards failed_msg and what follows */
    /* communicators given up (dt_mpi_group_free), freed at the end unless
     * the launch failed: messages of a failure may still be on their way,
     * and a freed communicator's context id, reused by a later launch,
     * would deliver them there */
    MPI_Comm *retired;
    int nretired, cap_retired;
    /* dt_recv_any (mpi_any.c) */
    dt_board *board;        /* this process's rank's board while it runs */
    struct dt_mpi_sent *sent;     /* user messages sent, per communicator */
    struct dt_mpi_peer *peer;     /* [procs]: each process's last answer */
    struct dt_mpi_outbox *outbox; /* questions and answers in flight */
    uint32_t asked;         /* questions sent so far */
    int unanswered;         /* ... not answered yet */
} dt_mpi_launch;

/* A message taken out of MPI before its receive was posted (dt_recv_any
 * looks at the first pending message of each rank): header and data,
 * received without blocking (a large one may still be on its way). */
typedef struct {
    char *buf; /* NULL: none */
    int bytes;
    MPI_Request req; /* its receive into buf; MPI_REQUEST_NULL once complete */
} dt_mpi_early;

/* A communicator group's MPI side (dt_comm_shared.mpi): an MPI
 * communicator of exactly its members, ranked as they are. */
typedef struct {
    MPI_Comm comm;
    dt_mpi_launch *launch;
    dt_mpi_early *early;  /* [size]: the first pending user message of each */
    uint32_t *claimed;    /* [size]: user messages from each that receives
                             were posted for, or that were taken early */
    void **unmatched;     /* [size]: the user receives from each whose message
                             has not come yet, oldest first (mpi_port.c) */
} dt_mpi_group;

/* The failure notice's payload, and the record of a rank's end. */
#define DT_MPI_MSG_MAX DT_MSG_MAX

/* ---------------------------------------------------------------- launch, groups */

/* Maps an MPI error code to a dt_result with MPI's message. */
dt_result dt_mpi_fail(int code, const char *what);

/* MPI_Init_thread (MPI_THREAD_MULTIPLE) once per process; MPI_Finalize at
 * its exit. */
dt_result dt_mpi_init_once(void);

/* Starts a launch: the control communicator (every process of the MPI job
 * must come, within timeout_s) and the launch's state. */
dt_result dt_mpi_launch_open(dt_mpi_launch *l, double timeout_s);

/* A process's end record. */
typedef struct {
    int32_t result;
    int32_t ran;     /* 1: this process ran a rank */
    double when;     /* CLOCK_REALTIME of the failure */
    char msg[DT_MPI_MSG_MAX];
} dt_mpi_end;

/* This process's rank failed: tells every other process at once (the side
 * channel their waits look at); notes[procs] hold the sends. */
void dt_mpi_notify_failure(dt_mpi_launch *l, const char *msg, MPI_Request *notes);

/* The end of a launch, in every process: answers dt_recv_any's questions
 * until its own are answered, sends its end record mine (and the out block
 * of the rank it ran, of out/out_bytes/nranks) to every other process,
 * takes theirs, and closes the launch (its communicators freed, or kept
 * after a failure). notes: the failure notices this process sent (NULL:
 * none). Returns the launch's result, the first failure in time, as
 * "rank R: message". */
dt_result dt_mpi_launch_close(dt_mpi_launch *l, const dt_mpi_end *mine, MPI_Request *notes,
                              char *out, size_t out_bytes, int nranks);

/* The group of n ranks ranks[0..n) of parent (MPI_Comm_create_group; every
 * member calls it). */
dt_result dt_mpi_create_group(MPI_Comm parent, const int *ranks, int n, MPI_Comm *out);

/* A group state of this process's own over comm (which it then owns), of
 * n ranks with world ranks world[0..n): one reference. */
dt_comm_shared *dt_mpi_shared_new(dt_job *job, int n, const int *world, MPI_Comm comm,
                                  dt_mpi_launch *l);

/* DT_ERR_PEER_DIED once a rank of the launch sent its failure notice. */
dt_result dt_mpi_check_failed(dt_mpi_launch *l);

/* What a poll loop does between two looks, once it has waited waited_s
 * (mpi_wait.c): spin, yield, then nap. */
void dt_mpi_pause(double waited_s, double spin_s);

/* Polls reqs[0..n) (MPI_REQUEST_NULL done) until all completed, within the
 * job's deadline: DT_ERR_TIMEOUT naming what the call waits for (what, peer),
 * or DT_ERR_PEER_DIED on a failure notice. Answers dt_recv_any's questions
 * meanwhile. */
dt_result dt_mpi_poll(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                      const char *what, int peer);

/* The same, for requests that step(arg) posts once it can (a receive whose
 * message must come before it is received): step returns 1 once it has;
 * reqs count only from then. */
dt_result dt_mpi_poll_step(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                           int (*step)(void *), void *arg, const char *what, int peer);

/* The wait_until entry of the table (backend.h): the poll above, for a
 * condition of this process (an async collective's end on lane 1). */
dt_result dt_mpi_wait_until(dt_call *call, int (*cond)(const void *), const void *arg);

/* dt_launch's ranks inside an MPI job (mpi_launch.c): runs fn as this
 * process's rank, on the processes of MPI ranks 0 .. nranks-1. */
dt_result dt_launch_mpi(const dt_resolved *res, dt_rank_fn fn, void *arg);

/* ---------------------------------------------------------------- messages */

/* As dt_msg_isend ... of port.h. */
dt_result dt_mpi_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
dt_result dt_mpi_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
dt_result dt_mpi_wait(dt_call *call, dt_xfer *x, int *src);
int dt_mpi_done(const dt_xfer *x);
void dt_mpi_cancel(dt_call *call, dt_xfer *x);

/* The barrier-exchange of sync.h over messages. */
dt_result dt_mpi_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all);

/* dt_comm_split's new group for this process (the split entry): its
 * members are the parent's ranks ranks[0..n) in their new order, this
 * process at position me; made by every member from the parent's MPI
 * communicator (MPI_Comm_create_group), with the id the members agree on. */
dt_result dt_mpi_split(dt_call *call, const int *ranks, int n, int me, const dt_rec *all,
                       dt_comm **out);

/* Frees a group's MPI state (dt_comm_shared.be, NULL: none); its MPI
 * communicator is retired to the launch (see dt_mpi_launch). */
void dt_mpi_group_free(dt_job *job, dt_comm_shared *sh);

/* dt_win_allocate's region on the mpi backend, once every rank has come
 * (and asked for the same size): MPI_Win_allocate_shared over the comm's
 * processes, which must share one machine's memory; zeroed, 64-byte
 * aligned. *handle: for dt_mpi_win_free (collective: MPI_Win_free). */
dt_result dt_mpi_win_allocate(dt_comm *comm, size_t bytes, void **base, void **handle);
void dt_mpi_win_free(dt_comm *comm, void *base, void *handle, int synced);

/* ---------------------------------------------------------------- the boards */

/* A rank's answer (mpi_board.c): its board as it was when it answered. */
typedef struct {
    int32_t state;                 /* dt_rank_state */
    double clock;                  /* its published clock */
    dt_doing_view doing[DT_LANES]; /* what its lanes were doing */
    int32_t comm_id;               /* the communicator the question named ... */
    uint32_t sent;                 /* ... and its user messages to the asker there */
    uint32_t seq;                  /* the question it answers (they count up) */
} dt_mpi_answer;

/* The boards' state of a new launch; 0 when out of memory. */
int dt_mpi_board_open(dt_mpi_launch *l);

/* Answers the questions that came (any thread, any time). */
void dt_mpi_serve(dt_mpi_launch *l);

/* Asks process world (a rank) what it does, naming the communicator
 * comm_id, unless a question to it is out. */
void dt_mpi_ask(dt_mpi_launch *l, int world, int comm_id);

/* Takes the answers that came. */
void dt_mpi_take_answers(dt_mpi_launch *l);

/* 1 and world's last answer in *out, or 0 when none came yet. */
int dt_mpi_answer_of(dt_mpi_launch *l, int world, dt_mpi_answer *out);

/* How many questions this process has asked in the launch. */
uint32_t dt_mpi_asked(dt_mpi_launch *l);

/* A user message to peer of comm is about to be posted: counted (before
 * it is, so that an answer never counts fewer than were posted). */
void dt_mpi_count_send(dt_mpi_launch *l, const dt_comm *comm, int peer);

/* The end of a launch's questions: waits (answering the others) until this
 * process's are answered, within timeout_s; 0 when some were not. */
int dt_mpi_board_finish(dt_mpi_launch *l, double timeout_s);
void dt_mpi_board_free(dt_mpi_launch *l);

/* ---------------------------------------------------------------- dt_recv_any */

/* The rank to take dt_recv_any's message from (mpi_any.c). */
dt_result dt_mpi_choose_any(dt_call *call, size_t bytes, int *src);

/* The first pending user message from peer, header and data, when
 * dt_recv_any took it early (the caller frees *buf once *req, its
 * receive, has completed), else 0; a receive posted for the next message
 * from peer is counted either way. */
int dt_mpi_take_early(dt_mpi_group *g, int peer, char **buf, int *bytes, MPI_Request *req);

/* Matches the user receives from peer whose messages have come (oldest
 * first); 1 when none is left waiting for its message (mpi_port.c). */
int dt_mpi_user_matched(dt_mpi_group *g, int peer);

/* DT_TRACE (mpi_trace.c): this rank's events ev[0..nev) (wall times from
 * the launch's start wall0) go to rank 0's process, which writes path (or
 * appends to it: dt_launch_opts.trace_append) with the n ranks' events;
 * every rank of the launch calls it. */
dt_result dt_mpi_trace(dt_mpi_launch *l, int n, const char *path, int append, dt_trace_ev *ev,
                       size_t nev, double wall0);

/* dt_init and dt_finalize inside an MPI job (mpi_init.c): a process that
 * mpirun started (and not dtrun) joins as its MPI rank. */
int dt_mpi_started(void);
dt_result dt_mpi_join(dt_comm **world);
dt_result dt_mpi_leave(dt_comm *world);

#endif /* DT_COMM_MPI_BACKEND_H */
