/* datasets.c - synthetic sets by (seed, rank), the digits loader, split
 * and gather.
 *
 * Random streams: sample i of rank r draws from stream (r << 32) | i, so a
 * sample does not depend on how many others were drawn before it; shared
 * quantities (blob centres) draw from streams above 2^48, which no sample
 * stream reaches. */
#include "dt/data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHARED_STREAM (1ULL << 48)

static uint64_t sample_stream(int rank, size_t i) { return ((uint64_t)rank << 32) | (uint64_t)i; }

void dt_dataset_free(dt_dataset *d)
{
    if (!d)
        return;
    dt_mem_free(d->x);
    dt_mem_free(d->tokens);
    dt_mem_free(d->y);
    memset(d, 0, sizeof *d);
}

/* Allocates the buffers of a set of n samples; on failure d is zeroed. */
static dt_result ds_alloc(dt_dataset *d, size_t n, size_t features, size_t classes, size_t seq)
{
    memset(d, 0, sizeof *d);
    d->n = n, d->features = features, d->classes = classes, d->seq = seq;
    size_t rows = seq ? n * seq : n;
    if (features)
        d->x = dt_mem_alloc(DT_MEM_OTHER, n * features * sizeof(float));
    if (seq)
        d->tokens = dt_mem_alloc(DT_MEM_OTHER, rows * sizeof(int32_t));
    d->y = dt_mem_alloc(DT_MEM_OTHER, rows * sizeof(int32_t));
    if (!d->y || (features && !d->x) || (seq && !d->tokens)) {
        dt_dataset_free(d);
        return dt_fail(DT_ERR_NOMEM, "data set of %zu samples: out of memory", n);
    }
    return DT_OK;
}

static dt_result check_common(const char *fn, const dt_dataset *d, size_t n, size_t classes,
                              int rank)
{
    if (!d)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL data set", fn);
    if (n == 0 || classes < 2)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: %zu samples of %zu classes (need n > 0, >= 2 "
                       "classes)", fn, n, classes);
    if (rank < 0 || n > UINT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: rank %d, n %zu", fn, rank, n);
    return DT_OK;
}

/* ---------------------------------------------------------------- synthetic */

dt_result dt_data_blobs(dt_dataset *d, size_t n, size_t features, size_t classes, float spread,
                        uint64_t seed, int rank)
{
    DT_CHECK(check_common("dt_data_blobs", d, n, classes, rank));
    if (features == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_blobs: 0 features");
    DT_CHECK(ds_alloc(d, n, features, classes, 0));
    for (size_t i = 0; i < n; i++) {
        dt_rng r, rc;
        dt_rng_init(&r, seed, sample_stream(rank, i));
        uint32_t c = dt_rng_below(&r, (uint32_t)classes);
        /* centre of class c: the same on every rank (seed only) */
        dt_rng_init(&rc, seed, SHARED_STREAM + c);
        for (size_t f = 0; f < features; f++)
            d->x[i * features + f] = spread * dt_rng_normal(&rc) + dt_rng_normal(&r);
        d->y[i] = (int32_t)c;
    }
    return DT_OK;
}

dt_result dt_data_spirals(dt_dataset *d, size_t n, size_t classes, float noise, uint64_t seed,
                          int rank)
{
    DT_CHECK(check_common("dt_data_spirals", d, n, classes, rank));
    DT_CHECK(ds_alloc(d, n, 2, classes, 0));
    const double two_pi = 6.283185307179586;
    for (size_t i = 0; i < n; i++) {
        dt_rng r;
        dt_rng_init(&r, seed, sample_stream(rank, i));
        uint32_t c = dt_rng_below(&r, (uint32_t)classes);
        /* arm c: radius t, angle turning 1.5 times as t goes 0 -> 1 */
        double t = dt_rng_uniform(&r), a = two_pi * c / (double)classes + 1.5 * two_pi * t;
        d->x[2 * i] = (float)(t * cos(a)) + noise * dt_rng_normal(&r);
        d->x[2 * i + 1] = (float)(t * sin(a)) + noise * dt_rng_normal(&r);
        d->y[i] = (int32_t)c;
    }
    return DT_OK;
}

dt_result dt_data_sequences(dt_dataset *d, size_t n, size_t seq, size_t vocab, uint64_t seed,
                            int rank)
{
    DT_CHECK(check_common("dt_data_sequences", d, n, vocab, rank));
    if (seq == 0 || vocab > INT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_sequences: seq %zu, vocab %zu", seq, vocab);
    DT_CHECK(ds_alloc(d, n, 0, vocab, seq));
    for (size_t i = 0; i < n; i++) {
        dt_rng r;
        dt_rng_init(&r, seed, sample_stream(rank, i));
        uint64_t start = dt_rng_below(&r, (uint32_t)vocab), stride = 1 + dt_rng_below(&r, 3);
        for (size_t t = 0; t < seq; t++) { /* s_t = start + t stride (mod vocab) */
            d->tokens[i * seq + t] = (int32_t)((start + t * stride) % vocab);
            d->y[i * seq + t] = (int32_t)((start + (t + 1) * stride) % vocab);
        }
    }
    return DT_OK;
}

/* ---------------------------------------------------------------- digits */

#define DIGITS_PIXELS 64
#define DIGITS_MAX 16

/* Parses one line of 65 integer fields into px (64) and *label; on error
 * writes the 1-based column and a reason. */
static int parse_digits_line(const char *line, float *px, int32_t *label, int *col,
                             char *why, size_t why_len)
{
    const char *p = line;
    for (int f = 0; f <= DIGITS_PIXELS; f++) {
        *col = f + 1;
        char *end;
        errno = 0;
        long v = strtol(p, &end, 10);
        if (end == p || errno) {
            snprintf(why, why_len, "expected an integer, found '%.12s'", p);
            return -1;
        }
        long hi = f < DIGITS_PIXELS ? DIGITS_MAX : 9;
        if (v < 0 || v > hi) {
            snprintf(why, why_len, "%s %ld outside 0..%ld", f < DIGITS_PIXELS ? "pixel" : "label",
                     v, hi);
            return -1;
        }
        if (f < DIGITS_PIXELS)
            px[f] = (float)v / DIGITS_MAX;
        else
            *label = (int32_t)v;
        if (f < DIGITS_PIXELS && *end != ',') {
            snprintf(why, why_len, "%d fields, expected %d", f + 1, DIGITS_PIXELS + 1);
            return -1;
        }
        if (f == DIGITS_PIXELS && strspn(end, " \t\r\n") != strlen(end)) {
            *col = f + 2;
            snprintf(why, why_len, "more than %d fields", DIGITS_PIXELS + 1);
            return -1;
        }
        p = end + 1;
    }
    return 0;
}

static int blank(const char *s) { return strspn(s, " \t\r\n") == strlen(s); }

dt_result dt_data_load_digits(dt_dataset *d, const char *path)
{
    if (!d)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_load_digits: NULL data set");
    memset(d, 0, sizeof *d);
    const char *from = path ? "" : dt_env_str("DT_DIGITS", NULL) ? " (DT_DIGITS)" : "";
    if (!path)
        path = dt_env_str("DT_DIGITS", "data/digits.csv");
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(DT_ERR_IO, "cannot open digits file '%s'%s: %s", path, from,
                       strerror(errno));
    char *line = NULL;
    size_t cap = 0, n = 0;
    while (getline(&line, &cap, f) >= 0) /* first pass: count the samples */
        n += !blank(line);
    dt_result res = DT_OK;
    if (n == 0)
        res = dt_fail(DT_ERR_INVALID_ARG, "%s: no samples", path);
    else
        res = ds_alloc(d, n, DIGITS_PIXELS, 10, 0);
    rewind(f);
    size_t i = 0, lineno = 0;
    while (res == DT_OK && i < n && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (blank(line))
            continue;
        int col;
        char why[96];
        if (parse_digits_line(line, d->x + i * DIGITS_PIXELS, &d->y[i], &col, why, sizeof why))
            res = dt_fail(DT_ERR_INVALID_ARG, "%s:%zu:%d: %s", path, lineno, col, why);
        i++;
    }
    free(line);
    fclose(f);
    if (res != DT_OK)
        dt_dataset_free(d);
    return res;
}

/* ---------------------------------------------------------------- split, gather */

/* Copies sample src_i of s into slot dst_i of d (same kind of set). */
static void copy_sample(dt_dataset *d, size_t dst_i, const dt_dataset *s, size_t src_i)
{
    size_t rows = s->seq ? s->seq : 1;
    if (s->features)
        memcpy(d->x + dst_i * s->features, s->x + src_i * s->features,
               s->features * sizeof(float));
    if (s->seq)
        memcpy(d->tokens + dst_i * rows, s->tokens + src_i * rows, rows * sizeof(int32_t));
    memcpy(d->y + dst_i * rows, s->y + src_i * rows, rows * sizeof(int32_t));
}

static void permutation(size_t *perm, size_t n, uint64_t seed, uint64_t stream)
{
    dt_rng r;
    dt_rng_init(&r, seed, stream);
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n; i > 1; i--) { /* Fisher-Yates */
        size_t j = dt_rng_below(&r, (uint32_t)i), t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

dt_result dt_data_split(const dt_dataset *src, double test_fraction, uint64_t seed,
                        dt_dataset *train, dt_dataset *test)
{
    if (!src || !train || !test || !src->y)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_split: NULL data set");
    size_t n = src->n, nt = (size_t)llround((double)n * test_fraction);
    if (!(test_fraction > 0 && test_fraction < 1) || nt == 0 || nt == n)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_split: test fraction %g of %zu samples "
                       "leaves a side empty", test_fraction, n);
    size_t *perm = malloc(n * sizeof *perm);
    if (!perm)
        return dt_fail(DT_ERR_NOMEM, "dt_data_split: %zu indices", n);
    permutation(perm, n, seed, 0);
    dt_result r = ds_alloc(test, nt, src->features, src->classes, src->seq);
    if (r == DT_OK && (r = ds_alloc(train, n - nt, src->features, src->classes, src->seq)))
        dt_dataset_free(test);
    if (r == DT_OK)
        for (size_t i = 0; i < n; i++) {
            if (i < nt)
                copy_sample(test, i, src, perm[i]);
            else
                copy_sample(train, i - nt, src, perm[i]);
        }
    free(perm);
    return r;
}

dt_result dt_data_gather(const dt_dataset *d, const size_t *idx, size_t B, float *x,
                         int32_t *tokens, int32_t *y)
{
    if (!d || !idx || B == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_data_gather: %s", !d ? "NULL data set"
                       : !idx ? "NULL indices" : "batch of 0");
    size_t rows = d->seq ? d->seq : 1;
    for (size_t b = 0; b < B; b++) {
        size_t i = idx[b];
        if (i >= d->n)
            return dt_fail(DT_ERR_INVALID_ARG, "dt_data_gather: index %zu of a set of %zu", i,
                           d->n);
        if (x && d->features)
            memcpy(x + b * d->features, d->x + i * d->features, d->features * sizeof(float));
        if (tokens && d->seq)
            memcpy(tokens + b * rows, d->tokens + i * rows, rows * sizeof(int32_t));
        if (y)
            memcpy(y + b * rows, d->y + i * rows, rows * sizeof(int32_t));
    }
    return DT_OK;
}
