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
    /* Postcondition: *out is p ranks' GPipe order for m micro-batches,
     * every forward of a rank before its backwards (section 2); bad p or m:
     * DT_ERR_INVALID_ARG. */
    (void)out, (void)p, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2 */

dt_result lab_sched_1f1b(dt_schedule **out, int p, int m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out is 1F1B for p ranks and m micro-batches: the same
     * bubble as GPipe, rank r never holding more than min(p - r, m)
     * micro-batches' activations (section 4). */
    (void)out, (void)p, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 5 */

/* BEGIN STUDENT CODE */
/* helpers of your own, if you want them */
/* END STUDENT CODE */

dt_result lab_sched_interleaved(dt_schedule **out, int p, int v, int m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out is interleaved 1F1B with v chunks per rank, idle
     * over busy time (p-1)/(v m) with equal stages (section 5); v < 2, or m
     * not a multiple of p: DT_ERR_INVALID_ARG. */
    (void)out, (void)p, (void)v, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_sched_zbh1(dt_schedule **out, int p, int m)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: *out is ZB-H1 (B and W steps), idle over busy time
     * (p-1)/(3m) when T_F = T_B = T_W and m >= p, and at most p micro-batches
     * of activations in flight on a rank (section 6). */
    (void)out, (void)p, (void)m;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 6 */

dt_result lab_pipe_predict_bubble(const char *schedule, int p, int v, int m, double *ratio)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition (pipe.h): *ratio = the idle over busy time that the
     * chapter's formulas give for this schedule, from the formulas alone
     * (no schedule is built). */
    (void)schedule, (void)p, (void)v, (void)m, (void)ratio;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
