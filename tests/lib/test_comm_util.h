/* test_comm_util.h - exact test data for the communicator's tests.
 *
 * Every element is a small integer from f(op, rank, i), chosen so that the
 * reduction over ranks is exact in every dtype (f16 and bf16 included):
 * sums of values in [-4, 4], products of 1s and 2s, averages whose sum is a
 * multiple of the rank count. The reference is computed in int64 and
 * wrapped as the dtype wraps. */
#ifndef TEST_COMM_UTIL_H
#define TEST_COMM_UTIL_H

#include "dt/comm.h"
#include "grader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline int64_t tc_gen(dt_redop op, dt_dtype t, int n, int rank, size_t i)
{
    if (op == DT_PROD)
        return ((size_t)rank + i) % 3 == 0 ? 2 : 1;
    if (op == DT_AVG) {
        /* k(i) plus a zero-sum offset per rank pair: the average is k(i) */
        int64_t k = 3 + (int64_t)(i % 5), d = (int64_t)(i % 3);
        if (n % 2 == 1 && rank == n - 1)
            return k;
        return rank % 2 ? k - d : k + d;
    }
    int64_t v = (int64_t)(((size_t)rank * 3 + i * 7) % 9);
    return t == DT_U8 ? v : v - 4;
}

static inline int64_t tc_wrap(dt_dtype t, int64_t v)
{
    switch (t) {
    case DT_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case DT_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case DT_U8: return (uint8_t)(uint64_t)v;
    default: return v;
    }
}

static inline int64_t tc_ref(dt_redop op, dt_dtype t, int n, size_t i)
{
    int64_t acc = tc_gen(op, t, n, 0, i);
    for (int r = 1; r < n; r++) {
        int64_t x = tc_gen(op, t, n, r, i);
        switch (op) {
        case DT_PROD: acc *= x; break;
        case DT_MAX: acc = x > acc ? x : acc; break;
        case DT_MIN: acc = x < acc ? x : acc; break;
        default: acc += x; break;
        }
        acc = tc_wrap(t, acc);
    }
    if (op == DT_AVG)
        acc /= n;
    return tc_wrap(t, acc);
}

static inline void tc_put(void *buf, dt_dtype t, size_t i, int64_t v)
{
    switch (t) {
    case DT_F32: ((float *)buf)[i] = (float)v; break;
    case DT_F16: ((uint16_t *)buf)[i] = dt_f32_to_f16((float)v); break;
    case DT_BF16: ((uint16_t *)buf)[i] = dt_f32_to_bf16((float)v); break;
    case DT_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case DT_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case DT_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    default: break;
    }
}

static inline int64_t tc_get(const void *buf, dt_dtype t, size_t i)
{
    switch (t) {
    case DT_F32: return (int64_t)((const float *)buf)[i];
    case DT_F16: return (int64_t)dt_f16_to_f32(((const uint16_t *)buf)[i]);
    case DT_BF16: return (int64_t)dt_bf16_to_f32(((const uint16_t *)buf)[i]);
    case DT_I32: return ((const int32_t *)buf)[i];
    case DT_I8: return ((const int8_t *)buf)[i];
    case DT_U8: return ((const uint8_t *)buf)[i];
    default: return 0;
    }
}

/* Fills buf[0..count) with rank's data for elements base .. base+count. */
static inline void tc_fill(void *buf, dt_redop op, dt_dtype t, int n, int rank, size_t base,
                           size_t count)
{
    for (size_t i = 0; i < count; i++)
        tc_put(buf, t, i, tc_gen(op, t, n, rank, base + i));
}

static inline void *tc_alloc(size_t count, dt_dtype t)
{
    void *p = malloc(count * dt_dtype_size(t) + 64);
    EXPECT(p != NULL, "out of memory");
    memset(p, 0xab, count * dt_dtype_size(t) + 64);
    return p;
}

/* A timeout's report: is rank `rank` in `call` (e.g. "recv #1 (count 2,
 * peer 1)")? Whether a waiting rank is described as waiting or as timed
 * out depends on whose deadline came first (a call that ran past its
 * deadline still counts as waiting, in words of its own): either is right. */
static inline int tc_waits_in(const char *report, int rank, const char *call)
{
    char waits[160], timed_out[160];
    snprintf(waits, sizeof waits, "rank %d waits in %s", rank, call);
    snprintf(timed_out, sizeof timed_out, "rank %d timed out in %s", rank, call);
    return strstr(report, waits) || strstr(report, timed_out);
}

static inline dt_launch_opts tc_opts(int n, dt_algo algo)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = n;
    o.algo = algo;
    o.timeout_s = 20;
    o.debug = 1;
    return o;
}

/* The backend of every launch that takes it from the environment
 * (DT_BACKEND, as `make unit BACKEND=...` sets it; thread when unset). */
static inline dt_backend tc_backend(void)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    return o.backend;
}

/* The backends of a test about what every backend must do alike: the
 * environment's, and the proc backend too when that is thread, so that a
 * plain `make unit` covers ranks as threads and as processes. Returns how
 * many (1 or 2). Not proc under ThreadSanitizer: it sees one process's
 * threads, not the memory proc's ranks share (the plain and
 * AddressSanitizer builds run that pass). */
static inline int tc_backends(dt_backend out[2])
{
    out[0] = tc_backend();
    out[1] = DT_BACKEND_PROC;
#ifdef __SANITIZE_THREAD__
    return 1;
#else
    return out[0] == DT_BACKEND_THREAD ? 2 : 1;
#endif
}

/* Hands back one block of block_bytes per rank (dt_launch_opts.out): out
 * holds o->nranks of them when dt_launch returns, on every backend. */
static inline void tc_out(dt_launch_opts *o, void *out, size_t block_bytes)
{
    o->out = out;
    o->out_bytes = block_bytes;
}

/* This rank's block of the launch's out (tc_out). */
static inline void *tc_mine(dt_comm *c)
{
    void *p = dt_rank_out(c);
    EXPECT(p != NULL, "dt_rank_out gave NULL: the launch has no out blocks");
    return p;
}

static const dt_dtype tc_dtypes[] = {DT_F32, DT_F16, DT_BF16, DT_I32, DT_I8, DT_U8};
static const int tc_nranks[] = {1, 2, 3, 4, 5, 8};
static const dt_algo tc_algos[] = {DT_ALGO_AUTO, DT_ALGO_RING, DT_ALGO_TREE, DT_ALGO_DIRECT,
                                   DT_ALGO_BINOMIAL};
#define TC_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

#endif /* TEST_COMM_UTIL_H */
