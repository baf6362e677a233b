/* stream_ddp.c - lab 15: data parallelism on a device's streams (chapter
 * 15). Your code goes between the fences; the functions outside them are
 * given. */
#include "stream_ddp.h"

#include "dt/optim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

/* A task's GPU body where d runs on the GPU (stream_gpu.h); in a build
 * without it, init refuses LAB_ON_GPU and this is nothing. */
#ifdef DT_HAVE_NCCL
#define ON_GPU(d, call)               \
    do {                              \
        if ((d)->on == LAB_ON_GPU)    \
            return (call);            \
    } while (0)
#else
#define ON_GPU(d, call) ((void)0)
#endif

static void probe(const lab_sddp *d, const char *event, int index)
{
    if (d->probe)
        d->probe(d->probe_arg, event, index);
}

static dt_span layer_params(const dt_model *m, int l, const float *buf)
{
    const dt_layer *ly = &m->layers[l];
    return (dt_span){buf + ly->param_offset, ly->param_count * sizeof(float)};
}

static size_t rows_bytes(const lab_sddp *d, size_t width) { return d->B * width * sizeof(float); }

typedef struct {
    lab_sddp *d;
    const float *x;
    const int32_t *labels;
} forward_arg;

/* Zeroes the gradients, runs every layer forward (stage l reads stage l -
 * 1's output), then the loss on the last. */
static dt_result forward_task(void *p)
{
    forward_arg *a = p;
    lab_sddp *d = a->d;
    dt_model *m = d->model;
    ON_GPU(d, lab_sddp_gpu_forward(d, a->x, a->labels));
    DT_CHECK(dt_model_zero_grads(m));
    for (int l = 0; l < m->num_layers; l++)
        DT_CHECK(dt_model_forward(m, d->acts[l], l ? dt_acts_output(d->acts[l - 1]) : a->x,
                                  NULL));
    return dt_model_loss(m, d->acts[m->num_layers - 1], a->labels, &d->loss, NULL);
}

typedef struct {
    lab_sddp *d;
    int index;
} index_arg;

static dt_result backward_task(void *p)
{
    index_arg *a = p;
    lab_sddp *d = a->d;
    int l = a->index, last = l == d->model->num_layers - 1;
    probe(d, "backward", l);
    ON_GPU(d, lab_sddp_gpu_backward(d, l));
    return dt_model_backward(d->model, d->acts[l], last ? NULL : d->dinp[l + 1],
                             l ? d->dinp[l] : NULL, NULL, NULL);
}

dt_result lab_sddp_enqueue_backward(lab_sddp *d, dt_stream *s, int l)
{
    if (!d || !s || l < 0 || l >= d->model->num_layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_enqueue_backward: %s",
                       !d || !s ? "d or s is NULL" : "no such layer");
    const dt_model *m = d->model;
    int last = l == m->num_layers - 1;
    dt_span reads[2] = {layer_params(m, l, d->params)}, writes[2] = {layer_params(m, l, d->grads)};
    int nr = 1, nw = 1;
    if (!last)
        reads[nr++] = (dt_span){d->dinp[l + 1], rows_bytes(d, m->layers[l].out_width)};
    if (l)
        writes[nw++] = (dt_span){d->dinp[l], rows_bytes(d, m->layers[l].in_width)};
    char what[40];
    snprintf(what, sizeof what, "backward of layer %d", l);
    index_arg a = {d, l};
    return dt_stream_launch(s, what, backward_task, &a, sizeof a, reads, nr, writes, nw);
}

static dt_result allreduce_task(void *p)
{
    index_arg *a = p;
    lab_sddp *d = a->d;
    const lab_sbucket *b = &d->buckets[a->index];
    probe(d, "allreduce", a->index);
    float *g = d->grads + b->offset; /* device memory on the GPU: NCCL's own */
    return dt_allreduce(g, g, b->count, DT_F32, DT_AVG, d->comm);
}

dt_result lab_sddp_enqueue_allreduce(lab_sddp *d, dt_stream *s, int k)
{
    if (!d || !s || k < 0 || k >= d->num_buckets)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_enqueue_allreduce: %s",
                       !d || !s ? "d or s is NULL" : "no such bucket");
    const lab_sbucket *b = &d->buckets[k];
    dt_span g = {d->grads + b->offset, b->count * sizeof(float)};
    char what[40];
    snprintf(what, sizeof what, "allreduce of bucket %d", k);
    index_arg a = {d, k};
    return dt_stream_launch(s, what, allreduce_task, &a, sizeof a, &g, 1, &g, 1);
}

static dt_result update_task(void *p)
{
    lab_sddp *d = *(lab_sddp **)p;
    ON_GPU(d, lab_sddp_gpu_update(d));
    return dt_optim_step(&d->opt, d->params, d->grads);
}

dt_result lab_sddp_enqueue_update(lab_sddp *d, dt_stream *s)
{
    if (!d || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_enqueue_update: d or s is NULL");
    size_t o = d->opt.offset, n = d->opt.count * sizeof(float);
    dt_span g = {d->grads + o, n}, p = {d->params + o, n};
    return dt_stream_launch(s, "sgd update", update_task, &d, sizeof d, &g, 1, &p, 1);
}

static dt_result reduce_scatter_task(void *p)
{
    lab_sddp *d = *(lab_sddp **)p;
    return dt_allreduce_scatter(d->grads, d->model->num_params, DT_F32, DT_AVG, d->comm);
}

dt_result lab_sddp_enqueue_reduce_scatter(lab_sddp *d, dt_stream *s)
{
    if (!d || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_enqueue_reduce_scatter: d or s is NULL");
    dt_span g = {d->grads, d->model->num_params * sizeof(float)};
    return dt_stream_launch(s, "reduce-scatter of the gradients", reduce_scatter_task, &d,
                            sizeof d, &g, 1, &g, 1);
}

static dt_result allgather_task(void *p)
{
    lab_sddp *d = *(lab_sddp **)p;
    return dt_allreduce_gather(d->params, d->model->num_params, DT_F32, d->comm);
}

dt_result lab_sddp_enqueue_allgather(lab_sddp *d, dt_stream *s)
{
    if (!d || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_enqueue_allgather: d or s is NULL");
    dt_span p = {d->params, d->model->num_params * sizeof(float)};
    return dt_stream_launch(s, "allgather of the parameters", allgather_task, &d, sizeof d, &p,
                            1, &p, 1);
}

dt_result lab_sddp_step(lab_sddp *d, const float *x, const int32_t *labels, float *loss)
{
    if (!d || !x || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_step: a NULL argument");
    dt_model *m = d->model;
    size_t n = m->num_params * sizeof(float);
    dt_span all_p = {d->params, n}, all_g = {d->grads, n};
    dt_span in[3] = {{x, rows_bytes(d, m->in_width)}, {labels, d->B * sizeof *labels}};
    forward_arg fa = {d, x, labels};
    /* the forward writes the stages' activations too; only the backward of
     * the same stream reads them, so the spans name the shared buffers */
    in[2] = all_p;
    dt_result r = dt_stream_launch(d->compute, "forward", forward_task, &fa, sizeof fa, in, 3,
                                   &all_g, 1);
    if (d->mode == LAB_SDDP_DDP) {
        if (r == DT_OK)
            r = lab_sddp_backward(d);
        if (r == DT_OK)
            r = lab_sddp_enqueue_update(d, d->compute);
    } else {
        for (int l = m->num_layers - 1; r == DT_OK && l >= 0; l--)
            r = lab_sddp_enqueue_backward(d, d->compute, l);
        if (r == DT_OK)
            r = lab_sddp_zero1_update(d);
    }
    /* whatever failed, both queues are drained before the host goes on */
    dt_result rc = dt_stream_synchronize(d->compute);
    dt_result rm = dt_stream_synchronize(d->comm_stream);
    if (r == DT_OK)
        r = rc != DT_OK ? rc : rm;
    if (r == DT_OK && loss)
        *loss = d->loss;
    return r;
}

void lab_sddp_free(lab_sddp *d)
{
    if (!d)
        return;
    dt_stream_destroy(d->compute);
    dt_stream_destroy(d->comm_stream);
#ifdef DT_HAVE_NCCL
    if (d->gpu)
        lab_sddp_gpu_free(d); /* and the device's dinp, set NULL */
#endif
    for (int k = 0; d->buckets && k < d->num_buckets; k++) {
        dt_event_destroy(d->buckets[k].ready);
        dt_event_destroy(d->buckets[k].reduced);
    }
    free(d->buckets);
    for (int i = 0; i < 4; i++)
        dt_event_destroy(d->ev[i]);
    dt_optim_free(&d->opt);
    for (int l = 0; d->model && l < d->model->num_layers; l++) {
        if (d->acts)
            dt_acts_free(d->acts[l]);
        if (d->dinp)
            free(d->dinp[l]);
    }
    free(d->acts);
    free(d->dinp);
    dt_device_destroy(d->dev);
    memset(d, 0, sizeof *d);
}

dt_result lab_sddp_download(lab_sddp *d)
{
    if (!d || !d->model)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_download: d is NULL or freed");
    ON_GPU(d, lab_sddp_gpu_download(d));
    return DT_OK;
}

dt_result lab_sddp_init(lab_sddp *d, dt_comm *comm, dt_model *m, lab_sddp_mode mode, size_t B,
                        size_t bucket_bytes, float lr)
{
    return lab_sddp_init_on(d, LAB_ON_HOST, comm, m, mode, B, bucket_bytes, lr);
}

dt_result lab_sddp_init_on(lab_sddp *d, lab_device_kind on, dt_comm *comm, dt_model *m,
                           lab_sddp_mode mode, size_t B, size_t bucket_bytes, float lr)
{
    if (!d || !comm || !m || !m->grads || B == 0 || m->kind != DT_MODEL_MLP ||
        (mode != LAB_SDDP_DDP && mode != LAB_SDDP_ZERO1) || (on != LAB_ON_HOST && on != LAB_ON_GPU))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_init: %s",
                       !d || !comm || !m ? "a NULL argument" : !m->grads ? "the model has no "
                       "gradients" : B == 0 ? "B is 0" : m->kind != DT_MODEL_MLP ?
                       "the model is not an MLP" : on != LAB_ON_HOST && on != LAB_ON_GPU ?
                       "no such device kind" : "no such mode");
#ifndef DT_HAVE_NCCL
    if (on == LAB_ON_GPU)
        return dt_fail(DT_ERR_UNSUPPORTED, "lab_sddp_init: LAB_ON_GPU needs make gpu's build "
                       "(CUDA and NCCL); this one has the host device only");
#endif
    memset(d, 0, sizeof *d);
    d->comm = comm, d->model = m, d->mode = mode, d->B = B, d->lr = lr, d->on = on;
    d->params = m->params, d->grads = m->grads;
    dt_result r = dt_broadcast(m->params, m->params, m->num_params, DT_F32, 0, comm);
    if (r == DT_OK)
        r = dt_device_create(&d->dev, 0);
    if (r == DT_OK)
        r = dt_stream_create(d->dev, "compute", &d->compute);
    if (r == DT_OK)
        r = dt_stream_create(d->dev, "comm", &d->comm_stream);
    int L = m->num_layers;
    d->acts = calloc((size_t)L, sizeof *d->acts);
    d->dinp = calloc((size_t)L, sizeof *d->dinp);
    if (r == DT_OK && (!d->acts || !d->dinp))
        r = dt_fail(DT_ERR_NOMEM, "lab_sddp_init: no memory");
    for (int l = 0; r == DT_OK && on == LAB_ON_HOST && l < L; l++) {
        r = dt_acts_create(&d->acts[l], m, l, l + 1, B, 1);
        if (r == DT_OK && l && !(d->dinp[l] = calloc(B * m->layers[l].in_width, sizeof(float))))
            r = dt_fail(DT_ERR_NOMEM, "lab_sddp_init: no memory");
    }
    if (r == DT_OK && mode == LAB_SDDP_DDP)
        r = lab_sddp_make_buckets(m, bucket_bytes, &d->buckets, &d->num_buckets);
    d->shard_count = m->num_params;
    if (r == DT_OK && mode == LAB_SDDP_ZERO1)
        r = lab_sddp_zero1_shard(m->num_params, dt_comm_size(comm), dt_comm_rank(comm),
                                 &d->shard_offset, &d->shard_count);
    if (r == DT_OK && (d->shard_offset > m->num_params ||
                       d->shard_count > m->num_params - d->shard_offset))
        r = dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_init: the shard [%zu, +%zu) is outside the "
                    "%zu parameters", d->shard_offset, d->shard_count, m->num_params);
    dt_optim_config cfg = dt_sgd_config(lr, 0.9f, 0);
    if (r == DT_OK)
        r = dt_optim_init(&d->opt, &cfg, d->shard_offset, d->shard_count);
    for (int i = 0; r == DT_OK && i < 4; i++)
        r = dt_event_create(d->dev, &d->ev[i]);
    for (int k = 0; r == DT_OK && k < d->num_buckets; k++) {
        r = dt_event_create(d->dev, &d->buckets[k].ready);
        if (r == DT_OK)
            r = dt_event_create(d->dev, &d->buckets[k].reduced);
    }
#ifdef DT_HAVE_NCCL
    if (r == DT_OK && on == LAB_ON_GPU)
        r = lab_sddp_gpu_init(d);
#endif
    if (r != DT_OK)
        lab_sddp_free(d);
    return r;
}

/* ================================================================ task 1 */

dt_result lab_sddp_make_buckets(const dt_model *m, size_t bucket_bytes, lab_sbucket **out,
                                int *num)
{
    /* BEGIN STUDENT CODE */
    if (!m || !out || !num || bucket_bytes == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_make_buckets: %s",
                       bucket_bytes == 0 ? "bucket_bytes is 0" : "a NULL argument");
    lab_sbucket *b = calloc((size_t)m->num_layers, sizeof *b);
    if (!b)
        return dt_fail(DT_ERR_NOMEM, "lab_sddp_make_buckets: no memory");
    int n = 0;
    for (int l = m->num_layers - 1; l >= 0; l--) {
        lab_sbucket *o = &b[n];
        if (o->count == 0)
            o->last_layer = l + 1;
        /* layers are laid out in order: walking down, the range grows to the left */
        o->first_layer = l;
        o->offset = m->layers[l].param_offset;
        o->count += m->layers[l].param_count;
        if (o->count * sizeof(float) >= bucket_bytes || l == 0)
            n++;
    }
    *out = b, *num = n;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_sddp_backward(lab_sddp *d)
{
    /* BEGIN STUDENT CODE */
    if (!d || d->num_buckets < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_backward: no buckets");
    for (int k = 0; k < d->num_buckets; k++) {
        lab_sbucket *b = &d->buckets[k];
        for (int l = b->last_layer - 1; l >= b->first_layer; l--)
            DT_CHECK(lab_sddp_enqueue_backward(d, d->compute, l));
        /* the bucket's gradients are complete at this point of the compute
         * stream: the allreduce waits for exactly that, not for the rest */
        DT_CHECK(dt_event_record(b->ready, d->compute));
        DT_CHECK(dt_stream_wait_event(d->comm_stream, b->ready));
        DT_CHECK(lab_sddp_enqueue_allreduce(d, d->comm_stream, k));
        DT_CHECK(dt_event_record(b->reduced, d->comm_stream));
    }
    /* the comm stream runs in order: its last bucket done means all done */
    return dt_stream_wait_event(d->compute, d->buckets[d->num_buckets - 1].reduced);
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_sddp_zero1_shard(size_t count, int K, int rank, size_t *offset,
                               size_t *shard_count)
{
    /* BEGIN STUDENT CODE */
    if (K < 1 || rank < 0 || rank >= K || !offset || !shard_count)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_zero1_shard: %s",
                       K < 1 ? "K < 1" : rank < 0 || rank >= K ? "rank outside [0, K)"
                       : "a NULL pointer");
    /* the collective's own cut: the block it leaves reduced is the one to update */
    dt_block(count, K, rank, offset, shard_count);
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_sddp_zero1_update(lab_sddp *d)
{
    /* BEGIN STUDENT CODE */
    if (!d)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sddp_zero1_update: d is NULL");
    /* compute -> comm -> compute -> comm -> compute: each hand-over an event */
    DT_CHECK(dt_event_record(d->ev[0], d->compute));
    DT_CHECK(dt_stream_wait_event(d->comm_stream, d->ev[0]));
    DT_CHECK(lab_sddp_enqueue_reduce_scatter(d, d->comm_stream));
    DT_CHECK(dt_event_record(d->ev[1], d->comm_stream));
    DT_CHECK(dt_stream_wait_event(d->compute, d->ev[1]));
    DT_CHECK(lab_sddp_enqueue_update(d, d->compute));
    DT_CHECK(dt_event_record(d->ev[2], d->compute));
    DT_CHECK(dt_stream_wait_event(d->comm_stream, d->ev[2]));
    DT_CHECK(lab_sddp_enqueue_allgather(d, d->comm_stream));
    DT_CHECK(dt_event_record(d->ev[3], d->comm_stream));
    return dt_stream_wait_event(d->compute, d->ev[3]);
    /* END STUDENT CODE */
}
