/* test_comm_mpi.c - the communicator on the mpi backend, run by
 * tests/mpi/run.sh under `mpirun -np P` (P = 2 and 4): every process runs
 * each test; a launch of N <= P ranks runs on MPI ranks 0 .. N-1. The
 * results are checked inside the ranks (nothing a rank writes comes back
 * to the other processes), against the serial reference on exact data and,
 * bit for bit, against the thread backend run in the same process with the
 * same algorithm (the same order of reduction). */
#include "mpi_test.h"

#include "dt/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The job's size and this process's rank (every process runs the test:
 * mpirun -np P). */
static int job_var(const char *ompi, const char *pmi)
{
    const char *s = getenv(ompi);
    if (!s)
        s = getenv(pmi);
    EXPECT(s != NULL, "%s is not set: not started by mpirun (run tests/mpi/run.sh)", ompi);
    return atoi(s);
}

int mt_job_size(void) { return job_var("OMPI_COMM_WORLD_SIZE", "PMI_SIZE"); }
int mt_job_rank(void) { return job_var("OMPI_COMM_WORLD_RANK", "PMI_RANK"); }

dt_launch_opts mt_opts(int n, dt_algo algo, double timeout_s)
{
    dt_launch_opts o = tc_opts(n, algo);
    o.backend = DT_BACKEND_MPI;
    o.timeout_s = timeout_s;
    return o;
}

void mt_trace_path(char *path, size_t cap, const char *what)
{
    snprintf(path, cap, "%s/mpi-%s-%d.json", dt_test_tmpdir(), what, (int)getppid());
}

void mt_check_trace(const char *path, int p)
{
    FILE *f = fopen(path, "r");
    EXPECT(f != NULL, "no trace at %s", path);
    char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    buf[len] = 0;
    fclose(f);
    remove(path);
    for (int r = 0; r < p; r++) {
        char want[64];
        snprintf(want, sizeof want, "\"tid\":%d,\"ts\"", 2 * r); /* rank r's events */
        EXPECT(strstr(buf, want) != NULL, "the trace has no event of rank %d", r);
    }
    EXPECT(strstr(buf, "\"allreduce\"") != NULL, "the trace has no allreduce");
}

void mt_thread_then_mpi(int n, const char *net, dt_rank_fn thread_fn, dt_rank_fn mpi_fn,
                        void *arg)
{
    dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
    o.net = net;
    EXPECT_OK(dt_launch(&o, thread_fn, arg));
    o.backend = DT_BACKEND_MPI;
    EXPECT_OK(dt_launch(&o, mpi_fn, arg));
}

/* ------------------------------------------------------------ every collective */

static const size_t counts[] = {0, 1, 5, 1037, 5000}; /* 5000 f32: rendezvous */

static void check(const void *buf, dt_dtype t, size_t i, int64_t want, const char *what,
                  size_t count, dt_redop op)
{
    int64_t got = tc_get(buf, t, i);
    EXPECT(got == want, "%s: [%zu] = %lld, expected %lld (count %zu, %s, %s)", what, i,
           (long long)got, (long long)want, count, dt_dtype_name(t), dt_redop_name(op));
}

static void reductions(dt_comm *c, size_t count, dt_dtype t, dt_redop op)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c), root = (int)(count % (size_t)n);
    void *send = tc_alloc(count * (size_t)n, t), *recv = tc_alloc(count * (size_t)n, t);
    tc_fill(send, op, t, n, r, 0, count);
    EXPECT_OK(dt_allreduce(send, recv, count, t, op, c));
    for (size_t i = 0; i < count; i++)
        check(recv, t, i, tc_ref(op, t, n, i), "allreduce", count, op);
    EXPECT_OK(dt_reduce(send, recv, count, t, op, root, c));
    for (size_t i = 0; r == root && i < count; i++)
        check(recv, t, i, tc_ref(op, t, n, i), "reduce", count, op);
    tc_fill(send, op, t, n, r, 0, count * (size_t)n);
    EXPECT_OK(dt_reduce_scatter(send, recv, count, t, op, c));
    for (size_t i = 0; i < count; i++)
        check(recv, t, i, tc_ref(op, t, n, (size_t)r * count + i), "reduce_scatter", count, op);
    free(send);
    free(recv);
}

static void movements(dt_comm *c, size_t count, dt_dtype t)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c), root = (int)((count + 1) % (size_t)n);
    size_t es = dt_dtype_size(t);
    char *send = tc_alloc(count * (size_t)n, t), *recv = tc_alloc(count * (size_t)n, t);
    tc_fill(send, DT_SUM, t, n, r, 0, count);
    EXPECT_OK(dt_broadcast(send, recv, count, t, root, c));
    for (size_t i = 0; i < count; i++)
        check(recv, t, i, tc_gen(DT_SUM, t, n, root, i), "broadcast", count, DT_SUM);
    tc_fill(send, DT_SUM, t, n, r, (size_t)r * count, count);
    EXPECT_OK(dt_allgather(send, recv, count, t, c));
    for (size_t j = 0; j < count * (size_t)n; j++)
        check(recv, t, j, tc_gen(DT_SUM, t, n, (int)(j / count), j), "allgather", count, DT_SUM);
    /* alltoall: block j of rank r's input goes to block r of rank j's output */
    for (int j = 0; j < n; j++)
        tc_fill(send + (size_t)j * count * es, DT_SUM, t, n, r, (size_t)j * count, count);
    EXPECT_OK(dt_alltoall(send, recv, count, t, c));
    for (int j = 0; j < n; j++)
        for (size_t i = 0; i < count; i++)
            check(recv + (size_t)j * count * es, t, i,
                  tc_gen(DT_SUM, t, n, j, (size_t)r * count + i), "alltoall", count, DT_SUM);
    free(send);
    free(recv);
}

static dt_result sweep_rank(dt_comm *c, void *arg)
{
    int *ran = arg;
    ++*ran;
    EXPECT(dt_comm_rank(c) == mt_job_rank(), "rank %d runs in the process of MPI rank %d",
           dt_comm_rank(c), mt_job_rank());
    for (int k = 0; k < TC_LEN(counts); k++)
        for (int d = 0; d < TC_LEN(tc_dtypes); d++) {
            for (int op = 0; op < DT_NUM_REDOPS; op++)
                reductions(c, counts[k], tc_dtypes[d], (dt_redop)op);
            movements(c, counts[k], tc_dtypes[d]);
        }
    EXPECT_OK(dt_barrier(c));
    return DT_OK;
}

TEST_T(mpi_every_collective_every_algorithm, 3, 240)
{
    int p = mt_job_size();
    for (int n = 1; n <= p; n++)
        for (int a = 0; a < TC_LEN(tc_algos); a++) {
            dt_launch_opts o = mt_opts(n, tc_algos[a], 20);
            int ran = 0;
            dt_result r = dt_launch(&o, sweep_rank, &ran);
            EXPECT(r == DT_OK, "%d ranks, %s: %s", n, dt_algo_name(tc_algos[a]), dt_last_error());
            EXPECT(ran == (mt_job_rank() < n), "the function ran %d times in the process of MPI "
                   "rank %d, in a launch of %d ranks", ran, mt_job_rank(), n);
        }
}

/* ------------------------------------------------------------ the thread backend's bits */

#define BITS_COUNT 20000 /* 80 KB: the ring's chunks are rendezvous messages */

typedef struct {
    float *want;    /* [nranks][BITS_COUNT]: the thread backend's results */
    double *clock;  /* [nranks]: its modeled clocks */
    dt_stats *stats; /* [nranks] */
} bits_arg;

static void bits_input(float *x, int rank)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(rank + 1);
    for (int i = 0; i < BITS_COUNT; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) * 1e3f;
    }
}

/* A ring allreduce, a tree allreduce and a reduce-scatter of random floats
 * (sums whose bits depend on the order) on a 10 Gb/s network. */
static void bits_work(dt_comm *c, float *out)
{
    float *x = malloc(sizeof(float) * BITS_COUNT);
    EXPECT(x != NULL, "out of memory");
    bits_input(x, dt_comm_rank(c));
    EXPECT_OK(dt_comm_set_algo(c, DT_ALGO_RING));
    EXPECT_OK(dt_allreduce(x, out, BITS_COUNT, DT_F32, DT_SUM, c));
    EXPECT_OK(dt_comm_set_algo(c, DT_ALGO_TREE));
    EXPECT_OK(dt_allreduce(out, out, BITS_COUNT, DT_F32, DT_AVG, c));
    EXPECT_OK(dt_comm_set_algo(c, DT_ALGO_DIRECT));
    EXPECT_OK(dt_reduce_scatter(x, out, BITS_COUNT / (size_t)dt_comm_size(c), DT_F32, DT_MAX, c));
    free(x);
}

static dt_result bits_thread_rank(dt_comm *c, void *arg)
{
    bits_arg *a = arg;
    int r = dt_comm_rank(c);
    bits_work(c, a->want + (size_t)r * BITS_COUNT);
    a->clock[r] = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &a->stats[r]));
    return DT_OK;
}

static dt_result bits_mpi_rank(dt_comm *c, void *arg)
{
    bits_arg *a = arg;
    int r = dt_comm_rank(c);
    float *out = malloc(sizeof(float) * BITS_COUNT);
    EXPECT(out != NULL, "out of memory");
    bits_work(c, out);
    const float *want = a->want + (size_t)r * BITS_COUNT;
    EXPECT(memcmp(out, want, sizeof(float) * BITS_COUNT) == 0,
           "the results differ from the thread backend's bits");
    EXPECT(dt_clock(c) == a->clock[r], "modeled clock %.9g s, the thread backend's %.9g s",
           dt_clock(c), a->clock[r]);
    dt_stats s;
    EXPECT_OK(dt_comm_stats(c, &s));
    EXPECT(s.bytes_sent == a->stats[r].bytes_sent && s.bytes_recv == a->stats[r].bytes_recv &&
           s.msgs_sent == a->stats[r].msgs_sent,
           "stats: sent %llu B in %llu messages, received %llu B; the thread backend: %llu B, "
           "%llu, %llu B", (unsigned long long)s.bytes_sent, (unsigned long long)s.msgs_sent,
           (unsigned long long)s.bytes_recv, (unsigned long long)a->stats[r].bytes_sent,
           (unsigned long long)a->stats[r].msgs_sent, (unsigned long long)a->stats[r].bytes_recv);
    free(out);
    return DT_OK;
}

/* On a flat network, and on a topology of 2 ranks a node (from 3 ranks on,
 * messages inside a node and across nodes pay different links). */
TEST_T(mpi_bits_clock_and_stats_equal_the_thread_backend, 3, 120)
{
    int p = mt_job_size();
    const char *nets[] = {"eth10", "per_node=2,intra=nvlink,inter=eth10"};
    for (int k = 0; k < 2; k++)
        for (int n = 2; n <= p; n++) {
            bits_arg a = {malloc(sizeof(float) * BITS_COUNT * (size_t)n),
                          calloc((size_t)n, sizeof(double)), calloc((size_t)n, sizeof(dt_stats))};
            EXPECT(a.want && a.clock && a.stats, "out of memory");
            mt_thread_then_mpi(n, nets[k], bits_thread_rank, bits_mpi_rank, &a);
            free(a.want);
            free(a.clock);
            free(a.stats);
        }
}
