/* harness.c - lab 02's test harness (see harness.h). No tests here: the
 * graded tests are in test_*.c and hidden_*.c. */
#include "grader.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 8           /* elements after each buffer that must stay untouched */
#define SENTINEL 12288    /* no reduction of the test data gives it; exact in bf16 */
#define TIMEOUT_S 5.0     /* a deadlock fails the test in seconds, not at its deadline */

const char *algo_name(lab_algo a)
{
    static const char *names[NUM_ALGOS] = {"lab_naive_allreduce", "lab_ring_allreduce",
                                           "lab_recursive_doubling_allreduce",
                                           "lab_ring_reduce_scatter", "lab_ring_allgather"};
    return a < NUM_ALGOS ? names[a] : "?";
}

/* ---------------------------------------------------------------- data */

/* The input of rank r at element i: integers, so every order of reduction
 * gives the same exact answer. Products use {-2, -1, 1, 2, 3} (no zero, so
 * that a missing factor shows); |product of 8| <= 6561 is exact in f32. */
static int64_t value(uint64_t seed, dt_redop op, int rank, size_t i)
{
    uint64_t h = dt_hash64(seed, (uint64_t)rank, (uint64_t)i);
    if (op == DT_PROD) {
        static const int64_t pv[5] = {-2, -1, 1, 2, 3};
        return pv[h % 5];
    }
    return (int64_t)(h % 61) - 30;
}

/* The serial reference: op over ranks 0..K-1 of value(seed, op, r, i). */
static int64_t reference(uint64_t seed, dt_redop op, int k, size_t i)
{
    int64_t acc = value(seed, op, 0, i);
    for (int r = 1; r < k; r++) {
        int64_t v = value(seed, op, r, i);
        switch (op) {
        case DT_SUM: acc += v; break;
        case DT_PROD: acc *= v; break;
        case DT_MAX: acc = v > acc ? v : acc; break;
        case DT_MIN: acc = v < acc ? v : acc; break;
        default: break;
        }
    }
    return acc;
}

static void put(void *buf, dt_dtype t, size_t i, int64_t v)
{
    switch (t) {
    case DT_F32: ((float *)buf)[i] = (float)v; break;
    case DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DT_BF16: ((uint16_t *)buf)[i] = dt_f32_to_bf16((float)v); break;
    case DT_F16: ((uint16_t *)buf)[i] = dt_f32_to_f16((float)v); break;
    default: EXPECT(0, "the harness has no dtype %s", dt_dtype_name(t));
    }
}

static double get(const void *buf, dt_dtype t, size_t i)
{
    switch (t) {
    case DT_F32: return ((const float *)buf)[i];
    case DT_I32: return ((const int32_t *)buf)[i];
    case DT_BF16: return dt_bf16_to_f32(((const uint16_t *)buf)[i]);
    case DT_F16: return dt_f16_to_f32(((const uint16_t *)buf)[i]);
    default: return NAN;
    }
}

/* A buffer of n elements and GUARD more, all set to SENTINEL. */
static void *alloc_buf(size_t n, dt_dtype t)
{
    void *b = malloc((n + GUARD) * dt_dtype_size(t));
    EXPECT(b != NULL, "out of memory for %zu elements", n);
    for (size_t i = 0; i < n + GUARD; i++)
        put(b, t, i, SENTINEL);
    return b;
}

/* Block b of count elements on K ranks, worked out here (not with
 * lab_block): the first count % K blocks hold one element more. */
static void block_of(size_t count, int k, int b, size_t *off, size_t *len)
{
    size_t q = count / (size_t)k, rem = count % (size_t)k;
    *off = 0;
    for (int j = 0; j < b; j++)
        *off += q + ((size_t)j < rem);
    *len = q + ((size_t)b < rem);
}

/* ---------------------------------------------------------------- one case */

typedef struct {
    const char *algo;
    size_t count;
    dt_dtype t;
    dt_redop op;
    int inplace;
    int k;
} case_info;

#define CASE_FMT "%s on %d ranks, count %zu, %s, %s, %s"
#define CASE_ARGS(c)                                                                         \
    (c)->algo, (c)->k, (c)->count, dt_dtype_name((c)->t), dt_redop_name((c)->op),           \
        (c)->inplace ? "in place" : "out of place"

static void expect_elem(const case_info *c, const char *buf, const void *p, size_t i,
                        int64_t want)
{
    double got = get(p, c->t, i);
    EXPECT(got == (double)want, CASE_FMT ": %s[%zu] = %g%s, expected %lld", CASE_ARGS(c), buf,
           i, got, got == SENTINEL ? " (never written)" : "", (long long)want);
}

static void expect_guard(const case_info *c, const char *buf, const void *p, size_t from)
{
    for (size_t i = from; i < from + GUARD; i++)
        EXPECT(get(p, c->t, i) == SENTINEL,
               CASE_FMT ": %s[%zu] written, past the end of the %zu elements it holds",
               CASE_ARGS(c), buf, i, from);
}

/* sendbuf against its copy from before the call: the first element changed. */
static void expect_unchanged(const case_info *c, const void *copy, const void *send, size_t n)
{
    for (size_t i = 0; i < n; i++)
        EXPECT(get(send, c->t, i) == get(copy, c->t, i),
               CASE_FMT ": sendbuf[%zu] was changed from %g to %g (out of place, the input is "
               "read only)", CASE_ARGS(c), i, get(copy, c->t, i), get(send, c->t, i));
}

static void expect_no_library_collective(const case_info *c, dt_comm *comm)
{
    dt_stats st;
    EXPECT_OK(dt_comm_stats(comm, &st));
    for (int kind = DT_COLL_ALLREDUCE; kind <= DT_COLL_BARRIER; kind++)
        EXPECT(st.calls[kind] == 0,
               CASE_FMT ": called the library's %s (%llu calls); use only dt_send, dt_recv, "
                        "dt_sendrecv",
               CASE_ARGS(c), dt_coll_name((dt_coll_kind)kind), (unsigned long long)st.calls[kind]);
    int k = dt_comm_size(comm);
    uint64_t p2p = st.calls[DT_COLL_SEND] + st.calls[DT_COLL_RECV] + st.calls[DT_COLL_SENDRECV];
    if (k > 1 && c->count > 0)
        EXPECT(p2p > 0, CASE_FMT ": no message sent or received", CASE_ARGS(c));
}

static dt_result call_algo(lab_algo a, const void *send, void *recv, size_t count, dt_dtype t,
                           dt_redop op, dt_comm *comm)
{
    switch (a) {
    case ALGO_NAIVE: return lab_naive_allreduce(send, recv, count, t, op, comm);
    case ALGO_RING: return lab_ring_allreduce(send, recv, count, t, op, comm);
    case ALGO_RD: return lab_recursive_doubling_allreduce(send, recv, count, t, op, comm);
    case ALGO_RING_RS: return lab_ring_reduce_scatter(send, recv, count, t, op, comm);
    case ALGO_RING_AG: return lab_ring_allgather(send, recv, count, t, comm);
    default: return DT_ERR_INVALID_ARG;
    }
}

static void case_allreduce(lab_algo a, const case_info *c, uint64_t seed, dt_comm *comm)
{
    int rank = dt_comm_rank(comm);
    size_t n = c->count;
    void *send = alloc_buf(n, c->t), *recv = c->inplace ? send : alloc_buf(n, c->t);
    for (size_t i = 0; i < n; i++)
        put(send, c->t, i, value(seed, c->op, rank, i));
    size_t bytes = (n + GUARD) * dt_dtype_size(c->t);
    void *copy = malloc(bytes);
    EXPECT(copy != NULL, "out of memory");
    memcpy(copy, send, bytes);
    EXPECT_OK(dt_comm_stats_reset(comm));
    dt_result r = call_algo(a, send, recv, n, c->t, c->op, comm);
    EXPECT(r == DT_OK, CASE_FMT ": returned %s%s%s", CASE_ARGS(c), dt_strerror(r),
           dt_last_error()[0] ? ": " : "", dt_last_error());
    expect_no_library_collective(c, comm);
    for (size_t i = 0; i < n; i++)
        expect_elem(c, "recvbuf", recv, i, reference(seed, c->op, c->k, i));
    expect_guard(c, "recvbuf", recv, n);
    if (!c->inplace)
        expect_unchanged(c, copy, send, n + GUARD);
    free(copy);
    if (recv != send)
        free(recv);
    free(send);
}

static void case_reduce_scatter(const case_info *c, uint64_t seed, dt_comm *comm)
{
    int rank = dt_comm_rank(comm);
    size_t n = c->count, off, len;
    block_of(n, c->k, rank, &off, &len);
    void *send = alloc_buf(n, c->t);
    for (size_t i = 0; i < n; i++)
        put(send, c->t, i, value(seed, c->op, rank, i));
    void *recv = c->inplace ? (char *)send + off * dt_dtype_size(c->t) : alloc_buf(len, c->t);
    size_t bytes = (n + GUARD) * dt_dtype_size(c->t);
    void *copy = malloc(bytes);
    EXPECT(copy != NULL, "out of memory");
    memcpy(copy, send, bytes);
    EXPECT_OK(dt_comm_stats_reset(comm));
    dt_result r = lab_ring_reduce_scatter(send, recv, n, c->t, c->op, comm);
    EXPECT(r == DT_OK, CASE_FMT ": returned %s%s%s", CASE_ARGS(c), dt_strerror(r),
           dt_last_error()[0] ? ": " : "", dt_last_error());
    expect_no_library_collective(c, comm);
    /* My block: elements off .. off + len of the reduced vector. */
    for (size_t j = 0; j < len; j++)
        expect_elem(c, "recvbuf", recv, j, reference(seed, c->op, c->k, off + j));
    if (c->inplace) {
        expect_guard(c, "sendbuf", send, n);
    } else {
        expect_guard(c, "recvbuf", recv, len);
        expect_unchanged(c, copy, send, n + GUARD);
        free(recv);
    }
    free(copy);
    free(send);
}

static void case_allgather(const case_info *c, uint64_t seed, dt_comm *comm)
{
    int rank = dt_comm_rank(comm);
    size_t n = c->count, off, len, es = dt_dtype_size(c->t);
    block_of(n, c->k, rank, &off, &len);
    char *recv = alloc_buf(n, c->t);
    char *send = c->inplace ? recv + off * es : alloc_buf(len, c->t);
    /* Block b of the gathered vector is rank b's: value(seed, b, i). */
    for (size_t j = 0; j < len; j++)
        put(send, c->t, j, value(seed, DT_SUM, rank, off + j));
    size_t sbytes = (len + GUARD) * es;
    void *copy = malloc(sbytes);
    EXPECT(copy != NULL, "out of memory");
    if (!c->inplace)
        memcpy(copy, send, sbytes);
    EXPECT_OK(dt_comm_stats_reset(comm));
    dt_result r = lab_ring_allgather(send, recv, n, c->t, comm);
    EXPECT(r == DT_OK, CASE_FMT ": returned %s%s%s", CASE_ARGS(c), dt_strerror(r),
           dt_last_error()[0] ? ": " : "", dt_last_error());
    expect_no_library_collective(c, comm);
    for (int b = 0; b < c->k; b++) {
        size_t bo, bl;
        block_of(n, c->k, b, &bo, &bl);
        for (size_t j = 0; j < bl; j++)
            expect_elem(c, "recvbuf", recv, bo + j, value(seed, DT_SUM, b, bo + j));
    }
    expect_guard(c, "recvbuf", recv, n);
    if (!c->inplace) {
        expect_unchanged(c, copy, send, len + GUARD);
        free(send);
    }
    free(copy);
    free(recv);
}

/* ---------------------------------------------------------------- sweeps */

typedef struct {
    const sweep_spec *s;
    int ngroups; /* 0: the world itself */
} sweep_arg;

static void sweep_on(const sweep_spec *s, dt_comm *comm)
{
    int nops = s->algo == ALGO_RING_AG ? 1 : s->nops; /* allgather has no op */
    for (int ci = 0; ci < s->ncounts; ci++)
        for (int ti = 0; ti < s->ndtypes; ti++)
            for (int oi = 0; oi < nops; oi++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    case_info c = {algo_name(s->algo), s->counts[ci], s->dtypes[ti],
                                   s->algo == ALGO_RING_AG ? DT_SUM : s->ops[oi], inplace,
                                   dt_comm_size(comm)};
                    /* Each case its own data: a stale buffer cannot pass. */
                    uint64_t seed = s->seed + 1000u * (uint64_t)ci + 100u * (uint64_t)ti +
                                    10u * (uint64_t)oi + (uint64_t)inplace;
                    if (s->algo == ALGO_RING_RS)
                        case_reduce_scatter(&c, seed, comm);
                    else if (s->algo == ALGO_RING_AG)
                        case_allgather(&c, seed, comm);
                    else
                        case_allreduce(s->algo, &c, seed, comm);
                }
}

static dt_result sweep_rank(dt_comm *world, void *argp)
{
    const sweep_arg *a = argp;
    if (a->ngroups <= 0) {
        sweep_on(a->s, world);
        return DT_OK;
    }
    int rank = dt_comm_rank(world);
    dt_comm *group = NULL;
    /* Reversed order inside each group: group rank != world rank / ngroups. */
    EXPECT_OK(dt_comm_split(world, rank % a->ngroups, -rank, &group));
    sweep_on(a->s, group);
    EXPECT_OK(dt_comm_free(group));
    return DT_OK;
}

static dt_launch_opts opts_for(int nranks, const char *net)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    o.timeout_s = TIMEOUT_S;
    o.net = net;
    return o;
}

void run_sweep(const sweep_spec *s)
{
    sweep_arg a = {s, 0};
    dt_launch_opts o = opts_for(s->nranks, "none");
    EXPECT_OK(dt_launch(&o, sweep_rank, &a));
}

void run_sweep_split(const sweep_spec *s, int ngroups)
{
    sweep_arg a = {s, ngroups};
    dt_launch_opts o = opts_for(s->nranks, "none");
    EXPECT_OK(dt_launch(&o, sweep_rank, &a));
}

int standard_counts(int k, size_t large, size_t *out)
{
    int n = 0;
    out[n++] = 0;
    out[n++] = 1;
    if (k - 1 > 1)
        out[n++] = (size_t)k - 1; /* fewer elements than ranks: empty blocks */
    out[n++] = (size_t)k + 1;     /* one more than K: uneven blocks */
    if (large)
        out[n++] = large;
    return n;
}

/* ---------------------------------------------------------------- one call: time, bytes */

typedef struct {
    lab_algo algo;
    size_t count;
    dt_dtype t;
    double want, rel;  /* time */
    traffic_fn traffic; /* bytes and messages, when set */
} one_arg;

/* The buffers of one call of algo: sendbuf and recvbuf as the algorithm
 * takes them (zeros: only time and traffic are checked). The call must
 * not use a library collective: those charge the bytes, messages and
 * modeled time of the algorithm they stand for, so that only the count of
 * calls gives them away. */
static void one_call(const one_arg *a, dt_comm *comm)
{
    int k = dt_comm_size(comm), rank = dt_comm_rank(comm);
    size_t off, len, es = dt_dtype_size(a->t);
    block_of(a->count, k, rank, &off, &len);
    char *send = calloc(a->count + 1, es), *recv = calloc(a->count + 1, es);
    EXPECT(send && recv, "out of memory");
    EXPECT_OK(dt_comm_stats_reset(comm));
    dt_result r;
    if (a->algo == ALGO_RING_AG)
        r = lab_ring_allgather(send, recv, a->count, a->t, comm);
    else
        r = call_algo(a->algo, send, recv, a->count, a->t, DT_SUM, comm);
    EXPECT(r == DT_OK, "%s on %d ranks, count %zu: returned %s%s%s", algo_name(a->algo), k,
           a->count, dt_strerror(r), dt_last_error()[0] ? ": " : "", dt_last_error());
    case_info c = {algo_name(a->algo), a->count, a->t, DT_SUM, 0, k};
    expect_no_library_collective(&c, comm);
    free(send);
    free(recv);
}

static dt_result time_rank(dt_comm *world, void *argp)
{
    const one_arg *a = argp;
    one_call(a, world);
    /* The call ends when its last rank does: the largest clock. (A library
     * collective is fine here: it runs after the measurement.) */
    float t = (float)dt_clock(world), tmax = 0;
    EXPECT_OK(dt_allreduce(&t, &tmax, 1, DT_F32, DT_MAX, world));
    if (dt_comm_rank(world) == 0) {
        double alpha, beta;
        EXPECT_OK(dt_comm_net(world, &alpha, &beta));
        EXPECT(fabs(tmax - a->want) <= a->rel * a->want,
               "%s on %d ranks, count %zu (%zu bytes), alpha %g s, beta %g B/s: modeled time "
               "%.4g us, the formula gives %.4g us (tolerance %g%%)",
               algo_name(a->algo), dt_comm_size(world), a->count, a->count * dt_dtype_size(a->t),
               alpha, beta, tmax * 1e6, a->want * 1e6, a->rel * 100);
    }
    return DT_OK;
}

void check_time(lab_algo algo, int nranks, const char *net, size_t count, dt_dtype dtype,
                double want_seconds, double rel)
{
    one_arg a = {algo, count, dtype, want_seconds, rel, NULL};
    dt_launch_opts o = opts_for(nranks, net);
    EXPECT_OK(dt_launch(&o, time_rank, &a));
}

static dt_result traffic_rank(dt_comm *world, void *argp)
{
    const one_arg *a = argp;
    int k = dt_comm_size(world), rank = dt_comm_rank(world);
    one_call(a, world);
    dt_stats st;
    EXPECT_OK(dt_comm_stats(world, &st));
    traffic want = a->traffic(rank, k, a->count, dt_dtype_size(a->t));
    EXPECT(fabs((double)st.bytes_sent - want.bytes) <= want.tol,
           "%s on %d ranks, count %zu of %s: rank %d sent %llu bytes, expected %.0f (+- %.0f)",
           algo_name(a->algo), k, a->count, dt_dtype_name(a->t), rank,
           (unsigned long long)st.bytes_sent, want.bytes, want.tol);
    EXPECT(st.msgs_sent == want.msgs && st.msgs_recv == want.msgs,
           "%s on %d ranks, count %zu of %s: rank %d sent %llu and received %llu messages, "
           "expected %llu of each",
           algo_name(a->algo), k, a->count, dt_dtype_name(a->t), rank,
           (unsigned long long)st.msgs_sent, (unsigned long long)st.msgs_recv,
           (unsigned long long)want.msgs);
    return DT_OK;
}

void check_traffic(lab_algo algo, int nranks, size_t count, dt_dtype dtype, traffic_fn want)
{
    one_arg a = {algo, count, dtype, 0, 0, want};
    dt_launch_opts o = opts_for(nranks, "none");
    EXPECT_OK(dt_launch(&o, traffic_rank, &a));
}
