/* stream_ddp.h - lab 15: data parallelism on a device's streams, the way
 * it runs on a GPU. Read chapters/15-capstone-gpu.md first (sections 2,
 * 3 and 9).
 *
 * Lab 03 overlapped the gradients' allreduces with the backward through
 * requests (dt_iallreduce). On a GPU, work is not called but ENQUEUED on
 * streams (dt/stream.h): the backward's kernels on a COMPUTE stream, the
 * bucket allreduces on a COMMUNICATION stream, and events say which work
 * must wait for which. Here the device is the host one of dt/stream.h:
 * each stream a thread, the kernels the library's CPU layers, and a race
 * check that refuses, at enqueue, any access that no event orders.
 *
 * A step of the given code (lab_sddp_step), all enqueued on d->compute
 * but for what your code puts on d->comm_stream:
 *     forward    the gradients zeroed, every layer's forward, the loss
 *   DDP:
 *     backward   lab_sddp_backward (task 2): every layer's backward, last
 *                to first, and each bucket's allreduce (mean over the
 *                ranks) as soon as its gradients are complete
 *     update     SGD with momentum over the whole flat buffer
 *   ZeRO-1:
 *     backward   every layer's backward, last to first
 *     update     lab_sddp_zero1_update (task 4): the mean gradient of this
 *                rank's shard, SGD on the shard only (its momentum is all
 *                the optimizer state this rank holds), the parameters
 *                whole again on every rank
 * then the host synchronizes both streams.
 *
 * The tasks, in order:
 *   1. lab_sddp_make_buckets   the buckets, last layers first (chapter 03,
 *                              section 6, as in lab 03)
 *   2. lab_sddp_backward       the backward and the allreduces, overlapped
 *                              (chapter 15, sections 3 and 9)
 *   3. lab_sddp_zero1_shard    this rank's shard (chapter 08, section 6;
 *                              the cut of chapter 02)
 *   4. lab_sddp_zero1_update   ZeRO-1's update on the two streams (chapter
 *                              08, section 4; chapter 15, section 9)
 * Tasks 5 and 6, the tensor-parallel MLP, are in stream_tp.h. */
#ifndef LAB_STREAM_DDP_H
#define LAB_STREAM_DDP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"
#include "dt/optim.h"
#include "dt/stream.h"
#include "stream_gpu.h"

/* A bucket: the gradients of layers [first_layer, last_layer), the
 * contiguous floats grads[offset .. offset + count). */
typedef struct {
    int first_layer, last_layer;
    size_t offset, count;
    dt_event *ready;    /* for you to record and wait on (task 2); created by init */
    dt_event *reduced;  /* the same */
} lab_sbucket;

typedef enum { LAB_SDDP_DDP = 0, LAB_SDDP_ZERO1 } lab_sddp_mode;

/* Called on a stream's thread as a task starts: event "backward" (index: the
 * layer) or "allreduce" (index: the bucket). It may block (the tests use it
 * to observe the order of the two streams' work). */
typedef void (*lab_sddp_probe)(void *arg, const char *event, int index);

struct lab_sddp_gpu;          /* the GPU's buffers (stream_gpu.c) */

typedef struct {
    dt_comm *comm;
    dt_model *model;          /* not owned */
    lab_sddp_mode mode;
    lab_device_kind on;       /* where the task bodies run (stream_gpu.h) */
    float *params, *grads;    /* the buffers the streams work on: the model's
                                 (host), or their device copies (GPU) */
    struct lab_sddp_gpu *gpu; /* NULL on the host */
    dt_device *dev;
    dt_stream *compute;       /* the backward's stream */
    dt_stream *comm_stream;   /* the allreduces' stream */
    size_t B;                 /* rows per step */
    float lr;
    dt_acts **acts;           /* one stage per layer: acts[l] runs layer l alone (host) */
    float **dinp;             /* dinp[l]: the gradient w.r.t. layer l's input (l > 0;
                                 device memory on the GPU) */
    int num_buckets;
    lab_sbucket *buckets;     /* buckets[0] holds the LAST layers */
    size_t shard_offset;      /* ZeRO-1: this rank's shard, floats [shard_offset, */
    size_t shard_count;       /*   + shard_count) of the flat buffers (task 3) */
    dt_optimizer opt;         /* SGD with momentum over [0, num_params) (DDP) or the
                                 shard (ZeRO-1) */
    dt_event *ev[4];          /* four events for your ZeRO-1 update (task 4) */
    float loss;               /* the last step's mean loss on this rank */
    lab_sddp_probe probe;     /* may be NULL */
    void *probe_arg;
} lab_sddp;

/* ------------------------------------------------------------ given code */

/* Sets d up for model m (an MLP) on comm: the parameters broadcast from
 * rank 0, a device with its two streams, the stages of B rows, and SGD
 * with learning rate lr and momentum 0.9; DDP: the buckets of
 * bucket_bytes (task 1) and their events; ZeRO-1: this rank's shard (task
 * 3), the optimizer over it only. On failure d is left freed. Collective. */
dt_result lab_sddp_init(lab_sddp *d, dt_comm *comm, dt_model *m, lab_sddp_mode mode, size_t B,
                        size_t bucket_bytes, float lr);
/* The same on the device `on` (lab_sddp_init: LAB_ON_HOST). LAB_ON_GPU
 * needs make gpu's build and comm on the nccl backend; the model's host
 * buffers then hold the start only, until lab_sddp_download. */
dt_result lab_sddp_init_on(lab_sddp *d, lab_device_kind on, dt_comm *comm, dt_model *m,
                           lab_sddp_mode mode, size_t B, size_t bucket_bytes, float lr);
void lab_sddp_free(lab_sddp *d);
/* On the GPU: model->params and model->grads from the device (the last
 * step's); on the host: nothing to do. */
dt_result lab_sddp_download(lab_sddp *d);

/* One step on this rank's B rows x (the model's input width) and labels;
 * *loss (may be NULL): this rank's mean loss. Collective. */
dt_result lab_sddp_step(lab_sddp *d, const float *x, const int32_t *labels, float *loss);

/* Enqueues the backward of layer l on stream s: it ACCUMULATES layer l's
 * parameter gradients and writes dinp[l] (l > 0), reading dinp[l + 1]
 * (the loss's gradient for the last layer). */
dt_result lab_sddp_enqueue_backward(lab_sddp *d, dt_stream *s, int l);

/* Enqueues on stream s the allreduce (mean over the ranks, in place) of
 * bucket k's gradients. */
dt_result lab_sddp_enqueue_allreduce(lab_sddp *d, dt_stream *s, int k);

/* ZeRO-1's three steps, each enqueued on stream s:
 *   reduce-scatter  dt_allreduce_scatter of the whole gradient buffer (mean):
 *                   the shard's floats of model->grads become the mean
 *                   gradient (the other floats are left undefined)
 *   update          d->opt's step on the shard: model->params' shard floats
 *                   from model->grads' (DDP: the whole buffers)
 *   allgather       dt_allreduce_gather of the parameters: every rank's
 *                   shard to every rank */
dt_result lab_sddp_enqueue_reduce_scatter(lab_sddp *d, dt_stream *s);
dt_result lab_sddp_enqueue_update(lab_sddp *d, dt_stream *s);
dt_result lab_sddp_enqueue_allgather(lab_sddp *d, dt_stream *s);

#ifdef DT_HAVE_NCCL
/* The GPU's task bodies (stream_gpu.c), each run on a stream's thread:
 * gpu_init after the host's setup (broadcast, streams, shard), then the
 * forward (the gradients zeroed, the layers, the loss and its gradient),
 * layer l's backward, the update of d->opt's range, the download. */
dt_result lab_sddp_gpu_init(lab_sddp *d);
void lab_sddp_gpu_free(lab_sddp *d);
dt_result lab_sddp_gpu_forward(lab_sddp *d, const float *x, const int32_t *labels);
dt_result lab_sddp_gpu_backward(lab_sddp *d, int l);
dt_result lab_sddp_gpu_update(lab_sddp *d);
dt_result lab_sddp_gpu_download(lab_sddp *d);
#endif

/* ------------------------------------------------------------ task 1 */

/* Groups m's layers into buckets: walking from the LAST layer to the
 * first, each layer's parameters join the open bucket; a bucket closes as
 * soon as it holds at least bucket_bytes bytes of gradients (4 bytes per
 * parameter); the last takes what is left. Writes a calloc'ed array of
 * *num buckets (events NULL) to *out. bucket_bytes 0 or a NULL argument is
 * DT_ERR_INVALID_ARG. */
dt_result lab_sddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_sbucket **out,
                                int *num);

/* ------------------------------------------------------------ task 2 */

/* Enqueues the step's backward and its gradient allreduces. Postcondition,
 * once the streams have run it: every rank's model->grads holds the mean
 * over the ranks of their gradients, and whatever d->compute runs after
 * it (the update) sees them. Each bucket's allreduce runs on
 * d->comm_stream, in bucket order, and may start as soon as the backward
 * of its layers has run, while the compute stream goes on with the
 * earlier layers. The race check refuses any access that no event
 * orders. */
dt_result lab_sddp_backward(lab_sddp *d);

/* ------------------------------------------------------------ task 3 */

/* The floats [*offset, *offset + *count) of a flat buffer of `count`
 * floats that rank `rank` of K owns: the block that dt_allreduce_scatter
 * leaves reduced on it (comm.h). K < 1, a rank outside [0, K) or a NULL
 * pointer is DT_ERR_INVALID_ARG. */
dt_result lab_sddp_zero1_shard(size_t count, int K, int rank, size_t *offset,
                               size_t *shard_count);

/* ------------------------------------------------------------ task 4 */

/* Enqueues ZeRO-1's update, after the backward the given step enqueued
 * on d->compute. Postcondition, once the streams have run it: every
 * rank's model->params equal DDP's after the same step (bit for bit: the
 * same sums), each rank having updated only its shard; the update runs on
 * d->compute, the two collectives on d->comm_stream. The race check
 * refuses any access that no event orders. */
dt_result lab_sddp_zero1_update(lab_sddp *d);

#endif /* LAB_STREAM_DDP_H */
