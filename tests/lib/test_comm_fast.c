/* test_comm_fast.c - the fast paths against the reference path: the
 * shared-memory shortcuts and the vectorized reductions (dt_launch_opts.fast)
 * give the same bits as the direct algorithm, whose reductions run in the
 * same order, and charge the same modeled clock, ports and stats as the
 * algorithm each stands for (recursive doubling for a tiny allreduce, the
 * ring for large ones), to the last bit, from unequal clocks and a busy
 * send port. Every launch takes its backend from DT_BACKEND, and the ranks
 * hand their figures back through dt_rank_out. The mpi backend has no
 * shortcuts (they address the other ranks' memory): there AUTO runs the
 * algorithms themselves, and what each test checks on it is said there. */
#include "test_comm_util.h"

#include <math.h>

/* ---------------------------------------------------------------- results */

#define FAST_COUNT 70001 /* f32: 280 KB, above the shortcuts' 256 KiB */

/* A rank's hashes of its outputs: tiny allreduce, allreduce, reduce-scatter,
 * allgather. */
typedef struct {
    uint64_t hash[4];
} bits_out;

static uint64_t hash_bytes(const void *p, size_t bytes)
{
    const unsigned char *b = p;
    uint64_t h = 0;
    for (size_t i = 0; i < bytes; i += 8) {
        uint64_t w = 0;
        memcpy(&w, b + i, bytes - i < 8 ? bytes - i : 8);
        h = dt_hash64(h, w, i);
    }
    return h;
}

/* Random normal data, f32 or bf16 (rounding at every step), summed or
 * averaged: any change of order shows in the bits. */
typedef struct {
    dt_dtype dtype;
    dt_redop op;
} bits_job;

static dt_result bits_rank(dt_comm *c, void *argp)
{
    const bits_job *j = argp;
    bits_out *mine = tc_mine(c);
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    /* as many bytes as FAST_COUNT floats, whatever the dtype: a shortcut */
    size_t es = dt_dtype_size(j->dtype), count = (size_t)FAST_COUNT * 4 / es;
    size_t total = count * (size_t)n;
    char *in = malloc(total * es), *out = malloc(total * es);
    dt_rng rng;
    dt_rng_init(&rng, 11, (uint64_t)r);
    for (size_t i = 0; i < total; i++) {
        float v = dt_rng_normal(&rng);
        if (j->dtype == DT_F32)
            memcpy(in + i * es, &v, 4);
        else
            ((uint16_t *)in)[i] = dt_f32_to_bf16(v);
    }
    EXPECT_OK(dt_allreduce(in, out, 7, j->dtype, j->op, c)); /* 14 or 28 bytes: tiny */
    mine->hash[0] = hash_bytes(out, 7 * es);
    EXPECT_OK(dt_allreduce(in, out, count, j->dtype, j->op, c));
    mine->hash[1] = hash_bytes(out, count * es);
    EXPECT_OK(dt_reduce_scatter(in, out, count, j->dtype, j->op, c));
    mine->hash[2] = hash_bytes(out, count * es);
    EXPECT_OK(dt_allgather(in, out, count, j->dtype, c));
    mine->hash[3] = hash_bytes(out, total * es);
    free(in);
    free(out);
    return DT_OK;
}

static void run_bits(int n, dt_algo algo, int fast, const bits_job *j, bits_out *out)
{
    dt_launch_opts o = tc_opts(n, algo);
    o.fast = fast;
    tc_out(&o, out, sizeof *out);
    EXPECT_OK(dt_launch(&o, bits_rank, (void *)j));
}

/* A shortcut reduces in rank order: the same bits as DT_ALGO_DIRECT with
 * the plain (reference) kernels; and the vectorized kernels give the same
 * bits as the plain ones. On mpi, where AUTO takes no shortcut (it runs the
 * tree or the ring, whose order of reduction is not the rank order), the
 * fast paths are the vectorized kernels alone: AUTO with them gives the
 * bits of AUTO with the plain kernels (the same algorithms, DT_FAST=0). */
TEST_T(comm_fast_paths_give_the_reference_bits, 3, 120)
{
    const dt_dtype dtypes[] = {DT_F32, DT_BF16};
    const dt_redop ops[] = {DT_SUM, DT_AVG};
    const int ns[] = {2, 3, 5};
    int shortcuts = tc_backend() != DT_BACKEND_MPI;
    const char *against = shortcuts ? "the direct algorithm's" : "AUTO's with DT_FAST=0";
    for (int d = 0; d < 2; d++)
        for (int o = 0; o < 2; o++)
            for (int k = 0; k < 3; k++) {
                bits_job job = {dtypes[d], ops[o]};
                bits_out fast[5], direct[5], vec[5], auto_plain[5];
                run_bits(ns[k], DT_ALGO_AUTO, 1, &job, fast);     /* shortcuts, vectorized */
                run_bits(ns[k], DT_ALGO_DIRECT, 0, &job, direct); /* reference, plain kernels */
                run_bits(ns[k], DT_ALGO_DIRECT, 1, &job, vec);    /* direct, vectorized kernels */
                const bits_out *ref = direct;
                if (!shortcuts) { /* AUTO's algorithms with the plain kernels */
                    run_bits(ns[k], DT_ALGO_AUTO, 0, &job, auto_plain);
                    ref = auto_plain;
                }
                for (int r = 0; r < ns[k]; r++)
                    for (int c = 0; c < 4; c++) {
                        EXPECT(fast[r].hash[c] == ref[r].hash[c],
                               "%s %s, N = %d, rank %d, call %d: AUTO's bits (fast paths on) "
                               "differ from %s", dt_dtype_name(dtypes[d]),
                               dt_redop_name(ops[o]), ns[k], r, c, against);
                        EXPECT(vec[r].hash[c] == direct[r].hash[c],
                               "%s %s, N = %d, rank %d, call %d: the vectorized kernels' bits "
                               "differ from the plain ones'", dt_dtype_name(dtypes[d]),
                               dt_redop_name(ops[o]), ns[k], r, c);
                    }
            }
}

/* ---------------------------------------------------------------- clock and stats */

/* After each of the four calls: the rank's clock and its stats. */
typedef struct {
    double clock[4];
    dt_stats stats[4];
} charge_rec;


/* Before call k: one rank (1 + k mod (N-1)) far behind the others, the
 * others a few microseconds apart, so that a rank's sends wait for the late
 * one's receives. */
static void skew(dt_comm *c, int k)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    EXPECT_OK(dt_clock_advance(c, r == 1 + k % (n - 1) ? 2e-5 : 3e-6 * (double)((r * 7) % 5)));
}

/* Unequal clocks, rank 0's send port busy with a message to rank 1 that
 * rank 1 receives only after the collectives: the entry states differ, and
 * every rule of dt/net.h takes part. */
static dt_result charge_rank(dt_comm *c, void *argp)
{
    int fast = *(const int *)argp;
    charge_rec *mine = tc_mine(c);
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    float *in = calloc((size_t)FAST_COUNT * (size_t)n, sizeof *in);
    float *out = calloc((size_t)FAST_COUNT * (size_t)n, sizeof *out);
    const size_t busy = 1 << 18; /* 1 MB: rank 0's send port is busy a while */
    float *msg = calloc(busy, sizeof *msg);
    dt_request *q = NULL;
    /* fast: AUTO takes the shortcuts; reference: the algorithms they stand for */
    const dt_algo tiny = fast ? DT_ALGO_AUTO : DT_ALGO_TREE;
    const dt_algo large = fast ? DT_ALGO_AUTO : DT_ALGO_RING;
    EXPECT_OK(dt_comm_set_algo(c, tiny));
    skew(c, 0);
    EXPECT_OK(dt_allreduce(in, out, 5, DT_F32, DT_SUM, c));
    mine->clock[0] = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &mine->stats[0]));
    EXPECT_OK(dt_comm_set_algo(c, large));
    if (r == 0)
        EXPECT_OK(dt_isend(msg, busy, DT_F32, 1, c, &q));
    if (r == 1)
        EXPECT_OK(dt_irecv(msg, busy, DT_F32, 0, c, &q));
    skew(c, 1);
    EXPECT_OK(dt_allreduce(in, out, FAST_COUNT, DT_F32, DT_SUM, c));
    mine->clock[1] = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &mine->stats[1]));
    skew(c, 2);
    EXPECT_OK(dt_reduce_scatter(in, out, FAST_COUNT, DT_F32, DT_AVG, c));
    mine->clock[2] = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &mine->stats[2]));
    skew(c, 3);
    EXPECT_OK(dt_allgather(in, out, FAST_COUNT, DT_F32, c));
    mine->clock[3] = dt_clock(c);
    EXPECT_OK(dt_comm_stats(c, &mine->stats[3]));
    EXPECT_OK(dt_wait(q));
    free(in);
    free(out);
    free(msg);
    return DT_OK;
}

static void run_charge(int n, const char *net, int fast, charge_rec *out)
{
    dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
    o.net = net;
    o.fast = fast;
    o.debug = 0;
    tc_out(&o, out, sizeof *out);
    EXPECT_OK(dt_launch(&o, charge_rank, &fast));
}

/* On mpi there are no shortcuts: AUTO runs recursive doubling for the
 * tiny allreduce (tree, up to 32 KiB) and the ring for the large calls
 * itself, and the check is that it picks them and charges as they do. */
TEST_T(comm_shortcuts_charge_their_algorithm_exactly, 3, 120)
{
    const char *nets[] = {"alpha=2us,bw=10GB/s,gamma=0.5ns", "eth10", "none"};
    const char *what[] = {"tiny allreduce (recursive doubling)", "allreduce (ring)",
                          "reduce-scatter (ring)", "allgather (ring)"};
    for (int ni = 0; ni < 3; ni++)
        for (int n = 2; n <= 8; n += (n < 5 ? 1 : 3)) {
            charge_rec fast[8], ref[8];
            run_charge(n, nets[ni], 1, fast);
            run_charge(n, nets[ni], 0, ref);
            for (int r = 0; r < n; r++)
                for (int c = 0; c < 4; c++) {
                    const dt_stats *x = &fast[r].stats[c], *y = &ref[r].stats[c];
                    EXPECT(fast[r].clock[c] == ref[r].clock[c],
                           "%s, N = %d, rank %d, %s: the shortcut's clock %.17g s, the "
                           "algorithm's %.17g s", nets[ni], n, r, what[c], fast[r].clock[c],
                           ref[r].clock[c]);
                    EXPECT(x->bytes_sent == y->bytes_sent && x->bytes_recv == y->bytes_recv &&
                               x->msgs_sent == y->msgs_sent && x->msgs_recv == y->msgs_recv,
                           "%s, N = %d, rank %d, %s: stats sent %llu B / %llu msgs, received "
                           "%llu / %llu; the algorithm's %llu / %llu, %llu / %llu", nets[ni], n,
                           r, what[c], (unsigned long long)x->bytes_sent,
                           (unsigned long long)x->msgs_sent, (unsigned long long)x->bytes_recv,
                           (unsigned long long)x->msgs_recv, (unsigned long long)y->bytes_sent,
                           (unsigned long long)y->msgs_sent, (unsigned long long)y->bytes_recv,
                           (unsigned long long)y->msgs_recv);
                    EXPECT(x->time_comm_modeled == y->time_comm_modeled,
                           "%s, N = %d, rank %d, %s: modeled time in calls %.17g vs %.17g",
                           nets[ni], n, r, what[c], x->time_comm_modeled, y->time_comm_modeled);
                }
        }
}

/* The switch from the environment: DT_FAST=0 turns the shortcuts off (an
 * AUTO allreduce of 280 KB then runs the ring over messages: its clock is
 * the same, and so are its integer results). */
static dt_result env_rank(dt_comm *c, void *argp)
{
    (void)argp;
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    int32_t *x = malloc(FAST_COUNT * sizeof *x);
    for (size_t i = 0; i < FAST_COUNT; i++)
        x[i] = (int32_t)(i % 13) + r;
    EXPECT_OK(dt_allreduce(x, x, FAST_COUNT, DT_I32, DT_SUM, c));
    for (size_t i = 0; i < FAST_COUNT; i += 97)
        EXPECT(x[i] == n * (int32_t)(i % 13) + n * (n - 1) / 2, "x[%zu] = %d", i, x[i]);
    *(double *)tc_mine(c) = dt_clock(c);
    free(x);
    return DT_OK;
}

TEST_T(comm_fast_switch_from_the_environment, 1, 30)
{
    setenv("DT_FAST", "0", 1);
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    unsetenv("DT_FAST");
    EXPECT(o.fast == 0, "DT_FAST=0 gives opts.fast = %d", o.fast);
    o.nranks = 3;
    o.net = "ib100";
    double slow[3], quick[3];
    tc_out(&o, slow, sizeof slow[0]);
    EXPECT_OK(dt_launch(&o, env_rank, NULL));
    o.fast = 1;
    tc_out(&o, quick, sizeof quick[0]);
    EXPECT_OK(dt_launch(&o, env_rank, NULL));
    for (int r = 0; r < 3; r++)
        EXPECT(slow[r] == quick[r] && slow[r] > 0, "rank %d: the same clock either way: %.17g "
               "and %.17g", r, slow[r], quick[r]);
    dt_launch_opts_init(&o);
    EXPECT(o.fast == 1, "by default the fast paths are on (%d)", o.fast);
}
