/* schedule.c - a schedule's lifecycle (create, add, free), and what every
 * other file asks of a step: its rank, the steps it needs, where it sends,
 * its label. */
#include "sched_internal.h"

#include <stdio.h>

static const char *const kind_names[DT_NUM_STEP_KINDS] = {"F", "B", "W"};

const char *dt_step_kind_name(dt_step_kind k)
{
    return (int)k >= 0 && k < DT_NUM_STEP_KINDS ? kind_names[k] : "?";
}

void dt_sched_free(dt_schedule *s)
{
    if (!s) return;
    for (int r = 0; s->steps && r < s->ranks; r++) dt_mem_free(s->steps[r]);
    dt_mem_free(s->steps);
    dt_mem_free(s->nsteps);
    dt_mem_free(s);
}

dt_result dt_sched_create(dt_schedule **out, int ranks, int chunks, int micro)
{
    if (!out) return dt_fail(DT_ERR_INVALID_ARG, "schedule create: NULL out");
    if (ranks < 1 || ranks > DT_SCHED_MAX_RANKS)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule create: ranks = %d, need 1..%d", ranks,
                       DT_SCHED_MAX_RANKS);
    if (chunks < 1 || chunks > DT_SCHED_MAX_CHUNKS)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule create: chunks = %d, need 1..%d", chunks,
                       DT_SCHED_MAX_CHUNKS);
    if (micro < 1 || micro > DT_SCHED_MAX_MICRO)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule create: micro = %d, need 1..%d", micro,
                       DT_SCHED_MAX_MICRO);
    dt_schedule *s = dt_mem_alloc(DT_MEM_OTHER, sizeof *s);
    if (!s) return dt_fail(DT_ERR_NOMEM, "no memory for a schedule");
    *s = (dt_schedule){.ranks = ranks, .chunks = chunks, .stages = ranks * chunks,
                       .micro = micro, .capacity = 3 * chunks * micro};
    s->nsteps = dt_mem_alloc(DT_MEM_OTHER, (size_t)ranks * sizeof(int));
    s->steps = dt_mem_alloc(DT_MEM_OTHER, (size_t)ranks * sizeof(dt_step *));
    int ok = s->nsteps && s->steps;
    for (int r = 0; ok && r < ranks; r++)
        ok = (s->steps[r] = dt_mem_alloc(DT_MEM_OTHER, (size_t)s->capacity * sizeof(dt_step))) != NULL;
    if (!ok) {
        dt_sched_free(s);
        return dt_fail(DT_ERR_NOMEM, "no memory for a schedule of %d ranks x %d steps", ranks,
                       3 * chunks * micro);
    }
    *out = s;
    return DT_OK;
}

int dt_sched_rank_of(const dt_schedule *s, int stage)
{
    if (!s || stage < 0 || stage >= s->stages) return -1;
    return stage % s->ranks;
}

dt_result dt_sched_add(dt_schedule *s, int stage, int micro, dt_step_kind kind)
{
    if (!s) return dt_fail(DT_ERR_INVALID_ARG, "schedule add: NULL schedule");
    if (stage < 0 || stage >= s->stages)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule add: stage %d not in [0, %d)", stage, s->stages);
    if (micro < 0 || micro >= s->micro)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule add: micro-batch %d not in [0, %d)", micro,
                       s->micro);
    if ((int)kind < 0 || kind >= DT_NUM_STEP_KINDS)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule add: step kind %d is not F, B or W", (int)kind);
    int r = dt_sched_rank_of(s, stage);
    if (s->nsteps[r] == s->capacity)
        return dt_fail(DT_ERR_INVALID_ARG,
                       "schedule add: rank %d already holds %d steps, the most a valid schedule "
                       "has (3 kinds x %d chunks x %d micro-batches)",
                       r, s->capacity, s->chunks, s->micro);
    s->steps[r][s->nsteps[r]++] = (dt_step){stage, micro, kind};
    return DT_OK;
}

int sched_deps(const dt_schedule *s, const dt_step *st, dt_step deps[2])
{
    int n = 0;
    switch (st->kind) {
    case DT_STEP_F:
        if (st->stage > 0) deps[n++] = (dt_step){st->stage - 1, st->micro, DT_STEP_F};
        break;
    case DT_STEP_B:
        deps[n++] = (dt_step){st->stage, st->micro, DT_STEP_F};
        if (st->stage < s->stages - 1) deps[n++] = (dt_step){st->stage + 1, st->micro, DT_STEP_B};
        break;
    default:
        deps[n++] = (dt_step){st->stage, st->micro, DT_STEP_B};
        break;
    }
    return n;
}

int sched_send_peer(const dt_schedule *s, const dt_step *st)
{
    int to;
    if (st->kind == DT_STEP_F) to = st->stage + 1;
    else if (st->kind == DT_STEP_B) to = st->stage - 1;
    else return -1;
    if (to < 0 || to >= s->stages) return -1;
    int peer = dt_sched_rank_of(s, to);
    return peer == dt_sched_rank_of(s, st->stage) ? -1 : peer;
}

void sched_describe(const dt_schedule *s, int rank, int index, char *buf, size_t size)
{
    const dt_step *st = &s->steps[rank][index];
    snprintf(buf, size, "rank %d step %d (%s stage %d mb %d)", rank, index,
             dt_step_kind_name(st->kind), st->stage, st->micro);
}

int dt_sched_step_label(const dt_schedule *s, const dt_step *st, char *buf, size_t size)
{
    if (!s || !st) return snprintf(buf, size, "?");
    if (s->chunks == 1) return snprintf(buf, size, "%s%d", dt_step_kind_name(st->kind), st->micro);
    return snprintf(buf, size, "%s%d.%d", dt_step_kind_name(st->kind), st->micro,
                    st->stage / s->ranks);
}
