/* test_comm_mpi_fail.c - the mpi backend's failures: a rank that fails
 * stops the others (DT_ERR_PEER_DIED, long before their timeout), a rank
 * that never comes is a timeout, a mismatch is an error, bad input is
 * refused by name; and the same result in every process. */
#include "mpi_test.h"

#include <string.h>

static dt_result fail_rank(dt_comm *c, void *arg)
{
    (void)arg;
    if (dt_comm_rank(c) == 1)
        return dt_fail(DT_ERR_FAULT, "rank 1 gives up on purpose");
    float x = 0;
    double t0 = dt_now();
    dt_result r = dt_recv(&x, 1, DT_F32, 1, c);
    EXPECT(r == DT_ERR_PEER_DIED, "a receive from the failed rank: %s (%s)", dt_strerror(r),
           dt_last_error());
    EXPECT(dt_now() - t0 < 5, "the failure took %.1f s to be seen (timeout 30 s)",
           dt_now() - t0);
    return r;
}

TEST_T(mpi_failed_rank_stops_the_others, 3, 60)
{
    dt_launch_opts o = mt_opts(mt_job_size(), DT_ALGO_AUTO, 30);
    dt_result r = dt_launch(&o, fail_rank, NULL);
    EXPECT(r == DT_ERR_FAULT, "the launch: %s, expected rank 1's DT_ERR_FAULT (%s)",
           dt_strerror(r), dt_last_error());
    EXPECT(strstr(dt_last_error(), "rank 1: rank 1 gives up on purpose") != NULL,
           "the launch's message: %s", dt_last_error());
}

/* The last rank returns at once; the others wait for it in a barrier. */
static dt_result missing_rank(dt_comm *c, void *arg)
{
    (void)arg;
    if (dt_comm_rank(c) == dt_comm_size(c) - 1)
        return DT_OK;
    dt_result r = dt_barrier(c);
    EXPECT(r == DT_ERR_TIMEOUT, "the barrier: %s (%s)", dt_strerror(r), dt_last_error());
    EXPECT(strstr(dt_last_error(), "timeout after 1 s in barrier") != NULL, "message: %s",
           dt_last_error());
    return DT_OK;
}

TEST_T(mpi_missing_rank_is_a_timeout, 2, 30)
{
    dt_launch_opts o = mt_opts(mt_job_size(), DT_ALGO_AUTO, 1);
    EXPECT_OK(dt_launch(&o, missing_rank, NULL));
}

/* Rank 0 calls an allreduce of 4 elements, the others of 5 (above and
 * below the eager limit): every rank returns an error, none hangs. */
static dt_result mismatch_rank(dt_comm *c, void *arg)
{
    size_t big = *(size_t *)arg, count = dt_comm_rank(c) == 0 ? big : big + 1;
    float *x = calloc(count, sizeof(float));
    dt_result r = dt_allreduce(x, x, count, DT_F32, DT_SUM, c);
    free(x);
    EXPECT(r == DT_ERR_MISMATCH || r == DT_ERR_PEER_DIED || r == DT_ERR_TIMEOUT,
           "a mismatched allreduce: %s (%s)", dt_strerror(r), dt_last_error());
    return r;
}

TEST_T(mpi_mismatch_is_an_error, 2, 60)
{
    size_t sizes[] = {4, 20000};
    for (int k = 0; k < 2; k++) {
        dt_launch_opts o = mt_opts(mt_job_size(), DT_ALGO_RING, 3);
        dt_result r = dt_launch(&o, mismatch_rank, &sizes[k]);
        EXPECT(r == DT_ERR_MISMATCH, "count %zu against %zu: the launch gave %s, expected "
               "DT_ERR_MISMATCH first (%s)", sizes[k], sizes[k] + 1, dt_strerror(r),
               dt_last_error());
    }
}

static dt_result refused_rank(dt_comm *c, void *arg)
{
    (void)c, (void)arg;
    EXPECT(0, "a launch of more ranks than the job's processes ran a rank");
    return DT_OK;
}

TEST(mpi_bad_input_is_refused, 1)
{
    int p = mt_job_size();
    dt_launch_opts o = mt_opts(p + 1, DT_ALGO_AUTO, 5);
    dt_result r = dt_launch(&o, refused_rank, NULL);
    EXPECT(r == DT_ERR_INVALID_ARG && strstr(dt_last_error(), "mpirun -np"),
           "%d ranks in a job of %d processes: %s (%s)", p + 1, p, dt_strerror(r),
           dt_last_error());
}
