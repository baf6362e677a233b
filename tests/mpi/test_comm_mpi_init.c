/* test_comm_mpi_init.c - dt_init inside an MPI job: a program started by
 * `mpirun -np P PROGRAM` joins the job as this process's rank, on the mpi
 * backend, runs its calls (collectives, a split, messages, dt_recv_any in
 * modeled order), writes one DT_TRACE file from rank 0's process, and
 * leaves with dt_finalize; a second dt_init then joins a new job. */
#include "mpi_test.h"

#include <stdlib.h>

/* Rank r > 0 sends at modeled time (P - r) ms, after sleeping r x 10 ms of
 * wall time: rank 0 takes them by modeled time, highest rank first. */
static void recv_any_in_modeled_order(dt_comm *world)
{
    int p = dt_comm_size(world), me = dt_comm_rank(world);
    int32_t v = me;
    if (me > 0) {
        dt_sleep(0.01 * me);
        EXPECT_OK(dt_clock_advance(world, 1e-3 * (p - me)));
        EXPECT_OK(dt_send(&v, 1, DT_I32, 0, world));
        return;
    }
    for (int want = p - 1; want >= 1; want--) {
        int src = -1;
        EXPECT_OK(dt_recv_any(&v, 1, DT_I32, &src, world));
        EXPECT(src == want && v == want, "dt_recv_any took rank %d's message (%d), expected "
               "rank %d's, the first in modeled time", src, v, want);
    }
}

static void calls(dt_comm *world)
{
    int p = dt_comm_size(world), me = dt_comm_rank(world);
    int32_t v = me + 1, sum = 0;
    EXPECT_OK(dt_allreduce(&v, &sum, 1, DT_I32, DT_SUM, world));
    EXPECT(sum == p * (p + 1) / 2, "allreduce: %d, expected %d", sum, p * (p + 1) / 2);
    dt_comm *half = NULL;
    EXPECT_OK(dt_comm_split(world, me % 2, me, &half));
    EXPECT_OK(dt_allreduce(&v, &sum, 1, DT_I32, DT_SUM, half));
    int want = 0;
    for (int r = me % 2; r < p; r += 2)
        want += r + 1;
    EXPECT(sum == want, "allreduce over half: %d, expected %d", sum, want);
    EXPECT_OK(dt_comm_free(half));
    int32_t left = -1;
    EXPECT_OK(dt_sendrecv(&v, 1, (me + 1) % p, &left, 1, (me + p - 1) % p, DT_I32, world));
    EXPECT(left == (me + p - 1) % p + 1, "sendrecv: %d from the left", left);
    if (p > 1)
        recv_any_in_modeled_order(world);
    EXPECT_OK(dt_barrier(world));
}

TEST_T(mpi_init_joins_the_job, 2, 60)
{
    int p = mt_job_size(), me = mt_job_rank();
    char trace[4200];
    mt_trace_path(trace, sizeof trace, "init-trace");
    setenv("DT_TRACE", trace, 1);
    dt_comm *world = NULL, *again = NULL;
    EXPECT_OK(dt_init(&world));
    unsetenv("DT_TRACE");
    EXPECT(dt_comm_rank(world) == me && dt_comm_size(world) == p,
           "dt_init joined as rank %d of %d, the MPI job gives %d of %d", dt_comm_rank(world),
           dt_comm_size(world), me, p);
    EXPECT(dt_log_rank() == me, "the log rank is %d", dt_log_rank());
    EXPECT_ERR(dt_init(&again), DT_ERR_STATE);
    calls(world);
    EXPECT_ERR(dt_finalize(NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_finalize(world));
    EXPECT(dt_log_rank() == -1, "the log rank after dt_finalize is %d", dt_log_rank());
    if (me == 0) /* written before rank 0's dt_finalize returned */
        mt_check_trace(trace, p);
    /* a new job in the same processes */
    EXPECT_OK(dt_init(&world));
    calls(world);
    EXPECT_OK(dt_finalize(world));
}
