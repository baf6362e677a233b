/* dt/comm.h - the communicator: ranks, collectives, point-to-point messages,
 * a shared window, statistics and a modeled network clock.
 *
 * The calls are shaped like NCCL's (argument order: send buffer, receive
 * buffer, count, dtype, op or root, communicator), so that a lab written
 * against libdt ports to NCCL by renaming.
 *
 * Conventions of every call below:
 *  - Returns DT_OK, or a dt_result with a message for the calling rank in
 *    dt_last_error() (it names what was wrong: the argument, the rank that
 *    differs, the operation each rank waits in). Failures follow dt/core.h:
 *    bad arguments change nothing; a failure on the way may leave partial
 *    results in the output buffers and writes nothing outside them.
 *  - Counts are in elements of dtype, never bytes. count 0 is valid (the
 *    call still synchronizes where the collective would) and buffers may
 *    then be NULL.
 *  - Collective calls must be made by every rank of the communicator, in
 *    the same order, with the same count, dtype, op and root. A call that
 *    differs never writes out of bounds and returns DT_ERR_MISMATCH naming
 *    the ranks and what each called; the communicator is then out of step:
 *    every rank waiting on it, and every later call on it (a broadcast's
 *    root that had returned), returns that error (end the job). A mismatch
 *    that no message or record carries goes unseen (docs/design.md, the
 *    diagnosis) unless debug is on (DT_DEBUG=1, dt_launch_opts.debug):
 *    every collective then first exchanges its signature and number, and
 *    every rank returns DT_ERR_MISMATCH before moving data, whatever the
 *    mismatch, blocking and async calls in different orders included.
 *  - Every blocking wait has a deadline (dt_launch_opts.timeout_s, env
 *    DT_TIMEOUT, default 30 s). On timeout the call returns DT_ERR_TIMEOUT
 *    and its message starts with the site of the call that blocked (see
 *    dt_call_site below), then lists what every rank of the job is doing,
 *    after "deadlock: every rank waits on another: " when none is outside
 *    a call, e.g. "ring.c:45: timeout after 5 s in recv #1: rank 0 waits in
 *    allreduce #3 (count 1000) at dp.c:80; rank 2 waits in recv #1 (count
 *    1000, peer 1 = world rank 3) at ring.c:45".
 *    After a timeout the communicator's ranks are out of step: end the job.
 *  - When another rank of the job has failed (its function returned an
 *    error, or its process died), blocked calls return DT_ERR_PEER_DIED
 *    within 2 s instead of waiting for the deadline.
 *  - A communicator belongs to one rank: its calls are made by that rank's
 *    thread (or the threads it starts, one call at a time).
 *
 * Backends (dt_backend below) run the same algorithms with the same
 * modeled clock, stats and bits; docs/design.md draws the seam behind them
 * and what each does differently (docs/cluster.md: mpi on several
 * machines). The proc backend moves large messages with process_vm_readv;
 * where the system forbids it (no CAP_SYS_PTRACE), DT_ERR_UNSUPPORTED says so.
 */
#ifndef DT_COMM_H
#define DT_COMM_H

#include "dt/core.h"
#include "dt/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest number of ranks of a job. */
#define DT_MAX_RANKS 1024

/* ---------------------------------------------------------------- types */

typedef struct dt_comm dt_comm;       /* one rank's handle on a group of ranks */
typedef struct dt_request dt_request; /* an operation started by a dt_i* call */
typedef struct dt_win dt_win;         /* a shared window (dt_win_allocate) */

typedef enum {
    DT_SUM = 0,
    DT_PROD,
    DT_MAX,
    DT_MIN,
    DT_AVG, /* the sum divided by the number of ranks (integers: truncated) */
    DT_NUM_REDOPS
} dt_redop;

typedef enum {
    DT_BACKEND_THREAD = 0, /* ranks are pthreads of one process */
    DT_BACKEND_PROC,       /* ranks are fork()ed processes over POSIX shm */
    DT_BACKEND_MPI,        /* ranks are the processes of mpirun's job, over
                              MPI messages, without the shared-memory
                              shortcuts (built where mpicc is found) */
    DT_BACKEND_NCCL,       /* reserved: one rank per GPU */
    DT_NUM_BACKENDS
} dt_backend;

/* The algorithm behind the collectives. AUTO picks by size as a real library
 * does: tree algorithms up to 32 KiB, ring above; with the fast paths on
 * (dt_launch_opts.fast) the emulation backends may take a shared-memory
 * shortcut that charges the clock, ports and stats exactly what the
 * algorithm it stands for would, reducing in rank order as DT_ALGO_DIRECT
 * (docs/design.md, the fast paths). An explicit choice always runs that
 * algorithm over point-to-point messages. */
typedef enum {
    DT_ALGO_AUTO = 0,
    DT_ALGO_RING,   /* ring: reduce-scatter then allgather, pipelined chains */
    DT_ALGO_TREE,   /* recursive doubling (allreduce), binomial trees; any N */
    DT_ALGO_DIRECT, /* every rank talks to every rank (or the root) at once */
    DT_ALGO_BINOMIAL, /* binomial trees: allreduce as a reduce to rank 0 then a
                         broadcast (2 ceil(log2 N) rounds of the whole buffer,
                         dt_net_tree_allreduce); the other collectives as tree */
    DT_NUM_ALGOS
} dt_algo;

/* AUTO's threshold: a collective of at most this many bytes (the whole
 * buffer, as NCCL counts it) takes the tree algorithms, a larger one the
 * ring. A program that predicts AUTO's time (lab 02's) takes it from here. */
#define DT_ALGO_AUTO_TREE_MAX 32768

/* Names for DT_ALGO, DT_BACKEND and messages: "auto", "ring", "tree",
 * "direct", "binomial"; "thread", "proc", "mpi", "nccl"; "sum", "prod", "max", "min",
 * "avg". "?" for a value out of range. */
const char *dt_algo_name(dt_algo a);
const char *dt_backend_name(dt_backend b);
const char *dt_redop_name(dt_redop op);

/* Parse a name as above; DT_ERR_INVALID_ARG for an unknown one. */
dt_result dt_algo_parse(const char *name, dt_algo *out);
dt_result dt_backend_parse(const char *name, dt_backend *out);

/* Whether a program can run its job on backend b here: DT_OK, else
 * DT_ERR_UNSUPPORTED saying why (not built in; mpi outside mpirun's job).
 * own_ranks: the program starts its ranks as threads or processes itself,
 * so a backend whose processes another launcher starts is refused too. */
dt_result dt_backend_usable(dt_backend b, int own_ranks);

/* ---------------------------------------------------------------- launch */

typedef struct {
    int nranks;            /* ranks to start: 1 .. DT_MAX_RANKS (default 1) */
    dt_backend backend;    /* default: env DT_BACKEND, else thread */
    const char *net;       /* network model: one link ("eth10", "alpha=2us,
                              bw=10GB/s") or a topology ("dgx-h100"), as
                              dt_net_topo_parse (dt/net.h) reads it; NULL:
                              env DT_NET, else "none" (a zero-cost network) */
    double timeout_s;      /* deadline of each blocking wait, 0.001 .. 1e6 s; 0:
                              env DT_TIMEOUT, else 30 s (mpi launch: >= 10 s) */
    int debug;             /* 1: check that collectives match across ranks;
                              -1: env DT_DEBUG (default 0) */
    dt_algo algo;          /* default algorithm; AUTO: env DT_ALGO, else auto */
    const char *trace_path; /* Chrome trace written at the end of the job;
                               NULL: env DT_TRACE, else none */
    int trace_append;      /* 1: after an earlier job's trace at trace_path
                              (a run, then its resume), clocks going on */
    const char *fault;     /* fault injection; NULL: env DT_FAULT, else none.
                              "kill:rank=2:at=allreduce#5": rank 2 dies when
                              it enters its 5th allreduce (proc backend: by
                              SIGKILL; thread and mpi backends: the call
                              returns DT_ERR_FAULT and the rank counts as
                              failed).
                              "delay:rank=1:ms=20": rank 1 is a straggler:
                              each collective and send it starts is delayed
                              by 20 ms of wall time and of modeled time.
                              Several faults are separated by ';'. */
    int fast;              /* the fast paths: AUTO's shared-memory shortcuts
                              and the vectorized reductions; 1 on (the
                              default), 0 the reference path only (the
                              same results, stats and modeled clock, slower);
                              -1: env DT_FAST */
    void *out;             /* nranks blocks of out_bytes, zeroed at the
                              start, that rank r fills through dt_rank_out;
                              back to the caller on every backend, after a
                              failure too. NULL: none */
    size_t out_bytes;      /* the size of one rank's block (with out) */
    char env_error[240];   /* set by dt_launch_opts_init when a variable of
                              the environment is bad; dt_launch returns it */
} dt_launch_opts;

/* Fills o with the defaults above, reading the environment now (DT_NRANKS,
 * DT_BACKEND, DT_NET, DT_TIMEOUT, DT_DEBUG, DT_ALGO, DT_TRACE, DT_FAULT,
 * DT_FAST).
 * Four more knobs are read at launch, and checked here too: DT_BIND=1 pins
 * rank r to core r mod cores (0, the default, leaves ranks unbound; dtbench
 * sets it, as mpirun binds); DT_SPIN_US, how long a wait spins before it
 * yields (0 .. 1e6; default 20 when every rank has a core, else 0);
 * DT_ARENA_MB, the most the proc backend's shared arena may grow to
 * (default 1024, or all of /dev/shm where smaller; docs/design.md); DT_JOB_ID,
 * a name for the job's shared memory (letters, digits, '.', '_', '-'; set by
 * the grader).
 * A variable that does not parse or is out of range (DT_TIMEOUT=abc,
 * DT_NRANKS=0, DT_BACKEND=mpl) returns DT_ERR_INVALID_ARG with a message
 * naming it and its value, e.g. "DT_TIMEOUT='abc': expected a number from
 * 0.001 to 1e+06"; o is still filled (that field with its default) and
 * keeps the message in env_error, so that dt_launch with o fails with it
 * too. Variables are never ignored or replaced by a default silently. */
dt_result dt_launch_opts_init(dt_launch_opts *o);

/* Checks a fault string as dt_launch_opts.fault takes it, for a program
 * that reads one from its command line: DT_OK, or DT_ERR_INVALID_ARG with
 * a message that quotes it and shows the accepted forms. */
dt_result dt_fault_spec_check(const char *spec);

/* A rank's function: runs on every rank with its own world communicator. */
typedef dt_result (*dt_rank_fn)(dt_comm *world, void *arg);

/* Runs fn(world, arg) on opts->nranks ranks and waits for all of them.
 * opts NULL means dt_launch_opts_init's defaults. Each rank runs with
 * dt_log_set_rank(rank) and its own memory context bound, so that
 * dt_mem_stats_get inside a rank gives that rank's memory; the world
 * communicator is freed when fn returns (fn must not free it).
 * The thread backend shares arg between the ranks. The proc backend forks,
 * and on mpi each rank runs in its own process: each rank works on its own
 * copy of arg, and what it writes there is NOT seen by the caller. Results
 * come back through dt_launch_opts.out and dt_rank_out, on every backend.
 * On mpi (inside `mpirun -np P`, P >= nranks) every process takes each
 * dt_launch as a step, processes 0 .. nranks-1 run the ranks, and every
 * process returns the same result.
 * Returns DT_OK when every rank did; else the first failure in time (a rank
 * failing because another did reports DT_ERR_PEER_DIED, later): "rank R: ...".
 * With the proc backend, a rank whose process ends before its function
 * returned failed, whatever its exit status ("rank 1: exited with status 0
 * before its function returned"), and the others get DT_ERR_PEER_DIED.
 * Bad options (nranks 0 or above DT_MAX_RANKS, a timeout out of range, an
 * unknown net or fault string, fn NULL, a bad variable of the environment)
 * return DT_ERR_INVALID_ARG without starting any rank, with a message that
 * names the option or variable and its value. */
dt_result dt_launch(const dt_launch_opts *opts, dt_rank_fn fn, void *arg);

/* This rank's block of dt_launch_opts.out (by its world rank: every
 * communicator of the rank gives the same block), out_bytes long; NULL when
 * the launch has none or comm is NULL or freed. Thread: the caller's
 * memory; proc: shared memory, copied to out when the ranks end; mpi: this
 * process's out, every block sent to every process at the end. */
void *dt_rank_out(const dt_comm *comm);

/* Once per process, for a program started by tools/dtrun, by mpirun, or
 * run alone: joins the job named by the environment and returns this
 * rank's world communicator.
 *  - dtrun (RANK, WORLD_SIZE, LOCAL_RANK, DT_SHM): the proc backend.
 *  - mpirun (OMPI_COMM_WORLD_RANK/_SIZE, else PMI_RANK/PMI_SIZE, else
 *    PMIX_RANK/SLURM_STEP_NUM_TASKS; no
 *    DT_SHM): the mpi backend, this process as its MPI rank; dt_finalize
 *    waits for the others. Without MPI in libdt: DT_ERR_UNSUPPORTED.
 *  - Neither: with WORLD_SIZE unset or 1 the program is a job of one rank;
 *    WORLD_SIZE > 1 without DT_SHM is DT_ERR_UNSUPPORTED.
 * Options come from the environment as in dt_launch_opts_init; RANK and
 * WORLD_SIZE that do not parse are DT_ERR_INVALID_ARG. The segment DT_SHM
 * names is checked before it is read: a name of another shape, a segment
 * of another user, one whose mode is not 0600 or one too short to be a
 * job's are refused with a message naming it. */
dt_result dt_init(dt_comm **world);

/* This process's rank in the MPI job its launcher started (mpirun or
 * mpiexec of Open MPI 4 or 5 or of MPICH, srun), from the launcher's
 * variables as dt_init reads them; -1 outside one. */
int dt_mpi_world_rank(void);

/* Leaves dt_init's job, freeing world and its splits; call it before exit. */
dt_result dt_finalize(dt_comm *world);

/* tools/dtrun's engine: starts opts->nranks processes of the program argv
 * (argv[0] searched in PATH), each with RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE and DT_SHM in its environment, and waits for all of them.
 * *exit_code (may be NULL) gets the first non-zero exit status in time, or
 * 128 + the signal of a rank that was killed; 0 when all exited 0. Returns
 * DT_OK when every rank exited 0, else the first failure, e.g.
 * "rank 2: killed by signal 9 (Killed)" or "rank 1: exited with status 3";
 * the other ranks are told (DT_ERR_PEER_DIED) at once.
 * While it waits, SIGINT, SIGTERM and SIGHUP sent to the calling process
 * (unless it ignores them) are passed on to every rank; ranks still running
 * 5 s later, or at a second signal, get SIGKILL. It then returns
 * DT_ERR_INTERRUPTED ("interrupted by signal 15 (Terminated): ...") with
 * *exit_code = 128 + the signal, the job's shared memory removed. Each rank
 * dies with the caller (a parent-death signal) if the caller is killed. */
dt_result dt_launch_program(const dt_launch_opts *opts, char *const argv[], int *exit_code);

/* ---------------------------------------------------------------- comms */

/* This rank's index in comm (0 .. size-1) and the number of ranks in comm.
 * -1 for a NULL or freed communicator. */
int dt_comm_rank(const dt_comm *comm);
int dt_comm_size(const dt_comm *comm);

/* Collective over comm: ranks that pass the same color form a new
 * communicator, ordered by key and then by their rank in comm (as
 * MPI_Comm_split). color DT_COLOR_NONE (or any negative color) takes no
 * part: *newcomm is set to NULL. The new communicator has its own
 * statistics and sequence numbers, shares the rank's modeled clock, and may
 * run collectives at the same time as other communicators. Free it with
 * dt_comm_free before the rank's function returns. */
#define DT_COLOR_NONE (-1)
dt_result dt_comm_split(dt_comm *comm, int color, int key, dt_comm **newcomm);

/* Frees a communicator made by dt_comm_split. Not collective, but no rank
 * may use the communicator afterwards: a later call with it returns
 * DT_ERR_STATE ("communicator used after free") instead of crashing, until
 * the job ends. Pending requests must have been waited for. NULL is ignored.
 * The world communicator of dt_launch is freed by the launcher. */
dt_result dt_comm_free(dt_comm *comm);

/* The algorithm used by this rank's later collectives on comm (all ranks
 * must set the same). The launch default comes from dt_launch_opts.algo. */
dt_result dt_comm_set_algo(dt_comm *comm, dt_algo algo);
dt_algo dt_comm_get_algo(const dt_comm *comm);

/* ---------------------------------------------------------------- collectives */

/* recvbuf[i] = op over ranks r of sendbuf_r[i], on every rank, for i < count.
 * In place when sendbuf == recvbuf. f16 and bf16 are reduced in f32 and
 * rounded once per step; integers wrap around on overflow. */
dt_result dt_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                       dt_redop op, dt_comm *comm);

/* recvbuf = root's sendbuf on every rank. sendbuf is read on the root only
 * (others may pass NULL). In place when sendbuf == recvbuf on the root. */
dt_result dt_broadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                       int root, dt_comm *comm);

/* Like dt_allreduce, but only the root's recvbuf receives the result
 * (others may pass recvbuf NULL; their recvbuf is not written). In place
 * when sendbuf == recvbuf on the root. */
dt_result dt_reduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                    dt_redop op, int root, dt_comm *comm);

/* recvbuf[r*sendcount .. (r+1)*sendcount) = rank r's sendbuf, on every rank.
 * recvbuf holds size*sendcount elements. In place when
 * sendbuf == recvbuf + rank*sendcount (elements). */
dt_result dt_allgather(const void *sendbuf, void *recvbuf, size_t sendcount, dt_dtype dtype,
                       dt_comm *comm);

/* sendbuf holds size*recvcount elements; rank r receives
 * recvbuf[i] = op over ranks of sendbuf[r*recvcount + i], i < recvcount.
 * In place when recvbuf == sendbuf + rank*recvcount (elements). */
dt_result dt_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                            dt_dtype dtype, dt_redop op, dt_comm *comm);

/* Block rank of chapter 02's cut of count elements into size blocks (the
 * first count % size one longer), as the ring and direct algorithms cut. */
void dt_block(size_t count, int size, int rank, size_t *offset, size_t *len);

/* dt_allreduce in two halves, in place on buf, for ZeRO (chapter 08): what a
 * rank does to its block between them is done as after dt_allreduce, bit for
 * bit. dt_allreduce_scatter leaves in this rank's block (dt_block) the
 * reduced block, each element added as dt_allreduce adds it on comm (the
 * same algorithm and order; trees, which have no such half, run whole; the
 * other blocks are left undefined); dt_allreduce_gather sends every rank's
 * block to every rank. dt_reduce_scatter may add in another order. Counted
 * as a reduce-scatter and an allgather. */
dt_result dt_allreduce_scatter(void *buf, size_t count, dt_dtype dtype, dt_redop op,
                               dt_comm *comm);
dt_result dt_allreduce_gather(void *buf, size_t count, dt_dtype dtype, dt_comm *comm);

/* Block j of rank r's sendbuf goes to block r of rank j's recvbuf; each
 * block holds count elements, each buffer size*count. Out of place only
 * (sendbuf == recvbuf returns DT_ERR_INVALID_ARG). */
dt_result dt_alltoall(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                      dt_comm *comm);

/* Returns when every rank of comm has entered it. */
dt_result dt_barrier(dt_comm *comm);

/* ---------------------------------------------------------------- point to point */

/* Messages between two ranks of a communicator arrive in the order they were
 * sent; they do not mix with the messages of collectives or of other
 * communicators. A send of at most 16 KiB completes at once (it is copied);
 * a larger one waits until the receiver has taken it. The receiver's count
 * must equal the sender's (else the receive returns DT_ERR_MISMATCH, and so
 * does the send if it is still waiting). Sending to
 * oneself is not allowed (DT_ERR_INVALID_ARG), except through dt_sendrecv. */
dt_result dt_send(const void *sendbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm);
dt_result dt_recv(void *recvbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm);

/* Sends sendbuf to dest and receives recvbuf from source at the same time,
 * without deadlock whatever the order peers call it in. sendbuf and recvbuf
 * must not overlap. dest == source == self copies. */
dt_result dt_sendrecv(const void *sendbuf, size_t sendcount, int dest, void *recvbuf,
                      size_t recvcount, int source, dt_dtype dtype, dt_comm *comm);

/* Receives the first message that arrives from any rank (a parameter
 * server's loop); *source is set to the sender's rank. The message's count
 * must equal count. "First" is in modeled time, so that the choice (and
 * every clock after it) is the same whatever order the ranks ran in: the
 * pending message whose transfer would start first at this rank's receive
 * port (THE RULE of dt/net.h; ties: the earlier departure, then the ranks
 * in turn after the one taken last, so that none starves), taken once no
 * other rank can still send an earlier one (it has ended, is blocked in a
 * call that needs this rank, or its clock is past the candidate's): it
 * waits, in wall time, for a rank that computes. Where each such rank is
 * blocked receiving from a third, the candidate is taken then (a choice
 * that can depend on timing). Details: docs/design.md, dt_recv_any. */
dt_result dt_recv_any(void *recvbuf, size_t count, dt_dtype dtype, int *source, dt_comm *comm);

/* ---------------------------------------------------------------- async */

/* The dt_i* calls start an operation and return at once with *req set (NULL
 * on failure). Buffers must stay valid, and send buffers unchanged, until
 * the request completes. Async collectives are issued in the same order on
 * every rank (as in NCCL) and progress on a per-rank background thread
 * while the rank computes; they may run at the same time as blocking
 * collectives on the same communicator. Their modeled time runs on a
 * separate communication timeline that starts at the rank's clock when
 * issued; dt_wait brings the rank's clock up to the completion time, so
 * overlapped communication costs only what it does not hide. */
dt_result dt_iallreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        dt_redop op, dt_comm *comm, dt_request **req);
dt_result dt_ibroadcast(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                        int root, dt_comm *comm, dt_request **req);
dt_result dt_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount, dt_dtype dtype,
                        dt_comm *comm, dt_request **req);
dt_result dt_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                             dt_dtype dtype, dt_redop op, dt_comm *comm, dt_request **req);
dt_result dt_isend(const void *sendbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm,
                   dt_request **req);
dt_result dt_irecv(void *recvbuf, size_t count, dt_dtype dtype, int peer, dt_comm *comm,
                   dt_request **req);

/* Waits until req completes, frees it, and returns the operation's result
 * (with its message). NULL is ignored (DT_OK). */
dt_result dt_wait(dt_request *req);

/* dt_wait on each of reqs[0..n) (NULL entries skipped); every request is
 * freed; returns the first failure. */
dt_result dt_waitall(int n, dt_request **reqs);

/* *done = 1 when req has completed (it must still be passed to dt_wait,
 * which then returns at once), else 0. Never blocks. (MPI_Test; named
 * dt_request_test because dt_test is the test harness's type.) */
dt_result dt_request_test(dt_request *req, int *done);

/* ---------------------------------------------------------------- stats */

/* dt_stats.calls counts calls by dt_coll_kind (dt/net.h). Async forms count
 * as their blocking kind (dt_iallreduce as DT_COLL_ALLREDUCE, dt_isend as
 * DT_COLL_SEND, dt_irecv and dt_recv_any as DT_COLL_RECV). */

/* One rank's figures on one communicator since it was made or last reset.
 * Bytes and messages count payload moved between ranks by this rank's
 * calls (not copies within a rank). Only top-level calls count: the
 * messages inside dt_comm_split and dt_win_allocate do not. A collective
 * that takes a shared-memory shortcut counts the bytes and messages of the
 * network algorithm it stands for (the ring for a large allreduce,
 * recursive doubling for a tiny one, a dissemination barrier). E.g. a ring
 * allreduce of n elements of s bytes on N ranks: bytes_sent = bytes_recv =
 * 2(N-1)/N * n * s per rank, up to rounding of the chunks. */
typedef struct {
    uint64_t bytes_sent, bytes_recv;
    uint64_t msgs_sent, msgs_recv;
    uint64_t calls[DT_NUM_COLLS];
    double time_comm_wall;    /* wall seconds spent in calls (and dt_wait) */
    double time_comm_modeled; /* modeled seconds the rank's clock advanced in them */
} dt_stats;

dt_result dt_comm_stats(const dt_comm *comm, dt_stats *out);
dt_result dt_comm_stats_reset(dt_comm *comm);

/* ---------------------------------------------------------------- modeled network */

/* This rank's virtual clock in modeled seconds (0 at launch), shared by all
 * its communicators; async collectives run on a second timeline per
 * communicator, which dt_wait joins. Every message is charged by THE RULE
 * of dt/net.h on its pair's link (the job's topology), a reduction of n
 * bytes adds gamma * n. Every figure depends only on program order and
 * modeled times: the clock is deterministic, whatever order the ranks ran
 * in. Without opts.net or DT_NET the network is "none" (alpha 0, beta
 * infinite): the clock counts only compute. A worked example:
 * docs/design.md, the modeled clock. */
double dt_clock(const dt_comm *comm);

/* A compute region: dt_compute_end advances the clock by the wall time
 * since dt_compute_begin. Regions do not nest (DT_ERR_STATE). */
dt_result dt_compute_begin(dt_comm *comm);
dt_result dt_compute_end(dt_comm *comm);

/* Advances the clock by a known modeled time (seconds >= 0), e.g. a
 * compute step priced as flops / device_flops_per_s. */
dt_result dt_clock_advance(dt_comm *comm, double seconds);

/* A program's marks in its trace: regions dt_trace_begin .. dt_trace_end
 * (8 nested at most; DT_ERR_STATE past it or ending none), instants (kills
 * mark theirs). Names: 1 to 31 printable chars, no '"' or backslash. */
dt_result dt_trace_begin(dt_comm *comm, const char *name);
dt_result dt_trace_end(dt_comm *comm);
dt_result dt_trace_instant(dt_comm *comm, const char *name);

/* dt_comm_link's alpha (seconds) and beta (bytes/s; INFINITY for "none"). */
dt_result dt_comm_net(const dt_comm *comm, double *alpha, double *beta);

/* The link of comm, gamma included, to price its collectives with dt/net.h
 * as the clock does: its members' slowest (dt_net_group_link: inside one
 * node the intra-node link, across nodes the inter-node one). */
dt_result dt_comm_link(const dt_comm *comm, dt_net *out);

/* The job's network (per_node 0: flat); the world rank of member rank (-1
 * with the reason for a bad comm or rank). */
dt_result dt_comm_topo(const dt_comm *comm, dt_net_topo *out);
int dt_comm_world_rank(const dt_comm *comm, int rank);

#ifdef __cplusplus
}
#endif

/* Shared windows and a rank's buffer in the job's shared memory; then the
 * blocking calls' sites, for the timeout report, after every declaration
 * whose name its macros wrap. */
#include "dt/window.h"
#include "dt/callsite.h"

#endif /* DT_COMM_H */
