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

#endif /* MPI_TEST_H */
