/* pipeline.c - the pipeline runner (chapter 06), the reference lab 06 has
 * students write: any schedule of dt/sched.h run by the training loop's
 * hooks, with activations sent forward and gradients back between the
 * ranks of the stages (dt/train.h says what each step does).
 *
 * Each (chunk, micro-batch) pair of this rank lives from its F to its last
 * backward step: its activations (dt_acts, tag ACT), with a split backward
 * the output gradients B keeps for W (dt_wgrad), its input gradient on its
 * way back (tag COMM) and the send in flight. Sends never block (dt_isend:
 * two ranks that each wait for their own send to be received deadlock,
 * section 3); a receive blocks until the message is there, and between two
 * ranks messages arrive in the order sent, which dt_sched_validate has
 * checked the schedule keeps. The gradient of the step is
 *
 *   g = 1/(d m) sum over the d replicas and m micro-batches of grad L
 *
 * (section 8): each micro-batch's backward adds its mean's gradient, the
 * sync averages over the replicas and divides by m. */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    dt_acts *acts;
    dt_wgrad *wgrad;
    float *dinp;        /* the input gradient, until its send is done (stage > 0) */
    dt_request *send;   /* the send in flight from this pair, or NULL */
} pair;

typedef struct {
    dt_comm *pipe;
    int p, v, S, rank, m, split;
    int *first;            /* S + 1: stage s is layers [first[s], first[s+1]) */
    dt_train_op *ops;      /* this rank's steps in the loop's terms */
    int *step_index;       /* (kind, chunk, micro) -> its index in ops */
    pair *pairs;           /* v x m */
    float *recv;           /* the receive buffer, recv_floats floats */
    size_t recv_floats;
    dt_sched_timing *timing;
    dt_hook own_update;    /* the update of this rank's layers (own_layers.c) */
    dt_hook_state own_state; /* and its state, taken over with it */
} pipe;

static int stage_of(const pipe *pp, int chunk) { return chunk * pp->p + pp->rank; }
static int rank_of(const pipe *pp, int stage) { return stage % pp->p; }
static pair *pair_of(pipe *pp, const dt_trainer *t) { return &pp->pairs[t->chunk * pp->m + t->micro]; }

/* Frees what a pair holds; waits for its send first (a failed step may
 * leave one in flight). */
static dt_result release_pair(pair *q)
{
    dt_result r = dt_wait(q->send);
    dt_wgrad_free(q->wgrad);
    dt_acts_free(q->acts);
    dt_mem_free(q->dinp);
    memset(q, 0, sizeof *q);
    return r;
}

static dt_result release_all(pipe *pp)
{
    dt_result r = DT_OK;
    for (int i = 0; pp->pairs && i < pp->v * pp->m; i++) {
        dt_result ri = release_pair(&pp->pairs[i]);
        r = r != DT_OK ? r : ri;
    }
    return r;
}

/* Frees the input gradients whose sends are done: a send no step waits
 * for must not keep its buffer for the rest of the step. */
static dt_result reap_sends(pipe *pp)
{
    for (int i = 0; i < pp->v * pp->m; i++) {
        pair *q = &pp->pairs[i];
        int done = 0;
        if (!q->send || !q->dinp) /* no send, or the forward's (B waits for it) */
            continue;
        DT_CHECK(dt_request_test(q->send, &done));
        if (done) {
            DT_CHECK(dt_wait(q->send));
            q->send = NULL;
            dt_mem_free(q->dinp);
            q->dinp = NULL;
        }
    }
    return DT_OK;
}

/* The message across the cut before stage s: B T rows of layer first[s]'s
 * input width. */
static size_t cut_floats(const pipe *pp, const dt_trainer *t, int stage)
{
    const dt_batch *b = t->batch;
    return b->B * b->T * t->model->layers[pp->first[stage]].in_width;
}

/* Receives count floats from rank `from` into the receive buffer. */
static dt_result receive(pipe *pp, size_t count, int from)
{
    if (count > pp->recv_floats) { /* a wider cut or a larger batch than before */
        dt_mem_free(pp->recv);
        pp->recv_floats = 0;
        if (!(pp->recv = dt_mem_alloc(DT_MEM_COMM, count * sizeof(float))))
            return dt_fail(DT_ERR_NOMEM, "pipeline: a receive buffer of %zu floats", count);
        pp->recv_floats = count;
    }
    return dt_recv(pp->recv, count, DT_F32, from, pp->pipe);
}

/* The modeled cost of a kind of step on stage s's layers. */
static double cost_of(const dt_trainer *t, const pipe *pp, int s, dt_train_op_kind kind)
{
    const dt_trainer_config *c = &t->cfg;
    double sum = 0;
    for (int l = pp->first[s]; l < pp->first[s + 1]; l++) {
        double f = c->forward_layer_s ? c->forward_layer_s[l] : 0;
        double b = c->backward_s ? c->backward_s[l] : 0, w = c->weight_s ? c->weight_s[l] : 0;
        sum += kind == DT_TRAIN_FORWARD ? f : kind == DT_TRAIN_WEIGHT ? w : pp->split ? b : b + w;
    }
    return sum;
}

/* Ends a step's compute region (or charges its modeled cost) and records
 * when it ran. */
static dt_result charge(dt_trainer *t, pipe *pp, dt_train_op_kind kind, double t0, dt_result r)
{
    int s = stage_of(pp, t->chunk);
    dt_result end = train_compute_end_on(t, pp->pipe, cost_of(t, pp, s, kind));
    DT_CHECK(r);
    DT_CHECK(end);
    if (pp->timing) {
        int i = pp->step_index[(kind * pp->v + t->chunk) * pp->m + t->micro];
        pp->timing->start[pp->rank][i] = t0;
        pp->timing->end[pp->rank][i] = dt_clock(pp->pipe);
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- the steps */

static dt_result pipe_forward(dt_trainer *t, void *self)
{
    pipe *pp = self;
    const dt_batch *b = t->batch;
    dt_model *m = t->model;
    pair *q = pair_of(pp, t);
    int s = stage_of(pp, t->chunk);
    size_t rows = b->B * b->T, at = (size_t)t->micro * rows;
    DT_CHECK(reap_sends(pp));
    DT_CHECK(release_pair(q)); /* empty, unless a failed step left it */
    const float *x = b->x ? b->x + at * m->in_width : NULL;
    const int32_t *tokens = b->tokens ? b->tokens + at : NULL;
    if (s > 0) { /* the previous stage's activation */
        DT_CHECK(receive(pp, cut_floats(pp, t, s), rank_of(pp, s - 1)));
        x = pp->recv, tokens = NULL;
    }
    dt_nn_path path = pp->split ? DT_NN_REFERENCE : t->cfg.path; /* dt_wgrad: the reference's */
    DT_CHECK(dt_acts_create_path(&q->acts, m, pp->first[s], pp->first[s + 1], b->B, b->T, path));
    if (pp->split)
        DT_CHECK(dt_wgrad_create(&q->wgrad, q->acts));
    double t0 = dt_clock(pp->pipe);
    float loss = 0;
    DT_CHECK(train_compute_begin_on(t, pp->pipe));
    dt_result r = dt_model_forward(m, q->acts, x, tokens);
    if (r == DT_OK && s == pp->S - 1)
        r = dt_model_loss(m, q->acts, b->labels + at, &loss, NULL);
    DT_CHECK(charge(t, pp, DT_TRAIN_FORWARD, t0, r));
    t->loss_sum += loss;
    if (s == pp->S - 1)
        return DT_OK;
    /* posted, not waited for: the buffer lives in the activations until B */
    return dt_isend(dt_acts_output(q->acts), cut_floats(pp, t, s + 1), DT_F32,
                    rank_of(pp, s + 1), pp->pipe, &q->send);
}

/* The loop's per-layer call: the sync hears each layer's gradients. */
static dt_result layer_ready(void *arg, int layer, size_t offset, size_t count)
{
    return dt_train_layer_ready(arg, layer, offset, count);
}

static dt_result pipe_backward(dt_trainer *t, void *self)
{
    pipe *pp = self;
    dt_model *m = t->model;
    pair *q = pair_of(pp, t);
    int s = stage_of(pp, t->chunk);
    DT_CHECK(reap_sends(pp));
    if (!q->acts)
        return dt_fail(DT_ERR_STATE, "pipeline: B of stage %d micro-batch %d without its "
                       "activations", s, t->micro);
    const float *dout = NULL; /* the last stage starts from the loss */
    if (s < pp->S - 1) {
        DT_CHECK(receive(pp, cut_floats(pp, t, s + 1), rank_of(pp, s + 1)));
        dout = pp->recv;
    }
    /* the forward's send ended when the next stage took it, before its B */
    DT_CHECK(dt_wait(q->send));
    q->send = NULL;
    if (s > 0 && !(q->dinp = dt_mem_alloc(DT_MEM_COMM, cut_floats(pp, t, s) * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "pipeline: an input gradient");
    double t0 = dt_clock(pp->pipe);
    DT_CHECK(train_compute_begin_on(t, pp->pipe));
    dt_result r = pp->split ? dt_model_backward_input(m, q->acts, dout, q->dinp, q->wgrad)
                            : dt_model_backward(m, q->acts, dout, q->dinp, layer_ready, t);
    DT_CHECK(charge(t, pp, DT_TRAIN_BACKWARD, t0, r));
    if (s > 0)
        DT_CHECK(dt_isend(q->dinp, cut_floats(pp, t, s), DT_F32, rank_of(pp, s - 1), pp->pipe,
                          &q->send));
    if (!pp->split) { /* nothing needs the activations any more */
        dt_acts_free(q->acts);
        q->acts = NULL;
    }
    return DT_OK;
}

static dt_result pipe_weight(dt_trainer *t, void *self)
{
    pipe *pp = self;
    pair *q = pair_of(pp, t);
    if (!q->acts || !q->wgrad)
        return dt_fail(DT_ERR_STATE, "pipeline: W of stage %d micro-batch %d without its B",
                       stage_of(pp, t->chunk), t->micro);
    double t0 = dt_clock(pp->pipe);
    DT_CHECK(train_compute_begin_on(t, pp->pipe));
    dt_result r = dt_model_backward_weight(t->model, q->acts, q->wgrad, layer_ready, t);
    DT_CHECK(charge(t, pp, DT_TRAIN_WEIGHT, t0, r));
    dt_wgrad_free(q->wgrad);
    dt_acts_free(q->acts);
    q->wgrad = NULL, q->acts = NULL;
    return DT_OK;
}

/* g = 1/(d m) sum over replicas and micro-batches, on each owned stage (one
 * contiguous range of the buffers each); then the loss to every rank. */
static dt_result pipe_sync(dt_trainer *t, void *self)
{
    pipe *pp = self;
    DT_CHECK(release_all(pp)); /* the last sends complete; every pair is empty */
    int dp = t->comm && dt_comm_size(t->comm) > 1;
    for (int c = 0; c < pp->v; c++) {
        int s = stage_of(pp, c);
        size_t off, count;
        DT_CHECK(dt_model_layer_range(t->model, pp->first[s], pp->first[s + 1], &off, &count));
        float *g = t->model->grads + off;
        if (dp)
            DT_CHECK(dt_allreduce(g, g, count, DT_F32, DT_AVG, t->comm));
        DT_CHECK(train_scale_micro(t, off, count));
    }
    if (pp->p == 1)
        return DT_OK;
    /* the loss lives on the last stage's rank: one number to the others */
    float loss = (float)t->loss_sum;
    DT_CHECK(dt_broadcast(&loss, &loss, 1, DT_F32, rank_of(pp, pp->S - 1), pp->pipe));
    t->loss_sum = loss;
    return DT_OK;
}

static dt_result pipe_update(dt_trainer *t, void *self)
{
    pipe *pp = self;
    return pp->own_update.run(t, pp->own_update.self);
}

/* Between steps the runner keeps nothing of its own (the sync has emptied
 * every pair; the receive buffer is scratch): its state for a checkpoint
 * is that of the update it runs, the optimizers of this rank's layers. */
static dt_result pipe_state(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    pipe *pp = self;
    return pp->own_state.visit ? pp->own_state.visit(t, pp->own_update.self, io) : DT_OK;
}

static dt_result pipe_optimizers(dt_trainer *t, void *self, dt_optimizer **o, int max, int *n)
{
    pipe *pp = self;
    *n = 0;
    return pp->own_state.optimizers ? pp->own_state.optimizers(t, pp->own_update.self, o, max, n)
                                    : DT_OK;
}

static void pipe_release(void *self)
{
    pipe *pp = self;
    if (!pp)
        return;
    (void)release_all(pp);
    dt_train_set_hook(&pp->own_update, (dt_hook){0});
    dt_mem_free(pp->recv);
    free(pp->pairs), free(pp->ops), free(pp->step_index), free(pp->first);
    free(pp);
}

/* ---------------------------------------------------------------- set up */

void dt_pipe_cut(int L, int S, int *first)
{
    for (int s = 0; s <= S; s++)
        first[s] = s * (L / S) + (s < L % S ? s : L % S);
}

/* What the runner cannot run, before anything changes. */
static dt_result check_config(const dt_trainer *t, const dt_pipe_config *c, dt_sched_report *rep)
{
    if (!t || !t->model || !c || !c->pipe || !c->schedule)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: NULL %s", !t || !t->model ?
                       "trainer" : !c ? "config" : !c->pipe ? "pipeline communicator" :
                       "schedule");
    const dt_schedule *s = c->schedule;
    int p = dt_comm_size(c->pipe), L = t->model->num_layers;
    if (p < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: the pipeline's "
                       "communicator is freed");
    if (s->ranks != p)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: a schedule for %d ranks on "
                       "a pipeline of %d", s->ranks, p);
    if (p == 1 && s->chunks > 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: %d chunks on one rank (its "
                       "stages would pass their data to themselves)", s->chunks);
    if (s->stages > L)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: %d stages (%d ranks x %d "
                       "chunks) of a %d-layer model: a stage needs a layer", s->stages, p,
                       s->chunks, L);
    if (!t->model->grads)
        return dt_fail(DT_ERR_STATE, "dt_train_use_pipeline: the model has no gradient buffer");
    if (t->cfg.clock == DT_CLOCK_MODELED && !t->cfg.forward_layer_s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: a modeled clock needs each "
                       "layer's forward (forward_layer_s): a stage runs some of them");
    return dt_sched_validate(s, rep);
}

/* The cut: c->first checked, or the equal one. */
static dt_result make_cut(pipe *pp, const dt_pipe_config *c, int L)
{
    if (!(pp->first = malloc((size_t)(pp->S + 1) * sizeof *pp->first)))
        return dt_fail(DT_ERR_NOMEM, "dt_train_use_pipeline: a cut");
    if (!c->first) {
        dt_pipe_cut(L, pp->S, pp->first);
        return DT_OK;
    }
    memcpy(pp->first, c->first, (size_t)(pp->S + 1) * sizeof *pp->first);
    for (int s = 0; s < pp->S; s++)
        if (pp->first[s] >= pp->first[s + 1])
            return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: stage %d is layers [%d, "
                           "%d): empty", s, pp->first[s], pp->first[s + 1]);
    if (pp->first[0] != 0 || pp->first[pp->S] != L)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_train_use_pipeline: the cut covers layers [%d, "
                       "%d) of %d", pp->first[0], pp->first[pp->S], L);
    return DT_OK;
}

/* A split backward (W steps) runs stages of linear layers only. */
static dt_result check_split(const pipe *pp, const dt_model *m)
{
    for (int c = 0; pp->split && c < pp->v; c++)
        for (int l = pp->first[stage_of(pp, c)]; l < pp->first[stage_of(pp, c) + 1]; l++)
            if (m->layers[l].kind != DT_LAYER_LINEAR && m->layers[l].kind != DT_LAYER_LINEAR_RELU)
                return dt_fail(DT_ERR_UNSUPPORTED, "dt_train_use_pipeline: the schedule splits "
                               "the backward (W steps), and layer %s of stage %d is not linear: "
                               "the split backward runs MLP stages only", m->layers[l].name,
                               stage_of(pp, c));
    return DT_OK;
}

/* This rank's steps as the loop's operations, and where each lies. */
static dt_result make_ops(pipe *pp, const dt_schedule *s)
{
    int n = s->nsteps[pp->rank];
    pp->pairs = calloc((size_t)(pp->v * pp->m), sizeof *pp->pairs);
    pp->ops = calloc((size_t)n, sizeof *pp->ops);
    pp->step_index = calloc((size_t)(3 * pp->v * pp->m), sizeof *pp->step_index);
    if (!pp->pairs || !pp->ops || !pp->step_index)
        return dt_fail(DT_ERR_NOMEM, "dt_train_use_pipeline: a schedule of %d steps", n);
    for (int i = 0; i < n; i++) {
        const dt_step *st = &s->steps[pp->rank][i];
        dt_train_op_kind k = st->kind == DT_STEP_F   ? DT_TRAIN_FORWARD
                             : st->kind == DT_STEP_B ? DT_TRAIN_BACKWARD
                                                     : DT_TRAIN_WEIGHT;
        pp->ops[i] = (dt_train_op){st->micro, k, st->stage / pp->p};
        pp->step_index[(k * pp->v + pp->ops[i].chunk) * pp->m + st->micro] = i;
    }
    return DT_OK;
}

static dt_result build(pipe *pp, dt_trainer *t, const dt_pipe_config *c, int split)
{
    const dt_schedule *s = c->schedule;
    pp->pipe = c->pipe, pp->timing = c->timing;
    pp->p = s->ranks, pp->v = s->chunks, pp->S = s->stages, pp->m = s->micro;
    pp->rank = dt_comm_rank(c->pipe), pp->split = split;
    DT_CHECK(make_cut(pp, c, t->model->num_layers));
    DT_CHECK(check_split(pp, t->model));
    return make_ops(pp, s);
}

dt_result dt_train_use_pipeline(dt_trainer *t, const dt_pipe_config *c)
{
    dt_sched_report rep;
    DT_CHECK(check_config(t, c, &rep));
    pipe *pp = calloc(1, sizeof *pp);
    unsigned char *own = calloc((size_t)t->model->num_layers, 1);
    dt_result r = pp && own ? build(pp, t, c, rep.split_backward)
                            : dt_fail(DT_ERR_NOMEM, "dt_train_use_pipeline");
    for (int ch = 0; r == DT_OK && ch < pp->v; ch++)
        for (int l = pp->first[stage_of(pp, ch)]; l < pp->first[stage_of(pp, ch) + 1]; l++)
            own[l] = 1;
    if (r == DT_OK) /* the update of the owned layers (and a sync replaced below) */
        r = dt_train_use_own_layers(t, own);
    free(own);
    if (r != DT_OK) {
        pipe_release(pp);
        return r;
    }
    const dt_hook_state *own_state = train_state_given(t, &t->update);
    if (own_state)
        pp->own_state = *own_state;
    pp->own_update = t->update; /* taken over, with its state */
    t->update = (dt_hook){0};
    dt_train_set_hook(&t->forward, (dt_hook){"pipeline", pipe_forward, NULL, NULL, pp});
    dt_train_set_hook(&t->backward, (dt_hook){"pipeline", pipe_backward, NULL, NULL, pp});
    dt_train_set_hook(&t->weight, (dt_hook){"pipeline", pipe_weight, NULL, NULL, pp});
    dt_train_set_hook(&t->update, (dt_hook){"pipeline", pipe_update, NULL, NULL, pp});
    dt_train_set_hook(&t->sync, (dt_hook){"pipeline", pipe_sync, NULL, pipe_release, pp});
    t->schedule = pp->ops, t->schedule_len = c->schedule->nsteps[pp->rank];
    /* one state for the five hooks (they share pp) */
    return dt_train_set_state(t, &t->update, &(dt_hook_state){pipe_state, pipe_optimizers});
}
