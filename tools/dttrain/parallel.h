/* parallel.h - a data-parallel run of dttrain (parallel.c), for itself
 * and the showcase. */
#ifndef DTTRAIN_PARALLEL_H
#define DTTRAIN_PARALLEL_H

#include "dttrain.h"

/* What rank 0 reports; it lives in a shared mapping (dp_alloc) so that
 * proc ranks (forked) can fill it too. */
typedef struct {
    int done;
    dt_train_result run;
    size_t mem_peak;          /* rank 0's peak of tracked memory, bytes */
    size_t states_peak;       /* rank 0's model states: the peaks of PARAM, GRAD and OPTIM
                                 added (at most their peak together), bytes */
    long rss_peak_kb;         /* rank 0's peak resident memory (its process's with the
                                 proc backend; the whole job's with threads), KiB */
    uint64_t params_hash;     /* FNV-1a of the final parameters' bytes */
    uint64_t group_sent[3];   /* --tp, --pp (hybrid.c): what rank 0 sent in its TP, PP and
                                 DP groups during the run, bytes */
    char update[16], sync[16], layout[16];
} dp_result;

typedef struct {
    const options *o;
    int ranks;
    long epochs;               /* > 0: train whole epochs instead of o->steps */
    double compute_per_sample; /* > 0: compute charged to the modeled clock at this
                                  cost per sample (s); else measured */
    const char *tag;           /* progress prefix, e.g. "4 ranks" */
    dp_result *res;
} dp_job;

/* Runs a data-parallel job; j->res from dp_alloc. */
dt_result dp_run(const options *o, dp_job *j);
dp_result *dp_alloc(void);
void dp_release(dp_result *r);

#endif /* DTTRAIN_PARALLEL_H */
