/* failure.c - failure plans: a rank killed at a named phase of a step, or
 * at a time drawn from an exponential law on the modeled clock (chapter
 * 14, section 1), carried out as DT_FAULT's kills are (fault.c). */
#include "dt/failure.h"

#include "fault.h"

#include "backend.h"
#include "rank.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names[DT_NUM_PHASES] = {
    "mid-allreduce", "after-backward", "mid-save", "before-manifest", "before-rename"};

const char *dt_phase_name(dt_phase p)
{
    return (unsigned)p < DT_NUM_PHASES ? phase_names[p] : "?";
}

/* The stream of a plan's draws: failure k takes draws 2k (its gap) and
 * 2k + 1 (its victim), so that the times do not depend on the rank count. */
enum { FAILURE_STREAM = 14 };

double dt_failure_time(uint64_t seed, double mtbf, int k)
{
    if (!(isfinite(mtbf) && mtbf > 0) || k < 0) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_failure_time: mtbf %g, k %d", mtbf, k);
        return NAN;
    }
    dt_rng g;
    dt_rng_init(&g, seed, FAILURE_STREAM);
    double t = 0;
    for (int i = 0; i <= k; i++) {
        /* 53 bits of u in [0, 1): -M ln(1 - u) is Exp(1/M), finite */
        double u = (double)(dt_rng_u64(&g) >> 11) * 0x1p-53;
        t += -mtbf * log1p(-u);
        (void)dt_rng_u64(&g); /* the victim's draw */
    }
    return t;
}

int dt_failure_victim(uint64_t seed, int k, int ranks)
{
    if (ranks < 1 || k < 0)
        return 0;
    dt_rng g;
    dt_rng_init(&g, seed, FAILURE_STREAM);
    uint64_t v = 0;
    for (int i = 0; i <= k; i++) {
        (void)dt_rng_u64(&g);
        v = dt_rng_u64(&g);
    }
    return (int)(v % (uint64_t)ranks);
}

static dt_result bad_spec(const char *spec)
{
    return dt_fail(DT_ERR_INVALID_ARG, "bad failure plan '%s' (rank=1:step=5:phase=mid-save, "
                   "phases mid-allreduce, after-backward, mid-save, before-manifest, "
                   "before-rename; or mtbf=SECONDS:seed=S)", spec);
}

dt_result dt_failure_parse(const char *spec, dt_failure *f)
{
    if (!f)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_failure_parse: NULL plan");
    *f = (dt_failure){.rank = -1};
    if (!spec || !*spec)
        return DT_OK;
    long rank, step;
    char phase[32], tail;
    double mtbf;
    unsigned long long seed;
    if (sscanf(spec, "rank=%ld:step=%ld:phase=%31[a-z-]%c", &rank, &step, phase, &tail) == 3) {
        int p = 0;
        while (p < DT_NUM_PHASES && strcmp(phase, phase_names[p]))
            p++;
        if (p == DT_NUM_PHASES || rank < 0 || rank >= DT_MAX_RANKS || step < 0)
            return bad_spec(spec);
        *f = (dt_failure){.rank = (int)rank, .step = step, .phase = (dt_phase)p};
        return DT_OK;
    }
    if (sscanf(spec, "mtbf=%lf:seed=%llu%c", &mtbf, &seed, &tail) == 2 && isfinite(mtbf) &&
        mtbf > 0) {
        *f = (dt_failure){.rank = -1, .mtbf = mtbf, .seed = seed};
        f->at_s = dt_failure_time(seed, mtbf, 0);
        return DT_OK;
    }
    return bad_spec(spec);
}

/* Kills this rank as DT_FAULT does (fault.h), with a message naming the
 * plan's point. */
static dt_result die(dt_comm *comm, long step, dt_phase phase)
{
    char mark[DT_TRACE_NAME];
    snprintf(mark, sizeof mark, "killed: %s", dt_phase_name(phase));
    dt_trace_mark(comm->rc, mark);
    dt_result r = dt_fail(DT_ERR_FAULT, "killed by the failure plan at step %ld, %s (modeled "
                          "time %.6g s)", step, dt_phase_name(phase), comm->rc->clock);
    return comm->rc->ops->kill(comm->rc, r);
}

/* mid-allreduce: a kill at the rank's next allreduce or reduce-scatter
 * call, as DT_FAULT's at=KIND#K (fault.c carries it out there). */
static dt_result arm(dt_comm *comm)
{
    dt_rank_ctx *rc = comm->rc;
    const int kinds[2] = {DT_COLL_ALLREDUCE, DT_COLL_REDUCE_SCATTER};
    if (rc->nfaults + 2 > DT_MAX_FAULTS)
        return dt_fail(DT_ERR_STATE, "dt_failure_point: more than %d faults on rank %d",
                       DT_MAX_FAULTS, rc->world_rank);
    for (int i = 0; i < 2; i++)
        rc->faults[rc->nfaults++] = (dt_fault){DT_FAULT_KILL, rc->world_rank, kinds[i],
                                               rc->kind_calls[kinds[i]] + 1, 0};
    return DT_OK;
}

dt_result dt_failure_point(dt_comm *comm, const dt_failure *f, long step, dt_phase phase)
{
    if (!f || (f->rank < 0 && !(f->mtbf > 0)))
        return DT_OK;
    DT_CHECK(dt_comm_check(comm, "dt_failure_point"));
    if ((unsigned)phase >= DT_NUM_PHASES)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_failure_point: phase %d", (int)phase);
    int me = dt_comm_rank(comm);
    if (f->mtbf > 0) {
        /* the first phase point of the drawn victim at or after at_s */
        if (me != dt_failure_victim(f->seed, 0, dt_comm_size(comm)) || comm->rc->clock < f->at_s)
            return DT_OK;
        return die(comm, step, phase);
    }
    if (me != f->rank || step != f->step || phase != f->phase)
        return DT_OK;
    return phase == DT_PHASE_MID_ALLREDUCE ? arm(comm) : die(comm, step, phase);
}
