/* test_quorum.c - lab 14, task 5: a replica group of 3 trains on through
 * a failure and takes the healed replica back (chapter 14, section 8).
 * Replica 2 is down for steps 4 to 6 and back at step 7; the group runs
 * 10 steps. Expected: the trajectory of 3 replicas for steps 0 to 3, of
 * replicas 0 and 1 alone (a world of 2 ranks) for steps 4 to 6, and of
 * the 3 again from their state for steps 7 to 9: the same bits on every
 * rank, the healed one included, whose crash at step 4 lost its state. A quorum that counts the dead replica
 * (size 3 while 2 answer) scales the gradients of steps 4 to 6 by 2/3. */
#include "ft_test.h"
#include "grader.h"

#include <stdlib.h>
#include <string.h>

enum { P = 185, DOWN = 4, BACK = 7, STEPS = 10 };

typedef struct {
    int ranks, ids[LAB_REPLICAS];
    long from, until;       /* steps */
    int failure;            /* replica 2 down for steps DOWN to BACK - 1, through
                               lab_quorum_step (0: the expected run, without it) */
    const float *start;     /* NULL: from scratch; else params, momentum, as `end` holds them */
    float end[LAB_REPLICAS][2 * P]; /* each rank's params, then momentum, at `until` */
    long step[LAB_REPLICAS];
} qjob;

static dt_result quorum_rank(dt_comm *w, void *arg)
{
    qjob *j = arg;
    lab_replica q;
    int me = dt_comm_rank(w);
    dt_optimizer *o;
    int n;
    dt_result r = lab_replica_init(&q, w, j->ids, 5);
    if (r == DT_OK)
        r = dt_train_optimizers(&q.trainer, &o, 1, &n);
    if (r == DT_OK && j->start) {
        memcpy(q.model.params, j->start, P * sizeof(float));
        memcpy(o->state, j->start + P, P * sizeof(float));
        q.trainer.step = j->from, o->step = j->from;
    }
    for (long s = j->from; r == DT_OK && s < j->until; s++) {
        int alive[LAB_REPLICAS] = {0, 0, 0}, down = j->failure && s >= DOWN && s < BACK;
        for (int i = 0; i < j->ranks; i++)
            alive[j->ids[i]] = 1;
        alive[2] = alive[2] && !down;
        if (down && s == DOWN && q.ids[me] == 2) { /* the crash lost its memory */
            memset(q.model.params, 0, P * sizeof(float));
            memset(o->state, 0, P * sizeof(float));
            q.trainer.step = 0, o->step = 0;
        }
        if (j->failure) {
            r = lab_quorum_step(&q, alive);
        } else { /* the expected runs: every rank's replica a member, by the given code */
            memcpy(q.member, alive, sizeof q.member);
            q.size = j->ranks;
            r = lab_replica_train_step(&q);
        }
        if (r == DT_OK && alive[q.ids[me]] && q.trainer.step != s + 1)
            r = dt_fail(DT_ERR_INVALID_ARG, "replica %d: step %ld after the step from %ld",
                        q.ids[me], q.trainer.step, s);
    }
    if (r == DT_OK) {
        r = dt_train_optimizers(&q.trainer, &o, 1, &n);
        memcpy(j->end[me], q.model.params, P * sizeof(float));
        memcpy(j->end[me] + P, o->state, P * sizeof(float));
        j->step[me] = q.trainer.step;
    }
    lab_replica_free(&q);
    return r;
}

static dt_result launch(qjob *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = j->ranks;
    o.backend = DT_BACKEND_THREAD;
    o.timeout_s = 20;
    return dt_launch(&o, quorum_rank, j);
}

TEST_T(ft_quorum_trains_through_a_failure_and_rejoins, 3, 60)
{
    dt_test_see("chapter 14, section 8");
    static qjob run, a, b, c;
    run = (qjob){.ranks = 3, .ids = {0, 1, 2}, .until = STEPS, .failure = 1};
    EXPECT(launch(&run) == DT_OK, "3 replicas, replica 2 down for steps %d to %d: %s", DOWN,
           BACK - 1, dt_last_error());
    a = (qjob){.ranks = 3, .ids = {0, 1, 2}, .until = DOWN};
    EXPECT(launch(&a) == DT_OK, "3 replicas, steps 0 to %d: %s", DOWN - 1, dt_last_error());
    b = (qjob){.ranks = 2, .ids = {0, 1}, .from = DOWN, .until = BACK, .start = a.end[0]};
    EXPECT(launch(&b) == DT_OK, "replicas 0 and 1 alone, steps %d to %d: %s", DOWN, BACK - 1,
           dt_last_error());
    c = (qjob){.ranks = 3, .ids = {0, 1, 2}, .from = BACK, .until = STEPS, .start = b.end[0]};
    EXPECT(launch(&c) == DT_OK, "3 replicas again, steps %d to %d: %s", BACK, STEPS - 1,
           dt_last_error());
    EXPECT(memcmp(a.end[0], a.end[2], sizeof a.end[0]) == 0 &&
           memcmp(b.end[0], b.end[1], sizeof b.end[0]) == 0,
           "the expected runs' replicas disagree: the given code's fault, not yours");
    EXPECT(memcmp(a.end[0], b.end[0], P * sizeof(float)) != 0,
           "steps %d to %d changed nothing: the test would not see them", DOWN, BACK - 1);
    for (int k = 0; k < LAB_REPLICAS; k++) {
        long i = 0;
        while (i < 2 * P && !memcmp(&run.end[k][i], &c.end[0][i], sizeof(float)))
            i++;
        EXPECT(i == 2 * P && run.step[k] == STEPS, "replica %d at step %ld (expected %d): %s "
               "%ld differs from the trajectory of the survivors through steps %d to %d and "
               "of all 3 after", k, run.step[k], STEPS, i < P ? "parameter" : "momentum",
               i < P ? i : i - P, DOWN, BACK - 1);
    }
}

/* Nobody alive, or only a replica that missed the last quorum: no state
 * to go on from, refused with DT_ERR_PEER_DIED rather than a guess. */
static dt_result refuse_rank(dt_comm *w, void *arg)
{
    (void)arg;
    lab_replica q;
    const int ids[LAB_REPLICAS] = {0, 1, 2};
    int none[LAB_REPLICAS] = {0, 0, 0}, one[LAB_REPLICAS] = {1, 0, 0};
    int zero[LAB_REPLICAS] = {0, 1, 1};
    DT_CHECK(lab_replica_init(&q, w, ids, 5));
    dt_result a = lab_quorum_step(&q, none);
    dt_result b = lab_quorum_step(&q, zero);    /* replica 0 drops out */
    dt_result c = b == DT_OK ? lab_quorum_step(&q, one) : DT_OK; /* only 0 back */
    lab_replica_free(&q);
    if (a != DT_ERR_PEER_DIED || b != DT_OK || c != DT_ERR_PEER_DIED)
        return dt_fail(DT_ERR_INVALID_ARG, "no replica alive: %s; replicas 1 and 2: %s; only "
                       "replica 0, healed, with nobody to heal from: %s (expected "
                       "DT_ERR_PEER_DIED, DT_OK, DT_ERR_PEER_DIED)", dt_strerror(a),
                       dt_strerror(b), dt_strerror(c));
    return DT_OK;
}

TEST_T(ft_quorum_refuses_without_a_live_peer, 1, 60)
{
    dt_test_see("chapter 14, section 8");
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 3, o.backend = DT_BACKEND_THREAD, o.timeout_s = 20;
    EXPECT(dt_launch(&o, refuse_rank, NULL) == DT_OK, "%s", dt_last_error());
}
