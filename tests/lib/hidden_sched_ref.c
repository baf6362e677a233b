/* hidden_sched_ref.c - reference pipeline schedules for the tests of
 * lib/sched (hidden: they are lab 06's answers). */
#include "hidden_sched_ref.h"

/* Creates the schedule, then undoes it if any add failed. */
static dt_result done(dt_schedule *s, dt_result r, dt_schedule **out)
{
    if (r != DT_OK) {
        dt_sched_free(s);
        return r;
    }
    *out = s;
    return DT_OK;
}

dt_result ref_gpipe(dt_schedule **out, int p, int m)
{
    dt_schedule *s;
    DT_CHECK(dt_sched_create(&s, p, 1, m));
    dt_result r = DT_OK;
    for (int st = 0; st < p; st++) {
        for (int j = 0; j < m && r == DT_OK; j++) r = dt_sched_add(s, st, j, DT_STEP_F);
        for (int j = 0; j < m && r == DT_OK; j++) r = dt_sched_add(s, st, j, DT_STEP_B);
    }
    return done(s, r, out);
}

dt_result ref_1f1b(dt_schedule **out, int p, int m)
{
    dt_schedule *s;
    DT_CHECK(dt_sched_create(&s, p, 1, m));
    dt_result r = DT_OK;
    for (int st = 0; st < p; st++) {
        int warm = p - 1 - st < m ? p - 1 - st : m;
        for (int j = 0; j < warm && r == DT_OK; j++) r = dt_sched_add(s, st, j, DT_STEP_F);
        for (int j = 0; j + warm < m && r == DT_OK; j++) {
            r = dt_sched_add(s, st, warm + j, DT_STEP_F);
            if (r == DT_OK) r = dt_sched_add(s, st, j, DT_STEP_B);
        }
        for (int j = m - warm; j < m && r == DT_OK; j++) r = dt_sched_add(s, st, j, DT_STEP_B);
    }
    return done(s, r, out);
}

/* The k-th forward (or backward) of a rank in the interleaved schedule:
 * micro-batches go in groups of p, each group through every chunk in
 * turn (backwards: chunks in reverse). */
static void interleaved_step(int k, int p, int v, int backward, int *chunk, int *micro)
{
    int c = (k / p) % v;
    *chunk = backward ? v - 1 - c : c;
    *micro = (k / (p * v)) * p + k % p;
}

static dt_result add_interleaved(dt_schedule *s, int rank, int k, int backward)
{
    int c, j, p = s->ranks;
    interleaved_step(k, p, s->chunks, backward, &c, &j);
    return dt_sched_add(s, c * p + rank, j, backward ? DT_STEP_B : DT_STEP_F);
}

dt_result ref_interleaved(dt_schedule **out, int p, int v, int m)
{
    if (m % p != 0) return dt_fail(DT_ERR_INVALID_ARG, "interleaved: m = %d not a multiple of p = %d", m, p);
    dt_schedule *s;
    DT_CHECK(dt_sched_create(&s, p, v, m));
    dt_result r = DT_OK;
    int total = m * v;
    for (int rank = 0; rank < p; rank++) {
        int warm = (p - rank - 1) * 2 + (v - 1) * p;
        if (warm > total) warm = total;
        for (int k = 0; k < warm && r == DT_OK; k++) r = add_interleaved(s, rank, k, 0);
        for (int i = 0; i + warm < total && r == DT_OK; i++) {
            r = add_interleaved(s, rank, warm + i, 0);
            if (r == DT_OK) r = add_interleaved(s, rank, i, 1);
        }
        for (int i = total - warm; i < total && r == DT_OK; i++) r = add_interleaved(s, rank, i, 1);
    }
    return done(s, r, out);
}

dt_result ref_zbh1(dt_schedule **out, int p, int m)
{
    dt_schedule *s;
    DT_CHECK(dt_sched_create(&s, p, 1, m));
    dt_result r = DT_OK;
    for (int st = 0; st < p; st++) {
        int warm = p - st < m ? p - st : m;
        for (int j = 0; j < warm && r == DT_OK; j++) r = dt_sched_add(s, st, j, DT_STEP_F);
        for (int k = 0; k < m && r == DT_OK; k++) {
            r = dt_sched_add(s, st, k, DT_STEP_B);
            if (r == DT_OK && k >= st) r = dt_sched_add(s, st, k - st, DT_STEP_W);
            if (r == DT_OK && warm + k < m) r = dt_sched_add(s, st, warm + k, DT_STEP_F);
        }
        for (int j = m - st; j < m && r == DT_OK; j++)
            if (j >= 0) r = dt_sched_add(s, st, j, DT_STEP_W);
    }
    return done(s, r, out);
}
