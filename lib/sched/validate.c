/* validate.c - is a schedule one that can run? Each step once; each step
 * after what it needs on its own rank; messages taken in the order they are
 * sent; and a replay of the run that finishes (no deadlock). Also the
 * activations each rank holds at most, and the messages it sends. */
#include "sched_internal.h"

#include <stdio.h>
#include <string.h>

#define DESC 64 /* room for sched_describe's text */

static size_t slot(const dt_schedule *s, dt_step_kind kind, int stage, int micro)
{
    return ((size_t)kind * s->stages + stage) * s->micro + micro;
}

int sched_pos(const sched_index *ix, dt_step_kind kind, int stage, int micro)
{
    return ix->pos[slot(ix->s, kind, stage, micro)];
}

void sched_index_free(sched_index *ix)
{
    dt_mem_free(ix->pos);
    ix->pos = NULL;
}

/* A pair with no step of a kind it needs: the message names the pair. */
static dt_result missing(const dt_schedule *s, dt_step_kind kind, int stage, int micro)
{
    return dt_fail(DT_ERR_INVALID_ARG, "rank %d: no %s step for stage %d mb %d",
                   dt_sched_rank_of(s, stage), dt_step_kind_name(kind), stage, micro);
}

/* Check 1: each step once; W for every pair or for none. */
static dt_result index_build(sched_index *ix, const dt_schedule *s)
{
    size_t n = (size_t)DT_NUM_STEP_KINDS * s->stages * s->micro;
    *ix = (sched_index){.s = s, .pos = dt_mem_alloc(DT_MEM_OTHER, n * sizeof(int))};
    if (!ix->pos) return dt_fail(DT_ERR_NOMEM, "no memory to check a schedule");
    memset(ix->pos, 0xff, n * sizeof(int)); /* every entry -1 */
    dt_result r = DT_OK;
    for (int rk = 0; rk < s->ranks && r == DT_OK; rk++)
        for (int i = 0; i < s->nsteps[rk] && r == DT_OK; i++) {
            const dt_step *st = &s->steps[rk][i];
            int *p = &ix->pos[slot(s, st->kind, st->stage, st->micro)];
            if (*p >= 0) {
                char d[DESC];
                sched_describe(s, rk, i, d, sizeof d);
                r = dt_fail(DT_ERR_INVALID_ARG, "%s: a second %s of stage %d mb %d (the first is step %d)",
                            d, dt_step_kind_name(st->kind), st->stage, st->micro, *p);
            }
            *p = i;
            if (st->kind == DT_STEP_W) ix->split = 1;
        }
    for (int st = 0; st < s->stages && r == DT_OK; st++)
        for (int mb = 0; mb < s->micro && r == DT_OK; mb++)
            for (int k = 0; k < DT_NUM_STEP_KINDS && r == DT_OK; k++)
                if ((k != DT_STEP_W || ix->split) && sched_pos(ix, k, st, mb) < 0)
                    r = missing(s, k, st, mb);
    if (r != DT_OK) sched_index_free(ix);
    return r;
}

/* Check 2: what a step needs from its own rank comes before it. */
static dt_result check_local_order(const sched_index *ix)
{
    const dt_schedule *s = ix->s;
    for (int rk = 0; rk < s->ranks; rk++)
        for (int i = 0; i < s->nsteps[rk]; i++) {
            dt_step deps[2];
            int nd = sched_deps(s, &s->steps[rk][i], deps);
            for (int d = 0; d < nd; d++) {
                if (dt_sched_rank_of(s, deps[d].stage) != rk) continue;
                int j = sched_pos(ix, deps[d].kind, deps[d].stage, deps[d].micro);
                if (j < i) continue;
                char desc[DESC];
                sched_describe(s, rk, i, desc, sizeof desc);
                return dt_fail(DT_ERR_INVALID_ARG,
                               "%s: runs before %s stage %d mb %d (step %d of the same rank), "
                               "which it needs", desc, dt_step_kind_name(deps[d].kind),
                               deps[d].stage, deps[d].micro, j);
            }
        }
    return DT_OK;
}

/* The step of rank `from`, at or after *cursor, that sends to rank `to`;
 * *cursor moves past it. -1 when there is none. */
static int next_send(const dt_schedule *s, int from, int to, int *cursor)
{
    while (*cursor < s->nsteps[from]) {
        int i = (*cursor)++;
        if (sched_send_peer(s, &s->steps[from][i]) == to) return i;
    }
    return -1;
}

/* Check 3: without tags, the k-th message rank b receives from rank a is
 * the k-th one a sends to b. Walk b's receives; for each, the step of a
 * that sends next to b must be the one the receive needs. A receive only
 * ever comes from the rank of the previous or the next stage, so two
 * cursors per rank are enough. */
static dt_result check_message_order(const sched_index *ix)
{
    const dt_schedule *s = ix->s;
    for (int b = 0; b < s->ranks; b++) {
        int cursor[2] = {0, 0}; /* into the steps of the ranks before and after b */
        for (int i = 0; i < s->nsteps[b]; i++) {
            dt_step deps[2];
            int nd = sched_deps(s, &s->steps[b][i], deps);
            for (int d = 0; d < nd; d++) {
                int a = dt_sched_rank_of(s, deps[d].stage);
                if (a == b) continue; /* on this rank: no message */
                /* With p = 2 the ranks before and after b are one rank, and
                 * one channel: the same cursor. */
                int side = a == (b + s->ranks - 1) % s->ranks ? 0 : 1;
                int sent = next_send(s, a, b, &cursor[side]);
                int want = sched_pos(ix, deps[d].kind, deps[d].stage, deps[d].micro);
                if (sent == want) continue;
                if (sent < 0) /* cannot happen after check 1: each send is matched once */
                    return dt_fail(DT_ERR_INTERNAL, "schedule check: rank %d's message to rank %d "
                                   "not found", a, b);
                char desc[DESC], got[DESC];
                sched_describe(s, b, i, desc, sizeof desc);
                sched_describe(s, a, sent, got, sizeof got);
                return dt_fail(DT_ERR_INVALID_ARG,
                               "%s: takes its messages from rank %d in another order than rank %d "
                               "sends them: it waits for the result of %s stage %d mb %d (rank %d "
                               "step %d), but the next message from rank %d is that of %s",
                               desc, a, a, dt_step_kind_name(deps[d].kind), deps[d].stage,
                               deps[d].micro, a, want, a, got);
            }
        }
    }
    return DT_OK;
}

dt_result sched_check(sched_index *ix, const dt_schedule *s)
{
    dt_result r = index_build(ix, s);
    if (r != DT_OK) return r;
    r = check_local_order(ix);
    if (r == DT_OK) r = check_message_order(ix);
    if (r != DT_OK) sched_index_free(ix);
    return r;
}

/* The first step st needs that has not run (index >= pc of its rank), or
 * NULL when it can run. */
static const dt_step *waits_for(const sched_index *ix, const dt_step *st, const int *pc,
                                dt_step deps[2])
{
    int nd = sched_deps(ix->s, st, deps);
    for (int d = 0; d < nd; d++) {
        int a = dt_sched_rank_of(ix->s, deps[d].stage);
        if (sched_pos(ix, deps[d].kind, deps[d].stage, deps[d].micro) >= pc[a]) return &deps[d];
    }
    return NULL;
}

/* No rank can move: say what each unfinished rank waits for. */
static dt_result deadlock(const sched_index *ix, const int *pc)
{
    const dt_schedule *s = ix->s;
    char msg[440];
    size_t len = (size_t)snprintf(msg, sizeof msg, "deadlock:");
    for (int r = 0; r < s->ranks && len < sizeof msg; r++) {
        if (pc[r] == s->nsteps[r]) continue;
        dt_step deps[2];
        const dt_step *w = waits_for(ix, &s->steps[r][pc[r]], pc, deps);
        char desc[DESC];
        sched_describe(s, r, pc[r], desc, sizeof desc);
        int a = dt_sched_rank_of(s, w->stage);
        len += (size_t)snprintf(msg + len, sizeof msg - len, "%s %s waits for %s stage %d mb %d "
                                "(rank %d step %d)", len > 9 ? ";" : "", desc,
                                dt_step_kind_name(w->kind), w->stage, w->micro, a,
                                sched_pos(ix, w->kind, w->stage, w->micro));
    }
    return dt_fail(DT_ERR_INVALID_ARG, "%s", msg);
}

dt_result sched_replay(const sched_index *ix, sched_visit_fn visit, void *ctx)
{
    const dt_schedule *s = ix->s;
    int pc[DT_SCHED_MAX_RANKS] = {0}; /* steps [0, pc[r]) of rank r have run */
    long left = 0;
    for (int r = 0; r < s->ranks; r++) left += s->nsteps[r];
    while (left > 0) {
        long before = left;
        for (int r = 0; r < s->ranks; r++) {
            dt_step deps[2];
            while (pc[r] < s->nsteps[r] && !waits_for(ix, &s->steps[r][pc[r]], pc, deps)) {
                if (visit) visit(ctx, r, pc[r]);
                pc[r]++;
                left--;
            }
        }
        if (left == before) return deadlock(ix, pc);
    }
    return DT_OK;
}

/* Activations held: a pair's are taken by its F and given back by its last
 * backward step. */
static int peak_acts(const dt_schedule *s, int rank, int split)
{
    dt_step_kind release = split ? DT_STEP_W : DT_STEP_B;
    int held = 0, peak = 0;
    for (int i = 0; i < s->nsteps[rank]; i++) {
        if (s->steps[rank][i].kind == DT_STEP_F && ++held > peak) peak = held;
        if (s->steps[rank][i].kind == release) held--;
    }
    return peak;
}

dt_result dt_sched_validate(const dt_schedule *s, dt_sched_report *report)
{
    if (!s) return dt_fail(DT_ERR_INVALID_ARG, "schedule validate: NULL schedule");
    sched_index ix;
    dt_result r = sched_check(&ix, s); /* the message is the finding: no file:line */
    if (r != DT_OK) return r;
    r = sched_replay(&ix, NULL, NULL);
    if (r == DT_OK && report) {
        memset(report, 0, sizeof *report);
        report->split_backward = ix.split;
        for (int rk = 0; rk < s->ranks; rk++) {
            report->peak_acts[rk] = peak_acts(s, rk, ix.split);
            for (int i = 0; i < s->nsteps[rk]; i++)
                report->msgs_sent[rk] += sched_send_peer(s, &s->steps[rk][i]) >= 0;
        }
    }
    sched_index_free(&ix);
    return r;
}
