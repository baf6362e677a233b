/* test_comm_ports.c - THE RULE of dt/net.h measured on the communicator's
 * clock: a message occupies both ends' ports. Exact figures, worked out
 * from the rule (never from the library's code):
 *  - K pushes into one rank queue at its receive port: alpha + K n/beta;
 *  - the naive allreduce (gather to rank 0, then send to each) costs
 *    2 alpha + 2 (K-1) n/beta when rank 0's receives are posted at once, and
 *    K alpha + 2 (K-1) n/beta when it posts them one after another (each
 *    rendezvous message waits for its receive);
 *  - the even/odd ring pass on an odd N takes three message times;
 *  - each library algorithm's clock equals its closed form in dt/net.h.
 * Every launch takes its backend from DT_BACKEND; each rank hands its
 * clock back through dt_rank_out. */
#include "test_comm_util.h"

#include <math.h>

/* alpha 1 us, 1 GB/s: a 64 KiB message (above the eager limit) is busy on
 * a port for w = 65.536 us; a 4 KiB one (eager) for 4.096 us. */
#define P_NET "alpha=1us,bw=1GB/s"
#define P_ALPHA 1e-6
#define P_BETA 1e9
#define BIG 16384 /* int32: 64 KiB */
#define SMALL 1024 /* int32: 4 KiB */

typedef struct {
    size_t count;
    int preposted; /* rank 0 posts every receive before waiting */
} port_arg;

/* n ranks on P_NET; clock[r]: rank r's clock at its end (port_done). */
static dt_launch_opts port_opts(int n, double *clock)
{
    dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
    o.net = P_NET;
    o.debug = 0;
    tc_out(&o, clock, sizeof *clock);
    return o;
}

static void port_done(dt_comm *c) { *(double *)tc_mine(c) = dt_clock(c); }

/* ---------------------------------------------------------------- pushes */

static dt_result push_rank(dt_comm *c, void *argp)
{
    port_arg *a = argp;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    int32_t *buf = calloc(a->count * (size_t)n, sizeof *buf);
    if (r == 0) {
        dt_request *q[8] = {NULL};
        for (int j = 1; j < n; j++)
            EXPECT_OK(dt_irecv(buf + (size_t)j * a->count, a->count, DT_I32, j, c, &q[j]));
        EXPECT_OK(dt_waitall(n, q));
    } else {
        EXPECT_OK(dt_send(buf, a->count, DT_I32, 0, c));
    }
    port_done(c);
    free(buf);
    return DT_OK;
}

/* The parameter server's bottleneck: K = N-1 workers push n bytes at once;
 * the server's receive port takes them one after another. */
TEST_T(comm_ports_k_pushes_cost_k_messages_at_the_receiver, 3, 30)
{
    const size_t counts[] = {SMALL, BIG};
    for (int ci = 0; ci < 2; ci++)
        for (int n = 2; n <= 8; n++) {
            port_arg a = {counts[ci], 1};
            double clock[8];
            dt_launch_opts o = port_opts(n, clock);
            EXPECT_OK(dt_launch(&o, push_rank, &a));
            double w = 4.0 * (double)a.count / P_BETA, k = n - 1;
            EXPECT_NEAR(clock[0], P_ALPHA + k * w, 1e-9);
            for (int r = 1; r < n; r++) /* a sender is done when its bytes have left */
                EXPECT_NEAR(clock[r], w, 1e-9);
        }
}

/* ---------------------------------------------------------------- naive */

static dt_result naive_rank(dt_comm *c, void *argp)
{
    port_arg *a = argp;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    int32_t *x = calloc(a->count * (size_t)n, sizeof *x);
    if (r != 0) {
        EXPECT_OK(dt_send(x, a->count, DT_I32, 0, c));
        EXPECT_OK(dt_recv(x, a->count, DT_I32, 0, c));
    } else {
        if (a->preposted) {
            dt_request *q[8] = {NULL};
            for (int j = 1; j < n; j++)
                EXPECT_OK(dt_irecv(x + (size_t)j * a->count, a->count, DT_I32, j, c, &q[j]));
            EXPECT_OK(dt_waitall(n, q));
        } else {
            for (int j = 1; j < n; j++)
                EXPECT_OK(dt_recv(x + (size_t)j * a->count, a->count, DT_I32, j, c));
        }
        for (int j = 1; j < n; j++)
            EXPECT_OK(dt_send(x, a->count, DT_I32, j, c));
    }
    port_done(c);
    free(x);
    return DT_OK;
}

static double last(const double *clock, int n)
{
    double t = 0;
    for (int r = 0; r < n; r++)
        t = fmax(t, clock[r]);
    return t;
}

/* Gather to rank 0, then rank 0 sends the result to each: rank 0's two
 * ports each serve K-1 messages in a row, 2 (K-1) n/beta, plus a latency
 * for each phase. Posted one after another, each rendezvous receive is
 * taken only once posted, after the previous one arrived: the gather pays
 * alpha + n/beta per message, K alpha in all. */
TEST_T(comm_ports_naive_allreduce_costs_2_k_minus_1_messages, 3, 30)
{
    const dt_net link = {P_ALPHA, P_BETA, 0};
    for (int n = 2; n <= 8; n++) {
        double k = n - 1, w = 4.0 * BIG / P_BETA;
        for (int pre = 0; pre <= 1; pre++) {
            port_arg a = {BIG, pre};
            double clock[8];
            dt_launch_opts o = port_opts(n, clock);
            EXPECT_OK(dt_launch(&o, naive_rank, &a));
            double want = (pre ? 2 : n) * P_ALPHA + 2 * k * w;
            EXPECT_NEAR(last(clock, n), want, 1e-9);
            if (pre) /* the closed form of dt/net.h is this one */
                EXPECT_NEAR(dt_net_naive_allreduce(&link, 4.0 * BIG, n), want, 1e-12);
        }
        port_arg a = {SMALL, 0}; /* eager: the buffers queue as if preposted */
        double clock[8];
        dt_launch_opts o = port_opts(n, clock);
        EXPECT_OK(dt_launch(&o, naive_rank, &a));
        EXPECT_NEAR(last(clock, n), 2 * P_ALPHA + 2 * k * 4.0 * SMALL / P_BETA, 1e-9);
    }
}

/* ---------------------------------------------------------------- odd ring */

/* Lab 01's ring pass: even ranks send then receive, odd ranks receive then
 * send. On an odd N, ranks N-1 and 0 are both even: rank N-1's message to
 * rank 0 waits until rank 0's own send is done (w), and rank N-2's message
 * to rank N-1 until rank N-1's is done (2w): the pass ends at
 * 3 n/beta + alpha, three message times where an even N takes two,
 * 2 (alpha + n/beta). */
static dt_result ring_rank(dt_comm *c, void *argp)
{
    port_arg *a = argp;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    int32_t *s = calloc(a->count, sizeof *s), *d = calloc(a->count, sizeof *d);
    int next = (r + 1) % n, prev = (r - 1 + n) % n;
    if (r % 2 == 0) {
        EXPECT_OK(dt_send(s, a->count, DT_I32, next, c));
        EXPECT_OK(dt_recv(d, a->count, DT_I32, prev, c));
    } else {
        EXPECT_OK(dt_recv(d, a->count, DT_I32, prev, c));
        EXPECT_OK(dt_send(s, a->count, DT_I32, next, c));
    }
    port_done(c);
    free(s);
    free(d);
    return DT_OK;
}

TEST_T(comm_ports_odd_ring_pass_takes_three_message_times, 3, 30)
{
    double w = 4.0 * BIG / P_BETA;
    for (int n = 2; n <= 8; n++) {
        port_arg a = {BIG, 0};
        double clock[8];
        dt_launch_opts o = port_opts(n, clock);
        EXPECT_OK(dt_launch(&o, ring_rank, &a));
        double want = n % 2 ? 3 * w + P_ALPHA : 2 * (w + P_ALPHA);
        EXPECT(fabs(last(clock, n) - want) <= 1e-9 * want,
               "N = %d: the pass ended at %.3f us, expected %.3f us (%s)", n,
               last(clock, n) * 1e6, want * 1e6,
               n % 2 ? "3 n/beta + alpha" : "2 (alpha + n/beta)");
    }
}

/* ---------------------------------------------------------------- closed forms */

typedef struct {
    dt_coll_kind kind;
    dt_algo algo;
    size_t count; /* the call's count */
} form_arg;

static dt_result form_rank(dt_comm *c, void *argp)
{
    form_arg *a = argp;
    int n = dt_comm_size(c);
    float *in = calloc(a->count * (size_t)n, sizeof *in);
    float *out = calloc(a->count * (size_t)n, sizeof *out);
    EXPECT_OK(dt_comm_set_algo(c, a->algo));
    switch (a->kind) {
    case DT_COLL_ALLREDUCE: EXPECT_OK(dt_allreduce(in, out, a->count, DT_F32, DT_SUM, c)); break;
    case DT_COLL_BROADCAST: EXPECT_OK(dt_broadcast(in, out, a->count, DT_F32, 0, c)); break;
    case DT_COLL_REDUCE_SCATTER:
        EXPECT_OK(dt_reduce_scatter(in, out, a->count, DT_F32, DT_SUM, c));
        break;
    case DT_COLL_ALLGATHER: EXPECT_OK(dt_allgather(in, out, a->count, DT_F32, c)); break;
    default: EXPECT_OK(dt_alltoall(in, out, a->count, DT_F32, c)); break;
    }
    port_done(c);
    free(in);
    free(out);
    return DT_OK;
}

/* Each library algorithm against its closed form (dtsim prints the same),
 * the binomial-tree allreduce 2 ceil(log2 N)(alpha + n/beta) + ceil(log2 N) n gamma among them:
 * 64 KiB blocks (rendezvous), equal chunks, gamma 0.5 ns per byte. */
TEST_T(comm_ports_algorithms_match_their_closed_forms, 3, 60)
{
    const dt_net link = {P_ALPHA, P_BETA, 0.5e-9};
    const struct {
        dt_coll_kind kind;
        dt_algo algo;
        dt_net_algo form;
        int per_rank; /* the call's count is per rank (n counts the whole) */
        int pow2;     /* exact on powers of two only (a tree's last round is partly empty) */
    } cases[] = {
        {DT_COLL_ALLREDUCE, DT_ALGO_RING, DT_NET_RING_ALLREDUCE, 0, 0},
        {DT_COLL_ALLREDUCE, DT_ALGO_TREE, DT_NET_RECURSIVE_DOUBLING_ALLREDUCE, 0, 0},
        {DT_COLL_ALLREDUCE, DT_ALGO_BINOMIAL, DT_NET_TREE_ALLREDUCE, 0, 1},
        {DT_COLL_REDUCE_SCATTER, DT_ALGO_RING, DT_NET_RING_REDUCE_SCATTER, 1, 0},
        {DT_COLL_ALLGATHER, DT_ALGO_RING, DT_NET_RING_ALLGATHER, 1, 0},
        {DT_COLL_BROADCAST, DT_ALGO_TREE, DT_NET_BINOMIAL_BROADCAST, 0, 1},
        {DT_COLL_BROADCAST, DT_ALGO_DIRECT, DT_NET_LINEAR_BROADCAST, 0, 0},
        {DT_COLL_ALLTOALL, DT_ALGO_RING, DT_NET_PAIRWISE_ALLTOALL, 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int n = 2; n <= 8; n++) {
            if (cases[i].pow2 && (n & (n - 1)))
                continue;
            form_arg a = {cases[i].kind, cases[i].algo, (size_t)BIG * (size_t)n};
            if (cases[i].per_rank)
                a.count = BIG;
            double clock[8];
            dt_launch_opts o = port_opts(n, clock);
            o.net = "alpha=1us,bw=1GB/s,gamma=0.5ns";
            EXPECT_OK(dt_launch(&o, form_rank, &a));
            double bytes = 4.0 * (double)a.count * (cases[i].per_rank ? n : 1);
            double want = dt_net_cost(cases[i].form, &link, bytes, n);
            EXPECT(fabs(last(clock, n) - want) <= 1e-9 * want,
                   "%s (%s), N = %d: the clock ends at %.4f us, %s gives %.4f us",
                   dt_coll_name(cases[i].kind), dt_algo_name(cases[i].algo), n,
                   last(clock, n) * 1e6, dt_net_algo_name(cases[i].form), want * 1e6);
        }
}

/* ---------------------------------------------------------------- dt_recv_any */

/* dt_recv_any takes messages in the order of their modeled arrival (ties:
 * the lower rank), whatever order the senders run in: rank r sends at
 * modeled time (N - r) ms after sleeping r x 15 ms of wall time (the wall
 * order is the reverse of the modeled one), and rank 1 a second message at
 * 4 ms. The other ranks then block in a receive from rank 0 (they cannot
 * send before rank 0 answers them); rank 1 sleeps 50 ms before its third
 * message (5 ms), while the others, answered, send theirs at 1 s: rank 0
 * must wait for rank 1's. */
typedef struct {
    int order[16], n_order; /* rank 0's: the sources in the order taken */
} any_out;

static dt_result any_rank(dt_comm *c, void *argp)
{
    (void)argp;
    any_out *a = tc_mine(c);
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    int32_t v = r, got = -1;
    if (r == 0) {
        for (int i = 0; i < n; i++) { /* n - 1 first messages, and rank 1's second */
            int src = -1;
            EXPECT_OK(dt_recv_any(&got, 1, DT_I32, &src, c));
            EXPECT(got == src, "message %d: source %d, payload %d", i, src, got);
            a->order[a->n_order++] = src;
        }
        for (int j = 2; j < n; j++)
            EXPECT_OK(dt_send(&v, 1, DT_I32, j, c));
        int src = -1;
        EXPECT_OK(dt_recv_any(&got, 1, DT_I32, &src, c)); /* rank 1's late one */
        a->order[a->n_order++] = src;
        return DT_OK;
    }
    dt_sleep(0.015 * r); /* rank 1 sends first in wall time, last in modeled time */
    EXPECT_OK(dt_clock_advance(c, 1e-3 * (n - r)));
    EXPECT_OK(dt_send(&v, 1, DT_I32, 0, c));
    if (r == 1) {
        EXPECT_OK(dt_clock_advance(c, 1e-3)); /* now at rank n-2's time, after it */
        EXPECT_OK(dt_send(&v, 1, DT_I32, 0, c));
        dt_sleep(0.05); /* rank 0 waits for this one: it is earlier than the others' */
        EXPECT_OK(dt_clock_advance(c, 1e-3));
        EXPECT_OK(dt_send(&v, 1, DT_I32, 0, c));
    } else {
        EXPECT_OK(dt_recv(&got, 1, DT_I32, 0, c));
        EXPECT_OK(dt_clock_advance(c, 1.0)); /* after rank 1's last one */
        EXPECT_OK(dt_send(&v, 1, DT_I32, 0, c));
    }
    return DT_OK;
}

TEST_T(comm_recv_any_takes_the_first_in_modeled_time, 3, 60)
{
    for (int rep = 0; rep < 3; rep++) {
        const int n = 4;
        any_out a[4];
        dt_launch_opts o = port_opts(n, NULL);
        o.net = "none";
        tc_out(&o, a, sizeof a[0]);
        EXPECT_OK(dt_launch(&o, any_rank, NULL));
        /* modeled departures: rank 3 at 1 ms, rank 2 at 2, rank 1 at 3 and 4 */
        const int want[] = {3, 2, 1, 1, 1};
        EXPECT(a[0].n_order == 5, "run %d: rank 0 took %d messages, expected 5", rep,
               a[0].n_order);
        for (int i = 0; i < 5; i++)
            EXPECT(a[0].order[i] == want[i], "run %d: message %d came from rank %d, expected rank "
                   "%d (modeled order 3, 2, 1, 1, then rank 1's late one)", rep, i, a[0].order[i],
                   want[i]);
    }
}

/* Equal starts: the port serves its queue in order of departure, then the
 * ranks in turn after the one taken last. On "eth10" rank 3's message
 * departs at 0 and holds rank 0's receive port for 4 KiB / beta = 3.3 us;
 * rank 2's departs at 1 us, rank 1's at 2 us: both start when the port is
 * free again, and rank 2's went first (the lower rank would be rank 1).
 * Then, on a zero-cost network where every time is 0, ranks 1, 2 and 3
 * send three messages each: rank 0 takes them in turn, 1 2 3 1 2 3 1 2 3
 * ("the lower rank" would take rank 1's three first, and a rank 1 that
 * always had one ready would starve the others). The wall order is the
 * reverse each time. */
typedef struct {
    int order[9], n_order;
} ties_out;

static dt_result ties_rank(dt_comm *c, void *argp)
{
    const int fifo = *(const int *)argp, count = fifo ? 1024 : 1, each = fifo ? 1 : 3;
    ties_out *a = tc_mine(c);
    int32_t *buf = calloc(1024, sizeof *buf);
    if (!buf)
        return dt_fail(DT_ERR_NOMEM, "ties_rank: out of memory");
    int r = dt_comm_rank(c), n = dt_comm_size(c);
    dt_result res = DT_OK;
    if (r == 0) {
        for (int i = 0; i < (n - 1) * each && res == DT_OK; i++) {
            int src = -1;
            res = dt_recv_any(buf, (size_t)count, DT_I32, &src, c);
            a->order[a->n_order++] = src;
        }
    } else {
        dt_sleep(0.01 * (n - 1 - r)); /* wall order: rank 3 last */
        if (fifo)
            res = dt_clock_advance(c, 1e-6 * (n - 1 - r));
        for (int i = 0; i < each && res == DT_OK; i++)
            res = dt_send(buf, (size_t)count, DT_I32, 0, c);
    }
    free(buf);
    return res;
}

TEST_T(comm_recv_any_ties_go_first_come_then_in_turn, 2, 60)
{
    for (int fifo = 1; fifo >= 0; fifo--) {
        ties_out a[4];
        dt_launch_opts o = port_opts(4, NULL);
        o.net = fifo ? "eth10" : "none";
        tc_out(&o, a, sizeof a[0]);
        EXPECT_OK(dt_launch(&o, ties_rank, &fifo));
        const int want_fifo[] = {3, 2, 1}, want_turns[] = {1, 2, 3, 1, 2, 3, 1, 2, 3};
        const int *want = fifo ? want_fifo : want_turns, len = fifo ? 3 : 9;
        EXPECT(a[0].n_order == len, "%s: rank 0 took %d messages, expected %d", o.net,
               a[0].n_order, len);
        for (int i = 0; i < len && i < a[0].n_order; i++)
            EXPECT(a[0].order[i] == want[i], "%s: message %d came from rank %d, expected rank "
                   "%d (%s)", o.net, i, a[0].order[i], want[i],
                   fifo ? "equal starts: the earlier departure first: 3, 2, 1"
                        : "all times 0: the ranks in turn, 1 2 3 1 2 3 1 2 3");
    }
}

/* ---------------------------------------------------------------- receive order */

/* The k-th receive from a rank takes its k-th send, whatever order the
 * receives are waited in: rank 1 sends a small message, a large one
 * (above the 16 KiB eager limit) and a small one; rank 0 posts three
 * receives (dt_irecv) and waits for them last first, then takes a fourth
 * with dt_recv. On mpi a receive takes its message only once it has come,
 * so the oldest receive must be matched first even while a newer one is
 * waited for. */
enum { ORDER_BIG = 10000 };

static dt_result order_rank(dt_comm *c, void *argp)
{
    (void)argp;
    int32_t *big = calloc(ORDER_BIG, sizeof *big);
    if (!big)
        return dt_fail(DT_ERR_NOMEM, "order_rank: out of memory");
    int32_t a = -1, b = -1, d = -1;
    if (dt_comm_rank(c) == 1) {
        int32_t one = 1, three = 3, four = 4;
        for (int i = 0; i < ORDER_BIG; i++)
            big[i] = 2 + i;
        EXPECT_OK(dt_send(&one, 1, DT_I32, 0, c));
        EXPECT_OK(dt_send(big, ORDER_BIG, DT_I32, 0, c));
        EXPECT_OK(dt_send(&three, 1, DT_I32, 0, c));
        EXPECT_OK(dt_send(&four, 1, DT_I32, 0, c));
    } else if (dt_comm_rank(c) == 0) {
        dt_request *q[3];
        EXPECT_OK(dt_irecv(&a, 1, DT_I32, 1, c, &q[0]));
        EXPECT_OK(dt_irecv(big, ORDER_BIG, DT_I32, 1, c, &q[1]));
        EXPECT_OK(dt_irecv(&b, 1, DT_I32, 1, c, &q[2]));
        for (int i = 2; i >= 0; i--)
            EXPECT_OK(dt_wait(q[i]));
        EXPECT_OK(dt_recv(&d, 1, DT_I32, 1, c));
        EXPECT(a == 1 && b == 3 && d == 4, "the receives got %d, %d, %d: expected 1, 3, 4 (the "
               "k-th receive takes the k-th send)", (int)a, (int)b, (int)d);
        int wrong = 0;
        for (int i = 0; i < ORDER_BIG; i++)
            wrong += big[i] != 2 + i;
        EXPECT(wrong == 0, "the large message: %d of %d elements wrong", wrong, ORDER_BIG);
    }
    free(big);
    return DT_OK;
}

TEST_T(comm_receives_from_a_rank_take_its_sends_in_order, 2, 30)
{
    dt_launch_opts o = port_opts(2, NULL);
    tc_out(&o, NULL, 0); /* the rank that receives checks */
    EXPECT_OK(dt_launch(&o, order_rank, NULL));
}

/* dt_recv_any of messages above the eager limit: rank r sends 10,000
 * ints (r + i) at modeled time (4 - r) ms; rank 0 takes them in that
 * order (3, 2, 1), each whole. On mpi dt_recv_any takes a pending message
 * out of MPI to read its header, without waiting for its data. */
static dt_result any_big_rank(dt_comm *c, void *argp)
{
    (void)argp;
    int32_t *buf = calloc(ORDER_BIG, sizeof *buf);
    if (!buf)
        return dt_fail(DT_ERR_NOMEM, "any_big_rank: out of memory");
    int r = dt_comm_rank(c), n = dt_comm_size(c);
    if (r == 0) {
        for (int k = 0; k < n - 1; k++) {
            int src = -1, wrong = 0;
            EXPECT_OK(dt_recv_any(buf, ORDER_BIG, DT_I32, &src, c));
            EXPECT(src == n - 1 - k, "message %d came from rank %d, expected rank %d (modeled "
                   "order)", k, src, n - 1 - k);
            for (int i = 0; i < ORDER_BIG; i++)
                wrong += buf[i] != src + i;
            EXPECT(wrong == 0, "rank %d's message: %d of %d elements wrong", src, wrong,
                   ORDER_BIG);
        }
    } else {
        for (int i = 0; i < ORDER_BIG; i++)
            buf[i] = r + i;
        dt_sleep(0.01 * (n - 1 - r)); /* wall order: the reverse of the modeled one */
        EXPECT_OK(dt_clock_advance(c, 1e-3 * (n - r)));
        EXPECT_OK(dt_send(buf, ORDER_BIG, DT_I32, 0, c));
    }
    free(buf);
    return DT_OK;
}

TEST_T(comm_recv_any_takes_large_messages_whole, 2, 30)
{
    dt_launch_opts o = port_opts(4, NULL);
    tc_out(&o, NULL, 0); /* the rank that receives checks */
    EXPECT_OK(dt_launch(&o, any_big_rank, NULL));
}
