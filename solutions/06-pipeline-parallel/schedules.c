/* schedules.c - lab 06: pipeline schedules as data (chapter 06, sections 2
 * to 6). Each function lists, rank by rank, the steps that rank runs, with
 * dt_sched_add; dt_sched_validate then says whether the order works. */
#include "pipe.h"

#include <string.h>

/* The arguments every generator checks, and an empty schedule. (inline:
 * helpers the skeleton does not call yet draw no warning.) */
static inline dt_result start(dt_schedule **out, int p, int v, int m, const char *who)
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
static inline dt_result finish(dt_schedule **out, dt_result r)
{
    if (r != DT_OK) {
        dt_sched_free(*out);
        *out = NULL;
    }
    return r;
}

/* ================================================================ task 1 */

dt_result lab_sched_gpipe(dt_schedule **out, int p, int m)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(start(out, p, 1, m, "lab_sched_gpipe"));
    dt_result r = DT_OK;
    for (int s = 0; s < p; s++) {
        for (int j = 0; j < m && r == DT_OK; j++)
            r = dt_sched_add(*out, s, j, DT_STEP_F);
        for (int j = 0; j < m && r == DT_OK; j++)
            r = dt_sched_add(*out, s, j, DT_STEP_B);
    }
    return finish(out, r);
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_sched_1f1b(dt_schedule **out, int p, int m)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(start(out, p, 1, m, "lab_sched_1f1b"));
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
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

/* BEGIN STUDENT CODE */
/* The k-th forward (backward) of a rank in Megatron-LM's interleaved order:
 * micro-batches go in groups of p through chunk 0, then chunk 1, ...;
 * backwards through the chunks in reverse. Adds it for rank `rank`. */
static dt_result add_interleaved(dt_schedule *s, int rank, int k, dt_step_kind kind)
{
    int p = s->ranks, v = s->chunks;
    int chunk = (k / p) % v, micro = (k / (p * v)) * p + k % p;
    if (kind == DT_STEP_B)
        chunk = v - 1 - chunk;
    return dt_sched_add(s, chunk * p + rank, micro, kind);
}
/* END STUDENT CODE */

dt_result lab_sched_interleaved(dt_schedule **out, int p, int v, int m)
{
    /* BEGIN STUDENT CODE */
    if (v < 2 || v > DT_SCHED_MAX_CHUNKS || p < 1 || m % p != 0)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sched_interleaved: v = %d, p = %d, m = %d (need "
                       "2 <= v <= %d and m a multiple of p)", v, p, m, DT_SCHED_MAX_CHUNKS);
    DT_CHECK(start(out, p, v, m, "lab_sched_interleaved"));
    dt_result r = DT_OK;
    int total = v * m; /* forwards (and backwards) of a rank */
    for (int rank = 0; rank < p; rank++) {
        /* warm-up: the forwards of the later ranks' first round, and the
         * p steps per extra chunk before the first gradient comes back */
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
    /* END STUDENT CODE */
}

dt_result lab_sched_zbh1(dt_schedule **out, int p, int m)
{
    /* BEGIN STUDENT CODE */
    DT_CHECK(start(out, p, 1, m, "lab_sched_zbh1"));
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
    /* END STUDENT CODE */
}

/* ================================================================ task 6 */

dt_result lab_pipe_predict_bubble(const char *schedule, int p, int v, int m, double *ratio)
{
    /* BEGIN STUDENT CODE */
    if (!schedule || !ratio || p < 1 || m < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_predict_bubble: NULL argument, p = %d or "
                       "m = %d", p, m);
    int chunks = !strcmp(schedule, "interleaved");
    if (!chunks && v != 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_predict_bubble: %s has one chunk, not %d",
                       schedule, v);
    /* The fill and the drain: p - 1 stage-times of forward and backward
     * (sections 2, 4) over m of them; v times shorter ones with chunks
     * (section 5); ZB-H1's W steps fill all but T_F + T_B - T_W of each
     * (section 6), a third of the three steps' time. */
    if (!strcmp(schedule, "gpipe") || !strcmp(schedule, "1f1b"))
        *ratio = (double)(p - 1) / m;
    else if (chunks && v >= 2 && m % p == 0)
        *ratio = (double)(p - 1) / ((double)v * m);
    else if (!strcmp(schedule, "zbh1") && m >= p)
        *ratio = (double)(p - 1) / (3.0 * m);
    else
        return dt_fail(DT_ERR_INVALID_ARG, "lab_pipe_predict_bubble: no formula for %s with "
                       "p = %d, v = %d, m = %d", schedule, p, v, m);
    return DT_OK;
    /* END STUDENT CODE */
}
