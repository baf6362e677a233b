/* mp.c - lab 05: model parallelism (chapter 05). Your code goes between the
 * fences; the functions outside them are given. Tasks 1 to 4 are those of
 * the chapter's section 6, which names the section that derives each. */
#include "mp.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

void lab_mp_contiguous(const int *first, int K, int *owner)
{
    for (int k = 0; k < K; k++)
        for (int l = first[k]; l < first[k + 1]; l++)
            owner[l] = k;
}

void lab_mp_round_robin(int L, int K, int *owner)
{
    for (int l = 0; l < L; l++)
        owner[l] = l % K;
}

static void free_segments(lab_mp *mp)
{
    for (int i = 0; mp->seg && i < mp->num_segments; i++) {
        dt_acts_free(mp->seg[i].acts);
        dt_mem_free(mp->seg[i].in);
        dt_mem_free(mp->seg[i].dout);
        dt_mem_free(mp->seg[i].dinp);
    }
    free(mp->seg);
    mp->seg = NULL;
    mp->num_segments = 0;
}

void lab_mp_free(lab_mp *mp)
{
    if (!mp)
        return;
    free_segments(mp);
    dt_trainer_free(&mp->trainer);
    memset(mp, 0, sizeof *mp);
}

/* A float buffer of a message (tag COMM), or NULL when n is 0. */
static dt_result comm_buffer(float **p, size_t n)
{
    *p = NULL;
    if (n && !(*p = dt_mem_alloc(DT_MEM_COMM, n * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "lab_mp_init: a buffer of %zu floats", n);
    return DT_OK;
}

/* This rank's segments: each maximal run of consecutive layers it owns. */
static dt_result build_segments(lab_mp *mp)
{
    const dt_model *m = mp->model;
    int L = m->num_layers;
    mp->seg = calloc((size_t)L, sizeof *mp->seg);
    if (!mp->seg)
        return dt_fail(DT_ERR_NOMEM, "lab_mp_init: segments");
    for (int l = 0; l < L; l++) {
        if (mp->owner[l] != mp->rank || (l > 0 && mp->owner[l - 1] == mp->rank))
            continue; /* not the first layer of a segment */
        lab_segment *s = &mp->seg[mp->num_segments++];
        s->first = l, s->last = l + 1;
        while (s->last < L && mp->owner[s->last] == mp->rank)
            s->last++;
        size_t in = mp->B * m->layers[s->first].in_width;
        size_t out = mp->B * m->layers[s->last - 1].out_width;
        DT_CHECK(dt_acts_create(&s->acts, m, s->first, s->last, mp->B, 1));
        DT_CHECK(comm_buffer(&s->in, s->first > 0 ? in : 0));
        DT_CHECK(comm_buffer(&s->dinp, s->first > 0 ? in : 0));
        DT_CHECK(comm_buffer(&s->dout, s->last < L ? out : 0));
    }
    return DT_OK;
}

/* The loop's hooks: the step's batch, then your forward and backward. */
static dt_result mp_forward(dt_trainer *t, void *self)
{
    lab_mp *mp = self;
    mp->x = t->batch->x;
    mp->labels = t->batch->labels;
    mp->loss = 0;
    DT_CHECK(lab_mp_forward(mp));
    t->loss_sum += mp->loss;
    return DT_OK;
}

static dt_result mp_backward(dt_trainer *t, void *self)
{
    (void)t;
    return lab_mp_backward(self);
}

dt_result lab_mp_init(lab_mp *mp, dt_comm *comm, dt_model *m, const int *owner, size_t B,
                      const dt_optim_config *cfg, const lab_mp_cost *cost)
{
    if (!mp || !comm || !m || !m->params || !m->grads || !owner || !cfg || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_init: NULL argument, a model without "
                       "gradients, or B = 0");
    if (m->num_layers > LAB_MP_MAX_LAYERS || m->kind == DT_MODEL_GPT)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_init: a model of %d layers (MLPs of at most "
                       "%d)", m->num_layers, LAB_MP_MAX_LAYERS);
    memset(mp, 0, sizeof *mp);
    mp->comm = comm, mp->model = m, mp->B = B;
    mp->rank = dt_comm_rank(comm), mp->ranks = dt_comm_size(comm);
    unsigned char own[LAB_MP_MAX_LAYERS];
    for (int l = 0; l < m->num_layers; l++) {
        if (owner[l] < 0 || owner[l] >= mp->ranks)
            return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_init: owner[%d] = %d, not a rank of the "
                           "%d", l, owner[l], mp->ranks);
        mp->owner[l] = owner[l];
        own[l] = owner[l] == mp->rank;
    }
    if (cost)
        mp->cost = *cost;
    dt_trainer_config tc = {0};
    tc.optim = *cfg;
    dt_result r = dt_trainer_init(&mp->trainer, m, comm, &tc);
    if (r == DT_OK)
        r = dt_train_use_own_layers(&mp->trainer, own);
    if (r == DT_OK) {
        mp->trainer.forward = (dt_hook){"lab_mp", mp_forward, NULL, NULL, mp};
        mp->trainer.backward = (dt_hook){"lab_mp", mp_backward, NULL, NULL, mp};
        r = build_segments(mp);
    }
    if (r != DT_OK)
        lab_mp_free(mp);
    return r;
}

dt_result lab_mp_step(lab_mp *mp, const float *x, const int32_t *labels, float *loss)
{
    if (!mp || !mp->model || !x || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_step: NULL argument");
    dt_batch b = {x, NULL, labels, mp->B, 1, 1};
    DT_CHECK(dt_train_step(&mp->trainer, &b));
    if (loss)
        *loss = mp->trainer.loss;
    return DT_OK;
}

/* Sum of a cost table over layers [first, last). */
static double cost_of(const double *per_layer, int first, int last)
{
    double s = 0;
    for (int l = first; per_layer && l < last; l++)
        s += per_layer[l];
    return s;
}

dt_result lab_mp_segment_forward(lab_mp *mp, lab_segment *s, const float *in)
{
    dt_model *m = mp->model;
    DT_CHECK(dt_model_forward(m, s->acts, in, NULL));
    if (s->last == m->num_layers)
        DT_CHECK(dt_model_loss(m, s->acts, mp->labels, &mp->loss, NULL));
    return dt_clock_advance(mp->comm, cost_of(mp->cost.forward_s, s->first, s->last));
}

dt_result lab_mp_segment_backward(lab_mp *mp, lab_segment *s, const float *dout)
{
    DT_CHECK(dt_model_backward(mp->model, s->acts, dout, s->first > 0 ? s->dinp : NULL, NULL,
                               NULL));
    return dt_clock_advance(mp->comm, cost_of(mp->cost.backward_s, s->first, s->last));
}

/* ================================================================ task 1 */

/* BEGIN STUDENT CODE */
/* helpers of your own, if you want them */
/* END STUDENT CODE */

dt_result lab_mp_partition(const double *cost, int L, int K, int *first)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: first[0..K] is a split into K non-empty contiguous
     * stages whose largest stage cost no other split beats (section 5);
     * bad K or L: DT_ERR_INVALID_ARG. */
    (void)cost, (void)L, (void)K, (void)first;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_mp_bytes_sent(const dt_model *m, const int *owner, int rank, size_t B,
                            uint64_t *bytes)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *bytes is what lab_mp_step sends from this rank under
     * the placement, activations and gradients at the cuts (section 3). */
    (void)m, (void)owner, (void)rank, (void)B, (void)bytes;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_mp_forward(lab_mp *mp)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: every segment of this rank has run forward on its real
     * input, and its output reached the owner of the next layer; the loss is
     * in mp->loss on the rank of the last layer (section 2). */
    (void)mp;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_mp_backward(lab_mp *mp)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: this rank's layers hold the one-rank gradients in
     * model->grads, and the gradient of each segment's input reached the
     * owner of the layer before (section 2). */
    (void)mp;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

dt_result lab_mp_predict_step(const dt_model *m, const int *owner, size_t B,
                              const lab_mp_cost *cost, const dt_net *link, double *step_s)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (mp.h): *step_s = the modeled step sections 3 and 4
     * predict for this placement, from the formulas alone (nothing runs). */
    (void)m, (void)owner, (void)B, (void)cost, (void)link, (void)step_s;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
