/* sync.c - lab 10, tasks 3 to 5: exchanging compressed gradients
 * (chapter 10, section 6). Each function is the trainer's gradient sync
 * for its method; compress.h states what each must leave. And task 8:
 * when top-k's exchange beats the dense one. Your code goes between the
 * fences. */
#include "compress.h"

#include <math.h>
#include <string.h>

/* ================================================================ task 3: top-k */

dt_result lab_sync_topk(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    float *g = c->model->grads;
    size_t n = c->n, k = c->k;
    /* this rank: v = g + e, its k largest, e := v - C(v) */
    DT_CHECK(lab_ef_correct(c->v, g, c->error, n));
    DT_CHECK(lab_topk_select(c->v, n, k, c->pairs));
    memset(c->sent, 0, n * sizeof *c->sent);
    for (size_t j = 0; j < k; j++)
        c->sent[c->pairs[j].index] = c->pairs[j].value;
    DT_CHECK(lab_ef_update(c->error, c->v, c->sent, n));
    /* a sparse vector cannot be summed on the way: every rank gets every
     * rank's pairs, K x 8k bytes, and adds them up itself */
    DT_CHECK(dt_allgather(c->pairs, c->gathered, k * sizeof(lab_pair), DT_U8, c->comm));
    memset(g, 0, n * sizeof *g);
    for (size_t j = 0; j < k * (size_t)c->ranks; j++)
        g[c->gathered[j].index] += c->gathered[j].value;
    for (size_t i = 0; i < n; i++)
        g[i] /= (float)c->ranks;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 4: int8 */

dt_result lab_sync_int8(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    float *g = c->model->grads;
    size_t n = c->n;
    DT_CHECK(lab_ef_correct(c->v, g, c->error, n));
    /* one scale for every rank, s = M / L: integers of the same scale add
     * up exactly, and L = floor(127 / K) keeps their sum inside int8 */
    float m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmaxf(m, fabsf(c->v[i]));
    DT_CHECK(dt_allreduce(&m, &m, 1, DT_F32, DT_MAX, c->comm));
    float scale = m / (float)c->levels;
    DT_CHECK(lab_int8_encode(c->v, n, scale, c->levels, c->q));
    DT_CHECK(lab_int8_decode(c->q, n, scale, c->sent));
    DT_CHECK(lab_ef_update(c->error, c->v, c->sent, n));
    DT_CHECK(dt_allreduce(c->q, c->q, n, DT_I8, DT_SUM, c->comm));
    /* sum_k s q_k / K: the mean of what the ranks sent */
    return lab_int8_decode(c->q, n, scale / (float)c->ranks, g);
    /* END STUDENT CODE */
}

/* ================================================================ task 5: 1-bit */

dt_result lab_sync_sign(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    float *g = c->model->grads;
    size_t n = c->n, bb = c->block_bytes;
    int K = c->ranks, me = c->rank;
    /* 1. worker side: each block of v with its own scale; e := v - C(v) */
    DT_CHECK(lab_ef_correct(c->v, g, c->error, n));
    memset(c->send_blocks, 0, (size_t)K * bb);
    for (int b = 0; b < K; b++) {
        uint8_t *blk = c->send_blocks + (size_t)b * bb;
        DT_CHECK(lab_sign_encode(c->v + c->block_offset[b], c->block_len[b], blk));
        DT_CHECK(lab_sign_decode(blk, c->block_len[b], c->sent + c->block_offset[b]));
    }
    DT_CHECK(lab_ef_update(c->error, c->v, c->sent, n));
    /* 2. the reduce-scatter's traffic, compressed: rank b gets block b of all */
    DT_CHECK(dt_alltoall(c->send_blocks, c->recv_blocks, bb, DT_U8, c->comm));
    /* 3. this rank's block of the mean, decoded and summed in rank order */
    size_t len = c->block_len[me];
    float *u = c->block_mean;
    memset(u, 0, len * sizeof *u);
    for (int k = 0; k < K; k++) {
        DT_CHECK(lab_sign_decode(c->recv_blocks + (size_t)k * bb, len, c->block_tmp));
        for (size_t i = 0; i < len; i++)
            u[i] += c->block_tmp[i];
    }
    for (size_t i = 0; i < len; i++)
        u[i] /= (float)K;
    /* 4. server side: compress the mean again, with its own residual */
    uint8_t *mine = c->recv_blocks + (size_t)me * bb; /* in place for the allgather */
    DT_CHECK(lab_ef_correct(u, u, c->server_error, len));
    memset(mine, 0, bb);
    DT_CHECK(lab_sign_encode(u, len, mine));
    DT_CHECK(lab_sign_decode(mine, len, c->block_tmp));
    DT_CHECK(lab_ef_update(c->server_error, u, c->block_tmp, len));
    /* 5. the allgather's traffic, compressed; every rank decodes every block */
    DT_CHECK(dt_allgather(mine, c->recv_blocks, bb, DT_U8, c->comm));
    for (int b = 0; b < K; b++)
        DT_CHECK(lab_sign_decode(c->recv_blocks + (size_t)b * bb, c->block_len[b],
                                 g + c->block_offset[b]));
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 8: predict, then measure */

dt_result lab_topk_crossover(const dt_net *link, size_t n, int ranks, double *density)
{
    /* BEGIN STUDENT CODE */
    if (!link || !density || n < 1 || ranks < 2)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_topk_crossover: NULL argument, %zu values or "
                       "%d ranks (at least 1 and 2)", n, ranks);
    if (!(link->beta > 0) || !isfinite(link->beta) || !(link->alpha >= 0) || link->gamma != 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_topk_crossover: a link of alpha %g s, beta %g "
                       "B/s, gamma %g s/B (a finite beta and gamma 0)", link->alpha, link->beta,
                       link->gamma);
    /* top-k: one allgather of k pairs of 8 bytes, (K - 1)(alpha + 8k/beta);
     * dense: a ring allreduce of 4n bytes, 2(K - 1)(alpha + 4n/(K beta)).
     * Equal at alpha + 8 d n/beta = 2 alpha + 8n/(K beta): */
    *density = 1.0 / ranks + link->alpha * link->beta / (8.0 * (double)n);
    return DT_OK;
    /* END STUDENT CODE */
}
