/* test_sched.c - libdt sched: building a schedule, the validator's
 * rejections (each names the step), and the simulator's times worked out by
 * hand. The formulas of chapter 06 on whole schedules are checked in
 * test_sched_generate.c, on the library's generators. */
#include "grader.h"

#include "dt/sched.h"

#include <math.h>
#include <string.h>

/* Builds a schedule from "stage micro kind" triples, e.g. {0,0,'F', ...}. */
static dt_schedule *from_steps(int p, int v, int m, const int (*steps)[3], int n)
{
    dt_schedule *s;
    EXPECT_OK(dt_sched_create(&s, p, v, m));
    for (int i = 0; i < n; i++) {
        dt_step_kind k = steps[i][2] == 'F' ? DT_STEP_F : steps[i][2] == 'B' ? DT_STEP_B : DT_STEP_W;
        EXPECT_OK(dt_sched_add(s, steps[i][0], steps[i][1], k));
    }
    return s;
}

/* GPipe on 2 ranks, 2 micro-batches: each rank all its F, then all its B. */
static const int gpipe_2x2[][3] = {{0, 0, 'F'}, {0, 1, 'F'}, {0, 0, 'B'}, {0, 1, 'B'},
                                   {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};

/* s must be rejected with a message holding every one of want[]. */
static void expect_rejected(const dt_schedule *s, const char *const *want, int nwant)
{
    dt_sched_report rep;
    EXPECT_ERR(dt_sched_validate(s, &rep), DT_ERR_INVALID_ARG);
    for (int i = 0; i < nwant; i++)
        EXPECT(strstr(dt_last_error(), want[i]), "message '%s' lacks '%s'", dt_last_error(), want[i]);
    dt_sched_timing *t = NULL;
    dt_sched_costs c = {.t_f = 1, .t_b = 1, .t_w = 1};
    EXPECT_ERR(dt_sched_simulate(s, &c, &t), DT_ERR_INVALID_ARG);
    EXPECT(t == NULL, "no timing for a rejected schedule");
}

TEST(sched_create_and_add_check_their_arguments, 1)
{
    dt_schedule *s = NULL;
    EXPECT_ERR(dt_sched_create(&s, 0, 1, 4), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "ranks = 0"), "names ranks: %s", dt_last_error());
    EXPECT_ERR(dt_sched_create(&s, 2, 0, 4), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "chunks = 0"), "names chunks: %s", dt_last_error());
    EXPECT_ERR(dt_sched_create(&s, 2, 1, DT_SCHED_MAX_MICRO + 1), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "micro = 1025"), "names micro: %s", dt_last_error());
    EXPECT(s == NULL, "out untouched on failure");

    EXPECT_OK(dt_sched_create(&s, 3, 2, 2));
    EXPECT(s->stages == 6 && s->capacity == 12, "S = v p = %d, capacity 3 v m = %d", s->stages,
           s->capacity);
    /* stage s runs on rank s % p: chunk 1 of rank 2 is stage 5 */
    EXPECT(dt_sched_rank_of(s, 5) == 2 && dt_sched_rank_of(s, 3) == 0, "stage to rank");
    EXPECT(dt_sched_rank_of(s, 6) == -1, "stage out of range");
    EXPECT_ERR(dt_sched_add(s, 6, 0, DT_STEP_F), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "stage 6"), "names the stage: %s", dt_last_error());
    EXPECT_ERR(dt_sched_add(s, 0, -1, DT_STEP_F), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "micro-batch -1"), "names the micro-batch: %s", dt_last_error());
    EXPECT_ERR(dt_sched_add(s, 0, 0, (dt_step_kind)7), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "kind 7"), "names the kind: %s", dt_last_error());
    EXPECT_OK(dt_sched_add(s, 4, 1, DT_STEP_B));
    EXPECT(s->nsteps[1] == 1 && s->steps[1][0].stage == 4 && s->steps[1][0].micro == 1 &&
           s->steps[1][0].kind == DT_STEP_B, "the step went to rank 1 (stage 4 %% 3)");
    for (int i = 1; i < s->capacity; i++) EXPECT_OK(dt_sched_add(s, 1, 0, DT_STEP_F));
    EXPECT_ERR(dt_sched_add(s, 1, 0, DT_STEP_F), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "rank 1 already holds 12 steps"), "capacity: %s", dt_last_error());
    dt_sched_free(s);
    dt_sched_free(NULL);
    EXPECT(strcmp(dt_step_kind_name(DT_STEP_W), "W") == 0 && strcmp(dt_step_kind_name(9), "?") == 0,
           "kind names");
}

TEST(sched_validator_names_the_step, 2)
{
    /* p = 2, m = 2 throughout; a valid GPipe first, then one fault each. */
    dt_schedule *s = from_steps(2, 1, 2, gpipe_2x2, 8);
    EXPECT_OK(dt_sched_validate(s, NULL));
    dt_sched_free(s);

    static const int missing_b[][3] = {{0, 0, 'F'}, {0, 1, 'F'}, {0, 0, 'B'}, {0, 1, 'B'},
                                       {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}};
    s = from_steps(2, 1, 2, missing_b, 7);
    expect_rejected(s, (const char *[]){"rank 1", "no B step for stage 1 mb 1"}, 2);
    dt_sched_free(s);

    static const int twice[][3] = {{0, 0, 'F'}, {0, 0, 'F'}, {0, 0, 'B'}, {0, 1, 'B'},
                                   {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};
    s = from_steps(2, 1, 2, twice, 8);
    expect_rejected(s, (const char *[]){"rank 0 step 1 (F stage 0 mb 0)", "a second F"}, 2);
    dt_sched_free(s);

    static const int b_first[][3] = {{0, 0, 'F'}, {0, 1, 'B'}, {0, 1, 'F'}, {0, 0, 'B'},
                                     {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};
    s = from_steps(2, 1, 2, b_first, 8);
    expect_rejected(s, (const char *[]){"rank 0 step 1 (B stage 0 mb 1)", "F stage 0 mb 1 (step 2"}, 2);
    dt_sched_free(s);

    /* W before its B; and a W for one pair only */
    static const int w_first[][3] = {{0, 0, 'F'}, {0, 0, 'W'}, {0, 0, 'B'}, {1, 0, 'F'},
                                     {1, 0, 'B'}, {1, 0, 'W'}};
    s = from_steps(2, 1, 1, w_first, 6);
    expect_rejected(s, (const char *[]){"rank 0 step 1 (W stage 0 mb 0)", "runs before B"}, 2);
    dt_sched_free(s);
    static const int one_w[][3] = {{0, 0, 'F'}, {0, 0, 'B'}, {1, 0, 'F'}, {1, 0, 'B'}, {1, 0, 'W'}};
    s = from_steps(2, 1, 1, one_w, 5);
    expect_rejected(s, (const char *[]){"no W step for stage 0 mb 0"}, 1);
    dt_sched_free(s);

    /* one rank, two chunks: stage 1's forward before stage 0's on the same rank */
    static const int chunks[][3] = {{1, 0, 'F'}, {0, 0, 'F'}, {1, 0, 'B'}, {0, 0, 'B'}};
    s = from_steps(1, 2, 1, chunks, 4);
    expect_rejected(s, (const char *[]){"rank 0 step 0 (F stage 1 mb 0)", "F stage 0 mb 0 (step 1"}, 2);
    dt_sched_free(s);

    /* rank 1 takes micro-batch 1's activation first, rank 0 sends 0's first */
    static const int order[][3] = {{0, 0, 'F'}, {0, 1, 'F'}, {0, 0, 'B'}, {0, 1, 'B'},
                                   {1, 1, 'F'}, {1, 0, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};
    s = from_steps(2, 1, 2, order, 8);
    expect_rejected(s, (const char *[]){"rank 1 step 0 (F stage 1 mb 1)", "another order",
                                        "rank 0 step 0 (F stage 0 mb 0)"}, 3);
    dt_sched_free(s);

    /* rank 0 waits for mb 0's gradient before it sends mb 1's activation,
     * which rank 1 waits for before it runs mb 0's backward */
    static const int dead[][3] = {{0, 0, 'F'}, {0, 0, 'B'}, {0, 1, 'F'}, {0, 1, 'B'},
                                  {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};
    s = from_steps(2, 1, 2, dead, 8);
    expect_rejected(s, (const char *[]){"deadlock",
                                        "rank 0 step 1 (B stage 0 mb 0) waits for B stage 1 mb 0 (rank 1 step 2)",
                                        "rank 1 step 1 (F stage 1 mb 1) waits for F stage 0 mb 1 (rank 0 step 2)"}, 3);
    dt_sched_free(s);
    EXPECT_ERR(dt_sched_validate(NULL, NULL), DT_ERR_INVALID_ARG);
}

/* Unequal stages and a network, worked out by hand. GPipe, p = 2, m = 2,
 * T_F = (1, 3), T_B = (2, 6): rank 1 runs F0 [1,4] F1 [4,7] B0 [7,13]
 * B1 [13,19], rank 0 B0 [13,15] B1 [19,21]. A message of 0.5 delays each
 * crossing: rank 1's F0 starts at 1.5, rank 0's last B ends at 22. */
TEST(sched_simulate_unequal_stages_and_messages, 1)
{
    dt_schedule *s = from_steps(2, 1, 2, gpipe_2x2, 8);
    const double f[] = {1, 3}, b[] = {2, 6};
    dt_sched_costs c = {.stage_f = f, .stage_b = b};
    dt_sched_timing *t;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    EXPECT(t->makespan == 21, "makespan %g, expected 21", t->makespan);
    EXPECT(t->start[1][2] == 7 && t->end[1][3] == 19 && t->start[0][3] == 19, "step times");
    EXPECT(t->busy[0] == 6 && t->busy[1] == 18 && t->idle[0] == 15 && t->idle[1] == 3,
           "busy %g %g idle %g %g", t->busy[0], t->busy[1], t->idle[0], t->idle[1]);
    EXPECT(fabs(t->bubble_fraction - 18.0 / 42) < 1e-12, "fraction %g", t->bubble_fraction);
    dt_sched_timing_free(t);
    c.t_msg = 0.5;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    EXPECT(t->start[1][0] == 1.5 && t->makespan == 22, "with messages: F0 at %g, makespan %g",
           t->start[1][0], t->makespan);
    dt_sched_timing_free(t);

    t = NULL;
    dt_sched_costs bad = {.t_f = 1, .t_b = -1};
    EXPECT_ERR(dt_sched_simulate(s, &bad, &t), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "t_b = -1"), "names t_b: %s", dt_last_error());
    const double nan_b[] = {2, NAN};
    bad = (dt_sched_costs){.t_f = 1, .stage_b = nan_b};
    EXPECT_ERR(dt_sched_simulate(s, &bad, &t), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "stage_b[1] = nan"), "names stage_b[1]: %s", dt_last_error());
    bad = (dt_sched_costs){.t_f = 1, .t_b = 1, .t_w = NAN, .t_msg = INFINITY};
    EXPECT_ERR(dt_sched_simulate(s, &bad, &t), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "t_msg = inf"), "t_w unused without W; names t_msg: %s",
           dt_last_error());
    bad = (dt_sched_costs){0};
    EXPECT_ERR(dt_sched_simulate(s, &bad, &t), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "every step costs 0"), "all free: %s", dt_last_error());
    EXPECT(t == NULL, "out untouched on failure");
    dt_sched_free(s);
}

/* A run's own times: the simulator's steps shifted by 5 (another origin)
 * give the same makespan, busy time and bubble; a step that ends before it
 * starts is refused. */
TEST(sched_timing_of_a_run_equals_the_simulated_one, 1)
{
    dt_schedule *s = from_steps(2, 1, 2, gpipe_2x2, 8);
    const double f[] = {1, 3}, b[] = {2, 6};
    dt_sched_costs c = {.stage_f = f, .stage_b = b};
    dt_sched_timing *sim, *run;
    EXPECT_OK(dt_sched_simulate(s, &c, &sim));
    EXPECT_OK(dt_sched_timing_create(s, &run));
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < s->nsteps[r]; i++)
            run->start[r][i] = sim->start[r][i] + 5, run->end[r][i] = sim->end[r][i] + 5;
    EXPECT_OK(dt_sched_timing_finish(run, s));
    EXPECT(run->makespan == 21 && run->start[1][2] == 7, "makespan %g, rank 1 step 2 at %g",
           run->makespan, run->start[1][2]);
    for (int r = 0; r < 2; r++)
        EXPECT(run->busy[r] == sim->busy[r] && run->idle[r] == sim->idle[r], "rank %d: busy %g "
               "idle %g, simulated %g %g", r, run->busy[r], run->idle[r], sim->busy[r],
               sim->idle[r]);
    EXPECT(run->bubble_fraction == sim->bubble_fraction && run->bubble_ratio == sim->bubble_ratio,
           "bubble %g (%g), simulated %g (%g)", run->bubble_fraction, run->bubble_ratio,
           sim->bubble_fraction, sim->bubble_ratio);
    run->end[0][1] = run->start[0][1] - 1;
    EXPECT_ERR(dt_sched_timing_finish(run, s), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "rank 0 step 1 ends"), "message: %s", dt_last_error());
    dt_sched_timing_free(sim), dt_sched_timing_free(run);
    dt_sched_free(s);
}
