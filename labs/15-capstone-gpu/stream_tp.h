/* stream_tp.h - lab 15: the tensor-parallel MLP of chapter 07 on a
 * device's two streams. Read chapters/15-capstone-gpu.md, section 9, and
 * chapter 07, section 3.
 *
 * The MLP y = mproj(gelu(fc(x))) + mproj_b over the t ranks of tp: fc
 * column-parallel (this rank's Hl = H/t rows of fc_w and entries of fc_b),
 * mproj row-parallel (this rank's Hl columns of mproj_w; mproj_b
 * replicated). Each direction has one allreduce (chapter 07's g forward,
 * f backward); here it runs on the communication stream, the layers'
 * products on the compute stream, and events order them.
 *
 * The backward has work that needs no allreduce: fc's weight gradient
 * (dfc_w += dfch^T x) does not depend on dx. On a GPU it runs while dx's
 * allreduce is in flight (Megatron-LM's overlap of the input gradient's
 * allreduce with the weight gradient's product); so here.
 *
 * The tasks:
 *   5. lab_stp_forward    y on every rank
 *   6. lab_stp_backward   dx on every rank and this rank's parameter
 *                         gradients, dx's allreduce overlapped with fc's
 *                         weight gradient */
#ifndef LAB_STREAM_TP_H
#define LAB_STREAM_TP_H

#include "dt/comm.h"
#include "dt/core.h"
#include "dt/stream.h"
#include "stream_gpu.h"

/* Called on a stream's thread as a task starts: "allreduce" (index 0: y's,
 * 1: dx's) or "fc weight grad" (index 0). It may block. */
typedef void (*lab_stp_probe)(void *arg, const char *event, int index);

typedef struct {
    dt_comm *tp;
    lab_device_kind on;          /* where the task bodies run (stream_gpu.h) */
    int gpu_device;              /* on the GPU: the rank's, current on init's thread */
    dt_device *dev;
    dt_stream *compute, *comm_stream;
    size_t N, C, Hl;             /* rows, the model's width, this rank's hidden width */
    const float *fc_w, *fc_b;    /* (Hl, C), (Hl): this rank's rows (not owned) */
    const float *mproj_w;        /* (C, Hl): this rank's columns of (C, H) */
    const float *mproj_b;        /* (C), replicated */
    float *dfc_w, *dfc_b, *dmproj_w, *dmproj_b;  /* the same shapes, += (not owned) */
    float *fch, *fchg;           /* (N, Hl): fc's output before and after GELU
                                    (device memory on the GPU, as the four below) */
    float *dfchg, *dfch;         /* (N, Hl): their gradients */
    dt_event *ev[4];             /* four events for your tasks */
    lab_stp_probe probe;         /* may be NULL */
    void *probe_arg;
} lab_stp;

/* ------------------------------------------------------------ given code */

/* A device with its two streams, the buffers and events, for this rank's
 * slices of an MLP of width C and hidden width Hl t on tp. The weights and
 * gradients are the caller's and must outlive p. On failure p is left
 * freed. */
dt_result lab_stp_init(lab_stp *p, dt_comm *tp, size_t N, size_t C, size_t Hl,
                       const float *fc_w, const float *fc_b, const float *mproj_w,
                       const float *mproj_b, float *dfc_w, float *dfc_b, float *dmproj_w,
                       float *dmproj_b);
/* The same on the device `on` (lab_stp_init: LAB_ON_HOST). LAB_ON_GPU
 * needs make gpu's build and tp on the nccl backend; then every buffer
 * given here and to the calls below is device memory (gpu.h). */
dt_result lab_stp_init_on(lab_stp *p, lab_device_kind on, dt_comm *tp, size_t N, size_t C,
                          size_t Hl, const float *fc_w, const float *fc_b, const float *mproj_w,
                          const float *mproj_b, float *dfc_w, float *dfc_b, float *dmproj_w,
                          float *dmproj_b);
void lab_stp_free(lab_stp *p);

#ifdef DT_HAVE_NCCL
/* The GPU's task bodies (stream_gpu.c), each the piece of the same name
 * below on device buffers; alloc/free: the four (N, Hl) buffers. */
dt_result lab_stp_gpu_alloc(lab_stp *p);
void lab_stp_gpu_free(lab_stp *p);
dt_result lab_stp_gpu_fc(lab_stp *p, const float *x);
dt_result lab_stp_gpu_mproj(lab_stp *p, float *y);
dt_result lab_stp_gpu_mproj_backward(lab_stp *p, const float *dy);
dt_result lab_stp_gpu_fc_input_grad(lab_stp *p, float *dx);
dt_result lab_stp_gpu_fc_weight_grad(lab_stp *p, const float *x);
#endif

/* The pieces, each enqueued on stream s:
 *   fc               fch = x fc_w^T + fc_b; fchg = gelu(fch)      x (N, C)
 *   mproj            y = fchg mproj_w^T, + mproj_b on tp's rank 0
 *                    only: this rank's PART of y (N, C)
 *   allreduce        buf (count floats) := its sum over tp's ranks; index
 *                    for the probe
 *   mproj backward   dfchg = dy mproj_w; dmproj_w += dy^T fchg;
 *                    dmproj_b += the column sums of dy; dfch = gelu'(fch)
 *                    dfchg                                         dy (N, C)
 *   fc input grad    dx = dfch fc_w: this rank's PART of dx (N, C)
 *   fc weight grad   dfc_w += dfch^T x; dfc_b += the column sums of dfch */
dt_result lab_stp_enqueue_fc(lab_stp *p, dt_stream *s, const float *x);
dt_result lab_stp_enqueue_mproj(lab_stp *p, dt_stream *s, float *y);
dt_result lab_stp_enqueue_allreduce(lab_stp *p, dt_stream *s, float *buf, size_t count,
                                    int index);
dt_result lab_stp_enqueue_mproj_backward(lab_stp *p, dt_stream *s, const float *dy);
dt_result lab_stp_enqueue_fc_input_grad(lab_stp *p, dt_stream *s, float *dx);
dt_result lab_stp_enqueue_fc_weight_grad(lab_stp *p, dt_stream *s, const float *x);

/* ------------------------------------------------------------ task 5 */

/* Enqueues the forward of x (N, C, the same on every rank). Postcondition,
 * once the streams have run it: y (N, C) is the whole MLP's output on
 * every rank, and whatever p->compute runs after it sees y. The
 * allreduce runs on p->comm_stream. Index 0 for the probe. */
dt_result lab_stp_forward(lab_stp *p, const float *x, float *y);

/* ------------------------------------------------------------ task 6 */

/* Enqueues the backward of dy (N, C, the same on every rank), after the
 * forward of x. Postcondition, once the streams have run it: dx (N, C) is
 * the whole input's gradient on every rank, the four parameter gradients
 * have this rank's parts added, and whatever p->compute runs after it
 * sees all of them. dx's allreduce (index 1) runs on p->comm_stream WHILE
 * fc's weight gradient runs on p->compute. */
dt_result lab_stp_backward(lab_stp *p, const float *x, const float *dy, float *dx);

#endif /* LAB_STREAM_TP_H */
