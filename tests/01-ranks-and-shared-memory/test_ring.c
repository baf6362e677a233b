/* test_ring.c - lab 01, task 3: the ring pass.
 *
 * Any order that cannot deadlock passes: even/odd ranks, dt_sendrecv, or
 * anything else over dt_send / dt_recv / dt_sendrecv. The library's
 * collectives are not allowed. Messages above 16 KiB make every send wait
 * for its receiver, so "everyone sends first" deadlocks there; the
 * library's timeout (3 s here) turns that into DT_ERR_TIMEOUT. */
#include "lab01.h"

static dt_result data_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w), prev = (rank - 1 + n) % n;
    const size_t counts[] = {0, 1, 1000, 10000};
    for (int c = 0; c < 4; c++) {
        size_t count = counts[c];
        int32_t *send = t01_buffer(count, -5), *recv = t01_buffer(count, -7);
        for (size_t i = 0; i < count; i++)
            send[i] = t01_value(rank, i + c);
        EXPECT_OK(lab_ring_pass(send, recv, count, DT_I32, w));
        for (size_t i = 0; i < count; i++)
            EXPECT(recv[i] == t01_value(prev, i + c),
                   "N = %d, count %zu: recv[%zu] = %d, expected %d (from rank %d)", n, count, i,
                   recv[i], t01_value(prev, i + c), prev);
        EXPECT(recv[count] == -7, "N = %d, count %zu: recvbuf[%zu], one past its end, was "
               "written (%d)", n, count, count, recv[count]);
        for (size_t i = 0; i < count; i++)
            EXPECT(send[i] == t01_value(rank, i + c), "N = %d, count %zu: sendbuf[%zu] was "
                   "changed to %d (it was %d)", n, count, i, send[i], t01_value(rank, i + c));
        free(send);
        free(recv);
    }
    return DT_OK;
}

TEST_T(ring_pass_every_n, 3, 30)
{
    dt_test_see("chapter 01, section 7");
    for (int n = 1; n <= 8; n++) {
        dt_launch_opts o = t01_opts(n, NULL, 3);
        EXPECT_OK(dt_launch(&o, data_rank, NULL));
    }
}

/* Each rank sends one message of n bytes and receives one; the pass takes
 * between one message time, alpha + n/beta (all pairs at once, as
 * dt_sendrecv does), and three transfer times and a latency, 3 n/beta +
 * alpha: with even ranks sending first and odd ones receiving first, an
 * odd N puts two even ranks side by side, and in libdt's network (dt/net.h)
 * a message above 16 KiB cannot start before its receive is posted, so the
 * pass runs in three waves (chapter 01, section 7); an even N takes two,
 * 2 (alpha + n/beta). */
#define RING_COUNT ((size_t)1 << 18)
#define RING_NET "ib100"

static dt_result cost_rank(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w), rank = dt_comm_rank(w);
    int32_t *send = t01_buffer(RING_COUNT, rank), *recv = t01_buffer(RING_COUNT, -7);
    EXPECT_OK(lab_ring_pass(send, recv, RING_COUNT, DT_I32, w));
    t01_record mine;
    t01_snapshot(w, &mine);
    EXPECT(recv[0] == (rank - 1 + n) % n && recv[RING_COUNT - 1] == (rank - 1 + n) % n,
           "recv holds %d ... %d, expected rank %d's data", recv[0], recv[RING_COUNT - 1],
           (rank - 1 + n) % n);
    free(send);
    free(recv);
    t01_record *all = t01_gather(w, &mine);
    if (rank == 0) {
        double alpha, beta;
        EXPECT_OK(dt_net_preset(RING_NET, &alpha, &beta));
        const uint64_t bytes = RING_COUNT * sizeof(int32_t);
        for (int r = 0; r < n; r++) {
            EXPECT(all[r].bytes_sent == bytes && all[r].bytes_recv == bytes,
                   "N = %d: rank %d sent %llu and received %llu bytes, expected %llu each", n, r,
                   (unsigned long long)all[r].bytes_sent, (unsigned long long)all[r].bytes_recv,
                   (unsigned long long)bytes);
            EXPECT(all[r].msgs_sent == 1 && all[r].msgs_recv == 1,
                   "N = %d: rank %d sent %llu and received %llu messages, expected 1 each", n, r,
                   (unsigned long long)all[r].msgs_sent, (unsigned long long)all[r].msgs_recv);
            EXPECT(all[r].coll_calls == 0,
                   "rank %d called the library's collectives %llu times (allowed: 0)", r,
                   (unsigned long long)all[r].coll_calls);
        }
        double one = alpha + bytes / beta, three = alpha + 3 * bytes / beta;
        double done = t01_completion(all, n);
        EXPECT(done >= 0.98 * one && done <= 1.02 * three,
               "N = %d: the pass ended at %.2f us of modeled time, expected between one "
               "message time and three transfers (%.2f and %.2f us)",
               n, done * 1e6, one * 1e6, three * 1e6);
    }
    free(all);
    return DT_OK;
}

TEST_T(ring_pass_sends_one_message_per_rank, 2, 20)
{
    dt_test_see("chapter 01, section 7");
    for (int n = 2; n <= 8; n++) {
        dt_launch_opts o = t01_opts(n, RING_NET, 3);
        EXPECT_OK(dt_launch(&o, cost_rank, NULL));
    }
}
