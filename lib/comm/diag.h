/* diag.h - diagnosis (diag.c): what each rank is doing, published on its
 * board, and the report a timeout gives. */
#ifndef DT_COMM_DIAG_H
#define DT_COMM_DIAG_H

#include "handle.h"

/* Publishes what lane does (for the timeout report and the mismatch check:
 * sig, a collective's signature, else 0); kind -1 clears. */
void dt_doing_set(dt_comm *comm, int lane, int kind, long seq, size_t count, int root,
                  uint32_t sig);
/* Adds to lane 0's entry: the call waits for message number want (its
 * k-th user message to this rank) from comm rank from (DT_FROM_ANY: any),
 * or (waiting 1) for an async collective. */
void dt_doing_detail(dt_comm *comm, int from, uint32_t want, int waiting);

/* Marks the lane's call as timed out: the report of any rank still
 * counts it among the waiting ranks after it has returned. */
void dt_doing_timed_out(dt_comm *comm, int lane);

/* "FILE:LINE: " of the calling thread's blocking call (dt_call_site), or
 * "" when none is known; out holds n bytes. */
const char *dt_site_prefix(char *out, size_t n);

/* A consistent snapshot of a lane's entry. */
typedef struct {
    int active, kind, comm_id, root, from, waiting;
    uint32_t want, sig;
    long seq, count;
    int peer_world, line, timed_out;
    char file[DT_SITE_WORDS * 8 + 1]; /* "" when the site is not known */
} dt_doing_view;
void dt_doing_read(const dt_doing *d, dt_doing_view *out);

/* "allreduce (count 4, f32, sum, algo tree)": a collective's signature
 * (coll.h) and count, as the messages say it. */
void dt_coll_describe(char *out, size_t n, uint32_t sig, uint64_t count);

/* Marks the communicator out of step after a mismatch (the message of
 * dt_last_error, for every member: the first one written stays) and wakes
 * every member; returns r. */
dt_result dt_comm_poison(dt_comm *comm, dt_result r);
/* DT_OK, or DT_ERR_MISMATCH with the poisoning message. */
dt_result dt_comm_poisoned(const dt_comm *comm);

/* What a waiting collective checks now and then: the communicator is not
 * poisoned, and every member that is in the same collective (same
 * communicator and number) called it with the same signature and count;
 * else DT_ERR_MISMATCH naming both (and the communicator is poisoned). */
dt_result dt_diag_check(dt_call *call);

/* dt_diag_check's comparison with member i's lane doing v: DT_ERR_MISMATCH
 * (the communicator poisoned) when v is the call's collective (the same
 * communicator and number) with another signature or count. */
dt_result dt_diag_compare(dt_call *call, int i, const dt_doing_view *v);

/* Publishes the rank's lane-0 clock on its board (dt_recv_any reads it). */
void dt_clock_publish(dt_rank_ctx *rc);
double dt_clock_published(const dt_board *b);

/* "rank R waits in KIND #SEQ (count C, root X) at FILE:LINE" ("(async)
 * in" on lane 1, "timed out in" once the call has run past its deadline;
 * "peer 1 = world rank 3" where the communicator's ranks are not the
 * job's) for rank r's lane doing d; "" when the lane is in no call. */
void dt_describe_view(int r, int lane, const dt_doing_view *d, char *out, size_t n);

/* What rank r does, for a timeout's report: "rank R has returned",
 * "... failed", "... died", its lanes' calls, or "rank R is in no
 * communication call". state: dt_rank_state; lanes[DT_LANES]. Returns 1
 * when the rank waits on others: it is in a communication call (or its
 * call timed out), else 0. */
int dt_describe_rank(int r, int state, const dt_doing_view *lanes, char *out, size_t n);

/* The timeout's message for a call (what, e.g. "recv", and its number
 * seq) that waited timeout_s: "FILE:LINE: timeout after 5 s in recv #1: "
 * then "deadlock: every rank waits on another: " when all nranks ranks
 * wait (waiting of them do), then the report. */
dt_result dt_timeout_fail(double timeout_s, const char *what, long seq, int waiting,
                          int nranks, const char *report, const char *tail);

/* The timeout report: what every rank of the job does, e.g. "rank 0 waits
 * in allreduce #3 (count 1000); rank 2 waits in broadcast #3 (count 1000,
 * root 1)"; returns how many ranks wait on others (dt_describe_rank). */
int dt_describe_job(dt_job *job, char *out, size_t n);

#endif /* DT_COMM_DIAG_H */
