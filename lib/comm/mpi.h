/* mpi.h - the mpi backend (mpi_launch.c, mpi_port.c): ranks are the
 * processes of an MPI job started by mpirun; the emulation's algorithms run
 * unchanged over MPI point-to-point messages. Not a public header.
 *
 * The seam: port.c's dt_msg_* (every algorithm's messages), sync.c's
 * barrier-exchange, dt_comm_split and dt_launch hand their work to the
 * functions below when the job's backend is mpi. Built with DT_HAVE_MPI
 * only; without it, each is a stub that says MPI is not built in. */
#ifndef DT_COMM_MPI_H
#define DT_COMM_MPI_H

#include "coll.h"
#include "sync.h"

static inline int dt_mpi_job(const dt_job *job) { return job->backend == DT_BACKEND_MPI; }

#ifdef DT_HAVE_MPI

#include <mpi.h>

/* What one launch shares among this process's calls: the control
 * communicator over every process of the MPI job (the side channel of
 * failure notices and of the ranks' ends) and the first failure it heard. */
typedef struct {
    MPI_Comm ctl;
    int procs, me;          /* its size and this process's rank in it */
    _Atomic int failed;     /* 1 + the rank whose failure notice came, else 0 */
    char failed_msg[400];
    pthread_mutex_t lock;   /* guards failed_msg */
} dt_mpi_launch;

/* A communicator group's MPI side (dt_comm_shared.mpi): an MPI
 * communicator of exactly its members, ranked as they are. */
typedef struct {
    MPI_Comm comm;
    dt_mpi_launch *launch;
} dt_mpi_group;

/* The failure notice's payload, and the record of a rank's end. */
#define DT_MPI_MSG_MAX 400

/* Maps an MPI error code to a dt_result with MPI's message. */
dt_result dt_mpi_fail(int code, const char *what);

/* DT_ERR_PEER_DIED once a rank of the launch sent its failure notice. */
dt_result dt_mpi_check_failed(dt_mpi_launch *l);

/* Polls reqs[0..n) (MPI_REQUEST_NULL done) until all completed, within the
 * job's deadline: DT_ERR_TIMEOUT naming what the call waits for (what, peer),
 * or DT_ERR_PEER_DIED on a failure notice. statuses may be NULL. */
dt_result dt_mpi_poll(dt_call *call, dt_mpi_launch *l, MPI_Request *reqs, int n,
                      const char *what, int peer);

extern const dt_backend_ops dt_mpi_ops;

/* 1 when this process was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE,
 * or Hydra's PMI_SIZE), with its rank and the job's size. */
int dt_mpi_env(int *rank, int *size);

/* Messages (mpi_port.c): as dt_msg_isend ... of port.h. */
dt_result dt_mpi_isend(dt_call *call, int peer, const void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
dt_result dt_mpi_irecv(dt_call *call, int peer, void *buf, size_t bytes, uint64_t tag,
                       dt_xfer *out);
dt_result dt_mpi_wait(dt_call *call, dt_xfer *x, int *src);
int dt_mpi_done(const dt_xfer *x);
void dt_mpi_cancel(dt_call *call, dt_xfer *x);

/* The barrier-exchange of sync.h over messages. */
dt_result dt_mpi_exchange(dt_call *call, const dt_rec *mine, const dt_rec **all);

/* dt_comm_split's new group for this process: its members are the parent's
 * ranks ranks[0..n) in their new order, this process at position me; made
 * by every member from the parent's MPI communicator (MPI_Comm_create_group). */
dt_result dt_mpi_split(dt_comm *parent, const int *ranks, int n, int me, dt_comm **out);

/* Frees a group's MPI state (dt_comm_shared's backend part). */
void dt_mpi_group_free(dt_comm_shared *sh);

/* dt_win_allocate's region on the mpi backend, once every rank has come
 * (and asked for the same size): MPI_Win_allocate_shared over the comm's
 * processes, which must share one machine's memory; zeroed. *handle:
 * for dt_mpi_win_free (collective, after the window's last barrier). */
dt_result dt_mpi_win_allocate(dt_comm *comm, size_t bytes, void **base, void **handle);
void dt_mpi_win_free(void *handle);

/* DT_TRACE (mpi_trace.c): this rank's events ev[0..nev) (wall times from
 * the launch's start wall0) go to rank 0's process, which writes path with
 * the n ranks' events; every rank of the launch calls it. */
dt_result dt_mpi_trace(dt_mpi_launch *l, int n, const char *path, dt_trace_ev *ev, size_t nev,
                       double wall0);

#else

static inline dt_result dt_mpi_off(void)
{
    return dt_fail(DT_ERR_UNSUPPORTED, "the mpi backend is not built in (no mpicc, or MPI=0)");
}
static inline dt_result dt_mpi_isend(dt_call *c, int p, const void *b, size_t n, uint64_t t,
                                     dt_xfer *o)
{
    (void)c, (void)p, (void)b, (void)n, (void)t, (void)o;
    return dt_mpi_off();
}
static inline dt_result dt_mpi_irecv(dt_call *c, int p, void *b, size_t n, uint64_t t, dt_xfer *o)
{
    (void)c, (void)p, (void)b, (void)n, (void)t, (void)o;
    return dt_mpi_off();
}
static inline dt_result dt_mpi_wait(dt_call *c, dt_xfer *x, int *s)
{
    (void)c, (void)x, (void)s;
    return dt_mpi_off();
}
static inline int dt_mpi_done(const dt_xfer *x) { return (void)x, 1; }
static inline void dt_mpi_cancel(dt_call *c, dt_xfer *x) { (void)c, (void)x; }
static inline dt_result dt_mpi_exchange(dt_call *c, const dt_rec *m, const dt_rec **a)
{
    (void)c, (void)m, (void)a;
    return dt_mpi_off();
}
static inline dt_result dt_mpi_split(dt_comm *p, const int *w, int n, int me, dt_comm **o)
{
    (void)p, (void)w, (void)n, (void)me, (void)o;
    return dt_mpi_off();
}
static inline void dt_mpi_group_free(dt_comm_shared *sh) { (void)sh; }
static inline dt_result dt_mpi_win_allocate(dt_comm *c, size_t n, void **b, void **h)
{
    (void)c, (void)n, (void)b, (void)h;
    return dt_mpi_off();
}
static inline void dt_mpi_win_free(void *h) { (void)h; }

#endif /* DT_HAVE_MPI */
#endif /* DT_COMM_MPI_H */
