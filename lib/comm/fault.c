/* fault.c - DT_FAULT: failures injected on purpose, to see what the
 * communicator does when a rank dies or straggles. */
#include "fault.h"

#include "backend.h"
#include "rank.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static int find_kind(const char *name)
{
    for (int k = 0; k < DT_NUM_COLLS; k++)
        if (strcasecmp(name, dt_coll_name((dt_coll_kind)k)) == 0)
            return k;
    return -1;
}

/* One fault: "kill:rank=R:at=KIND#K" or "delay:rank=R:ms=M". */
static dt_result parse_one_fault(const char *s, size_t len, dt_fault *f)
{
    char buf[128];
    if (len >= sizeof buf)
        return dt_fail(DT_ERR_INVALID_ARG, "fault spec too long");
    memcpy(buf, s, len);
    buf[len] = '\0';
    memset(f, 0, sizeof *f);
    f->rank = -1;
    char kind[32] = "";
    long at = 0, rank = -1;
    double ms = -1;
    if (sscanf(buf, "kill:rank=%ld:at=%31[a-z_]#%ld", &rank, kind, &at) == 3) {
        int k = find_kind(kind);
        if (k < 0 || at < 1 || rank < 0 || rank >= DT_MAX_RANKS)
            return dt_fail(DT_ERR_INVALID_ARG, "bad fault '%s': kind '%s', at >= 1, rank >= 0",
                           buf, kind);
        f->type = DT_FAULT_KILL;
        f->kind = k;
        f->at = at;
        f->rank = (int)rank;
        return DT_OK;
    }
    if (sscanf(buf, "delay:rank=%ld:ms=%lf", &rank, &ms) == 2 && rank >= 0 &&
        rank < DT_MAX_RANKS && ms >= 0) {
        f->type = DT_FAULT_DELAY;
        f->rank = (int)rank;
        f->delay_s = ms * 1e-3;
        return DT_OK;
    }
    return dt_fail(DT_ERR_INVALID_ARG,
                   "bad fault '%s' (kill:rank=2:at=allreduce#5 or delay:rank=1:ms=20)", buf);
}

dt_result dt_fault_parse(const char *spec, dt_fault *out, int max, int *n)
{
    *n = 0;
    if (!spec)
        return DT_OK;
    const char *p = spec;
    while (*p) {
        size_t len = strcspn(p, ";");
        if (len > 0) {
            if (*n >= max)
                return dt_fail(DT_ERR_INVALID_ARG, "more than %d faults in '%s'", max, spec);
            dt_result r = parse_one_fault(p, len, &out[*n]);
            if (r != DT_OK)
                return r;
            (*n)++;
        }
        p += len;
        if (*p == ';')
            p++;
    }
    return DT_OK;
}

dt_result dt_fault_check(dt_comm *comm, int kind)
{
    dt_rank_ctx *rc = comm->rc;
    long n = ++rc->kind_calls[kind];
    for (int i = 0; i < rc->nfaults; i++) {
        dt_fault *f = &rc->faults[i];
        if (f->type == DT_FAULT_DELAY && kind != DT_COLL_RECV) {
            dt_sleep(f->delay_s);
            rc->clock += f->delay_s;
        }
        if (f->type != DT_FAULT_KILL || f->kind != kind || f->at != n)
            continue;
        char mark[DT_TRACE_NAME];
        snprintf(mark, sizeof mark, "killed: %s #%ld", dt_coll_name(kind), n);
        dt_trace_mark(rc, mark);
        dt_result r = dt_fail(DT_ERR_FAULT, "killed by DT_FAULT at %s #%ld",
                              dt_coll_name(kind), n);
        return rc->ops->kill(rc, r);
    }
    return DT_OK;
}

dt_result dt_fault_fail_rank(dt_rank_ctx *rc, dt_result r)
{
    dt_rank_end(rc->job, rc->world_rank, r, dt_last_error());
    return r;
}
