/* tp_test_blocks.c - the rank function of the sub-block tests (tasks 2, 3,
 * and 6): the MLP or the attention of block 1 on this rank, against the
 * same sub-block of the whole model computed by the library's layers on
 * one rank, from the same input (normal numbers: tolerance TPT_TOL). */
#include "tp_test.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    int attention;          /* 0: the MLP */
    size_t C, H, NH;        /* H: the hidden width, 4C (MLP) or C (attention) */
    size_t W1;              /* rows of the first layer's weight: 4C or 3C */
    const float *w1, *b1, *w2, *b2; /* whole weights: (W1, C), (W1), (C, H), (C) */
    float *h, *dy;          /* whole input and output gradient (N, C) */
    float *a1, *a2;         /* whole first-layer output (N, W1) and second-layer input (N, H) */
    float *att;             /* attention weights (B, NH, T, T) */
    float *y, *dh;          /* whole output and input gradient */
    float *dw1, *db1, *dw2, *db2; /* whole parameter gradients */
} sub_ref;

static float *get(size_t n)
{
    return calloc(n ? n : 1, sizeof(float));
}

static void sub_free(sub_ref *s)
{
    float *bufs[] = {s->h, s->dy, s->a1, s->a2, s->att, s->y, s->dh, s->dw1, s->db1, s->dw2,
                     s->db2};
    for (size_t k = 0; k < sizeof bufs / sizeof *bufs; k++)
        free(bufs[k]);
}

/* The whole sub-block, forward and backward, on one rank. */
static dt_result sub_whole(sub_ref *s, const dt_model *m, int attention)
{
    size_t N = TPT_B * TPT_T, C = m->gpt.channels;
    memset(s, 0, sizeof *s);
    s->attention = attention, s->C = C, s->NH = m->gpt.heads;
    s->H = attention ? C : 4 * C, s->W1 = attention ? 3 * C : 4 * C;
    const char *names[4] = {"block1.mlp.fc.weight", "block1.mlp.fc.bias",
                            "block1.mlp.proj.weight", "block1.mlp.proj.bias"};
    const char *anames[4] = {"block1.attn.qkv.weight", "block1.attn.qkv.bias",
                             "block1.attn.proj.weight", "block1.attn.proj.bias"};
    const float **w[4] = {&s->w1, &s->b1, &s->w2, &s->b2};
    for (int k = 0; k < 4; k++)
        *w[k] = m->params + dt_model_find_view(m, attention ? anames[k] : names[k])->offset;
    s->h = get(N * C), s->dy = get(N * C), s->a1 = get(N * s->W1), s->a2 = get(N * s->H);
    s->att = get(TPT_B * s->NH * TPT_T * TPT_T), s->y = get(N * C), s->dh = get(N * C);
    s->dw1 = get(s->W1 * C), s->db1 = get(s->W1), s->dw2 = get(C * s->H), s->db2 = get(C);
    float *d2 = get(N * s->H), *d1 = get(N * s->W1);
    if (!s->db2 || !d1 || !d2) {
        free(d1), free(d2);
        return dt_fail(DT_ERR_NOMEM, "sub_whole");
    }
    tpt_fill_normal(s->h, N * C, 21, 1.0f);
    tpt_fill_normal(s->dy, N * C, 22, 1.0f);
    dt_result r = dt_linear_forward(s->a1, s->h, s->w1, s->b1, N, C, s->W1);
    if (r == DT_OK)
        r = attention ? dt_attention_forward(s->a2, s->att, s->a1, TPT_B, TPT_T, C, s->NH)
                      : dt_gelu_forward(s->a2, s->a1, N * s->H);
    if (r == DT_OK)
        r = dt_linear_forward(s->y, s->a2, s->w2, s->b2, N, s->H, C);
    if (r == DT_OK)
        r = dt_linear_backward(d2, s->dw2, s->db2, s->dy, s->a2, s->w2, N, s->H, C);
    if (r == DT_OK)
        r = attention ? dt_attention_backward(d1, d2, s->a1, s->att, TPT_B, TPT_T, C, s->NH)
                      : dt_gelu_backward(d1, d2, s->a1, N * s->H);
    if (r == DT_OK)
        r = dt_linear_backward(s->dh, s->dw1, s->db1, d1, s->h, s->w1, N, C, s->W1);
    free(d1), free(d2);
    return r;
}

/* Rank r's rows of the first layer (heads for attention, rows for the
 * MLP): local row i -> whole row. */
static size_t first_row(const sub_ref *s, size_t i, int t, int r)
{
    size_t Wl = s->W1 / (size_t)t;
    if (!s->attention)
        return (size_t)r * Wl + i;
    size_t Cl = s->C / (size_t)t;
    return (i / Cl) * s->C + (size_t)r * Cl + i % Cl;
}

/* This rank's sub-block: forward then backward, each checked. */
static dt_result sub_rank(lab_tp *tp, const sub_ref *s)
{
    int t = tp->t, r = tp->rank;
    size_t N = tp->N, Nl = tp->Nl, C = s->C, H = s->H, Hl = H / (size_t)t;
    size_t W1l = s->W1 / (size_t)t, r0 = tp->sp ? (size_t)r * Nl : 0;
    float *w1 = get(W1l * C), *b1 = get(W1l), *w2 = get(C * Hl), *g = get(2 * W1l * C + 2 * C * Hl);
    float *y = get(Nl * C), *dh = get(Nl * C), *want = get(N * s->W1 + s->W1 * (C + 1) + C * H);
    lab_tp_block_acts a = {0};
    dt_result res = lab_tp_block_acts_create(&a, tp);
    if (res == DT_OK && (!w1 || !b1 || !w2 || !g || !y || !dh || !want))
        res = dt_fail(DT_ERR_NOMEM, "sub_rank");
    if (res != DT_OK)
        goto out;
    for (size_t i = 0; i < W1l; i++) { /* this rank's slices of the weights */
        memcpy(w1 + i * C, s->w1 + first_row(s, i, t, r) * C, C * sizeof(float));
        b1[i] = s->b1[first_row(s, i, t, r)];
    }
    for (size_t o = 0; o < C; o++)
        memcpy(w2 + o * Hl, s->w2 + o * H + (size_t)r * Hl, Hl * sizeof(float));
    float *dw1 = g, *db1 = g + W1l * C, *dw2 = db1 + W1l, *db2 = dw2 + C * Hl;
    lab_tp_block_w p = {0}, gw = {0};
    if (s->attention) {
        p.qkv_w = w1, p.qkv_b = b1, p.proj_w = w2, p.proj_b = (float *)s->b2;
        gw.qkv_w = dw1, gw.qkv_b = db1, gw.proj_w = dw2, gw.proj_b = db2;
        memcpy(a.ln1, s->h + r0 * C, Nl * C * sizeof(float));
    } else {
        p.fc_w = w1, p.fc_b = b1, p.mproj_w = w2, p.mproj_b = (float *)s->b2;
        gw.fc_w = dw1, gw.fc_b = db1, gw.mproj_w = dw2, gw.mproj_b = db2;
        memcpy(a.ln2, s->h + r0 * C, Nl * C * sizeof(float));
    }
    /* forward: the output's rows, and the first layer's slice it keeps */
    res = s->attention ? lab_tp_attention_forward(tp, y, &a, &p)
                       : lab_tp_mlp_forward(tp, y, &a, &p);
    if (res == DT_OK)
        res = tpt_compare("y", y, s->y + r0 * C, Nl * C);
    for (size_t i = 0; res == DT_OK && i < N; i++)
        for (size_t j = 0; j < W1l; j++)
            want[i * W1l + j] = s->a1[i * s->W1 + first_row(s, j, t, r)];
    if (res == DT_OK)
        res = tpt_compare(s->attention ? "a->qkv" : "a->fch", s->attention ? a.qkv : a.fch, want,
                      N * W1l);
    tpt_calls fwd = {1, 0, 0, tpt_ring_allreduce_bytes(N * C, t)};
    tpt_calls sp_fwd = {0, 1, 1, 2 * tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, s->attention ? "attention forward" : "MLP forward",
                               tp->sp ? sp_fwd : fwd);
    /* backward: the input's gradient, then each parameter's */
    if (res == DT_OK)
        res = s->attention ? lab_tp_attention_backward(tp, dh, &gw, s->dy + r0 * C, &a, &p)
                           : lab_tp_mlp_backward(tp, dh, &gw, s->dy + r0 * C, &a, &p);
    if (res == DT_OK)
        res = tpt_compare("dh", dh, s->dh + r0 * C, Nl * C);
    for (size_t i = 0; res == DT_OK && i < W1l; i++) {
        memcpy(want + i * C, s->dw1 + first_row(s, i, t, r) * C, C * sizeof(float));
        want[W1l * C + i] = s->db1[first_row(s, i, t, r)];
    }
    if (res == DT_OK)
        res = tpt_compare("the first layer's weight and bias gradients", dw1, want, W1l * C + W1l);
    for (size_t o = 0; res == DT_OK && o < C; o++)
        memcpy(want + o * Hl, s->dw2 + o * H + (size_t)r * Hl, Hl * sizeof(float));
    if (res == DT_OK)
        res = tpt_compare("the second layer's weight gradient", dw2, want, C * Hl);
    for (size_t o = 0; res == DT_OK && o < C; o++) { /* the replicated bias: this rank's rows */
        double sum = 0;
        for (size_t i = r0; i < r0 + Nl; i++)
            sum += s->dy[i * C + o];
        want[o] = (float)sum;
    }
    if (res == DT_OK)
        res = tpt_compare("the second layer's bias gradient", db2, want, C);
    tpt_calls bwd = {1, 0, 0, tpt_ring_allreduce_bytes(N * C, t)};
    tpt_calls sp_bwd = {0, 1, 2, 3 * tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, s->attention ? "attention backward" : "MLP backward",
                               tp->sp ? sp_bwd : bwd);
out:
    lab_tp_block_acts_free(&a);
    free(w1), free(b1), free(w2), free(g), free(y), free(dh), free(want);
    return res;
}

dt_result tpt_sub_rank(dt_comm *world, void *arg)
{
    const int *how = arg; /* {attention, sp} */
    dt_gpt_config cfg = tpt_config(1);
    dt_model m = {0};
    sub_ref s = {0};
    lab_tp tp = {0};
    dt_result res = tpt_gpt_create(&m, &cfg);
    if (res == DT_OK)
        res = sub_whole(&s, &m, how[0]);
    if (res == DT_OK)
        res = lab_tp_init(&tp, world, &cfg, TPT_B, TPT_T, how[1]);
    if (res == DT_OK)
        res = dt_comm_stats_reset(world);
    if (res == DT_OK)
        res = sub_rank(&tp, &s);
    lab_tp_free(&tp);
    sub_free(&s);
    dt_model_free(&m);
    return res;
}
