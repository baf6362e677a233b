/* test_comm_deadlock.c - a timeout's report at the right frame: the
 * file:line of the blocking call in the caller's code (not the DT_CHECK a
 * frame above it), the word "deadlock" when every rank waits on another,
 * and a sub-communicator's peers named by their world rank too. The
 * deadlocks are planted in lab-like code below. Deadlines are seconds, and
 * every rank first passes a barrier: each is in its planted call long
 * before another's deadline, whatever the machine's load. */
#include "test_comm_util.h"

#include <stdio.h>

#define DEADLINE_S 2.0

/* A lab's ring step with the bug planted: every rank receives from its
 * left neighbour before it sends to its right one, so none ever sends.
 * PLANTED_LINE is the receive's line (a constant: on proc the ranks are
 * other processes). */
enum { PLANTED_LINE = __LINE__ + 4 };
static dt_result planted_ring_step(float *buf, size_t count, dt_comm *c)
{
    int k = dt_comm_size(c), me = dt_comm_rank(c);
    DT_CHECK(dt_recv(buf, count, DT_F32, (me + k - 1) % k, c));
    DT_CHECK(dt_send(buf, count, DT_F32, (me + 1) % k, c));
    return DT_OK;
}

/* The lab's collective made of that step: its DT_CHECK is the frame above
 * the blocking call, the one a report must not name. */
static dt_result planted_allreduce(float *buf, size_t count, dt_comm *c)
{
    DT_CHECK(planted_ring_step(buf, count, c));
    return DT_OK;
}

static dt_result deadlock_rank(dt_comm *world, void *arg)
{
    (void)arg;
    float x[2] = {0};
    DT_CHECK(dt_barrier(world));
    return planted_allreduce(x, 2, world);
}

static dt_launch_opts deadlock_opts(int n)
{
    dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
    o.debug = 0;
    o.timeout_s = DEADLINE_S;
    return o;
}

/* The report's first words are the site of the receive, the innermost
 * call in this file; no other line of this file is named. */
TEST_T(comm_timeout_names_the_blocking_call, 2, 30)
{
    dt_launch_opts o = deadlock_opts(3);
    EXPECT_ERR(dt_launch(&o, deadlock_rank, NULL), DT_ERR_TIMEOUT);
    const char *m = dt_last_error();
    char want[160];
    snprintf(want, sizeof want, "%s:%d: timeout after 2 s in recv #1: ", __FILE__,
             PLANTED_LINE);
    /* dt_launch puts the failed rank before its message: "rank 1: ..." */
    const char *start = strstr(m, ": ");
    EXPECT(strncmp(m, "rank ", 5) == 0 && start && strncmp(start + 2, want, strlen(want)) == 0,
           "expected the report to start with 'rank R: %s': '%s'", want, m);
    const char *again = strstr(start + 2 + strlen(want), __FILE__ ":");
    EXPECT(again == NULL, "the report names another line of the file (a frame above the "
           "receive): '%s'", m);
    /* the ranks' lines name the site without its folders (the reporter's
     * own, at least, on every backend) */
    snprintf(want, sizeof want, "in recv #1 (count 2, peer ");
    EXPECT(strstr(m, want), "report: '%s'", m);
    snprintf(want, sizeof want, ") at test_comm_deadlock.c:%d", PLANTED_LINE);
    EXPECT(strstr(m, want), "expected '%s' in the report: '%s'", want, m);
}

/* Every rank waits on another: the report says "deadlock". On mpi the
 * others' state comes in their answers to questions; a rank whose answer
 * has not come (a loaded machine) shows as "in no communication call", and
 * the report then cannot say deadlock: there, one of the two holds. */
TEST_T(comm_timeout_says_deadlock, 2, 30)
{
    dt_launch_opts o = deadlock_opts(4);
    EXPECT_ERR(dt_launch(&o, deadlock_rank, NULL), DT_ERR_TIMEOUT);
    const char *m = dt_last_error();
    int said = strstr(m, "deadlock: every rank waits on another: ") != NULL;
    if (o.backend == DT_BACKEND_MPI)
        EXPECT(said || strstr(m, "is in no communication call"), "report: '%s'", m);
    else
        EXPECT(said, "expected 'deadlock' in the report: '%s'", m);
}

/* One rank computes instead of joining: not a deadlock (a rank that is
 * not in any call may still send), and the report does not say one. */
static dt_result one_absent_rank(dt_comm *world, void *arg)
{
    (void)arg;
    float x[2] = {0};
    DT_CHECK(dt_barrier(world));
    if (dt_comm_rank(world) == 1) {
        dt_sleep(DEADLINE_S + 1.0);
        return DT_OK;
    }
    return dt_recv(x, 2, DT_F32, 1, world);
}

TEST_T(comm_timeout_no_deadlock_while_one_computes, 1, 30)
{
    dt_launch_opts o = deadlock_opts(2);
    EXPECT_ERR(dt_launch(&o, one_absent_rank, NULL), DT_ERR_TIMEOUT);
    const char *m = dt_last_error();
    EXPECT(!strstr(m, "deadlock:"), "report: '%s'", m);
    EXPECT(strstr(m, "rank 1 is in no communication call") || strstr(m, "rank 1 has returned"),
           "report: '%s'", m);
}

/* The same deadlock inside halves of the world: color rank % 2, so group
 * rank g is world rank 2g + color. "rank 1 waits in recv #1 (count 2,
 * peer 1)" would read as world rank 1 waiting on itself: the report says
 * "peer 1 = world rank 3". */
static dt_result split_deadlock_rank(dt_comm *world, void *arg)
{
    (void)arg;
    float x[2] = {0};
    int me = dt_comm_rank(world);
    dt_comm *half = NULL;
    DT_CHECK(dt_comm_split(world, me % 2, me, &half));
    DT_CHECK(dt_barrier(world));
    dt_result r = planted_allreduce(x, 2, half);
    dt_comm_free(half);
    return r;
}

TEST_T(comm_timeout_names_world_ranks_of_peers, 2, 30)
{
    dt_launch_opts o = deadlock_opts(4);
    EXPECT_ERR(dt_launch(&o, split_deadlock_rank, NULL), DT_ERR_TIMEOUT);
    const char *m = dt_last_error();
    /* Each rank's line that the report has (every rank's on thread and
     * proc, at least the reporter's on mpi) names its peer right: in a
     * group of two, the other member, world rank me ^ 2. */
    int lines = 0;
    for (int r = 0; r < 4; r++) {
        int peer_world = r ^ 2, peer = peer_world / 2;
        char call[80];
        snprintf(call, sizeof call, "recv #1 (count 2, peer %d = world rank %d)", peer,
                 peer_world);
        lines += tc_waits_in(m, r, call);
    }
    if (o.backend == DT_BACKEND_MPI)
        EXPECT(lines >= 1, "no rank's line names its peer's world rank: '%s'", m);
    else
        EXPECT(lines == 4, "%d of 4 ranks' lines name their peer's world rank: '%s'", lines, m);
}
