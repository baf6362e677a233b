/* run.h - what the files of lab 04's program share: run.c (the options,
 * the four runs and their table), run_figures.c (--figures), run_studies.c
 * (--stability, --lost-updates, --knee). The program's files, not the
 * lab's: none of this is linked into the graded tests. */
#ifndef LAB04_RUN_H
#define LAB04_RUN_H

#include "async.h"

typedef struct {
    int workers, servers, updates, bound, batch;
    double slow_ms, delay_ms, compute_ms;
    double lr;
    const char *figures; /* folder for the SVGs, or NULL */
    const char *net;     /* network spec (dt/net.h) */
    dt_backend backend;  /* of every launch: thread or proc */
    int knee;            /* > 0: only the server's bottleneck, K = 1 .. knee */
    int stability;       /* 1: only the stability sweep (section 3) */
    int lost;            /* 1: only the lost Hogwild! updates (section 8) */
} options;

/* One run's line of the table. */
typedef struct {
    const char *name;
    double modeled_s, wall_s;
    float accuracy;
    int applied, max_tau;
    double mean_tau;
    int per_worker[LAB_MAX_WORKERS];
} row;

/* One parameter-server run; fills the row, keeps res for the figures. */
dt_result ps_run(const options *o, const dt_dataset *train, const dt_dataset *test, int sync,
                 int bound, row *out, lab_ps_result *res);

/* "what: DT_ERR_... message" on stderr; the exit status 1. */
int fail(const char *what, dt_result r);

/* --figures: 04-accuracy-time.svg of the three server runs' traces, and
 * 04-staleness.svg, the histogram of the asynchronous run (runs[1]). */
dt_result figures(const options *o, const lab_ps_result *runs, const char **names, int nruns,
                  const dt_dataset *test);

/* The studies of sections 3, 8 and 9.1, each alone; exit statuses. */
int stability(const options *o, const dt_dataset *train);
int lost_updates(dt_backend backend);
int knee(const options *base, const dt_dataset *train, const dt_dataset *test);

#endif /* LAB04_RUN_H */
