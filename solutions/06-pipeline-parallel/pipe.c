/* pipe.c - lab 06: running a pipeline schedule (chapter 06). Your code goes
 * between the fences; the functions outside them are given. Tasks 3 to 5
 * are those of the chapter's section 9, which names the section that
 * derives each. */
#include "pipe.h"

#include <stdlib.h>
#include <string.h>

/* ================================================================ given: the pairs */

int lab_pipe_stage(const lab_pipe *lp, int chunk)
{
    return chunk * lp->p + lp->rank;
}

int lab_pipe_rank_of(const lab_pipe *lp, int stage)
{
    return stage % lp->p;
}

lab_mb *lab_pipe_mb(lab_pipe *lp, int chunk, int micro)
{
    return &lp->mb[chunk * lp->m + micro];
}

const float *lab_pipe_micro_x(const lab_pipe *lp, int micro)
{
    return lp->x + (size_t)micro * lp->B * lp->model->in_width;
}

size_t lab_pipe_cut_count(const lab_pipe *lp, int stage)
{
    return lp->B * lp->model->layers[lp->first[stage]].in_width;
}

/* Frees what a pair holds; waits for its send first (a failed step may
 * leave one in flight). */
static dt_result release_pair(lab_mb *mb)
{
    dt_result r = dt_wait(mb->send);
    mb->send = NULL;
    dt_wgrad_free(mb->wgrad);
    dt_acts_free(mb->acts);
    dt_mem_free(mb->dinp);
    memset(mb, 0, sizeof *mb);
    return r;
}

/* Frees the input gradients whose sends have completed: a send that no
 * step waits for still must not keep its buffer for the whole step. */
static dt_result reap_sends(lab_pipe *lp)
{
    for (int i = 0; i < lp->v * lp->m; i++) {
        lab_mb *mb = &lp->mb[i];
        int done = 0;
        if (!mb->send || !mb->dinp) /* no send, or the forward's (B waits for it) */
            continue;
        DT_CHECK(dt_request_test(mb->send, &done));
        if (done) {
            DT_CHECK(dt_wait(mb->send));
            mb->send = NULL;
            dt_mem_free(mb->dinp);
            mb->dinp = NULL;
        }
    }
    return DT_OK;
}

/* ================================================================ given: compute */

/* The modeled cost of a step kind on stage s. */
static double cost_of(const lab_pipe *lp, int stage, double t)
{
    return t * (lp->cost.stage_scale ? lp->cost.stage_scale[stage] : 1.0);
}

/* Charges the step's compute and records when it ran. */
static dt_result charge(lab_pipe *lp, dt_train_op_kind kind, int chunk, int micro, double t0,
                        double seconds)
{
    DT_CHECK(dt_clock_advance(lp->pipe, seconds));
    if (lp->timing) {
        int i = lp->step_index[(kind * lp->v + chunk) * lp->m + micro];
        lp->timing->start[lp->rank][i] = t0;
        lp->timing->end[lp->rank][i] = dt_clock(lp->pipe);
    }
    return DT_OK;
}

static dt_result check_pair(const lab_pipe *lp, int chunk, int micro, const char *fn)
{
    if (!lp || !lp->mb || chunk < 0 || chunk >= lp->v || micro < 0 || micro >= lp->m)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: chunk %d, micro-batch %d (of %d and %d)", fn,
                       chunk, micro, lp ? lp->v : 0, lp ? lp->m : 0);
    return DT_OK;
}

dt_result lab_pipe_run_forward(lab_pipe *lp, int chunk, int micro, const float *in)
{
    DT_CHECK(check_pair(lp, chunk, micro, "lab_pipe_run_forward"));
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    int s = lab_pipe_stage(lp, chunk);
    if (mb->acts)
        return dt_fail(DT_ERR_STATE, "lab_pipe_run_forward: stage %d micro-batch %d already "
                       "holds activations", s, micro);
    double t0 = dt_clock(lp->pipe);
    dt_model *m = lp->model;
    DT_CHECK(dt_acts_create(&mb->acts, m, lp->first[s], lp->first[s + 1], lp->B, 1));
    if (lp->split)
        DT_CHECK(dt_wgrad_create(&mb->wgrad, mb->acts));
    DT_CHECK(dt_model_forward(m, mb->acts, in, NULL));
    if (s == lp->S - 1) {
        float loss;
        DT_CHECK(dt_model_loss(m, mb->acts, lp->labels + (size_t)micro * lp->B, &loss, NULL));
        lp->trainer.loss_sum += loss;
    }
    return charge(lp, DT_TRAIN_FORWARD, chunk, micro, t0, cost_of(lp, s, lp->cost.t_f));
}

/* The loop's per-layer call: the sync hears each layer's gradients. */
static dt_result layer_ready(void *arg, int layer, size_t offset, size_t count)
{
    return dt_train_layer_ready(arg, layer, offset, count);
}

dt_result lab_pipe_run_backward(lab_pipe *lp, int chunk, int micro, const float *dout)
{
    DT_CHECK(check_pair(lp, chunk, micro, "lab_pipe_run_backward"));
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    int s = lab_pipe_stage(lp, chunk);
    if (!mb->acts || (lp->split && !mb->wgrad))
        return dt_fail(DT_ERR_STATE, "lab_pipe_run_backward: stage %d micro-batch %d holds no "
                       "activations (no forward, or they were freed)", s, micro);
    double t0 = dt_clock(lp->pipe);
    if (s > 0 && !mb->dinp &&
        !(mb->dinp = dt_mem_alloc(DT_MEM_COMM, lab_pipe_cut_count(lp, s) * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "lab_pipe_run_backward: an input gradient");
    float *dinp = s > 0 ? mb->dinp : NULL;
    if (lp->split) {
        DT_CHECK(dt_model_backward_input(lp->model, mb->acts, dout, dinp, mb->wgrad));
        return charge(lp, DT_TRAIN_BACKWARD, chunk, micro, t0, cost_of(lp, s, lp->cost.t_b));
    }
    DT_CHECK(dt_model_backward(lp->model, mb->acts, dout, dinp, layer_ready, &lp->trainer));
    return charge(lp, DT_TRAIN_BACKWARD, chunk, micro, t0,
                  cost_of(lp, s, lp->cost.t_b + lp->cost.t_w));
}

dt_result lab_pipe_run_weight(lab_pipe *lp, int chunk, int micro)
{
    DT_CHECK(check_pair(lp, chunk, micro, "lab_pipe_run_weight"));
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    int s = lab_pipe_stage(lp, chunk);
    if (!mb->acts || !mb->wgrad)
        return dt_fail(DT_ERR_STATE, "lab_pipe_run_weight: stage %d micro-batch %d holds no "
                       "activations (the schedule does not split the backward, or they were "
                       "freed)", s, micro);
    double t0 = dt_clock(lp->pipe);
    DT_CHECK(dt_model_backward_weight(lp->model, mb->acts, mb->wgrad, layer_ready, &lp->trainer));
    return charge(lp, DT_TRAIN_WEIGHT, chunk, micro, t0, cost_of(lp, s, lp->cost.t_w));
}

/* ================================================================ given: the loop */

static dt_result hook_forward(dt_trainer *t, void *self)
{
    DT_CHECK(reap_sends(self));
    return lab_pipe_forward(self, t->chunk, t->micro);
}

static dt_result hook_backward(dt_trainer *t, void *self)
{
    DT_CHECK(reap_sends(self));
    return lab_pipe_backward(self, t->chunk, t->micro);
}

static dt_result hook_weight(dt_trainer *t, void *self)
{
    return lab_pipe_weight(self, t->chunk, t->micro);
}

static dt_result hook_sync(dt_trainer *t, void *self)
{
    return lab_pipe_sync(self, t->batch->micro_steps);
}

void lab_pipe_cut(int L, int S, int *first)
{
    for (int s = 0; s <= S; s++)
        first[s] = s * (L / S) + (s < L % S ? s : L % S);
}

static dt_result make_comms(lab_pipe *lp, dt_comm *world)
{
    int w = dt_comm_rank(world);
    DT_CHECK(dt_comm_split(world, w / lp->p, w % lp->p, &lp->pipe));
    lp->rank = dt_comm_rank(lp->pipe);
    return dt_comm_split(world, lp->d > 1 ? w % lp->p : DT_COLOR_NONE, w, &lp->dp);
}

/* The loop with this lab's hooks, updating this rank's layers only. */
static dt_result make_trainer(lab_pipe *lp, const dt_optim_config *cfg)
{
    unsigned char *own = calloc((size_t)lp->model->num_layers, 1);
    if (!own)
        return dt_fail(DT_ERR_NOMEM, "lab_pipe_init: a table of layers");
    for (int c = 0; c < lp->v; c++)
        for (int l = lp->first[lab_pipe_stage(lp, c)]; l < lp->first[lab_pipe_stage(lp, c) + 1]; l++)
            own[l] = 1;
    dt_trainer_config tc = {0};
    tc.optim = *cfg;
    dt_trainer *t = &lp->trainer;
    dt_result r = dt_trainer_init(t, lp->model, lp->pipe, &tc);
    if (r == DT_OK)
        r = dt_train_use_own_layers(t, own);
    free(own);
    DT_CHECK(r);
    t->forward = (dt_hook){"lab_pipe", hook_forward, NULL, NULL, lp};
    t->backward = (dt_hook){"lab_pipe", hook_backward, NULL, NULL, lp};
    t->weight = (dt_hook){"lab_pipe", hook_weight, NULL, NULL, lp};
    dt_train_set_hook(&t->sync, (dt_hook){"lab_pipe", hook_sync, NULL, NULL, lp});
    return DT_OK;
}

dt_result lab_pipe_init(lab_pipe *lp, dt_comm *world, dt_model *m, int p, int v, size_t B,
                        const dt_optim_config *cfg, const lab_pipe_cost *cost)
{
    int K = dt_comm_size(world);
    if (!lp || !world || !m || !m->params || !m->grads || !cfg || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_init: NULL argument, a model without "
                       "gradients, or B = 0");
    if (p < 1 || v < 1 || K % p != 0 || v * p > m->num_layers || v * p > LAB_PIPE_MAX_STAGES ||
        m->kind == DT_MODEL_GPT || (p == 1 && v > 1))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_init: p = %d, v = %d on %d ranks with a "
                       "%d-layer model (need p dividing the ranks, 1 <= v p <= the layers and "
                       "<= %d, v = 1 when p = 1, an MLP)", p, v, K, m->num_layers,
                       LAB_PIPE_MAX_STAGES);
    memset(lp, 0, sizeof *lp);
    lp->model = m, lp->p = p, lp->v = v, lp->S = v * p, lp->d = K / p, lp->B = B;
    if (cost)
        lp->cost = *cost;
    lab_pipe_cut(m->num_layers, lp->S, lp->first);
    size_t widest = 0;
    for (int s = 1; s < lp->S; s++)
        widest = lab_pipe_cut_count(lp, s) > widest ? lab_pipe_cut_count(lp, s) : widest;
    dt_result r = make_comms(lp, world);
    if (r == DT_OK && widest && !(lp->recv = dt_mem_alloc(DT_MEM_COMM, widest * sizeof(float))))
        r = dt_fail(DT_ERR_NOMEM, "lab_pipe_init: a receive buffer");
    if (r == DT_OK)
        r = make_trainer(lp, cfg);
    if (r != DT_OK)
        lab_pipe_free(lp);
    return r;
}

/* Frees the schedule's tables and every pair. */
static dt_result drop_schedule(lab_pipe *lp)
{
    dt_result r = DT_OK;
    for (int i = 0; lp->mb && i < lp->v * lp->m; i++) {
        dt_result ri = release_pair(&lp->mb[i]);
        r = r != DT_OK ? r : ri;
    }
    free(lp->mb), free(lp->ops), free(lp->step_index);
    dt_sched_free(lp->sched);
    lp->mb = NULL, lp->ops = NULL, lp->step_index = NULL, lp->sched = NULL;
    lp->trainer.schedule = NULL, lp->trainer.schedule_len = 0;
    return r;
}

void lab_pipe_free(lab_pipe *lp)
{
    if (!lp)
        return;
    (void)drop_schedule(lp);
    dt_trainer_free(&lp->trainer);
    dt_mem_free(lp->recv);
    dt_comm_free(lp->dp);
    dt_comm_free(lp->pipe);
    memset(lp, 0, sizeof *lp);
}

/* A copy of s through its text form's steps. */
static dt_result copy_schedule(const dt_schedule *s, dt_schedule **out)
{
    DT_CHECK(dt_sched_create(out, s->ranks, s->chunks, s->micro));
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++) {
            const dt_step *st = &s->steps[r][i];
            dt_result e = dt_sched_add(*out, st->stage, st->micro, st->kind);
            if (e != DT_OK) {
                dt_sched_free(*out);
                *out = NULL;
                return e;
            }
        }
    return DT_OK;
}

dt_result lab_pipe_set_schedule(lab_pipe *lp, const dt_schedule *s)
{
    dt_sched_report rep;
    if (!lp || !s)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_set_schedule: NULL argument");
    if (s->ranks != lp->p || s->chunks != lp->v)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_set_schedule: a schedule of %d ranks and "
                       "%d chunks for a pipeline of %d and %d", s->ranks, s->chunks, lp->p, lp->v);
    DT_CHECK(dt_sched_validate(s, &rep));
    DT_CHECK(drop_schedule(lp));
    int n = s->nsteps[lp->rank], m = s->micro;
    lp->m = m, lp->split = rep.split_backward;
    lp->mb = calloc((size_t)(lp->v * m), sizeof *lp->mb);
    lp->ops = calloc((size_t)n, sizeof *lp->ops);
    lp->step_index = calloc((size_t)(3 * lp->v * m), sizeof *lp->step_index);
    dt_result r = lp->mb && lp->ops && lp->step_index ? copy_schedule(s, &lp->sched)
                                                      : dt_fail(DT_ERR_NOMEM, "a schedule");
    for (int i = 0; r == DT_OK && i < n; i++) {
        const dt_step *st = &s->steps[lp->rank][i];
        dt_train_op_kind k = st->kind == DT_STEP_F   ? DT_TRAIN_FORWARD
                             : st->kind == DT_STEP_B ? DT_TRAIN_BACKWARD
                                                     : DT_TRAIN_WEIGHT;
        lp->ops[i] = (dt_train_op){st->micro, k, st->stage / lp->p};
        lp->step_index[(k * lp->v + lp->ops[i].chunk) * m + st->micro] = i;
    }
    if (r != DT_OK) {
        drop_schedule(lp);
        return r;
    }
    lp->trainer.schedule = lp->ops, lp->trainer.schedule_len = n;
    return DT_OK;
}

dt_result lab_pipe_step(lab_pipe *lp, const float *x, const int32_t *labels, float *loss)
{
    if (!lp || !lp->mb || !x || !labels)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_step: %s", lp && !lp->mb
                       ? "no schedule (lab_pipe_set_schedule)" : "NULL argument");
    dt_batch b = {x, NULL, labels, lp->B, 1, lp->m};
    lp->x = x, lp->labels = labels;
    dt_result r = dt_train_step(&lp->trainer, &b);
    /* the sends still in flight end here; a pair left holding something
     * (a failed step) is emptied so that the next step starts clean */
    for (int i = 0; i < lp->v * lp->m; i++) {
        dt_result ri = release_pair(&lp->mb[i]);
        r = r != DT_OK ? r : ri;
    }
    if (loss)
        *loss = r == DT_OK && lab_pipe_stage(lp, lp->v - 1) == lp->S - 1 ? lp->trainer.loss : 0;
    return r;
}

/* ================================================================ task 3 */

dt_result lab_pipe_forward(lab_pipe *lp, int chunk, int micro)
{
    /* BEGIN STUDENT CODE */
    int s = lab_pipe_stage(lp, chunk);
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    const float *in = lab_pipe_micro_x(lp, micro);
    if (s > 0) { /* the previous stage's activation */
        DT_CHECK(dt_recv(lp->recv, lab_pipe_cut_count(lp, s), DT_F32, lab_pipe_rank_of(lp, s - 1),
                         lp->pipe));
        in = lp->recv;
    }
    DT_CHECK(lab_pipe_run_forward(lp, chunk, micro, in));
    if (s < lp->S - 1) /* posted, not waited for: the buffer lives in acts until B */
        DT_CHECK(dt_isend(dt_acts_output(mb->acts), lab_pipe_cut_count(lp, s + 1), DT_F32,
                          lab_pipe_rank_of(lp, s + 1), lp->pipe, &mb->send));
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_pipe_backward(lab_pipe *lp, int chunk, int micro)
{
    /* BEGIN STUDENT CODE */
    int s = lab_pipe_stage(lp, chunk);
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    const float *dout = NULL; /* the last stage starts from the loss */
    if (s < lp->S - 1) {
        DT_CHECK(dt_recv(lp->recv, lab_pipe_cut_count(lp, s + 1), DT_F32,
                         lab_pipe_rank_of(lp, s + 1), lp->pipe));
        dout = lp->recv;
    }
    /* the forward's send ended when the next stage took it, before its B */
    DT_CHECK(dt_wait(mb->send));
    mb->send = NULL;
    DT_CHECK(lab_pipe_run_backward(lp, chunk, micro, dout));
    if (s > 0)
        DT_CHECK(dt_isend(mb->dinp, lab_pipe_cut_count(lp, s), DT_F32, lab_pipe_rank_of(lp, s - 1),
                          lp->pipe, &mb->send));
    if (!lp->split) { /* nothing needs the activations any more */
        dt_acts_free(mb->acts);
        mb->acts = NULL;
    }
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

dt_result lab_pipe_weight(lab_pipe *lp, int chunk, int micro)
{
    /* BEGIN STUDENT CODE */
    lab_mb *mb = lab_pipe_mb(lp, chunk, micro);
    DT_CHECK(lab_pipe_run_weight(lp, chunk, micro));
    dt_wgrad_free(mb->wgrad);
    dt_acts_free(mb->acts);
    mb->wgrad = NULL, mb->acts = NULL;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 4 */

dt_result lab_pipe_sync(lab_pipe *lp, int micro_steps)
{
    /* BEGIN STUDENT CODE */
    /* g = 1/(d m) sum over replicas and micro-batches, on this rank's
     * stages' layers: each chunk is one contiguous range of the buffers */
    float scale = 1.0f / ((float)lp->d * (float)micro_steps);
    for (int c = 0; c < lp->v; c++) {
        int s = lab_pipe_stage(lp, c);
        size_t off, count;
        DT_CHECK(dt_model_layer_range(lp->model, lp->first[s], lp->first[s + 1], &off, &count));
        float *g = lp->model->grads + off;
        if (lp->dp)
            DT_CHECK(dt_allreduce(g, g, count, DT_F32, DT_SUM, lp->dp));
        DT_CHECK(dt_vec_scale(g, scale, count));
    }
    return DT_OK;
    /* END STUDENT CODE */
}
