/* test_pipe.c - lab 06: pipeline parallelism. Schedules against the
 * formulas of chapter 06 (valid, bubble, activations in flight); the runner
 * on schedules written by hand and on yours, inside dt_launch: every
 * rank's gradients against one rank on the whole batch, the bubble on the
 * modeled clock, the activation memory (tag ACT) against what the schedule
 * keeps in flight, and data parallelism around the pipeline. */
#include "grader.h"
#include "pipe_test.h"

#include <stdio.h>

static int peak_m(int p, int v, int m, int r)
{
    (void)p, (void)v, (void)r;
    return m;
}

static int peak_1f1b(int p, int v, int m, int r)
{
    (void)v;
    return p - r < m ? p - r : m;
}

/* ------------------------------------------------------------ tasks 1, 2 */

TEST(gpipe_schedule_bubble_and_memory, 3)
{
    dt_test_see("chapter 06, section 2");
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 16; m++) {
            dt_schedule *s = NULL;
            char what[64];
            snprintf(what, sizeof what, "GPipe p=%d m=%d", p, m);
            EXPECT_OK(lab_sched_gpipe(&s, p, m));
            /* T_B = 2 T_F: idle/busy (p-1)/m, the fraction (p-1)/(m+p-1) */
            pipe_expect_schedule(s, what, 1, 2, 0, (double)(p - 1) / m, peak_m,
                                 "m (section 2)");
        }
    dt_schedule *s = NULL;
    EXPECT_ERR(lab_sched_gpipe(&s, 0, 4), DT_ERR_INVALID_ARG);
}

TEST(onef1b_schedule_bubble_and_memory, 3)
{
    dt_test_see("chapter 06, section 4");
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 16; m++) {
            dt_schedule *s = NULL;
            char what[64];
            snprintf(what, sizeof what, "1F1B p=%d m=%d", p, m);
            EXPECT_OK(lab_sched_1f1b(&s, p, m));
            pipe_expect_schedule(s, what, 1, 2, 0, (double)(p - 1) / m, peak_1f1b,
                                 "min(p - r, m) (section 4)");
        }
    dt_schedule *s = NULL;
    EXPECT_ERR(lab_sched_1f1b(&s, 2, 0), DT_ERR_INVALID_ARG);
}

/* ------------------------------------------------------------ task 3 */

/* Schedules written by hand (section 3): GPipe and 1F1B on 2 ranks, and an
 * order of no name on 3 that is valid all the same. The runner keeps in
 * flight what each order says, not what a named schedule would. */
static const char *const by_hand[3] = {
    "schedule ranks=2 chunks=1 micro=2\n"
    "0 0 0 F\n0 0 1 F\n0 0 0 B\n0 0 1 B\n1 1 0 F\n1 1 1 F\n1 1 0 B\n1 1 1 B\n",
    "schedule ranks=2 chunks=1 micro=3\n"
    "0 0 0 F\n0 0 1 F\n0 0 0 B\n0 0 2 F\n0 0 1 B\n0 0 2 B\n"
    "1 1 0 F\n1 1 0 B\n1 1 1 F\n1 1 1 B\n1 1 2 F\n1 1 2 B\n",
    "schedule ranks=3 chunks=1 micro=2\n"
    "0 0 0 F\n0 0 1 F\n0 0 0 B\n0 0 1 B\n1 1 0 F\n1 1 1 F\n1 1 0 B\n1 1 1 B\n"
    "2 2 0 F\n2 2 0 B\n2 2 1 F\n2 2 1 B\n",
};

TEST_T(runner_on_schedules_written_by_hand, 4, 30)
{
    dt_test_see("chapter 06, section 3");
    static const int p[3] = {2, 2, 3}, m[3] = {2, 3, 2};
    for (int i = 0; i < 3; i++) {
        pipe_run run = {"deep:6,10,5,3", PIPE_TEXT, by_hand[i], p[i], 1, 1, m[i], 4, 1, 1e-5,
                        0, 1, DT_BACKEND_THREAD, 0, 0, NULL};
        EXPECT_OK(pipe_launch(&run));
    }
}

/* Every rank's gradients after one step equal one rank's on the whole
 * batch, for GPipe and 1F1B, p = 2..4, m = 1..8. */
TEST_T(gradients_equal_one_rank_every_schedule, 4, 90)
{
    dt_test_see("chapter 06, section 1");
    for (int k = PIPE_GPIPE; k <= PIPE_1F1B; k++)
        for (int p = 2; p <= 4; p++)
            for (int m = 1; m <= 8; m++) {
                pipe_run run = {"deep:6,10,5,3", (pipe_sched_kind)k, NULL, p, 1, 1, m, 3, 1,
                                1e-5, 0, 0, DT_BACKEND_THREAD, 0, 0, NULL};
                EXPECT_OK(pipe_launch(&run));
            }
}

/* The bubble measured on the modeled clock (T_F = T_B = T_W = 1 ms, an
 * unsplit backward 2 ms, a free network) is (p-1)/m of the busy time,
 * the fraction (p-1)/(m+p-1) of the step; and each rank's activation
 * memory at its peak is what the schedule keeps in flight: m micro-batches
 * for GPipe, min(p-r, m) for 1F1B. */
TEST_T(measured_bubble_and_activation_memory, 4, 90)
{
    dt_test_see("chapter 06, section 4");
    for (int k = PIPE_GPIPE; k <= PIPE_1F1B; k++)
        for (int p = 2; p <= 4; p++)
            for (int m = 1; m <= 8; m++) {
                pipe_run run = {"deep:6,10,5,3", (pipe_sched_kind)k, NULL, p, 1, 1, m, 2, 1,
                                1e-5, (double)(p - 1) / m, 1, DT_BACKEND_THREAD, 0, 0, NULL};
                EXPECT_OK(pipe_launch(&run));
            }
}

/* ------------------------------------------------------------ task 4 */

/* Two pipelines of two stages on their own halves of the batch, three
 * steps: every stage's replicas stay equal, and equal to one rank. */
TEST_T(data_parallel_replicas_agree, 3, 30)
{
    dt_test_see("chapter 06, section 8");
    for (int k = PIPE_GPIPE; k <= PIPE_1F1B; k++) {
        pipe_run run = {"deep:6,10,5,3", (pipe_sched_kind)k, NULL, 2, 1, 2, 3, 2, 3, 1e-5, 0, 0,
                        DT_BACKEND_THREAD, 0, 0, NULL};
        EXPECT_OK(pipe_launch(&run));
    }
}

/* ------------------------------------------------------------ task 6: predict, then measure */

/* Your prediction against the modeled clock of your runner (T_F = T_B =
 * T_W = 1 ms, a free network), on the library's schedules: interleaved
 * 1F1B at p = 3, v = 2, m = 6, and 1F1B at p = 4, m = 6. Hidden tests hold
 * the prediction to the formulas wherever they hold. */
TEST_T(predict_then_measure_bubble, 3, 60)
{
    dt_test_see("chapter 06, sections 2 to 6");
    static const char *const name[] = {"gpipe", "1f1b", "interleaved", "zbh1"};
    static const int cases[2][4] = {{PIPE_INTERLEAVED, 3, 2, 6}, {PIPE_1F1B, 4, 1, 6}};
    for (int c = 0; c < 2; c++) {
        int k = cases[c][0], p = cases[c][1], v = cases[c][2], m = cases[c][3];
        double got = -1;
        EXPECT_OK(lab_pipe_predict_bubble(name[k], p, v, m, &got));
        pipe_run run = {"deep:6,10,5,3", (pipe_sched_kind)k, NULL, p, v, 1, m, 2, 1, 1e-5, got,
                        0, DT_BACKEND_THREAD, 1, 1e-4, "lab_pipe_predict_bubble says"};
        EXPECT_OK(pipe_launch(&run));
    }
    double r = -1;
    EXPECT_ERR(lab_pipe_predict_bubble("interleaved", 3, 2, 4, &r), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_pipe_predict_bubble("zbh1", 4, 1, 3, &r), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_pipe_predict_bubble("1f1b", 4, 2, 8, &r), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_pipe_predict_bubble("pipedream", 4, 1, 8, &r), DT_ERR_INVALID_ARG);
    EXPECT(r == -1, "a refused prediction wrote %g to *ratio", r);
}
