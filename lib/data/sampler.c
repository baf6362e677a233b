/* sampler.c - one epoch of indices split across ranks, as torch's
 * DistributedSampler does.
 *
 *   epoch order      p0 p1 p2 p3 p4 p5 p6      (n = 7, a permutation)
 *   pad to 3 x 3     p0 p1 p2 p3 p4 p5 p6 p0 p1
 *   rank 0 takes     p0       p3       p6          every 3rd from 0
 *   rank 1 takes        p1       p4       p0
 *   rank 2 takes           p2       p5       p1
 *
 * With drop_last the tail is cut instead (to 6: each rank gets 2), and the
 * shards are then disjoint; with padding they cover the set and overlap
 * only in the repeated head. */
#include "dt/data.h"

#include <stdlib.h>
#include <string.h>

dt_result dt_sampler_init(dt_sampler *s, size_t n, int ranks, int rank, int shuffle,
                          int drop_last, uint64_t seed)
{
    if (!s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_init: NULL sampler");
    if (n == 0 || n > UINT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_init: data set of %zu samples", n);
    if (ranks < 1 || rank < 0 || rank >= ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_init: rank %d of %d", rank, ranks);
    size_t R = (size_t)ranks;
    if (drop_last && n < R)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_init: %zu samples for %d ranks leave "
                       "nothing after drop_last", n, ranks);
    memset(s, 0, sizeof *s);
    s->n = n, s->ranks = ranks, s->rank = rank;
    s->shuffle = shuffle != 0, s->drop_last = drop_last != 0, s->seed = seed;
    s->num_samples = drop_last ? n / R : (n + R - 1) / R;
    s->total = s->num_samples * R;
    return DT_OK;
}

/* order := epoch's order of [0, n): shuffled from (seed, epoch), or 0 .. n-1. */
static void epoch_order(const dt_sampler *s, uint64_t epoch, size_t *order)
{
    size_t n = s->n;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    if (s->shuffle) { /* Fisher-Yates from (seed, epoch): every rank draws the same order */
        dt_rng r;
        dt_rng_init(&r, s->seed, epoch);
        for (size_t i = n; i > 1; i--) {
            size_t j = dt_rng_below(&r, (uint32_t)i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
    }
}

/* out[0 .. count) := this rank's indices first .. first+count-1 of epoch:
 * position k of the padded (or cut) order is order[k mod n]. */
static dt_result take(const dt_sampler *s, uint64_t epoch, size_t first, size_t count,
                      size_t *out)
{
    size_t n = s->n, *order = malloc(n * sizeof *order);
    if (!order)
        return dt_fail(DT_ERR_NOMEM, "dt_sampler: %zu indices", n);
    epoch_order(s, epoch, order);
    for (size_t j = 0; j < count; j++)
        out[j] = order[((size_t)s->rank + (first + j) * (size_t)s->ranks) % n];
    free(order);
    return DT_OK;
}

dt_result dt_sampler_indices(const dt_sampler *s, uint64_t epoch, size_t *out)
{
    if (!s || !out || s->n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_indices: %s",
                       !out ? "NULL output" : "sampler not initialised");
    return take(s, epoch, 0, s->num_samples, out);
}

dt_result dt_sampler_next(const dt_sampler *s, dt_sampler_pos *pos, size_t B, size_t *out)
{
    if (!s || !pos || !out || s->n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_next: %s", !s || s->n == 0 ?
                       "sampler not initialised" : "NULL position or output");
    if (B == 0 || B > s->num_samples)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_next: batch %zu, a rank's epoch holds "
                       "%zu", B, s->num_samples);
    uint64_t R = (uint64_t)s->ranks;
    if (pos->consumed % R != 0 || pos->consumed > s->total)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_next: %llu samples of epoch %llu taken: "
                       "%s %d ranks", (unsigned long long)pos->consumed,
                       (unsigned long long)pos->epoch, pos->consumed > s->total ?
                       "more than an epoch of" : "not a whole number of samples each for",
                       s->ranks);
    size_t next = (size_t)(pos->consumed / R);
    dt_sampler_pos at = *pos;
    if (next + B > s->num_samples) /* the epoch's rest is no whole batch: the next epoch */
        at.epoch++, next = 0;
    DT_CHECK(take(s, at.epoch, next, B, out));
    at.consumed = (next + B) * R;
    *pos = at;
    return DT_OK;
}

dt_result dt_sampler_state(const dt_sampler *s, dt_sampler_pos *pos, dt_ckpt_io *io,
                           const char *name)
{
    if (!s || !pos || !io || !name)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sampler_state: NULL argument");
    uint64_t order[4] = {s->n, (uint64_t)s->shuffle, (uint64_t)s->drop_last, s->seed};
    size_t four = 4;
    DT_CHECK(dt_ckpt_io_push(io, name));
    DT_CHECK(dt_ckpt_io_expect(io, "order", DT_CKPT_U64, 1, &four, order));
    DT_CHECK(dt_ckpt_io_u64(io, "epoch", &pos->epoch));
    DT_CHECK(dt_ckpt_io_u64(io, "consumed", &pos->consumed));
    dt_ckpt_io_pop(io);
    return DT_OK;
}
