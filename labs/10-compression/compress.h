/* compress.h - lab 10: gradient compression with error feedback. Read
 * chapters/10-compression.md first.
 *
 * Data parallelism (chapter 03) with a smaller gradient on the wire. Each
 * rank compresses its gradient, the ranks exchange what they compressed,
 * and every rank decodes the same mean. What a compressor drops is not
 * lost: with error feedback each rank keeps it (its residual) and adds it
 * to its next gradient.
 *
 * A step is the library's training loop (dt/train.h) with one hook
 * replaced: the gradient synchronisation, which calls your lab_sync_*
 * for the method chosen (lab_cdp_init, given). The tasks, in order (the
 * chapter's section 10 says which section derives each):
 *   1. codec.c   lab_sign_encode, lab_sign_decode, lab_topk_select,
 *                lab_int8_encode, lab_int8_decode      the three compressors
 *   2. codec.c   lab_ef_correct, lab_ef_update         error feedback
 *   3. sync.c    lab_sync_topk                         top-k through an allgather
 *   4. sync.c    lab_sync_int8                         int8 through an int8 allreduce
 *   5. sync.c    lab_sync_sign                         the 1-bit compressed allreduce
 *   6. state.c   lab_cdp_save, lab_cdp_load            the residual is training state
 *   7. powersgd.c  lab_orthonormalize, lab_sync_powersgd  (going further, graded)
 *   8. sync.c    lab_topk_crossover                    predict, then measure
 *
 * Notation, as in the chapter: K ranks, n the gradient's length (the
 * model's num_params), g this rank's gradient, e its residual, v = g + e
 * what it compresses, C(v) the compressed v decoded again. */
#ifndef LAB_COMPRESS_H
#define LAB_COMPRESS_H

#include "dt/ckpt.h"
#include "dt/comm.h"
#include "dt/core.h"
#include "dt/data.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

typedef enum {
    LAB_DENSE = 0, /* no compression: the library's allreduce of the floats (the baseline) */
    LAB_SIGN,      /* 1-bit: signs and a scale per block, compressed allreduce (task 5) */
    LAB_TOPK,      /* the k largest |v_i| as (index, value) pairs, allgather (task 3) */
    LAB_INT8,      /* int8 with one shared scale, an int8 allreduce (task 4) */
    LAB_POWERSGD,  /* rank-r approximation of each weight matrix, two allreduces (task 7) */
    LAB_NUM_METHODS
} lab_method;

/* "dense", "sign", "topk", "int8", "powersgd"; "?" out of range. */
const char *lab_method_name(lab_method m);
/* The method named s; DT_ERR_INVALID_ARG naming s when there is none. */
dt_result lab_method_parse(const char *s, lab_method *out);

typedef struct {
    lab_method method;
    int error_feedback; /* 1: keep each rank's residual and add it to its next gradient */
    double density;     /* LAB_TOPK: the fraction of the n values sent, in (0, 1] */
    int rank;           /* LAB_POWERSGD: r >= 1 */
    uint64_t seed;      /* LAB_POWERSGD: of the initial Q matrices (the same on every rank) */
} lab_compress_config;

/* ================================================================ task 1: compressors */

/* ---- 1-bit (section 2). The payload of a vector v of n floats is its
 * scale, a float (the mean of |v_i|, the value that makes s * sign(v)
 * closest to v), then n sign bits: bit i is bit (i % 8) of byte 4 + i / 8,
 * 1 when v_i >= 0 (a zero counts as positive), 0 when v_i < 0; the unused
 * bits of the last byte are 0. Decoded, element i is +s or -s. */
size_t lab_sign_bytes(size_t n); /* given: 4 + ceil(n / 8) */

/* Writes v's payload, lab_sign_bytes(n) bytes, to out. The scale is
 * (sum of |v_i|) / n summed in double and rounded once to float; 0 when
 * n is 0. */
dt_result lab_sign_encode(const float *v, size_t n, uint8_t *out);

/* out[i] = +s or -s from the payload in (n values; overwrites out). */
dt_result lab_sign_decode(const uint8_t *in, size_t n, float *out);

/* ---- top-k (section 3). A kept value travels with its index: 8 bytes. */
typedef struct {
    int32_t index; /* into the vector */
    float value;   /* v[index] */
} lab_pair;

/* How many pairs a vector of n values sends at a density d: round(d n),
 * at least 1 and at most n (given; 0 when n is 0). */
size_t lab_topk_count(size_t n, double density);

/* The k entries of v with the largest |v_i| (among equal |v_i| the lower
 * index first), written to out[0..k) in increasing order of index.
 * 1 <= k <= n; n <= INT32_MAX. Decoded, C(v) keeps v_i at those indices
 * and is 0 elsewhere. */
dt_result lab_topk_select(const float *v, size_t n, size_t k, lab_pair *out);

/* ---- int8 (section 4). With a scale s > 0 and L levels on each side,
 * v_i travels as q_i = rint(v_i / s) (to nearest, ties to even) clamped
 * to [-L, L], and is decoded as s * q_i. */

/* The levels each side that K ranks can use so that the sum of their q
 * never leaves int8: floor(127 / K) (given; 0 when K > 127). */
int lab_int8_levels(int ranks);

/* q[i] as above; scale 0 (a zero vector) gives q = 0. levels in 1..127,
 * scale >= 0. */
dt_result lab_int8_encode(const float *v, size_t n, float scale, int levels, int8_t *q);

/* out[i] = scale * q[i]. */
dt_result lab_int8_decode(const int8_t *q, size_t n, float scale, float *out);

/* ================================================================ task 2: error feedback
 * (section 5). Around any compressor C, on each rank and each step:
 *     v = g + e         what is compressed
 *     send C(v)
 *     e := v - C(v)     what was not sent waits for the next step
 * so that g + e_old = C(v) + e_new: nothing is dropped, only delayed. */

/* v = g + e, element by element; without feedback (e NULL) v = g. v may be g. */
dt_result lab_ef_correct(float *v, const float *g, const float *e, size_t n);

/* e = v - c, element by element, where c = C(v) decoded; e NULL (no
 * feedback) does nothing. */
dt_result lab_ef_update(float *e, const float *v, const float *c, size_t n);

/* ================================================================ the trainer (given) */

/* A weight matrix PowerSGD compresses (task 7): the view at grads[offset],
 * rows x cols, row-major; its P (rows x r) lives at c->lr_p + p_offset and
 * its Q (cols x r) at c->lr_q + q_offset. */
typedef struct {
    size_t offset, rows, cols;
    size_t p_offset, q_offset;
} lab_lowrank;

/* A range of the gradient PowerSGD sends uncompressed (a bias, or a
 * matrix too small to gain): grads[offset, +count), carried in the first
 * allreduce at c->lr_p + p_offset. */
typedef struct {
    size_t offset, count, p_offset;
} lab_plain;

/* One rank's compressed data parallelism: its model, its trainer, the
 * method's buffers. lab_cdp_init makes every buffer a method needs;
 * those of other methods are NULL. */
typedef struct {
    dt_comm *comm;
    dt_model *model;          /* not owned */
    lab_compress_config cfg;
    dt_trainer trainer;       /* the loop: the model's forward and backward, lab_sync_* of
                                 the method as its sync, the optimizer */
    int rank, ranks;          /* K = ranks */
    size_t n;                 /* the gradient's length, model->num_params */
    long step;                /* training steps done (lab_cdp_step) */
    /* error feedback (NULL without): tag OPTIM, kept across steps */
    float *error;             /* n: this rank's residual e */
    /* every method but LAB_DENSE: scratch, tag COMM */
    float *v;                 /* n: v = g + e, the vector compressed */
    float *sent;              /* n: C(v), what this rank sent, decoded (PowerSGD: see
                                 lab_sync_powersgd) */
    /* LAB_TOPK */
    size_t k;                 /* pairs each rank sends: lab_topk_count(n, density) */
    lab_pair *pairs;          /* k: this rank's */
    lab_pair *gathered;       /* K x k: every rank's, rank 0's first */
    /* LAB_INT8 */
    int levels;               /* lab_int8_levels(K) */
    int8_t *q;                /* n */
    /* LAB_SIGN: the gradient is cut in K blocks as a ring allreduce cuts it
       (chapter 02, lab_block: the first n % K blocks one element longer);
       rank b reduces block b */
    size_t *block_offset, *block_len;  /* K entries each */
    size_t block_bytes;       /* lab_sign_bytes(block_len[0]): the payload of the longest
                                 block, the size of every block of the exchanges */
    uint8_t *send_blocks;     /* K x block_bytes */
    uint8_t *recv_blocks;     /* K x block_bytes */
    float *block_mean;        /* block_len[0] floats: this rank's block, reduced */
    float *block_tmp;         /* block_len[0] floats: scratch */
    float *server_error;      /* block_len[0] floats (NULL without feedback), tag OPTIM:
                                 the residual of the second compression, of this rank's
                                 block */
    /* LAB_POWERSGD */
    int num_lowrank, num_plain;
    lab_lowrank *lowrank;
    lab_plain *plain;
    float *lr_p;              /* lr_p_count floats, tag COMM: the P matrices, then the
                                 plain ranges: the first allreduce */
    size_t lr_p_count;
    float *lr_q;              /* lr_q_count floats, tag OPTIM, kept across steps (warm
                                 start): the Q matrices, the second allreduce */
    size_t lr_q_count;
} lab_cdp;

/* Sets up c for model m on comm: checks cc (density in (0, 1], rank >= 1,
 * int8 on at most 127 ranks, top-k on at most INT32_MAX values), makes the
 * method's buffers (the residuals zeroed; PowerSGD's Q from cc->seed, the
 * same on every rank), a trainer with tc's optimizer and clock (tc NULL:
 * plain SGD, lr 0.1) whose sync is the method's, and broadcasts rank 0's
 * parameters. c must stay where it is until lab_cdp_free (the trainer keeps
 * a pointer to it). On failure c is left freed. Collective. */
dt_result lab_cdp_init(lab_cdp *c, dt_comm *comm, dt_model *m, const lab_compress_config *cc,
                       const dt_trainer_config *tc);
void lab_cdp_free(lab_cdp *c);

/* The sync the trainer runs once per step: the method's lab_sync_* (after
 * dividing the gradient by the number of micro-batches); LAB_DENSE is the
 * library's allreduce. Collective. */
dt_result lab_cdp_sync(lab_cdp *c);

/* One training step on this rank's B samples (x: B rows of the model's
 * input width, y: B labels); c->step counts it. *loss (may be NULL) gets
 * the step's loss. Collective. */
dt_result lab_cdp_step(lab_cdp *c, const float *x, const int32_t *y, size_t B, float *loss);

/* Runs steps c->step .. last - 1 on d: step t takes batch t % E of epoch
 * t / E of this rank's shard from the distributed sampler (shuffle on,
 * drop_last on, seed), E = the shard's length / B. So a run stopped after
 * any step and resumed there takes the same batches. losses (may be NULL)
 * gets the loss of step t at losses[t - first]. Collective. */
dt_result lab_cdp_train(lab_cdp *c, const dt_dataset *d, size_t B, uint64_t seed, long last,
                        float *losses);

/* ================================================================ tasks 3-5: the exchanges
 * Each is the trainer's sync for its method, collective. On entry
 * model->grads holds this rank's gradient g and c->error (with feedback)
 * its residual e. On return:
 *   - c->sent holds C(v) of v = g + e;
 *   - c->error holds v - C(v) (with feedback; unchanged without);
 *   - model->grads holds, on every rank the same bits, the mean over the
 *     ranks of what they sent, decoded, as each method's contract says. */

/* Task 3 (sections 3, 5 and 6): C = top-k of v with c->k pairs.
 * Afterwards model->grads = (the sum over the ranks, in rank order, of
 * their C(v)) / K. Collectives: exactly one dt_allgather, of this rank's
 * k pairs (8 k bytes, DT_U8). */
dt_result lab_sync_topk(lab_cdp *c);

/* Task 4 (sections 4 and 6): C = int8 with one scale s = M / L shared by
 * every rank, M the largest |v_i| over all the ranks, L = c->levels.
 * Afterwards model->grads = (s / K) * sum over the ranks of their q, the
 * sum taken in int8 (it never wraps: |q_i| <= L = floor(127 / K)).
 * Collectives: exactly two dt_allreduce, one float to agree on M and the
 * n values q (DT_I8). */
dt_result lab_sync_int8(lab_cdp *c);

/* Task 5 (sections 2, 5 and 6): the 1-bit compressed allreduce. C codes
 * each block b of v (c->block_offset[b], c->block_len[b]) with its own
 * scale (lab_sign_encode). Rank b then owns block b: its u is the mean
 * (the sum in rank order, divided by K) of every rank's C(v) on block b,
 * and it codes w = u + server_error (old; 0 without feedback) once more:
 * with feedback server_error := w - C(w). Afterwards model->grads = every
 * rank's C(w) of its block, decoded, in place: the same bits on every
 * rank. Collectives: exactly one dt_alltoall and one dt_allgather, each of
 * block_bytes per rank (DT_U8; a shorter block's payload padded to it),
 * so that each rank sends 2 (K - 1) block_bytes bytes: 1/32 of a ring
 * allreduce of the floats, plus the scales. */
dt_result lab_sync_sign(lab_cdp *c);

/* ================================================================ task 6: checkpoints
 * (section 7). A rank's checkpoint is ONE file of the library's format
 * (dt/ckpt.h: a shard whose header names rank c->rank of c->ranks) that
 * holds exactly these records, by name, element type and shape, leaving
 * out those of buffers this configuration does not have:
 *
 *   step              i64 scalar              c->step
 *   params            f32 [n]                 the model's parameters
 *   optimizer.range   u64 [2]                 \
 *   optimizer.step    i64 scalar               > the trainer's optimizer
 *   optimizer.state   f32 [slots, n]          /  (dt_optim_state(o, io, "optimizer"))
 *   error             f32 [n]                 c->error (error feedback)
 *   server_error      f32 [block_len[0]]      c->server_error (1-bit, feedback)
 *   powersgd.q        f32 [lr_q_count]        c->lr_q (PowerSGD)
 *
 * The tests read the files back with dt_ckpt_open and check each record,
 * and resume from them in a new process: nothing may survive in memory. */

/* Writes this rank's checkpoint to path (committed atomically: path is the
 * old file or the whole new one): everything that this rank's next
 * training steps depend on, so that lab_cdp_load into a freshly
 * initialised lab_cdp (the same model spec, configs and ranks; any initial
 * parameters), in any process, and training on gives the same parameters,
 * bit for bit, as a run that never stopped. Not collective: each rank
 * writes its own file. */
dt_result lab_cdp_save(lab_cdp *c, const char *path);

/* Reads what lab_cdp_save wrote into c. All or nothing: a file that is
 * damaged, of another rank, rank count, method or model, or with a record
 * missing or extra fails (DT_ERR_INVALID_ARG or DT_ERR_IO, naming the file
 * and the record) and leaves c as it was. */
dt_result lab_cdp_load(lab_cdp *c, const char *path);

/* ================================================================ task 7: PowerSGD
 * (section 8; going further, graded). */

/* Gram-Schmidt on the r columns of p (rows x r, row-major), in column
 * order: column j loses its projections on columns 0 .. j-1 (each taken
 * with the column as updated so far), and a second time the same way,
 * then is divided by its norm; a column of norm 0 stays 0. Afterwards the
 * columns are orthonormal, to float precision, also when a column was
 * (nearly) a combination of the earlier ones. */
dt_result lab_orthonormalize(float *p, size_t rows, int r);

/* The sync of LAB_POWERSGD, collective: v = g + e; for each matrix V of
 * c->lowrank, P = V Q (Q: its current matrix in c->lr_q) into c->lr_p;
 * the plain ranges of v copied there after the P's; ONE dt_allreduce
 * (DT_AVG) of c->lr_p; each P orthonormalized; Q = V^T P; ONE
 * dt_allreduce (DT_AVG) of c->lr_q. Then each matrix's approximation
 * P Q^T (the same on every rank) goes to c->sent and model->grads, and
 * e := v - P Q^T there; a plain range was sent as it is: c->sent = v, its
 * residual 0, model->grads = its mean from c->lr_p. Q stays for the next
 * step (warm start). */
dt_result lab_sync_powersgd(lab_cdp *c);

/* ================================================================ task 8: predict, then measure
 * (sections 1, 3 and 6). */

/* *density := the density d = k / n at which one lab_sync_topk exchange
 * of a gradient of n floats on `ranks` ranks takes exactly as long on
 * link's modeled clock as the dense exchange (LAB_DENSE, the ring
 * allreduce of the floats): below d top-k is faster, above it slower. It
 * may exceed 1 (then top-k is faster at every density). Worked out from
 * the chapter's formulas, k taken as the real number d n, without running
 * an exchange; the tests then run both exchanges on either side of it.
 * link: finite beta, gamma 0 (every preset); n >= 1, ranks >= 2; else
 * DT_ERR_INVALID_ARG. */
dt_result lab_topk_crossover(const dt_net *link, size_t n, int ranks, double *density);

#endif /* LAB_COMPRESS_H */
