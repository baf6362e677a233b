/* test_sched.c - libdt sched: building a schedule, the validator's
 * rejections (each names the step), and the simulator's figures against
 * the formulas of chapter 06: the bubble of GPipe and 1F1B, of interleaved
 * 1F1B and of ZB-H1, and the activations each holds in flight. */
#include "grader.h"
#include "sched_ref.h"

#include <math.h>
#include <string.h>

/* Simulates s with the same cost for every stage (T_W used when split). */
static dt_sched_timing *simulate(const dt_schedule *s, double tf, double tb, double tw)
{
    dt_sched_costs c = {.t_f = tf, .t_b = tb, .t_w = tw};
    dt_sched_timing *t = NULL;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    return t;
}

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

/* GPipe and 1F1B, equal stages: bubble (p-1)/(m+p-1) of the makespan, the
 * same on every rank, and T = (m+p-1)(T_F+T_B); with T_B = 2 T_F too. */
TEST(sched_gpipe_and_1f1b_bubble, 2)
{
    const double tb[] = {1.0, 2.0};
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 8; m++)
            for (int k = 0; k < 2; k++)
                for (int which = 0; which < 2; which++) {
                    dt_schedule *s;
                    EXPECT_OK(which ? ref_1f1b(&s, p, m) : ref_gpipe(&s, p, m));
                    dt_sched_timing *t = simulate(s, 1.0, tb[k], 0);
                    double frac = (double)(p - 1) / (m + p - 1);
                    EXPECT(fabs(t->bubble_fraction - frac) < 1e-12,
                           "%s p=%d m=%d T_B=%g: bubble %.9f, formula %.9f", which ? "1F1B" : "GPipe",
                           p, m, tb[k], t->bubble_fraction, frac);
                    EXPECT(fabs(t->bubble_ratio - (double)(p - 1) / m) < 1e-12, "ratio (p-1)/m");
                    EXPECT(fabs(t->makespan - (m + p - 1) * (1.0 + tb[k])) < 1e-9,
                           "makespan %g, (m+p-1)(T_F+T_B) = %g", t->makespan,
                           (m + p - 1) * (1.0 + tb[k]));
                    for (int r = 0; r < p; r++)
                        EXPECT(fabs(t->rank_bubble[r] - frac) < 1e-12, "rank %d bubble %g", r,
                               t->rank_bubble[r]);
                    dt_sched_timing_free(t);
                    dt_sched_free(s);
                }
}

/* Activations in flight: GPipe holds all m micro-batches on every rank,
 * 1F1B at most p - r on rank r (p on the first). */
TEST(sched_memory_in_flight, 2)
{
    for (int p = 1; p <= 6; p++)
        for (int m = 1; m <= 12; m++) {
            dt_schedule *g, *o;
            dt_sched_report rg, ro;
            EXPECT_OK(ref_gpipe(&g, p, m));
            EXPECT_OK(ref_1f1b(&o, p, m));
            EXPECT_OK(dt_sched_validate(g, &rg));
            EXPECT_OK(dt_sched_validate(o, &ro));
            EXPECT(!rg.split_backward && !ro.split_backward, "no W steps");
            for (int r = 0; r < p; r++) {
                int want = p - r < m ? p - r : m;
                EXPECT(rg.peak_acts[r] == m, "GPipe p=%d m=%d rank %d holds %d, expected m", p, m,
                       r, rg.peak_acts[r]);
                EXPECT(ro.peak_acts[r] == want, "1F1B p=%d m=%d rank %d holds %d, expected %d", p,
                       m, r, ro.peak_acts[r], want);
                /* one activation out and one gradient back per boundary and micro-batch */
                int msgs = ((r < p - 1) + (r > 0)) * m;
                EXPECT(ro.msgs_sent[r] == msgs, "rank %d sends %d messages, expected %d", r,
                       ro.msgs_sent[r], msgs);
            }
            dt_sched_free(g);
            dt_sched_free(o);
        }
}

/* Interleaved 1F1B, v chunks per rank each costing T/v: idle over ideal
 * time (p-1)/(v m), against 1F1B's (p-1)/m; 2(vp-1) m messages in all
 * instead of 2(p-1) m. */
TEST(sched_interleaved_bubble_and_messages, 2)
{
    for (int p = 2; p <= 4; p++)
        for (int v = 2; v <= 4; v++)
            for (int m = p; m <= 3 * p; m += p) {
                dt_schedule *s;
                EXPECT_OK(ref_interleaved(&s, p, v, m));
                dt_sched_report rep;
                EXPECT_OK(dt_sched_validate(s, &rep));
                dt_sched_timing *t = simulate(s, 1.0 / v, 1.0 / v, 0);
                double ratio = (double)(p - 1) / (v * m);
                EXPECT(fabs(t->bubble_ratio - ratio) < 1e-9,
                       "interleaved p=%d v=%d m=%d: idle/busy %.9f, (p-1)/(v m) = %.9f", p, v, m,
                       t->bubble_ratio, ratio);
                EXPECT(fabs(t->bubble_fraction - ratio / (1 + ratio)) < 1e-9, "fraction = r/(1+r)");
                int total = 0;
                for (int r = 0; r < p; r++) total += rep.msgs_sent[r];
                EXPECT(total == 2 * (v * p - 1) * m, "%d messages, expected 2(vp-1)m = %d", total,
                       2 * (v * p - 1) * m);
                dt_sched_timing_free(t);
                dt_sched_free(s);
            }
}

/* ZB-H1 with T_F = T_B = T_W: idle over ideal time (p-1)/(3m) for m >= p,
 * a third of 1F1B's with the same split backward, at 1F1B's peak of p
 * activations (each held until its W). */
TEST(sched_zbh1_bubble_and_memory, 2)
{
    for (int p = 2; p <= 5; p++)
        for (int m = p; m <= 10; m++) {
            dt_schedule *s;
            EXPECT_OK(ref_zbh1(&s, p, m));
            dt_sched_report rep;
            EXPECT_OK(dt_sched_validate(s, &rep));
            EXPECT(rep.split_backward, "ZB-H1 splits the backward");
            dt_sched_timing *t = simulate(s, 1, 1, 1);
            double ratio = (double)(p - 1) / (3 * m);
            EXPECT(fabs(t->bubble_ratio - ratio) < 1e-12, "ZB-H1 p=%d m=%d: idle/busy %.9f, "
                   "(p-1)/(3m) = %.9f", p, m, t->bubble_ratio, ratio);
            EXPECT(fabs(t->makespan - (3 * m + p - 1)) < 1e-9, "makespan %g, 3m+p-1 = %d",
                   t->makespan, 3 * m + p - 1);
            for (int r = 0; r < p; r++)
                EXPECT(rep.peak_acts[r] == p, "rank %d holds %d, expected p = %d", r,
                       rep.peak_acts[r], p);
            dt_sched_timing_free(t);
            dt_sched_free(s);
        }
    /* 1F1B where each W follows its B at once: the split alone already takes
     * W off the backward's path from rank to rank (B of stage s needs B of
     * s+1, not its W), so the bubble is (p-1)(T_F+T_B) instead of
     * (p-1)(T_F+T_B+T_W): idle/busy 2(p-1)/(3m); ZB-H1 then fills it. */
    dt_schedule *s;
    EXPECT_OK(dt_sched_create(&s, 3, 1, 4));
    dt_schedule *o;
    EXPECT_OK(ref_1f1b(&o, 3, 4));
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < o->nsteps[r]; i++) {
            dt_step st = o->steps[r][i];
            EXPECT_OK(dt_sched_add(s, st.stage, st.micro, st.kind));
            if (st.kind == DT_STEP_B) EXPECT_OK(dt_sched_add(s, st.stage, st.micro, DT_STEP_W));
        }
    dt_sched_timing *t = simulate(s, 1, 1, 1);
    EXPECT(fabs(t->bubble_ratio - 2.0 * 2 / (3 * 4)) < 1e-12, "1F1B split: 2(p-1)/(3m) = 1/3, "
           "got %g", t->bubble_ratio);
    dt_sched_timing_free(t);
    dt_sched_free(o);
    dt_sched_free(s);
}

TEST(sched_validator_names_the_step, 2)
{
    /* p = 2, m = 2 throughout; a valid GPipe first, then one fault each. */
    static const int gpipe[][3] = {{0, 0, 'F'}, {0, 1, 'F'}, {0, 0, 'B'}, {0, 1, 'B'},
                                   {1, 0, 'F'}, {1, 1, 'F'}, {1, 0, 'B'}, {1, 1, 'B'}};
    dt_schedule *s = from_steps(2, 1, 2, gpipe, 8);
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
    dt_schedule *s;
    EXPECT_OK(ref_gpipe(&s, 2, 2));
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
