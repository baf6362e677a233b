/* cdp.c - lab 10's given code: compressed data parallelism around the
 * library's training loop. lab_cdp_init makes the buffers each method
 * needs and replaces the trainer's sync by lab_cdp_sync, which calls your
 * lab_sync_* for the method; lab_cdp_step and lab_cdp_train run steps.
 * Nothing here is yours to change. */
#include "compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[LAB_NUM_METHODS] = {"dense", "sign", "topk", "int8",
                                                          "powersgd"};

const char *lab_method_name(lab_method m)
{
    return m >= 0 && m < LAB_NUM_METHODS ? method_names[m] : "?";
}

dt_result lab_method_parse(const char *s, lab_method *out)
{
    for (int m = 0; s && m < LAB_NUM_METHODS; m++)
        if (!strcmp(s, method_names[m])) {
            *out = (lab_method)m;
            return DT_OK;
        }
    return dt_fail(DT_ERR_INVALID_ARG, "method \"%s\": dense, sign, topk, int8 or powersgd",
                   s ? s : "(null)");
}

/* ---------------------------------------------------------------- buffers */

/* count elements of size bytes each, zeroed, under tag (NULL count: none). */
static dt_result buffer(void *out, dt_mem_tag tag, size_t count, size_t size)
{
    void **p = out;
    *p = NULL;
    if (count == 0)
        return DT_OK;
    *p = dt_mem_alloc(tag, count * size);
    return *p ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_cdp_init: %zu bytes", count * size);
}

/* The blocks of chapter 02's ring: the first n % K one element longer. */
static dt_result sign_buffers(lab_cdp *c)
{
    size_t K = (size_t)c->ranks, base = c->n / K, extra = c->n % K;
    c->block_offset = calloc(K, sizeof *c->block_offset);
    c->block_len = calloc(K, sizeof *c->block_len);
    if (!c->block_offset || !c->block_len)
        return dt_fail(DT_ERR_NOMEM, "lab_cdp_init: %zu blocks", K);
    for (size_t b = 0; b < K; b++) {
        c->block_len[b] = base + (b < extra);
        c->block_offset[b] = b * base + (b < extra ? b : extra);
    }
    size_t longest = c->block_len[0] ? c->block_len[0] : 1;
    c->block_bytes = lab_sign_bytes(c->block_len[0]);
    DT_CHECK(buffer(&c->send_blocks, DT_MEM_COMM, K, c->block_bytes));
    DT_CHECK(buffer(&c->recv_blocks, DT_MEM_COMM, K, c->block_bytes));
    DT_CHECK(buffer(&c->block_mean, DT_MEM_COMM, longest, sizeof(float)));
    DT_CHECK(buffer(&c->block_tmp, DT_MEM_COMM, longest, sizeof(float)));
    if (c->cfg.error_feedback)
        DT_CHECK(buffer(&c->server_error, DT_MEM_OPTIM, longest, sizeof(float)));
    return DT_OK;
}

/* PowerSGD's tables: a weight matrix is compressed when its P and Q,
 * (rows + cols) r floats, are fewer than its rows x cols; the rest is
 * plain. Q starts normal(0, 1) from (seed, view), the same on every rank. */
static dt_result powersgd_buffers(lab_cdp *c)
{
    const dt_model *m = c->model;
    size_t r = (size_t)c->cfg.rank, p = 0, q = 0;
    c->lowrank = calloc((size_t)m->num_views, sizeof *c->lowrank);
    c->plain = calloc((size_t)m->num_views, sizeof *c->plain);
    if (!c->lowrank || !c->plain)
        return dt_fail(DT_ERR_NOMEM, "lab_cdp_init: PowerSGD tables");
    for (int i = 0; i < m->num_views; i++) { /* P's first, so that they are contiguous */
        const dt_param_view *w = &m->views[i];
        if (w->ndim == 2 && (w->shape[0] + w->shape[1]) * r < w->count) {
            c->lowrank[c->num_lowrank++] = (lab_lowrank){w->offset, w->shape[0], w->shape[1], p, q};
            p += w->shape[0] * r;
            q += w->shape[1] * r;
        }
    }
    for (int i = 0, j = 0; i < m->num_views; i++) {
        const dt_param_view *w = &m->views[i];
        if (j < c->num_lowrank && c->lowrank[j].offset == w->offset) {
            j++;
            continue;
        }
        c->plain[c->num_plain++] = (lab_plain){w->offset, w->count, p};
        p += w->count;
    }
    c->lr_p_count = p, c->lr_q_count = q;
    DT_CHECK(buffer(&c->lr_p, DT_MEM_COMM, p, sizeof(float)));
    DT_CHECK(buffer(&c->lr_q, DT_MEM_OPTIM, q, sizeof(float)));
    for (int i = 0; i < c->num_lowrank; i++) {
        const lab_lowrank *l = &c->lowrank[i];
        dt_rng rng;
        dt_rng_init(&rng, c->cfg.seed, (uint64_t)i);
        for (size_t j = 0; j < l->cols * r; j++)
            c->lr_q[l->q_offset + j] = dt_rng_normal(&rng);
    }
    return DT_OK;
}

static dt_result method_buffers(lab_cdp *c)
{
    size_t n = c->n;
    if (c->cfg.method == LAB_DENSE)
        return DT_OK;
    if (c->cfg.error_feedback)
        DT_CHECK(buffer(&c->error, DT_MEM_OPTIM, n, sizeof(float)));
    DT_CHECK(buffer(&c->v, DT_MEM_COMM, n, sizeof(float)));
    DT_CHECK(buffer(&c->sent, DT_MEM_COMM, n, sizeof(float)));
    switch (c->cfg.method) {
    case LAB_TOPK:
        c->k = lab_topk_count(n, c->cfg.density);
        DT_CHECK(buffer(&c->pairs, DT_MEM_COMM, c->k, sizeof(lab_pair)));
        return buffer(&c->gathered, DT_MEM_COMM, c->k * (size_t)c->ranks, sizeof(lab_pair));
    case LAB_INT8:
        c->levels = lab_int8_levels(c->ranks);
        return buffer(&c->q, DT_MEM_COMM, n, 1);
    case LAB_SIGN:
        return sign_buffers(c);
    case LAB_POWERSGD:
        return powersgd_buffers(c);
    default:
        return DT_OK;
    }
}

/* ---------------------------------------------------------------- set up */

static dt_result check_config(const lab_compress_config *cc, int ranks, size_t n)
{
    if (cc->method < LAB_DENSE || cc->method >= LAB_NUM_METHODS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: method %d", (int)cc->method);
    if (cc->method == LAB_TOPK && !(cc->density > 0 && cc->density <= 1))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: top-k density %g, not in (0, 1]",
                       cc->density);
    if (cc->method == LAB_TOPK && n > (size_t)INT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: top-k of %zu values: its int32 "
                       "indices reach %d", n, INT32_MAX);
    if (cc->method == LAB_INT8 && lab_int8_levels(ranks) < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: int8 on %d ranks: the sum of more "
                       "than 127 int8 values leaves int8", ranks);
    if (cc->method == LAB_POWERSGD && cc->rank < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: PowerSGD rank %d, not >= 1", cc->rank);
    return DT_OK;
}

static dt_result cdp_sync_hook(dt_trainer *t, void *self)
{
    (void)t;
    return lab_cdp_sync(self);
}

dt_result lab_cdp_init(lab_cdp *c, dt_comm *comm, dt_model *m, const lab_compress_config *cc,
                       const dt_trainer_config *tc)
{
    if (!c || !comm || !m || !m->params || !m->grads || !cc)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_init: NULL argument or a model without "
                       "gradients");
    memset(c, 0, sizeof *c);
    c->comm = comm, c->model = m, c->cfg = *cc;
    c->rank = dt_comm_rank(comm), c->ranks = dt_comm_size(comm);
    c->n = m->num_params;
    dt_result r = check_config(cc, c->ranks, c->n);
    if (r == DT_OK)
        r = dt_trainer_init(&c->trainer, m, comm, tc);
    if (r == DT_OK && cc->method != LAB_DENSE) /* dense keeps the library's allreduce */
        dt_train_set_hook(&c->trainer.sync, (dt_hook){lab_method_name(cc->method),
                                                      cdp_sync_hook, NULL, NULL, c});
    if (r == DT_OK)
        r = method_buffers(c);
    if (r == DT_OK) /* DDP's start: every rank from rank 0's parameters */
        r = dt_broadcast(m->params, m->params, m->num_params, DT_F32, 0, comm);
    if (r != DT_OK)
        lab_cdp_free(c);
    return r;
}

void lab_cdp_free(lab_cdp *c)
{
    if (!c)
        return;
    dt_trainer_free(&c->trainer);
    void *mem[] = {c->error, c->v, c->sent, c->pairs, c->gathered, c->q, c->send_blocks,
                   c->recv_blocks, c->block_mean, c->block_tmp, c->server_error, c->lr_p,
                   c->lr_q};
    for (size_t i = 0; i < sizeof mem / sizeof *mem; i++)
        dt_mem_free(mem[i]);
    free(c->block_offset), free(c->block_len), free(c->lowrank), free(c->plain);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------- steps */

dt_result lab_cdp_sync(lab_cdp *c)
{
    dt_trainer *t = &c->trainer;
    int m = t->batch ? t->batch->micro_steps : 1;
    if (m > 1) /* the backward summed m micro-batch means */
        DT_CHECK(dt_vec_scale(c->model->grads, 1.0f / (float)m, c->n));
    switch (c->cfg.method) {
    case LAB_TOPK: return lab_sync_topk(c);
    case LAB_INT8: return lab_sync_int8(c);
    case LAB_SIGN: return lab_sync_sign(c);
    case LAB_POWERSGD: return lab_sync_powersgd(c);
    default: /* LAB_DENSE: the mean of the floats, as chapter 03 */
        return dt_allreduce(c->model->grads, c->model->grads, c->n, DT_F32, DT_AVG, c->comm);
    }
}

dt_result lab_cdp_step(lab_cdp *c, const float *x, const int32_t *y, size_t B, float *loss)
{
    if (!c || !c->model || !x || !y || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_step: NULL argument or batch 0");
    dt_batch b = {x, NULL, y, B, 1, 1};
    DT_CHECK(dt_train_step(&c->trainer, &b));
    c->step++;
    if (loss)
        *loss = c->trainer.loss;
    return DT_OK;
}

dt_result lab_cdp_train(lab_cdp *c, const dt_dataset *d, size_t B, uint64_t seed, long last,
                        float *losses)
{
    if (!c || !d || !d->x || B == 0 || d->features != c->model->in_width)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_train: NULL argument, batch 0 or a data "
                       "set that does not fit the model");
    dt_sampler s;
    DT_CHECK(dt_sampler_init(&s, d->n, c->ranks, c->rank, 1, 1, seed));
    long per_epoch = (long)(s.num_samples / B), first = c->step, epoch = -1;
    if (per_epoch < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_cdp_train: batch %zu, but a rank's shard of "
                       "%zu samples holds %zu", B, d->n, s.num_samples);
    size_t *order = malloc(s.num_samples * sizeof *order);
    float *x = malloc(B * d->features * sizeof *x);
    int32_t *y = malloc(B * sizeof *y);
    dt_result r = order && x && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "lab_cdp_train: batch");
    for (long t = first; r == DT_OK && t < last; t++) {
        if (t / per_epoch != epoch) /* the order of this step's epoch */
            r = dt_sampler_indices(&s, (uint64_t)(epoch = t / per_epoch), order);
        if (r == DT_OK)
            r = dt_data_gather(d, order + (size_t)(t % per_epoch) * B, B, x, NULL, y);
        if (r == DT_OK)
            r = lab_cdp_step(c, x, y, B, losses ? &losses[t - first] : NULL);
    }
    free(order), free(x), free(y);
    return r;
}
