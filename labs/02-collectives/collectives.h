/* collectives.h - lab 02: allreduce and its building blocks over
 * point-to-point messages. Read chapters/02-collectives.md first.
 *
 * Every function below is collective: all ranks of comm call it with the
 * same count, dtype and op. The shapes follow NCCL (send buffer, receive
 * buffer, count, dtype, op, communicator), and the same rules hold:
 *  - counts are in elements, never bytes; count 0 is valid (buffers may then
 *    be NULL) and sends nothing;
 *  - in place is allowed where stated (e.g. sendbuf == recvbuf for an
 *    allreduce), and then the input is overwritten by the result;
 *  - out of place, sendbuf is only read.
 * Your code may use dt_send, dt_recv and dt_sendrecv of dt/comm.h (and the
 * helpers of this header), but no library collective: the tests check
 * through dt_comm_stats that calls[] of every collective kind stays 0, and
 * that each rank sends the bytes and messages its algorithm sends.
 * Each function's comment is its contract: what holds on return, and the
 * traffic and modeled time the tests measure. How to get there is the
 * chapter's; if you are stuck, chapters/hints/02.md has hints.
 *
 * Supported: dtypes f32, f16, bf16, i32, i8, u8; ops DT_SUM, DT_PROD,
 * DT_MAX, DT_MIN (lab_check_args rejects the rest).
 */
#ifndef LAB_COLLECTIVES_H
#define LAB_COLLECTIVES_H

#include "dt/comm.h"
#include "dt/core.h"

/* ---------------------------------------------------------------- given helpers
 * (blocks.c: written for you, use them) */

/* How a vector of count elements is cut into nranks blocks when count is
 * not a multiple of nranks: the first count % nranks blocks get one element
 * more. Block b starts at element *offset and holds *len elements:
 *     len(b)    = count / K + (b < count % K ? 1 : 0)
 *     offset(b) = b * (count / K) + min(b, count % K)
 * e.g. count 10 on K = 4 ranks: blocks of 3, 3, 2, 2 at 0, 3, 6, 8. */
void lab_block(size_t count, int nranks, int b, size_t *offset, size_t *len);

/* inout[i] = inout[i] op in[i] for i < count (the local reduction of one
 * step). Integers wrap around on overflow; f16 and bf16 are combined in
 * f32 and rounded once. inout and in must not overlap. */
void lab_reduce_local(void *inout, const void *in, size_t count, dt_dtype dtype, dt_redop op);

/* Checks the arguments every function of this lab takes: comm not NULL,
 * a supported dtype and op, buffers not NULL when count > 0. Returns DT_OK
 * or DT_ERR_INVALID_ARG with a message naming the bad argument (via
 * dt_fail). The functions below call it first. */
dt_result lab_check_args(const void *sendbuf, const void *recvbuf, size_t count, dt_dtype dtype,
                         dt_redop op, const dt_comm *comm);

/* Pointer to element i of a buffer of dtype (buffers are void *). */
static inline void *lab_elem(void *buf, size_t i, dt_dtype dtype)
{
    return (char *)buf + i * dt_dtype_size(dtype);
}

/* ---------------------------------------------------------------- task (a): naive.c */

/* Allreduce through rank 0 (chapter 02, section 4): on return, every rank's
 * recvbuf[i] = op over ranks of sendbuf[i], i < count. In place when
 * sendbuf == recvbuf.
 * The algorithm, as the tests see it through dt_comm_stats: every rank but
 * 0 sends its buffer to rank 0 once (n bytes, 1 message) and receives the
 * result once; rank 0 sends the result to each of the K-1 others
 * ((K-1) n bytes, K-1 messages). Its modeled time is section 4's. */
dt_result lab_naive_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                              dt_redop op, dt_comm *comm);

/* ---------------------------------------------------------------- task (b): ring.c */

/* Ring reduce-scatter (chapter 02, section 5). count is the length of the
 * WHOLE vector (the same on every rank; NCCL's ncclReduceScatter takes
 * count / K instead, which only works when K divides count). sendbuf holds
 * count elements; on return, recvbuf holds this rank's block of the
 * reduced vector:
 *     recvbuf[j] = op over ranks of sendbuf[offset + j],  j < len,
 * with (offset, len) = lab_block(count, K, rank). In place when
 * recvbuf == sendbuf + offset (elements): the block is then reduced where
 * it lies, and the rest of the buffer may be overwritten.
 * The algorithm: K-1 steps; in each, every rank sends one block to
 * rank + 1 and receives one from rank - 1, at the same time. So each rank
 * sends (K-1)/K of the vector in K-1 messages, and the call takes
 * (K-1) (alpha + n / (K beta)). */
dt_result lab_ring_reduce_scatter(const void *sendbuf, void *recvbuf, size_t count,
                                  dt_dtype dtype, dt_redop op, dt_comm *comm);

/* Ring allgather, the inverse cut (section 5): count is the length of the
 * whole vector; sendbuf holds this rank's block (len elements, with
 * (offset, len) = lab_block(count, K, rank)) and on return every rank's
 * recvbuf holds all count elements, block b coming from rank b. In place
 * when sendbuf == recvbuf + offset (elements). The same K-1 steps of one
 * block to rank + 1 as the reduce-scatter, with the same bytes, messages
 * and time. */
dt_result lab_ring_allgather(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_comm *comm);

/* Ring allreduce (section 5): the result of lab_naive_allreduce, computed
 * by your reduce-scatter followed by your allgather. In place when
 * sendbuf == recvbuf. Each rank sends 2 (K-1)/K n bytes in 2 (K-1)
 * messages; T = 2 (K-1) (alpha + n / (K beta)). */
dt_result lab_ring_allreduce(const void *sendbuf, void *recvbuf, size_t count, dt_dtype dtype,
                             dt_redop op, dt_comm *comm);

/* ---------------------------------------------------------------- task (c): recursive_doubling.c */

/* Allreduce by recursive doubling, for any K (chapter 02, section 6): the
 * result of lab_naive_allreduce. In place when sendbuf == recvbuf.
 * The algorithm: with P the largest power of two <= K, ranks 0 .. P-1
 * combine their buffers in log2 P rounds of pairwise exchanges of the
 * whole buffer; each of the K - P other ranks takes part through one
 * partner below P (rank P + i through rank i), which it sends its buffer
 * to before the rounds and gets the result from after them. So a rank
 * below P sends log2 P whole buffers (one more if it has a partner), a
 * rank from P on sends one, and T = log2(K) (alpha + n / beta) for a power
 * of two, else at most (floor(log2 K) + 2) (alpha + n / beta). */
dt_result lab_recursive_doubling_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                                           dt_dtype dtype, dt_redop op, dt_comm *comm);

#endif /* LAB_COLLECTIVES_H */
