/* stream_tp.c - lab 15: the tensor-parallel MLP on two streams (chapter 15,
 * section 9; chapter 07, section 3). Your code goes between the fences;
 * the functions outside them are given. The layers are the library's
 * (dt/nn.h): one implementation of each. */
#include "stream_tp.h"

#include "dt/nn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

/* A task's GPU body where p runs on the GPU (stream_gpu.h); in a build
 * without it, init refuses LAB_ON_GPU and this is nothing. */
#ifdef DT_HAVE_NCCL
#define ON_GPU(p, call)               \
    do {                              \
        if ((p)->on == LAB_ON_GPU)    \
            return (call);            \
    } while (0)
#else
#define ON_GPU(p, call) ((void)0)
#endif

static void probe(const lab_stp *p, const char *event, int index)
{
    if (p->probe)
        p->probe(p->probe_arg, event, index);
}

static dt_span span(const void *ptr, size_t floats) { return (dt_span){ptr, floats * sizeof(float)}; }

typedef struct {
    lab_stp *p;
    const float *in;
    float *out;
    size_t count;
    int index;
} tp_arg;

static dt_result fc_task(void *a_)
{
    tp_arg *a = a_;
    lab_stp *p = a->p;
    ON_GPU(p, lab_stp_gpu_fc(p, a->in));
    DT_CHECK(dt_linear_forward(p->fch, a->in, p->fc_w, p->fc_b, p->N, p->C, p->Hl));
    return dt_gelu_forward(p->fchg, p->fch, p->N * p->Hl);
}

dt_result lab_stp_enqueue_fc(lab_stp *p, dt_stream *s, const float *x)
{
    if (!p || !s || !x)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_fc: a NULL argument");
    dt_span r[3] = {span(x, p->N * p->C), span(p->fc_w, p->Hl * p->C), span(p->fc_b, p->Hl)};
    dt_span w[2] = {span(p->fch, p->N * p->Hl), span(p->fchg, p->N * p->Hl)};
    tp_arg a = {p, x, NULL, 0, 0};
    return dt_stream_launch(s, "fc", fc_task, &a, sizeof a, r, 3, w, 2);
}

static dt_result mproj_task(void *a_)
{
    tp_arg *a = a_;
    lab_stp *p = a->p;
    ON_GPU(p, lab_stp_gpu_mproj(p, a->out));
    /* the replicated bias once: added by rank 0's part, the sum has it once */
    const float *b = dt_comm_rank(p->tp) == 0 ? p->mproj_b : NULL;
    return dt_linear_forward(a->out, p->fchg, p->mproj_w, b, p->N, p->Hl, p->C);
}

dt_result lab_stp_enqueue_mproj(lab_stp *p, dt_stream *s, float *y)
{
    if (!p || !s || !y)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_mproj: a NULL argument");
    dt_span r[3] = {span(p->fchg, p->N * p->Hl), span(p->mproj_w, p->C * p->Hl),
                    span(p->mproj_b, p->C)};
    dt_span w = span(y, p->N * p->C);
    tp_arg a = {p, NULL, y, 0, 0};
    return dt_stream_launch(s, "mproj", mproj_task, &a, sizeof a, r, 3, &w, 1);
}

static dt_result allreduce_task(void *a_)
{
    tp_arg *a = a_;
    probe(a->p, "allreduce", a->index);
    return dt_allreduce(a->out, a->out, a->count, DT_F32, DT_SUM, a->p->tp);
}

dt_result lab_stp_enqueue_allreduce(lab_stp *p, dt_stream *s, float *buf, size_t count,
                                    int index)
{
    if (!p || !s || !buf)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_allreduce: a NULL argument");
    dt_span b = span(buf, count);
    char what[40];
    snprintf(what, sizeof what, "allreduce %d", index);
    tp_arg a = {p, NULL, buf, count, index};
    return dt_stream_launch(s, what, allreduce_task, &a, sizeof a, &b, 1, &b, 1);
}

static dt_result mproj_backward_task(void *a_)
{
    tp_arg *a = a_;
    lab_stp *p = a->p;
    ON_GPU(p, lab_stp_gpu_mproj_backward(p, a->in));
    size_t n = p->N * p->Hl;
    memset(p->dfchg, 0, n * sizeof(float));
    memset(p->dfch, 0, n * sizeof(float));
    DT_CHECK(dt_linear_backward(p->dfchg, p->dmproj_w, p->dmproj_b, a->in, p->fchg, p->mproj_w,
                                p->N, p->Hl, p->C));
    return dt_gelu_backward(p->dfch, p->dfchg, p->fch, n);
}

dt_result lab_stp_enqueue_mproj_backward(lab_stp *p, dt_stream *s, const float *dy)
{
    if (!p || !s || !dy)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_mproj_backward: a NULL argument");
    size_t n = p->N * p->Hl;
    dt_span r[4] = {span(dy, p->N * p->C), span(p->fchg, n), span(p->fch, n),
                    span(p->mproj_w, p->C * p->Hl)};
    dt_span w[4] = {span(p->dfchg, n), span(p->dfch, n), span(p->dmproj_w, p->C * p->Hl),
                    span(p->dmproj_b, p->C)};
    tp_arg a = {p, dy, NULL, 0, 0};
    return dt_stream_launch(s, "mproj backward", mproj_backward_task, &a, sizeof a, r, 4, w, 4);
}

static dt_result fc_input_grad_task(void *a_)
{
    tp_arg *a = a_;
    lab_stp *p = a->p;
    ON_GPU(p, lab_stp_gpu_fc_input_grad(p, a->out));
    memset(a->out, 0, p->N * p->C * sizeof(float));
    /* no weight gradient here: the input (fchg stands in) is not read */
    return dt_linear_backward(a->out, NULL, NULL, p->dfch, p->fchg, p->fc_w, p->N, p->C, p->Hl);
}

dt_result lab_stp_enqueue_fc_input_grad(lab_stp *p, dt_stream *s, float *dx)
{
    if (!p || !s || !dx)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_fc_input_grad: a NULL argument");
    dt_span r[2] = {span(p->dfch, p->N * p->Hl), span(p->fc_w, p->Hl * p->C)};
    dt_span w = span(dx, p->N * p->C);
    tp_arg a = {p, NULL, dx, 0, 0};
    return dt_stream_launch(s, "fc input grad", fc_input_grad_task, &a, sizeof a, r, 2, &w, 1);
}

static dt_result fc_weight_grad_task(void *a_)
{
    tp_arg *a = a_;
    lab_stp *p = a->p;
    probe(p, "fc weight grad", 0);
    ON_GPU(p, lab_stp_gpu_fc_weight_grad(p, a->in));
    return dt_linear_backward(NULL, p->dfc_w, p->dfc_b, p->dfch, a->in, p->fc_w, p->N, p->C,
                              p->Hl);
}

dt_result lab_stp_enqueue_fc_weight_grad(lab_stp *p, dt_stream *s, const float *x)
{
    if (!p || !s || !x)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_enqueue_fc_weight_grad: a NULL argument");
    dt_span r[2] = {span(p->dfch, p->N * p->Hl), span(x, p->N * p->C)};
    dt_span w[2] = {span(p->dfc_w, p->Hl * p->C), span(p->dfc_b, p->Hl)};
    tp_arg a = {p, x, NULL, 0, 0};
    return dt_stream_launch(s, "fc weight grad", fc_weight_grad_task, &a, sizeof a, r, 2, w, 2);
}

void lab_stp_free(lab_stp *p)
{
    if (!p)
        return;
    dt_stream_destroy(p->compute);
    dt_stream_destroy(p->comm_stream);
    for (int i = 0; i < 4; i++)
        dt_event_destroy(p->ev[i]);
#ifdef DT_HAVE_NCCL
    if (p->on == LAB_ON_GPU)
        lab_stp_gpu_free(p); /* the four buffers, set NULL */
#endif
    free(p->fch), free(p->fchg), free(p->dfchg), free(p->dfch);
    dt_device_destroy(p->dev);
    memset(p, 0, sizeof *p);
}

dt_result lab_stp_init(lab_stp *p, dt_comm *tp, size_t N, size_t C, size_t Hl,
                       const float *fc_w, const float *fc_b, const float *mproj_w,
                       const float *mproj_b, float *dfc_w, float *dfc_b, float *dmproj_w,
                       float *dmproj_b)
{
    return lab_stp_init_on(p, LAB_ON_HOST, tp, N, C, Hl, fc_w, fc_b, mproj_w, mproj_b, dfc_w,
                           dfc_b, dmproj_w, dmproj_b);
}

dt_result lab_stp_init_on(lab_stp *p, lab_device_kind on, dt_comm *tp, size_t N, size_t C,
                          size_t Hl, const float *fc_w, const float *fc_b, const float *mproj_w,
                          const float *mproj_b, float *dfc_w, float *dfc_b, float *dmproj_w,
                          float *dmproj_b)
{
    if (!p || !tp || !fc_w || !fc_b || !mproj_w || !mproj_b || !dfc_w || !dfc_b || !dmproj_w ||
        !dmproj_b || !N || !C || !Hl || (on != LAB_ON_HOST && on != LAB_ON_GPU))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_init: %s",
                       on != LAB_ON_HOST && on != LAB_ON_GPU ? "no such device kind"
                                                             : "a NULL argument or a size 0");
#ifndef DT_HAVE_NCCL
    if (on == LAB_ON_GPU)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_stp_init: LAB_ON_GPU needs make gpu's build "
                       "(CUDA and NCCL); this one has the host device only");
#endif
    memset(p, 0, sizeof *p);
    *p = (lab_stp){.tp = tp, .on = on, .N = N, .C = C, .Hl = Hl, .fc_w = fc_w, .fc_b = fc_b,
                   .mproj_w = mproj_w, .mproj_b = mproj_b, .dfc_w = dfc_w, .dfc_b = dfc_b,
                   .dmproj_w = dmproj_w, .dmproj_b = dmproj_b};
    dt_result r = dt_device_create(&p->dev, 0);
    if (r == DT_OK)
        r = dt_stream_create(p->dev, "compute", &p->compute);
    if (r == DT_OK)
        r = dt_stream_create(p->dev, "comm", &p->comm_stream);
    for (int i = 0; r == DT_OK && i < 4; i++)
        r = dt_event_create(p->dev, &p->ev[i]);
#ifdef DT_HAVE_NCCL
    if (r == DT_OK && on == LAB_ON_GPU)
        r = lab_stp_gpu_alloc(p);
#endif
    float **bufs[4] = {&p->fch, &p->fchg, &p->dfchg, &p->dfch};
    for (int i = 0; r == DT_OK && on == LAB_ON_HOST && i < 4; i++)
        if (!(*bufs[i] = calloc(N * Hl, sizeof(float))))
            r = dt_fail(DT_ERR_NOMEM, "lab_stp_init: no memory");
    if (r != DT_OK)
        lab_stp_free(p);
    return r;
}

/* ================================================================ task 5 */

dt_result lab_stp_forward(lab_stp *p, const float *x, float *y)
{
    /* BEGIN STUDENT CODE */
    if (!p || !x || !y)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_forward: a NULL argument");
    DT_CHECK(lab_stp_enqueue_fc(p, p->compute, x));
    DT_CHECK(lab_stp_enqueue_mproj(p, p->compute, y));
    /* g's forward: the parts summed where the communication runs */
    DT_CHECK(dt_event_record(p->ev[0], p->compute));
    DT_CHECK(dt_stream_wait_event(p->comm_stream, p->ev[0]));
    DT_CHECK(lab_stp_enqueue_allreduce(p, p->comm_stream, y, p->N * p->C, 0));
    DT_CHECK(dt_event_record(p->ev[1], p->comm_stream));
    return dt_stream_wait_event(p->compute, p->ev[1]);
    /* END STUDENT CODE */
}

/* ================================================================ task 6 */

dt_result lab_stp_backward(lab_stp *p, const float *x, const float *dy, float *dx)
{
    /* BEGIN STUDENT CODE */
    if (!p || !x || !dy || !dx)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_stp_backward: a NULL argument");
    DT_CHECK(lab_stp_enqueue_mproj_backward(p, p->compute, dy));
    DT_CHECK(lab_stp_enqueue_fc_input_grad(p, p->compute, dx));
    /* f's backward on the comm stream, while the compute stream goes on
     * with fc's weight gradient, which needs dfch but not dx */
    DT_CHECK(dt_event_record(p->ev[2], p->compute));
    DT_CHECK(dt_stream_wait_event(p->comm_stream, p->ev[2]));
    DT_CHECK(lab_stp_enqueue_allreduce(p, p->comm_stream, dx, p->N * p->C, 1));
    DT_CHECK(dt_event_record(p->ev[3], p->comm_stream));
    DT_CHECK(lab_stp_enqueue_fc_weight_grad(p, p->compute, x));
    return dt_stream_wait_event(p->compute, p->ev[3]);
    /* END STUDENT CODE */
}
