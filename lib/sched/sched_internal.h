/* sched_internal.h - what the checker, the simulator and the drawings of
 * lib/sched share: where each step sits, what it needs, and the replay of
 * the run. Private to lib/sched. */
#ifndef DT_SCHED_INTERNAL_H
#define DT_SCHED_INTERNAL_H

#include "dt/sched.h"

/* Where each (kind, stage, micro) step sits in its rank's list: pos[...] is
 * the index, -1 when the schedule has no such step. */
typedef struct {
    const dt_schedule *s;
    int *pos;
    int split; /* the schedule has W steps */
} sched_index;

/* Builds the table and runs checks 1 to 3 of dt_sched_validate (all but
 * the replay); on failure nothing is left to free. */
dt_result sched_check(sched_index *ix, const dt_schedule *s);
void sched_index_free(sched_index *ix);

/* The index of step (kind, stage, micro) in its rank's list, or -1. */
int sched_pos(const sched_index *ix, dt_step_kind kind, int stage, int micro);

/* The steps st needs the results of (at most two), written to deps:
 * F(s) needs F(s-1); B(s) needs its F(s) and B(s+1); W(s) needs B(s).
 * Returns how many. */
int sched_deps(const dt_schedule *s, const dt_step *st, dt_step deps[2]);

/* The rank st sends its result to (F: the next stage's, B: the previous
 * stage's), or -1 when it sends nothing (W, the ends of the model, or a
 * neighbouring stage on the same rank). */
int sched_send_peer(const dt_schedule *s, const dt_step *st);

/* "rank 1 step 4 (B stage 1 mb 2)", the prefix of every message about a step. */
void sched_describe(const dt_schedule *s, int rank, int index, char *buf, size_t size);

/* Replays the run: each rank takes its steps in order, a step once every
 * step it needs has run (a blocking receive), and visit(ctx, rank, index)
 * is called for each step in an order that respects those needs. Returns
 * DT_OK when every step ran; else DT_ERR_INVALID_ARG with a message that
 * names each stuck rank's step and what it waits for (a deadlock). */
typedef void (*sched_visit_fn)(void *ctx, int rank, int index);
dt_result sched_replay(const sched_index *ix, sched_visit_fn visit, void *ctx);

#endif /* DT_SCHED_INTERNAL_H */
