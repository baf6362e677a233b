/* ddp.h - lab 03: data parallelism, the way PyTorch's DistributedDataParallel
 * does it. Read chapters/03-data-parallel.md first.
 *
 * Every rank holds the whole model (a dt_model: one flat parameter buffer
 * and one flat gradient buffer of the same layout) and trains on its own
 * shard of the data. After each backward the ranks average their gradients,
 * so that every rank applies the same update and the replicas never drift
 * apart.
 *
 * A step is the library's training loop (dt/train.h): forward and
 * backward of each micro-batch, then the gradient synchronisation, then the
 * optimizer. The loop runs the model and the optimizer; what makes it DDP
 * is the synchronisation, and that is yours: the loop calls
 * lab_ddp_sync_grads once per step, and, in OVERLAP mode, lab_ddp_grad_ready
 * as the last micro-batch's backward completes each layer.
 *
 * The tasks, in order (the chapter's section 9 says which section derives
 * each):
 *   1. lab_ddp_broadcast_params, lab_ddp_local_batch   start from the same
 *      parameters; give each rank its own shard of every batch
 *   2. lab_ddp_allreduce_flat, lab_ddp_sync_grads      one allreduce of the
 *      whole gradient buffer, and the scale that makes it the mean
 *   3. lab_ddp_make_buckets, lab_ddp_allreduce_buckets gradients in buckets
 *   4. lab_ddp_grad_ready, lab_ddp_wait_buckets        each bucket's allreduce
 *      starts from the backward, as soon as its gradients are complete
 *   5. lab_ddp_sync_grads with micro_steps > 1         gradient accumulation
 *   6. lab_ddp_predict_step                            predict, then measure:
 *      the modeled step your DDP will take, from the chapter's formulas
 *
 * The code outside the fences of ddp.c (lab_ddp_init, lab_ddp_free,
 * lab_ddp_step and the two hooks they give the loop) is given: it builds
 * the object below from your functions and runs the steps. */
#ifndef LAB_DDP_H
#define LAB_DDP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/data.h"
#include "dt/net.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/train.h"

/* PyTorch DDP's default bucket size (bucket_cap_mb = 25). */
#define LAB_DDP_BUCKET_BYTES ((size_t)25 << 20)

/* How a step reduces its gradients (lab_ddp_sync_grads). */
typedef enum {
    LAB_DDP_FLAT = 0, /* task 2: one allreduce of the whole buffer after the backward */
    LAB_DDP_BUCKETS,  /* task 3: one allreduce per bucket after the backward */
    LAB_DDP_OVERLAP   /* task 4: bucket allreduces started during the backward */
} lab_ddp_mode;

/* A bucket: the gradients of layers [first_layer, last_layer) of the model,
 * which are the contiguous range grads[offset .. offset + count). */
typedef struct {
    int first_layer, last_layer;
    size_t offset, count;   /* in floats */
    int pending;            /* task 4: layers of the bucket whose gradients
                               are not complete yet in this backward */
    dt_request *req;        /* task 4: its allreduce in flight, or NULL */
} lab_bucket;

/* The modeled compute time of one micro-batch, charged to the rank's
 * modeled clock (dt_clock_advance) by the loop's forward and backward (each
 * layer's just before its gradients are announced), so that the modeled
 * step time does not depend on how fast this machine is. */
typedef struct {
    double forward_s;          /* the whole forward */
    const double *backward_s;  /* backward of layer i, one entry per layer; NULL: 0 */
} lab_ddp_cost;

typedef struct {
    dt_comm *comm;
    dt_model *model;           /* not owned */
    lab_ddp_mode mode;
    dt_trainer trainer;        /* the loop: the model's forward and backward, your
                                  synchronisation, the optimizer over the whole
                                  flat buffer */
    int num_buckets;
    lab_bucket *buckets;       /* buckets[0] holds the LAST layers (task 3) */
    int *bucket_of_layer;      /* num_layers entries: the bucket of each layer */
    lab_ddp_cost cost;         /* zero: no modeled compute time */
} lab_ddp;

/* ------------------------------------------------------------ given code */

/* Sets up d for model m on comm: broadcasts the parameters from rank 0
 * (task 1), builds the buckets of bucket_bytes (task 3; not in FLAT mode)
 * and the training loop with an optimizer of cfg over the whole model and
 * your synchronisation as its hooks. cost may be NULL. d must stay where
 * it is until lab_ddp_free (the loop keeps a pointer to it). On failure d
 * is left freed. Collective. */
dt_result lab_ddp_init(lab_ddp *d, dt_comm *comm, dt_model *m, lab_ddp_mode mode,
                       size_t bucket_bytes, const dt_optim_config *cfg,
                       const lab_ddp_cost *cost);
void lab_ddp_free(lab_ddp *d);

/* One training step on this rank's batch of micro_steps * micro_B samples
 * (x: that many rows of the model's input width, row-major and contiguous:
 * row i starts at x + i * width, the first layer's fan-in; labels as many
 * entries): the loop zeroes the
 * gradients, runs each micro-batch forward and backward (the backward
 * ACCUMULATES into model->grads; in OVERLAP mode it calls
 * lab_ddp_grad_ready for each layer of the last micro-batch), calls
 * lab_ddp_sync_grads once, then steps the optimizer. *loss (may be NULL)
 * gets this rank's mean loss over its micro-batches. Collective. */
dt_result lab_ddp_step(lab_ddp *d, const float *x, const int32_t *labels, size_t micro_B,
                       int micro_steps, float *loss);

/* ------------------------------------------------------------ task 1 */

/* Collective: every rank's m->params becomes rank 0's, with ONE broadcast
 * of the whole flat buffer. A NULL comm, model or parameter buffer is
 * DT_ERR_INVALID_ARG. */
dt_result lab_ddp_broadcast_params(dt_comm *comm, dt_model *m);

/* The dataset indices of this rank's part of global step `step` of `epoch`
 * on a dataset of n samples: B indices into idx. The rank's shard of the
 * epoch is what the library's distributed sampler gives (dt_sampler_init
 * with n, world, rank, shuffle on, drop_last on, seed; then
 * dt_sampler_indices for the epoch); step t takes entries [t*B, (t+1)*B)
 * of it. So the K ranks' batches of step t are, together, the global batch
 * of K*B samples that one rank with batch K*B would take at step t. Fails
 * with DT_ERR_INVALID_ARG when the shard has fewer than (step+1)*B entries. */
dt_result lab_ddp_local_batch(size_t n, uint64_t seed, int rank, int world, int epoch,
                              size_t step, size_t B, size_t *idx);

/* ------------------------------------------------------------ task 2 */

/* Collective: ONE allreduce (sum) of the whole flat gradient buffer, in
 * place, then grads *= scale (scale = 1/K averages over K ranks). */
dt_result lab_ddp_allreduce_flat(lab_ddp *d, float scale);

/* Called by the loop once per step, after the last micro-batch's
 * backward. On entry every rank's model->grads holds the SUM over its
 * micro_steps micro-batches of each one's mean gradient; on return every
 * rank's holds the mean gradient of the GLOBAL batch (K ranks x micro_steps
 * micro-batches), reduced the way d->mode says: FLAT with
 * lab_ddp_allreduce_flat, BUCKETS with lab_ddp_allreduce_buckets, OVERLAP
 * with lab_ddp_wait_buckets. Task 2 needs FLAT and micro_steps = 1; tasks
 * 3 and 4 add the modes, task 5 micro_steps > 1. Collective. */
dt_result lab_ddp_sync_grads(lab_ddp *d, int micro_steps);

/* ------------------------------------------------------------ task 3 */

/* Groups the layers of m into buckets: walking the layers from the LAST to
 * the first, each layer's parameters join the open bucket; a bucket closes
 * as soon as it holds at least bucket_bytes bytes of gradients (4 bytes
 * per parameter); the last bucket takes what is left. buckets[0] thus
 * holds the last layers. Writes a malloc'ed array of *num lab_buckets
 * (pending = its number of layers, req NULL) to *out, and bucket_of_layer[i] (m->num_layers
 * entries, caller's memory) = the bucket of layer i.
 * bucket_bytes 0 is DT_ERR_INVALID_ARG. */
dt_result lab_ddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_bucket **out,
                               int *num, int *bucket_of_layer);

/* Collective: one allreduce (sum) per bucket, in bucket order, in place;
 * then grads *= scale. */
dt_result lab_ddp_allreduce_buckets(lab_ddp *d, float scale);

/* ------------------------------------------------------------ task 4 */

/* Called by the loop's backward when layer's gradients are complete (in
 * OVERLAP mode, during the last micro-batch's backward). When it completes
 * the last pending layer of its bucket, starts that bucket's allreduce
 * (sum, in place) with dt_iallreduce and keeps the request in the bucket. */
dt_result lab_ddp_grad_ready(lab_ddp *d, int layer);

/* Waits for every bucket's allreduce (all of them: a wait may fail, the
 * others must still be waited for), then grads *= scale, and resets each
 * bucket's pending count for the next backward. */
dt_result lab_ddp_wait_buckets(lab_ddp *d, float scale);

/* ------------------------------------------------------------ predict, then measure */

/* Your prediction, from the formulas of sections 5 to 7, of the modeled
 * time of one step (one micro-batch) of lab_ddp_step in `mode` on K ranks
 * joined by `link`, for model m with buckets of bucket_bytes (not used in
 * FLAT mode) and the compute in cost (forward_s for the whole forward,
 * backward_s[i] for layer i's backward, the backward running from the
 * last layer down; a NULL backward_s is 0). Every allreduce is the ring of
 * chapter 02, whose time section 5 gives, one at a time on the link: an
 * allreduce starts once the previous one is done and its gradients may be
 * reduced (in OVERLAP mode as soon as the backward has produced its
 * bucket, in the other modes once the whole backward is done). The step
 * starts with the forward and ends when the backward and every allreduce
 * are done (the optimizer costs no modeled time).
 * The tests compare *step_s with the formulas and with the modeled clock
 * of a run of your DDP, on configurations the chapter does not work out.
 * DT_ERR_INVALID_ARG (and *step_s untouched) for a NULL argument, K < 1,
 * a mode that is not one of the three, or bucket_bytes 0 outside FLAT. */
dt_result lab_ddp_predict_step(const dt_model *m, lab_ddp_mode mode, int K, size_t bucket_bytes,
                               const lab_ddp_cost *cost, const dt_net *link, double *step_s);

#endif /* LAB_DDP_H */
