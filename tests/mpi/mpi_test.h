/* mpi_test.h - what the mpi backend's tests share (tests/mpi/run.sh runs
 * each under mpirun -np P). */
#ifndef MPI_TEST_H
#define MPI_TEST_H

#include "test_comm_util.h"

/* The job's size and this process's rank (every process runs the test). */
int mt_job_size(void);
int mt_job_rank(void);

/* tc_opts on the mpi backend, with a timeout. */
dt_launch_opts mt_opts(int n, dt_algo algo, double timeout_s);

/* thread_fn on n thread ranks (it records what the thread backend gives
 * into arg), then mpi_fn on n mpi ranks with the same options (it compares):
 * both on the network net, with AUTO. */
void mt_thread_then_mpi(int n, const char *net, dt_rank_fn thread_fn, dt_rank_fn mpi_fn,
                        void *arg);

/* A file name for the job's DT_TRACE, the same in every process (mpirun's
 * pid, their parent), in path[cap]. */
void mt_trace_path(char *path, size_t cap, const char *what);

/* Rank 0's process: the trace at path has events of each of the p ranks
 * (then it is removed). */
void mt_check_trace(const char *path, int p);

#endif /* MPI_TEST_H */
