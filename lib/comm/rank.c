/* rank.c - how a rank's life ends: returned (done or failed) or died, on
 * its board, and the job's result, the first failure in time. A failure
 * rings every rank's doorbell, so that their waits return
 * DT_ERR_PEER_DIED at once. */
#include "rank.h"

#include "bell.h"

#include <stdio.h>

void dt_rank_end(dt_job *job, int r, dt_result res, const char *msg)
{
    dt_board *b = &job->board[r];
    if (atomic_load(&b->state) != DT_RANK_RUNNING)
        return; /* the first end counts (a fault may have ended it already) */
    snprintf(b->msg, sizeof b->msg, "%s", msg && msg[0] ? msg : dt_strerror(res));
    atomic_store(&b->result, (int)res);
    if (res == DT_OK) {
        atomic_store_explicit(&b->state, DT_RANK_DONE, memory_order_release);
        return;
    }
    atomic_store(&b->order, 1 + atomic_fetch_add(&job->fail_order, 1));
    atomic_store_explicit(&b->state, DT_RANK_FAILED, memory_order_release);
    atomic_store_explicit(&job->failed, 1, memory_order_release);
    for (int i = 0; i < job->nranks; i++)
        dt_bell_ring(&job->board[i].bell);
}

void dt_rank_died(dt_job *job, int r, const char *msg)
{
    dt_board *b = &job->board[r];
    int st = atomic_load(&b->state);
    if (st == DT_RANK_FAILED || st == DT_RANK_DIED)
        return;
    snprintf(b->msg, sizeof b->msg, "%s", msg);
    atomic_store(&b->result, (int)DT_ERR_PEER_DIED);
    atomic_store(&b->order, 1 + atomic_fetch_add(&job->fail_order, 1));
    atomic_store_explicit(&b->state, DT_RANK_DIED, memory_order_release);
    atomic_store_explicit(&job->failed, 1, memory_order_release);
    for (int i = 0; i < job->nranks; i++)
        dt_bell_ring(&job->board[i].bell);
}

dt_result dt_job_result(dt_job *job)
{
    int best = -1, best_order = 0;
    for (int r = 0; r < job->nranks; r++) {
        dt_board *b = &job->board[r];
        int st = atomic_load(&b->state);
        if (st != DT_RANK_FAILED && st != DT_RANK_DIED)
            continue;
        int ord = atomic_load(&b->order);
        if (best < 0 || ord < best_order) {
            best = r;
            best_order = ord;
        }
    }
    if (best < 0)
        return DT_OK;
    dt_result res = (dt_result)atomic_load(&job->board[best].result);
    if (res == DT_OK)
        res = DT_ERR_PEER_DIED;
    return dt_fail(res, "rank %d: %s", best, job->board[best].msg);
}
