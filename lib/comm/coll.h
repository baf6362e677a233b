/* coll.h - a collective as issued, its signature, and the algorithms'
 * entry points. Not a public header. */
#ifndef DT_COMM_COLL_H
#define DT_COMM_COLL_H

#include "handle.h"
#include "port.h"

/* The arguments of one collective, as issued. */
typedef struct {
    int kind;          /* dt_coll_kind */
    const void *sendbuf;
    void *recvbuf;
    size_t count;      /* per the call's definition */
    dt_dtype dtype;
    dt_redop op;
    int root;
    dt_algo algo;      /* resolved: never AUTO unless a shortcut may be used */
    int shortcut;      /* 1: the shared-memory shortcut may be taken */
    int halves;        /* reduce-scatter, allgather: 1 for dt_allreduce's halves
                          (count is the whole vector, cut by dt_block, in place) */
} dt_coll_args;

/* Runs a collective on the call's lane (called by the blocking API on lane
 * 0 and by the progress thread on lane 1): with debug on, the check that
 * every rank called the same; then the rank's backend (backend.h). */
dt_result dt_coll_run(dt_call *call, const dt_coll_args *a);

/* A collective's signature: kind, dtype, op, root, algorithm and (when
 * small) count in 32 bits, the part of a call that every rank must agree
 * on (mismatch.c): bits 0-3 kind, 4-6 dtype, 7-9 op (reductions), 10-20
 * root + 1 (rooted collectives), 21-23 algorithm, 24 shortcut, 25-30 the
 * count when it is below DT_SIG_COUNT_MAX (else DT_SIG_COUNT_MAX: the count
 * travels beside it), 31 one of dt_allreduce's halves. The API gives a
 * collective that does not reduce the op DT_SUM (0), and one without a
 * root the root -1: their bits are 0.
 * Inline: every collective computes it. */
#define DT_SIG_COUNT_MAX 63u
static inline uint32_t dt_coll_sig(const dt_coll_args *a)
{
    uint32_t count = a->count < DT_SIG_COUNT_MAX ? (uint32_t)a->count : DT_SIG_COUNT_MAX;
    return (uint32_t)a->kind | (uint32_t)a->dtype << 4 | (uint32_t)a->op << 7 |
           (uint32_t)(a->root + 1) << 10 | (uint32_t)a->algo << 21 |
           (uint32_t)(a->shortcut != 0) << 24 | count << 25 | (uint32_t)(a->halves != 0) << 31;
}

/* The count back: from the signature, or payload_count when it did not fit. */
uint64_t dt_coll_sig_count(uint32_t sig, uint64_t payload_count);

/* The call carries the collective's signature and count: its messages say
 * what it is, and so does its board entry, which the caller sets with them. */
static inline void dt_coll_call(dt_call *call, const dt_coll_args *a)
{
    call->sig = dt_coll_sig(a);
    call->count = a->count;
}

/* What a rank called, as the others see it. */
typedef struct {
    uint32_t sig;
    uint64_t count, seq; /* seq 0 where the call's number was not published */
} dt_coll_id;

/* DT_OK when ids[0..n) agree; else DT_ERR_MISMATCH naming the rank that
 * differs and what it called, against what the others called. */
dt_result dt_coll_mismatch(long seq, const dt_coll_id *ids, int n);

/* The same over the records of a barrier-exchange, id_of reading what each
 * says; a mismatch also poisons the communicator. Every rank sees the same
 * records, so every rank decides the same. */
struct dt_rec;
dt_result dt_coll_agree(dt_call *call, const struct dt_rec *all,
                        dt_coll_id (*id_of)(const struct dt_rec *r));

/* The debug check: all ranks exchange what they called; DT_ERR_MISMATCH
 * naming the rank that differs. */
dt_result dt_coll_debug_check(dt_call *call, const dt_coll_args *a);

/* A collective by its algorithm (algo_coll.c), over the messages: every
 * backend that runs libdt's algorithms (emulation, mpi) comes here. */
dt_result dt_alg_collective(dt_call *call, const dt_coll_args *a);

/* The algorithms of each collective (algo_coll.c), over the messages. */
dt_result dt_alg_allreduce(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_broadcast(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_reduce(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_allgather(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_reduce_scatter(dt_call *call, const dt_coll_args *a);
/* dt_allreduce's halves (a->halves): what dt_alg_allreduce does before and
 * after its allgather, in place. */
dt_result dt_alg_allreduce_scatter(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_allreduce_gather(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_alltoall(dt_call *call, const dt_coll_args *a);
dt_result dt_alg_barrier(dt_call *call);

#endif /* DT_COMM_COLL_H */
