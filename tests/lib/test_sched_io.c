/* test_sched_io.c - libdt sched: the text table (round trip, a schedule
 * written by hand, errors that name the line), the ASCII timeline and the
 * SVG Gantt chart. */
#include "grader.h"

#include "dt/sched.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void temp_path(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/sched_%s", dt_test_tmpdir(), what);
}

/* A split backward on 2 ranks, 2 micro-batches, each W right after its B. */
static const char *const split_2x2 =
    "schedule ranks=2 chunks=1 micro=2\n"
    "0 0 0 F\n0 0 1 F\n0 0 0 B\n0 0 0 W\n0 0 1 B\n0 0 1 W\n"
    "1 1 0 F\n1 1 0 B\n1 1 0 W\n1 1 1 F\n1 1 1 B\n1 1 1 W\n";

/* The whole file as a string (malloc'ed). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    EXPECT(f, "cannot open %s", path);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strdup(buf);
}

/* Written, read back and written again: the same text, the same steps. */
TEST(sched_text_round_trip, 1)
{
    char path[4200];
    temp_path(path, sizeof path, "rt");
    dt_schedule *s = NULL, *back = NULL;
    EXPECT_OK(dt_sched_parse(&s, split_2x2, "split"));
    EXPECT_OK(dt_sched_write(s, path));
    char *first = slurp(path);
    EXPECT_OK(dt_sched_read(&back, path));
    EXPECT_OK(dt_sched_write(back, path));
    char *second = slurp(path);
    EXPECT(strcmp(first, second) == 0, "round trip changed the text:\n%s\nthen\n%s", first, second);
    EXPECT(strstr(first, "schedule ranks=2 chunks=1 micro=2\n"), "header written: %s", first);
    EXPECT(back->nsteps[0] == 6 && back->steps[0][3].kind == DT_STEP_W &&
           back->steps[1][3].micro == 1, "steps read back in order");
    free(first);
    free(second);
    unlink(path);
    dt_sched_free(s);
    dt_sched_free(back);
    s = NULL;
    EXPECT_ERR(dt_sched_read(&s, "/nonexistent/dir/x.sched"), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "/nonexistent/dir/x.sched"), "names the file: %s", dt_last_error());
    EXPECT(s == NULL, "out untouched");
}

/* What a student writes by hand: 1F1B on 2 ranks, 2 micro-batches, with
 * the ranks' lines interleaved and comments; checked and timed. */
TEST(sched_text_by_hand, 1)
{
    const char *text =
        "# 1F1B, p = 2, m = 2\n"
        "schedule ranks=2 chunks=1 micro=2\n"
        "0 0 0 F   # warm-up\n"
        "1 1 0 F\n"
        "1 1 0 B\n"
        "0 0 1 F\n"
        "\n"
        "1 1 1 F\n"
        "1 1 1 B\n"
        "0 0 0 B\n"
        "0 0 1 B\n";
    dt_schedule *s = NULL;
    EXPECT_OK(dt_sched_parse(&s, text, "hand.sched"));
    EXPECT(s->nsteps[0] == 4 && s->nsteps[1] == 4, "4 steps per rank");
    EXPECT(s->steps[0][1].micro == 1 && s->steps[0][1].kind == DT_STEP_F, "rank 0's order kept");
    dt_sched_report rep;
    EXPECT_OK(dt_sched_validate(s, &rep));
    EXPECT(rep.peak_acts[0] == 2 && rep.peak_acts[1] == 1, "peaks %d %d", rep.peak_acts[0],
           rep.peak_acts[1]);
    dt_sched_costs c = {.t_f = 1, .t_b = 2};
    dt_sched_timing *t;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    EXPECT(t->makespan == 9, "(m+p-1)(T_F+T_B) = 9, got %g", t->makespan);
    dt_sched_timing_free(t);
    dt_sched_free(s);
}

TEST(sched_text_errors_name_the_line, 1)
{
    static const struct {
        const char *text, *want;
    } bad[] = {
        {"0 0 0 F\n", "x:1: expected the header"},
        {"# nothing\n\n", "x: no header"},
        {"schedule ranks=2 chunks=1\n", "x:1: expected the header"},
        {"schedule ranks=0 chunks=1 micro=2\n", "x:1: schedule create: ranks = 0"},
        {"schedule ranks=2 chunks=1 micro=2\n0 0 0 X\n", "x:2: kind 'X' is not F, B or W"},
        {"schedule ranks=2 chunks=1 micro=2\n0 0 0\n", "x:2: expected 'rank stage micro kind'"},
        {"schedule ranks=2 chunks=1 micro=2\n0 0 0 F extra\n", "x:2: expected 'rank stage micro kind'"},
        {"schedule ranks=2 chunks=1 micro=2\n#\n0 1 0 F\n", "x:3: stage 1 runs on rank 1"},
        {"schedule ranks=2 chunks=1 micro=2\n0 2 0 F\n", "x:2: schedule add: stage 2 not in [0, 2)"},
        {"schedule ranks=2 chunks=1 micro=2\n0 0 2 F\n", "x:2: schedule add: micro-batch 2"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dt_schedule *s = NULL;
        EXPECT_ERR(dt_sched_parse(&s, bad[i].text, "x"), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), bad[i].want), "case %zu: '%s' lacks '%s'", i,
               dt_last_error(), bad[i].want);
        EXPECT(s == NULL, "out untouched");
    }
    char longline[400];
    memset(longline, ' ', sizeof longline - 1);
    longline[sizeof longline - 1] = '\0';
    dt_schedule *s = NULL;
    EXPECT_ERR(dt_sched_parse(&s, longline, "x"), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "x:1: line longer than"), "long line: %s", dt_last_error());
}

/* The timeline of GPipe, p = 2, m = 2, T_B = 2 T_F, in order and in time. */
TEST(sched_print_timeline, 1)
{
    dt_schedule *s = NULL;
    EXPECT_OK(dt_sched_parse(&s, "schedule ranks=2 chunks=1 micro=2\n"
                                 "0 0 0 F\n0 0 1 F\n0 0 0 B\n0 0 1 B\n"
                                 "1 1 0 F\n1 1 1 F\n1 1 0 B\n1 1 1 B\n", "gpipe"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    EXPECT(f, "open_memstream");
    EXPECT_OK(dt_sched_print(f, s, NULL));
    dt_sched_costs c = {.t_f = 1, .t_b = 2};
    dt_sched_timing *t;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    EXPECT_OK(dt_sched_print(f, s, t));
    fclose(f);
    const char *want =
        "rank 0 | F0 F1 B0 B1\n"
        "rank 1 | F0 F1 B0 B1\n"
        "rank 0 | F0 F1 .  .  .  B0--- B1---\n"
        "rank 1 | .  F0 F1 B0--- B1--- .  .\n";
    EXPECT(strcmp(buf, want) == 0, "timeline:\n%s\nexpected:\n%s", buf, want);
    free(buf);
    EXPECT_ERR(dt_sched_print(NULL, s, t), DT_ERR_INVALID_ARG);
    dt_sched_timing_free(t);
    dt_sched_free(s);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* One box per step, coloured by kind: three kinds with a split backward. */
TEST(sched_svg_gantt, 1)
{
    char path[4200];
    temp_path(path, sizeof path, "svg");
    dt_schedule *s = NULL;
    EXPECT_OK(dt_sched_parse(&s, split_2x2, "split"));
    dt_sched_costs c = {.t_f = 1, .t_b = 1, .t_w = 1};
    dt_sched_timing *t;
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    EXPECT_OK(dt_sched_write_svg(s, t, "split backward", "time (units)", path));
    char *doc = slurp(path);
    unlink(path);
    EXPECT(count(doc, "<rect class=\"region\"") == 12, "%zu boxes, expected 12",
           count(doc, "<rect class=\"region\""));
    EXPECT(count(doc, "<title>weight grad ") == 4 && count(doc, "<title>forward ") == 4,
           "4 W and 4 F boxes");
    EXPECT(strstr(doc, "time (units)"), "axis label");
    EXPECT_ERR(dt_sched_write_svg(s, NULL, "x", NULL, path), DT_ERR_INVALID_ARG);
    free(doc);
    dt_sched_timing_free(t);
    dt_sched_free(s);
}
