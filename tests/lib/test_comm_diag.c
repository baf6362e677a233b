/* test_comm_diag.c - diagnosis instead of hangs: mismatched collectives,
 * timeouts that say what every rank waits in, failed and killed ranks,
 * bad arguments; and what dt_launch gives each rank. Every launch takes its
 * backend from DT_BACKEND; where a backend reports differently on purpose,
 * the test says what holds there and checks it. */
#include "test_comm_util.h"

#include <stdio.h>
#include <unistd.h>

/* ---------------------------------------------------------------- mismatch */

static dt_result mismatch_count_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[8] = {0};
    size_t count = dt_comm_rank(c) == 2 ? 5 : 4;
    EXPECT_OK(dt_allreduce(x, x, 4, DT_F32, DT_SUM, c)); /* a matching one first */
    return dt_allreduce(x, x, count, DT_F32, DT_SUM, c);
}

static dt_result mismatch_kind_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[8] = {0};
    if (dt_comm_rank(c) == 0)
        return dt_broadcast(x, x, 4, DT_F32, 0, c);
    return dt_allreduce(x, x, 4, DT_F32, DT_SUM, c);
}

/* Rank 1 issues its async allreduce after the barrier, the others before:
 * the calls' numbers on the communicator differ. */
static dt_result mismatch_order_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    dt_request *q = NULL;
    dt_result r1 = DT_OK, r2;
    if (dt_comm_rank(c) != 1)
        r1 = dt_iallreduce(x, x, 4, DT_F32, DT_SUM, c, &q);
    r2 = dt_barrier(c);
    if (dt_comm_rank(c) == 1)
        r1 = dt_iallreduce(x, x, 4, DT_F32, DT_SUM, c, &q);
    dt_result r3 = dt_wait(q);
    return r1 != DT_OK ? r1 : r2 != DT_OK ? r2 : r3;
}

TEST_T(comm_debug_names_mismatched_rank, 3, 20)
{
    dt_launch_opts o = tc_opts(4, DT_ALGO_AUTO);
    o.debug = 1;
    EXPECT_ERR(dt_launch(&o, mismatch_count_rank, NULL), DT_ERR_MISMATCH);
    EXPECT(strstr(dt_last_error(), "rank 2 called allreduce (count 5"),
           "message names rank 2 and its count: '%s'", dt_last_error());
    EXPECT(strstr(dt_last_error(), "#2"), "message gives the call's number: '%s'",
           dt_last_error());
    /* rank 0 is the odd one out: it is named, not the three that agree */
    EXPECT_ERR(dt_launch(&o, mismatch_kind_rank, NULL), DT_ERR_MISMATCH);
    EXPECT(strstr(dt_last_error(), "rank 0 called broadcast"), "message: '%s'",
           dt_last_error());
    /* blocking and async calls issued in different orders: the debug check
     * sees rank 1's barrier numbered 1 against the others' 2; a rank that
     * waits long enough may see first, on the boards, rank 1's barrier
     * against another rank's allreduce numbered 1 (the same mistake) */
    o.nranks = 3;
    EXPECT_ERR(dt_launch(&o, mismatch_order_rank, NULL), DT_ERR_MISMATCH);
    const char *m = dt_last_error();
    EXPECT(strstr(m, "rank 1 called") && (strstr(m, "as its call #") || strstr(m, "barrier")),
           "message: '%s'", m);
}

/* ---------------------------------------------------------------- timeouts */

static dt_result absent_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[1000] = {0};
    if (dt_comm_rank(c) == 2) {
        dt_sleep(2.0); /* never joins (longer than any timeout under load) */
        return DT_OK;
    }
    return dt_allreduce(x, x, 1000, DT_F32, DT_SUM, c);
}

static dt_result wrong_call_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[1000] = {0};
    EXPECT_OK(dt_barrier(c));
    EXPECT_OK(dt_barrier(c));
    if (dt_comm_rank(c) == 2)
        return dt_recv(x, 1000, DT_F32, 1, c);
    return dt_allreduce(x, x, 1000, DT_F32, DT_SUM, c);
}

/* On thread and proc the report lists every rank of the job from the
 * boards in shared memory. On mpi each rank's board is in its own process:
 * the rank that times out (0 or 1, whichever is first) describes itself
 * from its board and the others from their answers to its questions; a
 * rank in its own code (rank 2, asleep) never answers, and is in no
 * communication call. Whether the other waiting rank has answered by then
 * depends on the machine's load: on mpi the test checks the reporter's own
 * line and rank 2's. */
TEST_T(comm_timeout_reports_every_rank, 3, 20)
{
    dt_launch_opts o = tc_opts(3, DT_ALGO_RING);
    o.debug = 0;
    o.timeout_s = 0.3;
    int mpi = o.backend == DT_BACKEND_MPI;
    double t0 = dt_now();
    EXPECT_ERR(dt_launch(&o, absent_rank, NULL), DT_ERR_TIMEOUT);
    const char *m = dt_last_error();
    EXPECT(dt_now() - t0 < 10, "the timeout took %g s", dt_now() - t0);
    EXPECT(strstr(m, "timeout after 0.3 s in allreduce #1: "), "report: '%s'", m);
    if (mpi)
        EXPECT(strstr(m, "waits in allreduce #1 (count 1000)"), "report: '%s'", m);
    else
        EXPECT(tc_waits_in(m, 0, "allreduce #1 (count 1000)"), "report: '%s'", m);
    EXPECT(strstr(m, "rank 2 is in no communication call"), "report names rank 2: '%s'", m);
    /* ranks in different calls (different collectives are a mismatch:
     * test_comm_mismatch.c) */
    EXPECT_ERR(dt_launch(&o, wrong_call_rank, NULL), DT_ERR_TIMEOUT);
    m = dt_last_error();
    int in_allreduce = strstr(m, "waits in allreduce #3 (count 1000)") != NULL;
    int in_recv = tc_waits_in(m, 2, "recv #1 (count 1000, peer 1)");
    if (mpi)
        EXPECT(in_allreduce || in_recv, "report: '%s'", m);
    else
        EXPECT(in_allreduce && in_recv, "report: '%s'", m);
}

/* ---------------------------------------------------------------- failures */

static dt_result one_fails_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    if (dt_comm_rank(c) == 1)
        return dt_fail(DT_ERR_IO, "cannot read shard 1");
    return dt_allreduce(x, x, 4, DT_F32, DT_SUM, c);
}

static dt_result faulty_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    for (int i = 0; i < 10; i++)
        DT_CHECK(dt_allreduce(x, x, 4, DT_F32, DT_SUM, c));
    return DT_OK;
}

static dt_result delayed_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    for (int i = 0; i < 3; i++)
        EXPECT_OK(dt_allreduce(x, x, 4, DT_F32, DT_SUM, c));
    *(double *)tc_mine(c) = dt_clock(c);
    return DT_OK;
}

/* DT_FAULT's kill: on thread and mpi the rank's call returns DT_ERR_FAULT
 * and the rank fails with it; on proc its process dies of SIGKILL, and the
 * launch reports the death (the others get DT_ERR_PEER_DIED). */
TEST_T(comm_failed_rank_stops_the_others, 3, 20)
{
    dt_launch_opts o = tc_opts(4, DT_ALGO_AUTO);
    o.timeout_s = 20;
    double t0 = dt_now();
    EXPECT_ERR(dt_launch(&o, one_fails_rank, NULL), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "rank 1: cannot read shard 1"), "message '%s'",
           dt_last_error());
    EXPECT(dt_now() - t0 < 2, "the others returned after %g s", dt_now() - t0);

    o.fault = "kill:rank=2:at=allreduce#5";
    t0 = dt_now();
    if (o.backend == DT_BACKEND_PROC) {
        EXPECT_ERR(dt_launch(&o, faulty_rank, NULL), DT_ERR_PEER_DIED);
        EXPECT(strstr(dt_last_error(), "rank 2: killed by signal 9"), "message '%s'",
               dt_last_error());
    } else {
        EXPECT_ERR(dt_launch(&o, faulty_rank, NULL), DT_ERR_FAULT);
        EXPECT(strstr(dt_last_error(), "rank 2:") && strstr(dt_last_error(), "allreduce #5"),
               "message '%s'", dt_last_error());
    }
    EXPECT(dt_now() - t0 < 2, "the others returned after %g s", dt_now() - t0);

    double clocks[4];
    o.fault = "delay:rank=1:ms=20";
    tc_out(&o, clocks, sizeof clocks[0]);
    EXPECT_OK(dt_launch(&o, delayed_rank, NULL));
    for (int r = 0; r < 4; r++)
        EXPECT(clocks[r] >= 0.06 - 1e-9, "rank %d's clock %g: the straggler holds all back", r,
               clocks[r]);
}

/* ---------------------------------------------------------------- bad input */

static dt_result bad_input_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[4] = {0};
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    EXPECT_ERR(dt_allreduce(NULL, x, 4, DT_F32, DT_SUM, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "sendbuf is NULL"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_allreduce(x, x, SIZE_MAX / 2, DT_F32, DT_SUM, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "overflows"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_allgather(x, x, SIZE_MAX / 16, DT_F32, c), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_allreduce(x, x, 4, (dt_dtype)99, DT_SUM, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "dtype"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_allreduce(x, x, 4, DT_F32, (dt_redop)7, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "op"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_broadcast(x, x, 4, DT_F32, n, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "root"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_reduce(x, x, 4, DT_F32, DT_SUM, -1, c), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_send(x, 4, DT_F32, n, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "peer"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_send(x, 4, DT_F32, r, c), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "itself"), "message '%s'", dt_last_error());
    EXPECT_ERR(dt_recv(NULL, 4, DT_F32, (r + 1) % n, c), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_alltoall(x, x, 1, DT_F32, c), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_allreduce(x, x, 4, DT_F32, DT_SUM, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_win_allocate(c, 0, (void **)&x, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_comm_split(c, 0, 0, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_clock_advance(c, -1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_compute_end(c), DT_ERR_STATE);
    EXPECT_OK(dt_compute_begin(c));
    EXPECT_ERR(dt_compute_begin(c), DT_ERR_STATE);
    EXPECT_OK(dt_compute_end(c));
    /* none of it desynchronized the ranks: a real collective still works */
    float one = 1, sum = 0;
    EXPECT_OK(dt_allreduce(&one, &sum, 1, DT_F32, DT_SUM, c));
    EXPECT(sum == (float)n, "sum %g", sum);
    /* count 0 with NULL buffers is valid */
    EXPECT_OK(dt_allreduce(NULL, NULL, 0, DT_F32, DT_SUM, c));
    return DT_OK;
}

static dt_result never_called(dt_comm *c, void *arg)
{
    (void)c;
    (void)arg;
    return DT_ERR_INTERNAL;
}

TEST_T(comm_bad_input_is_refused, 3, 20)
{
    dt_launch_opts o = tc_opts(3, DT_ALGO_AUTO);
    EXPECT_OK(dt_launch(&o, bad_input_rank, NULL));
    o.nranks = 0;
    EXPECT_ERR(dt_launch(&o, never_called, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "nranks"), "message '%s'", dt_last_error());
    o.nranks = DT_MAX_RANKS + 1;
    EXPECT_ERR(dt_launch(&o, never_called, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "1024"), "message says the limit: '%s'", dt_last_error());
    o.nranks = 2;
    EXPECT_ERR(dt_launch(&o, NULL, NULL), DT_ERR_INVALID_ARG);
    o.net = "warp9";
    EXPECT_ERR(dt_launch(&o, never_called, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "warp9"), "message '%s'", dt_last_error());
    o.net = NULL;
    o.fault = "explode:rank=1";
    EXPECT_ERR(dt_launch(&o, never_called, NULL), DT_ERR_INVALID_ARG);
    o.fault = NULL;
    o.backend = DT_BACKEND_NCCL;
    EXPECT_ERR(dt_launch(&o, never_called, NULL), DT_ERR_INVALID_ARG);
}

/* ---------------------------------------------------------------- per-rank context */

typedef struct {
    size_t param_bytes;
    int log_rank;
} ctx_out;

static dt_result ctx_rank(dt_comm *c, void *argp)
{
    (void)argp;
    ctx_out *a = tc_mine(c);
    int r = dt_comm_rank(c);
    void *p = dt_mem_alloc(DT_MEM_PARAM, 1000 * (size_t)(r + 1));
    EXPECT_OK(dt_barrier(c)); /* all ranks hold their blocks now */
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    a->param_bytes = s.current[DT_MEM_PARAM];
    a->log_rank = dt_log_rank();
    dt_mem_free(p);
    return DT_OK;
}

TEST(comm_launch_gives_each_rank_its_context, 2)
{
    ctx_out a[4];
    dt_launch_opts o = tc_opts(4, DT_ALGO_AUTO);
    tc_out(&o, a, sizeof a[0]);
    EXPECT_OK(dt_launch(&o, ctx_rank, NULL));
    for (int r = 0; r < 4; r++) {
        EXPECT(a[r].param_bytes == 1000 * (size_t)(r + 1), "rank %d sees %zu param bytes", r,
               a[r].param_bytes);
        EXPECT(a[r].log_rank == r, "rank %d logs as %d", r, a[r].log_rank);
    }
    EXPECT(dt_log_rank() == -1, "the caller's log rank is left alone");
}

/* ---------------------------------------------------------------- trace */

static dt_result traced_rank(dt_comm *c, void *arg)
{
    (void)arg;
    float x[16] = {0};
    EXPECT_OK(dt_compute_begin(c));
    EXPECT_OK(dt_compute_end(c));
    EXPECT_OK(dt_allreduce(x, x, 16, DT_F32, DT_SUM, c));
    dt_request *q;
    EXPECT_OK(dt_iallreduce(x, x, 16, DT_F32, DT_SUM, c, &q));
    EXPECT_OK(dt_wait(q));
    return DT_OK;
}

static dt_result nothing_rank(dt_comm *c, void *arg)
{
    (void)c, (void)arg;
    return DT_OK;
}

/* Under mpirun every process runs this test: the file (written by rank 0's
 * process before the launch ends) has one name in all of them, the
 * launcher's pid (mpirun's, the parent of them all), and it is removed
 * only after every process has read it (a launch ends when all have come). */
TEST(comm_trace_is_chrome_json, 2)
{
    char path[4200];
    dt_launch_opts o = tc_opts(2, DT_ALGO_AUTO);
    int mpi = o.backend == DT_BACKEND_MPI;
    snprintf(path, sizeof path, "%s/trace_test_%d.json", dt_test_tmpdir(),
             (int)(mpi ? getppid() : getpid()));
    o.trace_path = path;
    EXPECT_OK(dt_launch(&o, traced_rank, NULL));
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "no trace written at %s", path);
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    o.trace_path = NULL;
    EXPECT_OK(dt_launch(&o, nothing_rank, NULL)); /* everyone has read it */
    remove(path);
    buf[n] = '\0';
    EXPECT(strncmp(buf, "{\"displayTimeUnit\"", 18) == 0 && strstr(buf, "\"traceEvents\":["),
           "trace header");
    EXPECT(strstr(buf, "\"name\":\"allreduce\",\"cat\":\"comm\",\"ph\":\"X\""), "allreduce events");
    EXPECT(strstr(buf, "\"name\":\"compute\""), "compute events");
    EXPECT(strstr(buf, "rank 1 async"), "an async track per rank");
    EXPECT(n > 4 && strcmp(buf + n - 4, "\n]}\n") == 0, "the JSON is closed");
    int depth = 0;
    for (size_t i = 0; i < n; i++)
        depth += (buf[i] == '{' || buf[i] == '[') - (buf[i] == '}' || buf[i] == ']');
    EXPECT(depth == 0, "brackets balance (%d)", depth);
}
