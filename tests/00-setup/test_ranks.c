/* test_ranks.c - lab 00, task (b): a first program of ranks, on 1 to 8
 * thread ranks. Each rank checks its own report, so a failure names the
 * rank that saw it. */
#include "grader.h"
#include "setup.h"

#include "dt/comm.h"

typedef struct {
    int nranks;
} job;

/* The sum of (r+1)^2 for r < k, counted one rank at a time. */
static int sum_of_squares(int k)
{
    int s = 0;
    for (int r = 1; r <= k; r++)
        s += r * r;
    return s;
}

static dt_result check_rank(dt_comm *world, void *arg)
{
    const job *j = arg;
    lab_rank_report rep = {-1, -1, -1, -1, 99, 99};
    EXPECT_OK(lab_rank_report_fill(world, &rep));
    int me = dt_comm_rank(world);
    EXPECT(rep.rank == me, "report.rank = %d, expected %d", rep.rank, me);
    EXPECT(rep.size == j->nranks, "report.size = %d, expected %d", rep.size, j->nranks);
    EXPECT(rep.value == (me + 1) * (me + 1), "report.value = %d, expected %d", rep.value,
           (me + 1) * (me + 1));
    EXPECT(rep.sum == sum_of_squares(j->nranks), "report.sum = %d, expected %d on %d ranks",
           rep.sum, sum_of_squares(j->nranks), j->nranks);
    EXPECT(rep.allreduce_calls == 1, "report.allreduce_calls = %llu, expected 1",
           (unsigned long long)rep.allreduce_calls);
    /* The report must hold this rank's figures as the communicator counts them. */
    dt_stats st;
    EXPECT_OK(dt_comm_stats(world, &st));
    EXPECT(rep.bytes_sent == st.bytes_sent, "report.bytes_sent = %llu, the communicator says %llu",
           (unsigned long long)rep.bytes_sent, (unsigned long long)st.bytes_sent);
    if (j->nranks > 1)
        EXPECT(st.bytes_sent > 0, "an allreduce on %d ranks sent no byte", j->nranks);
    return DT_OK;
}

static void run_job(int nranks)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    o.backend = DT_BACKEND_THREAD;
    /* Half the test's own timeout (dtgrade sets DT_TEST_TIMEOUT): a rank
     * that never joins is reported by the communicator, naming what each
     * rank waits in, before the grader has to kill the test. */
    o.timeout_s = dt_env_double("DT_TEST_TIMEOUT", 10) / 2;
    job j = {nranks};
    EXPECT_OK(dt_launch(&o, check_rank, &j));
}

TEST(ranks_one_rank, 1)
{
    dt_test_see("chapter 00, section 8");
    run_job(1);
}

TEST(ranks_four_ranks, 2)
{
    dt_test_see("chapter 00, section 8");
    run_job(4);
}

TEST(ranks_one_to_eight, 2)
{
    dt_test_see("chapter 00, section 8");
    for (int k = 1; k <= 8; k++)
        run_job(k);
}
