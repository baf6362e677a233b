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
/* The fewest stages that cover the layers with no stage above bound: a
 * greedy walk that closes a stage just before it would exceed the bound.
 * K + 1 when a single layer is above it. Writes the stage starts into
 * first when it succeeds in at most K stages. */
static int stages_under(const double *cost, int L, double bound, int *first)
{
    int k = 0;
    double sum = 0;
    for (int l = 0; l < L; l++) {
        if (cost[l] > bound)
            return L + 1;
        if (l == 0 || sum + cost[l] > bound) {
            if (first)
                first[k] = l;
            k++;
            sum = 0;
        }
        sum += cost[l];
    }
    return k;
}
/* END STUDENT CODE */

dt_result lab_mp_partition(const double *cost, int L, int K, int *first)
{
    /* BEGIN STUDENT CODE */
    if (!cost || !first || K < 1 || L < K || L > LAB_MP_MAX_LAYERS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_partition: %d layers on %d stages (need 1 <= "
                       "K <= L <= %d)", L, K, LAB_MP_MAX_LAYERS);
    /* The answer is one of the sums of consecutive costs: try them all, in
     * increasing order of what they cost, until the greedy walk fits. */
    double best = -1;
    for (int a = 0; a < L; a++) {
        double sum = 0;
        for (int b = a; b < L; b++) {
            sum += cost[b];
            if ((best < 0 || sum < best) && stages_under(cost, L, sum, NULL) <= K)
                best = sum;
        }
    }
    int starts[LAB_MP_MAX_LAYERS], k = stages_under(cost, L, best, starts);
    /* Fewer than K stages: split the last stages' layers off to make K
     * non-empty ones (a smaller stage stays under the bound). */
    for (int l = L - 1; k < K; l--) {
        int in_use = 0;
        for (int i = 0; i < k; i++)
            in_use |= starts[i] == l;
        if (!in_use) {
            int i = k++;
            while (i > 0 && starts[i - 1] > l) {
                starts[i] = starts[i - 1];
                i--;
            }
            starts[i] = l;
        }
    }
    for (int i = 0; i < K; i++)
        first[i] = starts[i];
    first[K] = L;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_mp_bytes_sent(const dt_model *m, const int *owner, int rank, size_t B,
                            uint64_t *bytes)
{
    /* BEGIN STUDENT CODE */
    if (!m || !owner || !bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_bytes_sent: NULL argument");
    uint64_t sum = 0;
    /* a cut after layer l: its output forward, the same shape backward */
    for (int l = 0; l + 1 < m->num_layers; l++) {
        if (owner[l] == owner[l + 1])
            continue;
        uint64_t tensor = (uint64_t)B * m->layers[l].out_width * sizeof(float);
        if (owner[l] == rank)
            sum += tensor; /* the activation */
        if (owner[l + 1] == rank)
            sum += tensor; /* its gradient */
    }
    *bytes = sum;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 3 */

dt_result lab_mp_forward(lab_mp *mp)
{
    /* BEGIN STUDENT CODE */
    const dt_model *m = mp->model;
    for (int i = 0; i < mp->num_segments; i++) {
        lab_segment *s = &mp->seg[i];
        const float *in = mp->x;
        if (s->first > 0) {
            size_t n = mp->B * m->layers[s->first].in_width;
            DT_CHECK(dt_recv(s->in, n, DT_F32, mp->owner[s->first - 1], mp->comm));
            in = s->in;
        }
        DT_CHECK(lab_mp_segment_forward(mp, s, in));
        if (s->last < m->num_layers) {
            size_t n = mp->B * m->layers[s->last - 1].out_width;
            DT_CHECK(dt_send(dt_acts_output(s->acts), n, DT_F32, mp->owner[s->last], mp->comm));
        }
    }
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_mp_backward(lab_mp *mp)
{
    /* BEGIN STUDENT CODE */
    const dt_model *m = mp->model;
    for (int i = mp->num_segments - 1; i >= 0; i--) {
        lab_segment *s = &mp->seg[i];
        const float *dout = NULL; /* the last layer starts from the loss */
        if (s->last < m->num_layers) {
            size_t n = mp->B * m->layers[s->last - 1].out_width;
            DT_CHECK(dt_recv(s->dout, n, DT_F32, mp->owner[s->last], mp->comm));
            dout = s->dout;
        }
        DT_CHECK(lab_mp_segment_backward(mp, s, dout));
        if (s->first > 0) {
            size_t n = mp->B * m->layers[s->first].in_width;
            DT_CHECK(dt_send(s->dinp, n, DT_F32, mp->owner[s->first - 1], mp->comm));
        }
    }
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

dt_result lab_mp_predict_step(const dt_model *m, const int *owner, size_t B,
                              const lab_mp_cost *cost, const dt_net *link, double *step_s)
{
    /* BEGIN STUDENT CODE */
    if (!m || !owner || !cost || !link || !step_s || B == 0 || m->num_layers < 1 ||
        m->num_layers > LAB_MP_MAX_LAYERS)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_mp_predict_step: NULL argument, B = %zu or "
                       "%d layers", B, m ? m->num_layers : 0);
    /* Section 4: one rank busy at a time, so the work adds up ... */
    double t = 0;
    for (int l = 0; l < m->num_layers; l++)
        t += (cost->forward_s ? cost->forward_s[l] : 0) +
             (cost->backward_s ? cost->backward_s[l] : 0);
    /* ... and so do the messages, two per cut (section 3): the activation
     * forward and its gradient back, each alpha + n / beta. */
    for (int l = 0; l + 1 < m->num_layers; l++)
        if (owner[l] != owner[l + 1]) {
            double n = 4.0 * (double)B * (double)m->layers[l].out_width;
            t += 2 * (link->alpha + dt_net_wire(link, n));
        }
    *step_s = t;
    return DT_OK;
    /* END STUDENT CODE */
}
