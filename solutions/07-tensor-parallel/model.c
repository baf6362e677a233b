/* model.c - lab 07, given code: the group, its scratch buffers, a rank's
 * shard of the tiny GPT and the activations it keeps (chapter 07, sections
 * 2 to 5 say which tensor is split how; section 8 counts the activations).
 * Nothing here communicates. */
#include "tp.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ================================================================ the group */

dt_result lab_tp_init(lab_tp *tp, dt_comm *comm, const dt_gpt_config *cfg, size_t B, size_t T,
                      int sp)
{
    if (!tp || !comm || !cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: NULL argument");
    memset(tp, 0, sizeof *tp);
    int t = dt_comm_size(comm);
    if (t < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: the communicator is freed");
    if (!cfg->vocab || !cfg->context || !cfg->heads || !cfg->channels || !B || !T)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: zero size (vocab %zu, context %zu, "
                       "heads %zu, channels %zu, B %zu, T %zu)", cfg->vocab, cfg->context,
                       cfg->heads, cfg->channels, B, T);
    if (cfg->vocab % (size_t)t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: a vocabulary of %zu does not split "
                       "over %d ranks", cfg->vocab, t);
    if (T > cfg->context)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: sequences of %zu tokens, context %zu",
                       T, cfg->context);
    if (sp && (B * T) % (size_t)t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_init: sequence parallelism needs the %zu "
                       "rows (B %zu x T %zu) to split over %d ranks", B * T, B, T, t);
    tp->comm = comm;
    tp->t = t;
    tp->rank = dt_comm_rank(comm);
    tp->sp = sp ? 1 : 0;
    tp->cfg = *cfg;
    tp->B = B, tp->T = T, tp->N = B * T;
    tp->Nl = sp ? tp->N / (size_t)t : tp->N;
    return DT_OK;
}

void lab_tp_free(lab_tp *tp)
{
    if (!tp)
        return;
    for (int i = 0; i < LAB_TP_SLOTS; i++)
        dt_mem_free(tp->scratch[i]);
    memset(tp, 0, sizeof *tp);
}

float *lab_tp_scratch(lab_tp *tp, int slot, size_t floats)
{
    if (!tp || slot < 0 || slot >= LAB_TP_SLOTS) {
        dt_fail(DT_ERR_INVALID_ARG, "lab_tp_scratch: slot %d (0..%d)", slot, LAB_TP_SLOTS - 1);
        return NULL;
    }
    if (floats == 0)
        floats = 1;
    if (tp->scratch_floats[slot] < floats) { /* grow: the old contents need not survive */
        dt_mem_free(tp->scratch[slot]);
        tp->scratch_floats[slot] = 0;
        tp->scratch[slot] = dt_mem_alloc(DT_MEM_COMM, floats * sizeof(float));
        if (!tp->scratch[slot]) {
            dt_fail(DT_ERR_NOMEM, "lab_tp_scratch: %zu floats", floats);
            return NULL;
        }
        tp->scratch_floats[slot] = floats;
    }
    return tp->scratch[slot];
}

/* ================================================================ the shard */

/* Lays out the shard: the replicated tensors first, then the split ones;
 * returns the number of floats. */
static size_t layout(lab_tp_model *m, const lab_tp *tp)
{
    size_t C = tp->cfg.channels, t = (size_t)tp->t, V = tp->cfg.vocab, o = 0;
    m->wpe = o, o += tp->cfg.context * C;
    m->lnf_w = o, o += C;
    m->lnf_b = o, o += C;
    for (size_t l = 0; l < m->layers; l++) {
        lab_tp_block_at *b = &m->block[l];
        b->ln1_w = o, o += C;
        b->ln1_b = o, o += C;
        b->proj_b = o, o += C;
        b->ln2_w = o, o += C;
        b->ln2_b = o, o += C;
        b->mproj_b = o, o += C;
    }
    m->num_replicated = o;
    m->wte = o, o += V / t * C;
    for (size_t l = 0; l < m->layers; l++) {
        lab_tp_block_at *b = &m->block[l];
        b->qkv_w = o, o += 3 * C / t * C;
        b->qkv_b = o, o += 3 * C / t;
        b->proj_w = o, o += C * (C / t);
        b->fc_w = o, o += 4 * C / t * C;
        b->fc_b = o, o += 4 * C / t;
        b->mproj_w = o, o += C * (4 * C / t);
    }
    m->lm_head = o, o += V / t * C;
    m->split_whole = (o - m->num_replicated) * t;
    return o;
}

/* The whole model's tensor named by fmt (a view of dt_gpt_create's
 * layout), or NULL with a message. */
static const float *whole(const dt_model *w, const char *fmt, ...)
{
    char name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const dt_param_view *v = dt_model_find_view(w, name);
    if (!v)
        dt_fail(DT_ERR_INVALID_ARG, "lab_tp_model_create: the whole model has no tensor %s", name);
    return v ? w->params + v->offset : NULL;
}

/* dst (rows, ncols) = columns [col0, col0 + ncols) of src (rows, cols). */
static void copy_cols(float *dst, const float *src, size_t rows, size_t cols, size_t col0,
                      size_t ncols)
{
    for (size_t i = 0; i < rows; i++)
        memcpy(dst + i * ncols, src + i * cols + col0, ncols * sizeof(float));
}

/* Copies every tensor of the shard from the whole model: a replicated one
 * whole, a column-parallel one as rows [r n/t, (r+1) n/t), a row-parallel
 * one as those columns, qkv through the student's lab_tp_shard_qkv. */
static dt_result fill(lab_tp_model *m, const lab_tp *tp, const dt_model *w)
{
    size_t C = tp->cfg.channels, t = (size_t)tp->t, r = (size_t)tp->rank, V = tp->cfg.vocab;
    float *P = m->params;
    const float *src, *src2;
    if (!(src = whole(w, "embed.wpe")))
        return DT_ERR_INVALID_ARG;
    memcpy(P + m->wpe, src, tp->cfg.context * C * sizeof(float));
    if (!(src = whole(w, "embed.wte")))
        return DT_ERR_INVALID_ARG;
    memcpy(P + m->wte, src + r * (V / t) * C, V / t * C * sizeof(float));
    if (!(src = whole(w, "head.lnf.weight")) || !(src2 = whole(w, "head.lnf.bias")))
        return DT_ERR_INVALID_ARG;
    memcpy(P + m->lnf_w, src, C * sizeof(float));
    memcpy(P + m->lnf_b, src2, C * sizeof(float));
    if (!(src = whole(w, "head.lm_head.weight")))
        return DT_ERR_INVALID_ARG;
    memcpy(P + m->lm_head, src + r * (V / t) * C, V / t * C * sizeof(float));
    static const char *const rep[6] = {"ln1.weight", "ln1.bias", "attn.proj.bias",
                                       "ln2.weight", "ln2.bias", "mlp.proj.bias"};
    for (size_t l = 0; l < m->layers; l++) {
        const lab_tp_block_at *b = &m->block[l];
        const size_t rep_at[6] = {b->ln1_w, b->ln1_b, b->proj_b, b->ln2_w, b->ln2_b, b->mproj_b};
        for (int k = 0; k < 6; k++) {
            if (!(src = whole(w, "block%zu.%s", l + 1, rep[k])))
                return DT_ERR_INVALID_ARG;
            memcpy(P + rep_at[k], src, C * sizeof(float));
        }
        if (!(src = whole(w, "block%zu.attn.qkv.weight", l + 1)) ||
            !(src2 = whole(w, "block%zu.attn.qkv.bias", l + 1)))
            return DT_ERR_INVALID_ARG;
        DT_CHECK(lab_tp_shard_qkv(P + b->qkv_w, P + b->qkv_b, src, src2, C, tp->cfg.heads,
                                  tp->t, tp->rank));
        if (!(src = whole(w, "block%zu.attn.proj.weight", l + 1)))
            return DT_ERR_INVALID_ARG;
        copy_cols(P + b->proj_w, src, C, C, r * (C / t), C / t);
        if (!(src = whole(w, "block%zu.mlp.fc.weight", l + 1)) ||
            !(src2 = whole(w, "block%zu.mlp.fc.bias", l + 1)))
            return DT_ERR_INVALID_ARG;
        memcpy(P + b->fc_w, src + r * (4 * C / t) * C, 4 * C / t * C * sizeof(float));
        memcpy(P + b->fc_b, src2 + r * (4 * C / t), 4 * C / t * sizeof(float));
        if (!(src = whole(w, "block%zu.mlp.proj.weight", l + 1)))
            return DT_ERR_INVALID_ARG;
        copy_cols(P + b->mproj_w, src, C, 4 * C, r * (4 * C / t), 4 * C / t);
    }
    return DT_OK;
}

dt_result lab_tp_model_create(lab_tp_model *m, const lab_tp *tp, const dt_model *whole)
{
    if (!m || !tp || !whole || !whole->params)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_model_create: NULL argument");
    memset(m, 0, sizeof *m);
    const dt_gpt_config *c = &whole->gpt;
    if (whole->kind != DT_MODEL_GPT || memcmp(c, &tp->cfg, sizeof *c))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_model_create: the whole model is not the "
                       "GPT of the group's config (vocab %zu, context %zu, layers %zu, heads "
                       "%zu, channels %zu)", tp->cfg.vocab, tp->cfg.context, tp->cfg.layers,
                       tp->cfg.heads, tp->cfg.channels);
    m->layers = c->layers;
    m->block = dt_mem_alloc(DT_MEM_OTHER, m->layers * sizeof *m->block);
    if (!m->block)
        return dt_fail(DT_ERR_NOMEM, "lab_tp_model_create: block table");
    m->num_params = layout(m, tp);
    m->params = dt_mem_alloc(DT_MEM_PARAM, m->num_params * sizeof(float));
    m->grads = dt_mem_alloc(DT_MEM_GRAD, m->num_params * sizeof(float));
    dt_result r = m->params && m->grads
                      ? fill(m, tp, whole)
                      : dt_fail(DT_ERR_NOMEM, "lab_tp_model_create: %zu floats", m->num_params);
    if (r != DT_OK)
        lab_tp_model_free(m);
    return r;
}

void lab_tp_model_free(lab_tp_model *m)
{
    if (!m)
        return;
    dt_mem_free(m->params);
    dt_mem_free(m->grads);
    dt_mem_free(m->block);
    memset(m, 0, sizeof *m);
}

lab_tp_block_w lab_tp_block(const lab_tp_model *m, float *buf, size_t l)
{
    const lab_tp_block_at *b = &m->block[l];
    lab_tp_block_w w = {buf + b->ln1_w, buf + b->ln1_b, buf + b->qkv_w, buf + b->qkv_b,
                        buf + b->proj_w, buf + b->proj_b, buf + b->ln2_w, buf + b->ln2_b,
                        buf + b->fc_w, buf + b->fc_b, buf + b->mproj_w, buf + b->mproj_b};
    return w;
}

/* ================================================================ activations */

dt_result lab_tp_block_acts_create(lab_tp_block_acts *a, const lab_tp *tp)
{
    if (!a || !tp)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_block_acts_create: NULL argument");
    memset(a, 0, sizeof *a);
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, t = (size_t)tp->t;
    size_t NH = tp->cfg.heads, T = tp->T;
    if (NH % t)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_block_acts_create: %zu heads do not split "
                       "over %zu ranks", NH, t);
    /* the sizes of section 8's table, in this order */
    size_t sizes[13] = {Nl * C, Nl, Nl, N * 3 * C / t, tp->B * (NH / t) * T * T, N * C / t,
                        Nl * C, Nl * C, Nl, Nl, N * 4 * C / t, N * 4 * C / t, Nl * C};
    float **at[13] = {&a->ln1, &a->mean1, &a->rstd1, &a->qkv, &a->att, &a->atty, &a->res2,
                      &a->ln2, &a->mean2, &a->rstd2, &a->fch, &a->fchg, &a->out};
    size_t total = 0;
    for (int k = 0; k < 13; k++)
        total += sizes[k];
    a->base = dt_mem_alloc(DT_MEM_ACT, total * sizeof(float));
    if (!a->base)
        return dt_fail(DT_ERR_NOMEM, "lab_tp_block_acts_create: %zu floats", total);
    float *p = a->base;
    for (int k = 0; k < 13; k++)
        *at[k] = p, p += sizes[k];
    return DT_OK;
}

void lab_tp_block_acts_free(lab_tp_block_acts *a)
{
    if (!a)
        return;
    dt_mem_free(a->base);
    memset(a, 0, sizeof *a);
}

void lab_tp_acts_free(lab_tp_acts *a)
{
    if (!a)
        return;
    for (size_t l = 0; a->blocks && l < a->layers; l++)
        lab_tp_block_acts_free(&a->blocks[l]);
    dt_mem_free(a->blocks);
    float *bufs[] = {a->emb, a->lnf, a->meanf, a->rstdf, a->logits, a->probs, a->dlogits,
                     a->d[0], a->d[1], a->d[2], a->d[3]};
    for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++)
        dt_mem_free(bufs[k]);
    dt_mem_free(a->tokens);
    memset(a, 0, sizeof *a);
}

dt_result lab_tp_acts_create(lab_tp_acts *a, const lab_tp *tp, size_t layers)
{
    if (!a || !tp)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_tp_acts_create: NULL argument");
    memset(a, 0, sizeof *a);
    size_t N = tp->N, Nl = tp->Nl, C = tp->cfg.channels, Vl = tp->cfg.vocab / (size_t)tp->t;
    a->layers = layers;
    a->blocks = dt_mem_alloc(DT_MEM_OTHER, (layers ? layers : 1) * sizeof *a->blocks);
    a->tokens = dt_mem_alloc(DT_MEM_ACT, N * sizeof(int32_t));
    float **bufs[] = {&a->emb, &a->lnf, &a->meanf, &a->rstdf, &a->logits, &a->probs,
                      &a->dlogits, &a->d[0], &a->d[1], &a->d[2], &a->d[3]};
    size_t sizes[] = {Nl * C, Nl * C, Nl, Nl, N * Vl, N * Vl, N * Vl, Nl * C, Nl * C, Nl * C,
                      Nl * C};
    int ok = a->blocks && a->tokens;
    for (size_t k = 0; ok && k < sizeof sizes / sizeof *sizes; k++) {
        dt_mem_tag tag = k < 6 ? DT_MEM_ACT : DT_MEM_OTHER; /* the backward's temporaries */
        ok = (*bufs[k] = dt_mem_alloc(tag, sizes[k] * sizeof(float))) != NULL;
    }
    if (!ok) {
        lab_tp_acts_free(a);
        return dt_fail(DT_ERR_NOMEM, "lab_tp_acts_create: %zu rows", N);
    }
    for (size_t l = 0; l < layers; l++) {
        dt_result r = lab_tp_block_acts_create(&a->blocks[l], tp);
        if (r != DT_OK) {
            lab_tp_acts_free(a);
            return r;
        }
    }
    return DT_OK;
}
