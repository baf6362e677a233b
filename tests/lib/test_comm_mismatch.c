/* test_comm_mismatch.c - collectives called differently on different ranks
 * never write out of bounds and return DT_ERR_MISMATCH on every rank (from
 * the call, or from the next call on the communicator, which the rank that
 * found it marked out of step), naming the ranks and what each called:
 * counts 100000 against 200000 and 4 against 8, a tiny allreduce against a
 * large one, a dtype, an op, a root, dt_allreduce's first half against a
 * reduce-scatter of the same size; debug on and off, every algorithm,
 * on the backend of DT_BACKEND and, by name, on proc. Each output buffer is
 * followed by guard bytes that must stay untouched (and ASan watches the
 * rest). On mpi each process has its own copy of the communicator: the
 * rank that finds the mismatch fails with DT_ERR_MISMATCH, and the others
 * learn it from its failure notice (DT_ERR_PEER_DIED) unless they found it
 * too; the launch returns the first, the mismatch. */
#include "test_comm_util.h"

#include <stdio.h>

#define GUARD 256
#define N 3
/* a case's kind: rank 1 calls dt_allreduce_scatter on count elements, the
 * others dt_reduce_scatter with recvcount count */
#define HALF_VS_RS ((dt_coll_kind)DT_NUM_COLLS)

typedef struct {
    const char *name;
    dt_coll_kind kind;
    size_t count[N];
    dt_dtype dtype[N];
    dt_redop op[N];
    int root[N];
    const char *says[2]; /* what the message must name */
} mm_case;

static const mm_case cases[] = {
    {"counts 100000 and 200000", DT_COLL_ALLREDUCE, {100000, 200000, 100000},
     {DT_F32, DT_F32, DT_F32}, {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0},
     {"count 100000", "count 200000"}},
    {"counts 4 and 8", DT_COLL_ALLREDUCE, {4, 8, 4}, {DT_F32, DT_F32, DT_F32},
     {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0}, {"count 4", "count 8"}},
    {"counts 4 and 1000", DT_COLL_ALLREDUCE, {4, 4, 1000}, {DT_F32, DT_F32, DT_F32},
     {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0}, {"count 4", "count 1000"}},
    {"dtypes f32 and i32", DT_COLL_ALLREDUCE, {5000, 5000, 5000}, {DT_F32, DT_I32, DT_F32},
     {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0}, {"f32", "i32"}},
    {"ops sum and max", DT_COLL_ALLREDUCE, {70000, 70000, 70000}, {DT_F32, DT_F32, DT_F32},
     {DT_SUM, DT_SUM, DT_MAX}, {0, 0, 0}, {"sum", "max"}},
    {"roots 0 and 1", DT_COLL_BROADCAST, {70000, 70000, 70000}, {DT_F32, DT_F32, DT_F32},
     {DT_SUM, DT_SUM, DT_SUM}, {0, 1, 0}, {"root 0", "root 1"}},
    {"reduce-scatter counts 30000 and 40000", DT_COLL_REDUCE_SCATTER, {30000, 40000, 30000},
     {DT_F32, DT_F32, DT_F32}, {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0},
     {"count 30000", "count 40000"}},
    {"dt_allreduce_scatter against a reduce-scatter", HALF_VS_RS, {30000, 90000, 30000},
     {DT_F32, DT_F32, DT_F32}, {DT_SUM, DT_SUM, DT_SUM}, {0, 0, 0},
     {"reduce_scatter (count 30000", "allreduce_scatter (count 90000"}},
};

/* What each rank hands back. */
typedef struct {
    dt_result result;
    int guard_ok;
    char msg[240]; /* the result's message */
} mm_out;

static dt_result call_it(const mm_case *k, int r, void *in, void *out, dt_comm *c)
{
    switch (k->kind) {
    case DT_COLL_BROADCAST:
        return dt_broadcast(in, out, k->count[r], k->dtype[r], k->root[r], c);
    case HALF_VS_RS:
        if (r == 1)
            return dt_allreduce_scatter(out, k->count[r], k->dtype[r], k->op[r], c);
        /* fall through */
    case DT_COLL_REDUCE_SCATTER:
        return dt_reduce_scatter(in, out, k->count[r], k->dtype[r], k->op[r], c);
    default: return dt_allreduce(in, out, k->count[r], k->dtype[r], k->op[r], c);
    }
}

static dt_result mm_rank(dt_comm *c, void *argp)
{
    const mm_case *k = argp;
    mm_out *a = tc_mine(c);
    int r = dt_comm_rank(c);
    size_t es = dt_dtype_size(k->dtype[r]);
    int rs = k->kind == DT_COLL_REDUCE_SCATTER || (k->kind == HALF_VS_RS && r != 1);
    size_t out_bytes = k->count[r] * es, in_bytes = out_bytes * (rs ? N : 1);
    unsigned char *in = calloc(in_bytes + GUARD, 1), *out = malloc(out_bytes + GUARD);
    memset(out, 0, out_bytes);
    memset(out + out_bytes, 0xab, GUARD);
    dt_result res = call_it(k, r, in, out, c);
    snprintf(a->msg, sizeof a->msg, "%s", res != DT_OK ? dt_last_error() : "");
    dt_result next = dt_barrier(c); /* a rank that returned OK learns it here */
    if (res == DT_OK)
        snprintf(a->msg, sizeof a->msg, "%s", next != DT_OK ? dt_last_error() : "");
    a->result = res != DT_OK ? res : next;
    a->guard_ok = 1;
    for (size_t i = 0; i < GUARD; i++)
        a->guard_ok &= out[out_bytes + i] == 0xab;
    free(in);
    free(out);
    return a->result;
}

static void run_cases(dt_backend backend)
{
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (int ai = 0; ai < TC_LEN(tc_algos); ai++)
            for (int debug = 0; debug <= 1; debug++) {
                const mm_case *k = &cases[ci];
                mm_out a[N];
                const dt_algo *algos = tc_algos;
                dt_launch_opts o = tc_opts(N, algos[ai]);
                o.backend = backend;
                o.debug = debug;
                o.timeout_s = 10;
                tc_out(&o, a, sizeof a[0]);
                double t0 = dt_now();
                dt_result r = dt_launch(&o, mm_rank, (void *)k);
                const char *m = dt_last_error();
                const char *how = dt_backend_name(backend);
                EXPECT(r == DT_ERR_MISMATCH, "%s, %s, algo %s, debug %d: the job returned %s: %s",
                       k->name, how, dt_algo_name(algos[ai]), debug, dt_strerror(r), m);
                EXPECT(strstr(m, "mismatch") && strstr(m, k->says[0]) && strstr(m, k->says[1]),
                       "%s, %s, algo %s, debug %d: the message names both calls: '%s'", k->name,
                       how, dt_algo_name(algos[ai]), debug, m);
                EXPECT(dt_now() - t0 < 5, "%s: it took %.1f s", k->name, dt_now() - t0);
                for (int i = 0; i < N; i++) {
                    dt_result ri = a[i].result;
                    EXPECT(ri == DT_ERR_MISMATCH ||
                               (backend == DT_BACKEND_MPI && ri == DT_ERR_PEER_DIED),
                           "%s, %s, algo %s, debug %d: rank %d returned %s: %s", k->name, how,
                           dt_algo_name(algos[ai]), debug, i, dt_strerror(ri), a[i].msg);
                    EXPECT(a[i].guard_ok, "%s, %s, algo %s, debug %d: rank %d's output was "
                           "overrun", k->name, how, dt_algo_name(algos[ai]), debug, i);
                }
            }
}

TEST_T(comm_mismatch_is_an_error_on_every_rank, 3, 120)
{
    run_cases(tc_backend());
}

TEST_T(comm_mismatch_is_an_error_on_every_rank_proc, 2, 120, .own_backend = 1)
{
    run_cases(DT_BACKEND_PROC);
}
