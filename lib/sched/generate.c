/* generate.c - the pipeline schedules of chapter 06 as data, the reference
 * that lab 06 has students write (sections 2, 4, 5 and 6) and that the
 * pipeline runner (lib/train/pipeline.c) and dttrain --pp run. Each lists,
 * rank by rank, the steps that rank runs; dt_sched_validate then says
 * whether the order works.
 *
 *   GPipe        F0 F1 ... F(m-1)  B0 B1 ... B(m-1)        peak m pairs
 *   1F1B         min(p-1-r, m) forwards, then one F one B,  peak min(p-r, m)
 *                then the backwards still owed
 *   interleaved  1F1B over v chunks: micro-batches in groups of p through
 *                chunk 0, chunk 1, ...; bubble (p-1)/(v m) of the busy time
 *   ZB-H1        1F1B with the backward split: one more warm-up forward,
 *                stage r holds back r weight-gradient (W) steps to fill the
 *                drain; bubble (p-1)/(3m) with T_F = T_B = T_W */
#include "dt/sched.h"

#include <string.h>

/* The checks every generator makes, and an empty schedule. */
static dt_result start(dt_schedule **out, int p, int v, int m, const char *who)
{
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: out is NULL", who);
    *out = NULL;
    if (p < 1 || p > DT_SCHED_MAX_RANKS || m < 1 || m > DT_SCHED_MAX_MICRO)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: p = %d, m = %d (need 1..%d ranks, 1..%d "
                       "micro-batches)", who, p, m, DT_SCHED_MAX_RANKS, DT_SCHED_MAX_MICRO);
    return dt_sched_create(out, p, v, m);
}

/* Hands the schedule over, or frees it when building it failed. */
static dt_result finish(dt_schedule **out, dt_result r)
{
    if (r != DT_OK) {
        dt_sched_free(*out);
        *out = NULL;
    }
    return r;
}

dt_result dt_sched_gpipe(dt_schedule **out, int p, int m)
{
    DT_CHECK(start(out, p, 1, m, "dt_sched_gpipe"));
    dt_result r = DT_OK;
    for (int s = 0; s < p; s++) {
        for (int j = 0; j < m && r == DT_OK; j++)
            r = dt_sched_add(*out, s, j, DT_STEP_F);
        for (int j = 0; j < m && r == DT_OK; j++)
            r = dt_sched_add(*out, s, j, DT_STEP_B);
    }
    return finish(out, r);
}

dt_result dt_sched_1f1b(dt_schedule **out, int p, int m)
{
    DT_CHECK(start(out, p, 1, m, "dt_sched_1f1b"));
    dt_result r = DT_OK;
    for (int s = 0; s < p; s++) {
        /* warm-up: the forwards that fill the pipeline below this stage */
        int warm = p - 1 - s < m ? p - 1 - s : m, f = 0, b = 0;
        while (f < warm && r == DT_OK)
            r = dt_sched_add(*out, s, f++, DT_STEP_F);
        /* steady state: one forward, one backward */
        while (f < m && r == DT_OK) {
            r = dt_sched_add(*out, s, f++, DT_STEP_F);
            if (r == DT_OK)
                r = dt_sched_add(*out, s, b++, DT_STEP_B);
        }
        /* cool-down: the backwards still owed */
        while (b < m && r == DT_OK)
            r = dt_sched_add(*out, s, b++, DT_STEP_B);
    }
    return finish(out, r);
}

/* The k-th forward (backward) of a rank in Megatron-LM's interleaved
 * order: micro-batches in groups of p through chunk 0, then chunk 1, ...;
 * backwards through the chunks in reverse. */
static dt_result add_interleaved(dt_schedule *s, int rank, int k, dt_step_kind kind)
{
    int p = s->ranks, v = s->chunks;
    int chunk = (k / p) % v, micro = (k / (p * v)) * p + k % p;
    if (kind == DT_STEP_B)
        chunk = v - 1 - chunk;
    return dt_sched_add(s, chunk * p + rank, micro, kind);
}

dt_result dt_sched_interleaved(dt_schedule **out, int p, int v, int m)
{
    if (out)
        *out = NULL;
    if (v < 2 || v > DT_SCHED_MAX_CHUNKS || p < 1 || m < 1 || m % p != 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sched_interleaved: v = %d, p = %d, m = %d (need "
                       "2 <= v <= %d and m a multiple of p)", v, p, m, DT_SCHED_MAX_CHUNKS);
    DT_CHECK(start(out, p, v, m, "dt_sched_interleaved"));
    dt_result r = DT_OK;
    int total = v * m; /* forwards (and backwards) of a rank */
    for (int rank = 0; rank < p; rank++) {
        /* warm-up: the later ranks' first round, and p steps per extra
         * chunk before the first gradient comes back */
        int warm = 2 * (p - 1 - rank) + (v - 1) * p, f = 0, b = 0;
        warm = warm < total ? warm : total;
        while (f < warm && r == DT_OK)
            r = add_interleaved(*out, rank, f++, DT_STEP_F);
        while (f < total && r == DT_OK) {
            r = add_interleaved(*out, rank, f++, DT_STEP_F);
            if (r == DT_OK)
                r = add_interleaved(*out, rank, b++, DT_STEP_B);
        }
        while (b < total && r == DT_OK)
            r = add_interleaved(*out, rank, b++, DT_STEP_B);
    }
    return finish(out, r);
}

dt_result dt_sched_zbh1(dt_schedule **out, int p, int m)
{
    DT_CHECK(start(out, p, 1, m, "dt_sched_zbh1"));
    dt_result r = DT_OK;
    for (int s = 0; s < p; s++) {
        /* one more warm-up forward than 1F1B; stage s holds back s of its
         * W steps, run in the drain at the end */
        int warm = p - s < m ? p - s : m, f = 0, w = 0;
        while (f < warm && r == DT_OK)
            r = dt_sched_add(*out, s, f++, DT_STEP_F);
        for (int b = 0; b < m && r == DT_OK; b++) {
            r = dt_sched_add(*out, s, b, DT_STEP_B);
            if (r == DT_OK && b >= s)
                r = dt_sched_add(*out, s, w++, DT_STEP_W);
            if (r == DT_OK && f < m)
                r = dt_sched_add(*out, s, f++, DT_STEP_F);
        }
        while (w < m && r == DT_OK)
            r = dt_sched_add(*out, s, w++, DT_STEP_W);
    }
    return finish(out, r);
}

dt_result dt_sched_named(dt_schedule **out, const char *name, int p, int v, int m)
{
    if (out)
        *out = NULL;
    if (!name)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sched_named: NULL name");
    int one = !strcmp(name, "gpipe") || !strcmp(name, "1f1b") || !strcmp(name, "zbh1");
    if (one && v != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule %s: %d chunks per rank (it runs one; "
                       "interleaved runs several)", name, v);
    if (!strcmp(name, "gpipe"))
        return dt_sched_gpipe(out, p, m);
    if (!strcmp(name, "1f1b"))
        return dt_sched_1f1b(out, p, m);
    if (!strcmp(name, "zbh1"))
        return dt_sched_zbh1(out, p, m);
    if (!strcmp(name, "interleaved"))
        return dt_sched_interleaved(out, p, v, m);
    return dt_fail(DT_ERR_INVALID_ARG, "schedule %s: expected gpipe, 1f1b, interleaved or zbh1",
                   name);
}
