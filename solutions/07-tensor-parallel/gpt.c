/* gpt.c - lab 07, given code: your functions composed into a transformer
 * block, the whole tiny GPT, and the hooks that make the library's
 * training loop (dt/train.h) train it. The layernorms and the
 * residual stream run here, on the Nl rows this rank holds (all N rows, or
 * with sequence parallelism its N/t): they are the "replicated regions"
 * of chapter 07, sections 6 and 7. */
#include "tp.h"

#include <string.h>

/* ================================================================ one block */

dt_result lab_tp_block_forward(lab_tp *tp, lab_tp_block_acts *a, const float *x,
                               const lab_tp_block_w *p)
{
    size_t Nl = tp->Nl, C = tp->cfg.channels;
    /* res2 = x + attention(ln1(x)) */
    DT_CHECK(dt_layernorm_forward(a->ln1, a->mean1, a->rstd1, x, p->ln1_w, p->ln1_b, Nl, C));
    DT_CHECK(lab_tp_attention_forward(tp, a->res2, a, p));
    DT_CHECK(dt_residual_forward(a->res2, a->res2, x, Nl * C));
    /* out = res2 + mlp(ln2(res2)) */
    DT_CHECK(dt_layernorm_forward(a->ln2, a->mean2, a->rstd2, a->res2, p->ln2_w, p->ln2_b, Nl,
                                  C));
    DT_CHECK(lab_tp_mlp_forward(tp, a->out, a, p));
    return dt_residual_forward(a->out, a->out, a->res2, Nl * C);
}

dt_result lab_tp_block_backward(lab_tp *tp, float *dx, const lab_tp_block_w *g, const float *dy,
                                const float *x, const lab_tp_block_acts *a,
                                const lab_tp_block_w *p, float *work0, float *work1)
{
    size_t Nl = tp->Nl, C = tp->cfg.channels;
    float *dres2 = work0, *dln = work1;
    /* out = res2 + mlp(ln2(res2)): res2 gets dy, plus what comes through the MLP */
    memcpy(dres2, dy, Nl * C * sizeof(float));
    DT_CHECK(lab_tp_mlp_backward(tp, dln, g, dy, a, p));
    DT_CHECK(dt_layernorm_backward(dres2, g->ln2_w, g->ln2_b, dln, a->res2, p->ln2_w, a->mean2,
                                   a->rstd2, Nl, C));
    /* res2 = x + attention(ln1(x)): the same again */
    memcpy(dx, dres2, Nl * C * sizeof(float));
    DT_CHECK(lab_tp_attention_backward(tp, dln, g, dres2, a, p));
    return dt_layernorm_backward(dx, g->ln1_w, g->ln1_b, dln, x, p->ln1_w, a->mean1, a->rstd1,
                                 Nl, C);
}

/* ================================================================ the model */

static dt_result check_ids(const char *what, const int32_t *ids, size_t n, size_t V)
{
    if (!ids)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_forward: NULL %s", what);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || (size_t)ids[i] >= V)
            return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_forward: %s[%zu] = %d, outside [0, %zu)",
                           what, i, (int)ids[i], V);
    return DT_OK;
}

/* The input of the head: the last block's output, or the embedding's. */
static const float *last_hidden(const lab_tp_acts *a)
{
    return a->layers ? a->blocks[a->layers - 1].out : a->emb;
}

dt_result lab_tp_forward(lab_tp *tp, const lab_tp_model *m, lab_tp_acts *a,
                         const int32_t *tokens, const int32_t *labels, float *loss)
{
    if (!tp || !m || !a || !loss || a->layers != m->layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_forward: NULL argument or activations of "
                       "another model");
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, V = tp->cfg.vocab;
    DT_CHECK(check_ids("tokens", tokens, N, V));
    DT_CHECK(check_ids("labels", labels, N, V));
    memcpy(a->tokens, tokens, N * sizeof(int32_t));
    float *P = m->params;
    DT_CHECK(lab_vocab_embed_forward(tp, a->emb, P + m->wte, P + m->wpe, a->tokens));
    const float *x = a->emb;
    for (size_t l = 0; l < m->layers; l++) {
        lab_tp_block_w p = lab_tp_block(m, P, l);
        DT_CHECK(lab_tp_block_forward(tp, &a->blocks[l], x, &p));
        x = a->blocks[l].out;
    }
    /* the head: a replicated layernorm, then the LM head split over the
     * vocabulary (column-parallel, no bias), then the loss on the slices */
    DT_CHECK(dt_layernorm_forward(a->lnf, a->meanf, a->rstdf, x, P + m->lnf_w, P + m->lnf_b, Nl,
                                  C));
    DT_CHECK(lab_column_forward(tp, a->logits, a->lnf, P + m->lm_head, NULL, N, C,
                                V / (size_t)tp->t));
    return lab_vocab_xent_forward(tp, a->probs, loss, a->logits, labels);
}

dt_result lab_tp_backward(lab_tp *tp, lab_tp_model *m, lab_tp_acts *a, const int32_t *labels)
{
    if (!tp || !m || !a || !labels || a->layers != m->layers)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_backward: NULL argument or activations of "
                       "another model");
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, Vl = tp->cfg.vocab / (size_t)tp->t;
    float *P = m->params, *G = m->grads, *dy = a->d[0], *dx = a->d[1];
    /* the loss is a mean over the N rows */
    memset(a->dlogits, 0, N * Vl * sizeof(float));
    DT_CHECK(lab_vocab_xent_backward(tp, a->dlogits, a->probs, labels, 1.0f / (float)N));
    DT_CHECK(lab_column_backward(tp, dx, G + m->lm_head, NULL, a->dlogits, a->lnf,
                                 P + m->lm_head, N, C, Vl));
    memset(dy, 0, Nl * C * sizeof(float));
    DT_CHECK(dt_layernorm_backward(dy, G + m->lnf_w, G + m->lnf_b, dx, last_hidden(a),
                                   P + m->lnf_w, a->meanf, a->rstdf, Nl, C));
    for (size_t l = m->layers; l-- > 0;) {
        lab_tp_block_w p = lab_tp_block(m, P, l), g = lab_tp_block(m, G, l);
        const float *x = l ? a->blocks[l - 1].out : a->emb;
        DT_CHECK(lab_tp_block_backward(tp, dx, &g, dy, x, &a->blocks[l], &p, a->d[2], a->d[3]));
        float *swap = dy; /* this block's input gradient is the previous block's output's */
        dy = dx, dx = swap;
    }
    return lab_vocab_embed_backward(tp, G + m->wte, G + m->wpe, dy, a->tokens);
}

/* ================================================================ the loop's hooks */

/* forward: micro-batch t->micro of the loop's batch, which must have the
 * group's shape (its activations were made for it). */
static dt_result tp_forward(dt_trainer *t, void *self)
{
    lab_tp_train *s = self;
    const dt_batch *b = t->batch;
    if (b->B != s->tp->B || b->T != s->tp->T || t->schedule)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_train: a batch of %zu x %zu (the group's: "
                       "%zu x %zu), micro-batches in the default order only", b->B, b->T,
                       s->tp->B, s->tp->T);
    size_t at = (size_t)t->micro * s->tp->N;
    float loss;
    DT_CHECK(lab_tp_forward(s->tp, s->m, s->a, b->tokens + at, b->labels + at, &loss));
    t->loss_sum += loss;
    return DT_OK;
}

static dt_result tp_backward(dt_trainer *t, void *self)
{
    lab_tp_train *s = self;
    return lab_tp_backward(s->tp, s->m, s->a, t->batch->labels + (size_t)t->micro * s->tp->N);
}

/* sync: nothing to average over ranks (they all ran the same batch); with
 * sequence parallelism the replicated gradients' parts are summed (task
 * 6); the micro-batches' gradients become their mean; then the clip. */
static dt_result tp_sync(dt_trainer *t, void *self)
{
    lab_tp_train *s = self;
    if (s->tp->sp)
        DT_CHECK(lab_sp_allreduce_replicated_grads(s->tp, s->m));
    int micro = t->batch->micro_steps;
    if (micro > 1)
        DT_CHECK(dt_vec_scale(s->m->grads, 1.0f / (float)micro, s->m->num_params));
    return s->max_norm > 0 ? lab_tp_clip_grad_norm(s->tp, s->m, s->max_norm, &s->norm) : DT_OK;
}

dt_result lab_tp_train_init(lab_tp_train *s, lab_tp *tp, lab_tp_model *m, lab_tp_acts *a,
                            const dt_optim_config *opt, float max_norm)
{
    if (!s || !tp || !m || !a || !opt)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_train_init: NULL argument");
    memset(s, 0, sizeof *s);
    s->tp = tp, s->m = m, s->a = a, s->max_norm = max_norm;
    /* the loop sees the shard as a model without layers: one flat buffer
     * of parameters and one of gradients, that it zeroes and updates */
    s->view.kind = DT_MODEL_GPT;
    s->view.params = m->params, s->view.grads = m->grads, s->view.num_params = m->num_params;
    s->view.gpt = tp->cfg, s->view.max_seq = tp->cfg.context;
    s->view.num_classes = tp->cfg.vocab;
    dt_trainer_config c = {0};
    c.optim = *opt;
    DT_CHECK(dt_trainer_init(&s->trainer, &s->view, NULL, &c));
    dt_train_set_hook(&s->trainer.forward, (dt_hook){"tp", tp_forward, NULL, NULL, s});
    dt_train_set_hook(&s->trainer.backward, (dt_hook){"tp", tp_backward, NULL, NULL, s});
    dt_train_set_hook(&s->trainer.sync, (dt_hook){"tp", tp_sync, NULL, NULL, s});
    return DT_OK;
}

void lab_tp_train_free(lab_tp_train *s)
{
    if (!s)
        return;
    dt_trainer_free(&s->trainer);
    memset(s, 0, sizeof *s);
}
