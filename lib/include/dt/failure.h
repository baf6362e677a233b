/* dt/failure.h - failure plans, the deterministic fault injector of
 * chapter 14. Part of the comm layer (its kills are DT_FAULT's, through
 * the communicator's backend).
 *
 * Beside DT_FAULT (a kill at the K-th call of a kind), a failure named in
 * a training program's own terms: rank r dies at step s in a phase, or at
 * a time drawn from an exponential law of mean MTBF on the modeled clock.
 * The program calls dt_failure_point at each phase; the plan's victim
 * dies there as DT_FAULT kills (the proc backend's rank by SIGKILL; a
 * thread's rank ends failed with DT_ERR_FAULT, which the program returns).
 * The same plan (and seed) gives the same failure, whatever the schedule. */
#ifndef DT_FAILURE_H
#define DT_FAILURE_H

#include <stdint.h>

#include "dt/comm.h"
#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DT_PHASE_MID_ALLREDUCE = 0, /* in the step's gradient exchange: armed before the step,
                                   the victim dies at its next allreduce or reduce-scatter */
    DT_PHASE_AFTER_BACKWARD,    /* gradients computed, not yet exchanged */
    DT_PHASE_MID_SAVE,          /* some ranks' shards written, not all */
    DT_PHASE_BEFORE_MANIFEST,   /* every shard written, no manifest */
    DT_PHASE_BEFORE_RENAME,     /* the manifest written, "latest" not yet moved */
    DT_NUM_PHASES
} dt_phase;

/* "mid-allreduce", "after-backward", "mid-save", "before-manifest",
 * "before-rename"; "?" out of range. */
const char *dt_phase_name(dt_phase p);

typedef struct {
    int rank;        /* the victim's rank in the communicator; -1: none (mtbf: drawn) */
    long step;       /* the step (steps done when it comes), phase */
    dt_phase phase;
    double mtbf;     /* > 0: the failure comes at modeled time at_s instead */
    double at_s;     /* the first failure time of dt_failure_time(seed, mtbf, 0) */
    uint64_t seed;
} dt_failure;

/* "rank=1:step=5:phase=mid-save" or "mtbf=SECONDS:seed=S" into *f;
 * DT_ERR_INVALID_ARG naming the bad part. NULL or "" is no failure. */
dt_result dt_failure_parse(const char *spec, dt_failure *f);

/* The k-th failure time (k >= 0) of the Poisson process of mean interval
 * mtbf drawn from seed: t_k = sum over i <= k of -mtbf ln(1 - u_i), u_i
 * uniform from the seed's stream. NaN for mtbf not > 0 or k < 0. */
double dt_failure_time(uint64_t seed, double mtbf, int k);
/* The rank (0 .. ranks-1) that failure k of seed strikes. */
int dt_failure_victim(uint64_t seed, int k, int ranks);

/* Called by every rank at each phase of each step (step: steps done).
 * The plan's victim (its rank in comm; with mtbf, the drawn victim once its
 * clock has reached at_s, at the first phase point after) dies there:
 * returns DT_ERR_FAULT on a rank that fails, or never returns on one that
 * is killed. Others: DT_OK. f NULL or no rank: DT_OK. */
dt_result dt_failure_point(dt_comm *comm, const dt_failure *f, long step, dt_phase phase);

#ifdef __cplusplus
}
#endif

#endif /* DT_FAILURE_H */
