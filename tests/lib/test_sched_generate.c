/* test_sched_generate.c - libdt's schedule generators (generate.c) and
 * the simulator against the formulas of chapter 06: the bubble of GPipe
 * and 1F1B, of interleaved 1F1B and of ZB-H1, the activations each holds
 * in flight, the messages each sends, the text table's round trip, and the
 * arguments the generators refuse. */
#include "grader.h"
#include "dt/sched.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void temp_path(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/sched_%s", dt_test_tmpdir(), what);
}

/* Simulates s with the same cost for every stage (T_W used when split). */
static dt_sched_timing *simulate(const dt_schedule *s, double tf, double tb, double tw)
{
    dt_sched_costs c = {.t_f = tf, .t_b = tb, .t_w = tw};
    dt_sched_timing *t = NULL;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    return t;
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
                    EXPECT_OK(which ? dt_sched_1f1b(&s, p, m) : dt_sched_gpipe(&s, p, m));
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
            EXPECT_OK(dt_sched_gpipe(&g, p, m));
            EXPECT_OK(dt_sched_1f1b(&o, p, m));
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
                EXPECT_OK(dt_sched_interleaved(&s, p, v, m));
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
            EXPECT_OK(dt_sched_zbh1(&s, p, m));
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
    EXPECT_OK(dt_sched_1f1b(&o, 3, 4));
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

static void expect_same(const dt_schedule *a, const dt_schedule *b)
{
    EXPECT(a->ranks == b->ranks && a->chunks == b->chunks && a->micro == b->micro, "shape");
    for (int r = 0; r < a->ranks; r++) {
        EXPECT(a->nsteps[r] == b->nsteps[r], "rank %d: %d steps, read back %d", r, a->nsteps[r],
               b->nsteps[r]);
        for (int i = 0; i < a->nsteps[r]; i++)
            EXPECT(memcmp(&a->steps[r][i], &b->steps[r][i], sizeof(dt_step)) == 0,
                   "rank %d step %d differs", r, i);
    }
}

TEST(sched_text_round_trip_of_references, 1)
{
    char path[4200];
    temp_path(path, sizeof path, "rt");
    dt_schedule *refs[3];
    EXPECT_OK(dt_sched_1f1b(&refs[0], 4, 6));
    EXPECT_OK(dt_sched_interleaved(&refs[1], 2, 3, 4));
    EXPECT_OK(dt_sched_zbh1(&refs[2], 3, 5));
    for (int k = 0; k < 3; k++) {
        dt_schedule *back = NULL;
        EXPECT_OK(dt_sched_write(refs[k], path));
        EXPECT_OK(dt_sched_read(&back, path));
        expect_same(refs[k], back);
        dt_sched_free(back);
        dt_sched_free(refs[k]);
    }
    unlink(path);
    dt_schedule *s = NULL;
    EXPECT_ERR(dt_sched_read(&s, "/nonexistent/dir/x.sched"), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "/nonexistent/dir/x.sched"), "names the file: %s", dt_last_error());
    EXPECT(s == NULL, "out untouched");
}

TEST(sched_generators_refuse_bad_arguments_and_name_them, 1)
{
    dt_schedule *s = (dt_schedule *)&s; /* not NULL: a refusal must clear it */
    EXPECT_ERR(dt_sched_gpipe(&s, 0, 4), DT_ERR_INVALID_ARG);
    EXPECT(s == NULL && strstr(dt_last_error(), "p = 0"), "gpipe p = 0: %s", dt_last_error());
    EXPECT_ERR(dt_sched_1f1b(&s, 2, DT_SCHED_MAX_MICRO + 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_sched_zbh1(NULL, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_sched_interleaved(&s, 2, 2, 3), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "m = 3") && strstr(dt_last_error(), "multiple of p"),
           "interleaved m = 3 on p = 2: %s", dt_last_error());
    EXPECT_ERR(dt_sched_interleaved(&s, 2, 1, 4), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_sched_named(&s, "1f1b", 2, 2, 4), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "2 chunks"), "1f1b with 2 chunks: %s", dt_last_error());
    EXPECT_ERR(dt_sched_named(&s, "pipedream", 2, 1, 4), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "gpipe, 1f1b, interleaved or zbh1"), "unknown name: %s",
           dt_last_error());
    /* the names give the generators' schedules */
    const char *names[4] = {"gpipe", "1f1b", "interleaved", "zbh1"};
    for (int k = 0; k < 4; k++) {
        dt_schedule *a, *b;
        int v = k == 2 ? 2 : 1;
        EXPECT_OK(dt_sched_named(&a, names[k], 2, v, 4));
        EXPECT_OK(k == 0 ? dt_sched_gpipe(&b, 2, 4) : k == 1 ? dt_sched_1f1b(&b, 2, 4)
                  : k == 2 ? dt_sched_interleaved(&b, 2, 2, 4) : dt_sched_zbh1(&b, 2, 4));
        for (int r = 0; r < 2; r++)
            EXPECT(a->nsteps[r] == b->nsteps[r] &&
                   !memcmp(a->steps[r], b->steps[r], (size_t)a->nsteps[r] * sizeof(dt_step)),
                   "dt_sched_named(\"%s\") differs from its generator on rank %d", names[k], r);
        dt_sched_free(a), dt_sched_free(b);
    }
}
