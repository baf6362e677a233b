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
 *     backward   lab_sddp_backward (task 2): every layer's backward, last
 *                to first, and each bucket's allreduce (mean over the
 *                ranks) as soon as its gradients are complete
 *     update     plain SGD over the whole flat buffer
 * then the host synchronizes both streams.
 *
 * The tasks, in order:
 *   1. lab_sddp_make_buckets   the buckets, last layers first (chapter 03,
 *                              section 6, as in lab 03)
 *   2. lab_sddp_backward       the backward and the allreduces, overlapped
 *                              (chapter 15, sections 3 and 9) */
#ifndef LAB_STREAM_DDP_H
#define LAB_STREAM_DDP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/nn.h"
#include "dt/stream.h"

/* A bucket: the gradients of layers [first_layer, last_layer), the
 * contiguous floats grads[offset .. offset + count). */
typedef struct {
    int first_layer, last_layer;
    size_t offset, count;
    dt_event *ready;    /* for you to record and wait on (task 2); created by init */
    dt_event *reduced;  /* the same */
} lab_sbucket;

/* Called on a stream's thread as a task starts: event "backward" (index: the
 * layer) or "allreduce" (index: the bucket). It may block (the tests use it
 * to observe the order of the two streams' work). */
typedef void (*lab_sddp_probe)(void *arg, const char *event, int index);

typedef struct {
    dt_comm *comm;
    dt_model *model;          /* not owned */
    dt_device *dev;
    dt_stream *compute;       /* the backward's stream */
    dt_stream *comm_stream;   /* the allreduces' stream */
    size_t B;                 /* rows per step */
    float lr;
    dt_acts **acts;           /* one stage per layer: acts[l] runs layer l alone */
    float **dinp;             /* dinp[l]: the gradient w.r.t. layer l's input (l > 0) */
    int num_buckets;
    lab_sbucket *buckets;     /* buckets[0] holds the LAST layers */
    float loss;               /* the last step's mean loss on this rank */
    lab_sddp_probe probe;     /* may be NULL */
    void *probe_arg;
} lab_sddp;

/* ------------------------------------------------------------ given code */

/* Sets d up for model m (an MLP) on comm: the parameters broadcast from
 * rank 0, a device with its two streams, the stages of B rows, the
 * buckets of bucket_bytes (task 1) and their events. On failure d is left
 * freed. Collective. */
dt_result lab_sddp_init(lab_sddp *d, dt_comm *comm, dt_model *m, size_t B, size_t bucket_bytes,
                        float lr);
void lab_sddp_free(lab_sddp *d);

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

#endif /* LAB_STREAM_DDP_H */
