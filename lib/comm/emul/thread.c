/* thread.c - the thread backend's launch: every rank a thread of this
 * process, the job's shared state in its heap. */
#include "emul.h"

#include "../shm.h"

#include <stdio.h>
#include <stdlib.h>

/* A rank thread's stack: the 8 MB of a process's main thread, or 1 MB when
 * there are many ranks, so that a job of DT_MAX_RANKS threads fits in
 * address space and in a laptop's memory. */
#define STACK_BYTES ((size_t)8 << 20)
#define SMALL_STACK_BYTES ((size_t)1 << 20)
#define MANY_RANKS 64

typedef struct {
    dt_rank_ctx rc;
    dt_rank_fn fn;
    void *arg;
    pthread_t thread;
    int started;
} rank_thread;

static void *rank_thread_main(void *p)
{
    rank_thread *t = p;
    dt_rank_run(&t->rc, t->fn, t->arg);
    return NULL;
}

dt_result dt_launch_threads(const dt_resolved *res, dt_rank_fn fn, void *arg)
{
    int n = res->o.nranks;
    dt_job *job = calloc(1, sizeof *job);
    rank_thread *t = calloc((size_t)n, sizeof *t);
    if (!job || !t) {
        free(job);
        free(t);
        return dt_fail(DT_ERR_NOMEM, "dt_launch: out of memory for %d ranks", n);
    }
    dt_result r = dt_job_init(job, res, NULL, 0);
    double wall0 = dt_now();
    for (int i = 0; r == DT_OK && i < n; i++) {
        dt_rank_ctx_init(&t[i].rc, job, i, res);
        t[i].rc.mem = dt_mem_ctx_create();
        t[i].fn = fn;
        t[i].arg = arg;
    }
    for (int i = 0; r == DT_OK && i < n; i++) {
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setstacksize(&at, n > MANY_RANKS ? SMALL_STACK_BYTES : STACK_BYTES);
        t[i].started = pthread_create(&t[i].thread, &at, rank_thread_main, &t[i]) == 0;
        pthread_attr_destroy(&at);
        if (!t[i].started) {
            char msg[80];
            snprintf(msg, sizeof msg, "could not start the thread of rank %d", i);
            dt_rank_end(job, i, DT_ERR_NOMEM, msg);
        }
    }
    for (int i = 0; r == DT_OK && i < n; i++)
        if (t[i].started)
            pthread_join(t[i].thread, NULL);
    if (r == DT_OK) {
        r = dt_job_result(job);
        char keep[512];
        snprintf(keep, sizeof keep, "%s", dt_last_error());
        if (res->o.trace_path && res->o.trace_path[0]) {
            dt_rank_ctx **rcs = malloc(sizeof *rcs * (size_t)n);
            for (int i = 0; rcs && i < n; i++)
                rcs[i] = &t[i].rc;
            dt_result tr = rcs ? dt_trace_write(res->o.trace_path, res->o.trace_append, rcs, n, wall0) : DT_ERR_NOMEM;
            free(rcs);
            if (r == DT_OK)
                r = tr;
            else
                dt_fail(r, "%s", keep);
        }
    }
    for (int i = 0; i < n; i++) {
        if (!t[i].rc.job)
            continue;
        dt_rank_ctx_destroy(&t[i].rc);
        dt_mem_ctx_release(t[i].rc.mem);
    }
    /* ranks that never started still hold their references to the world */
    for (int i = 0; job->world && i < n; i++)
        if (!t[i].started)
            dt_comm_shared_unref(job, job->world);
    dt_shm_free(job, job->board);
    free(job);
    free(t);
    return r;
}

