/* hidden_pipe.c - lab 06, staff tests: the going-further schedules
 * (interleaved 1F1B, ZB-H1) against their formulas (bubble, messages,
 * activations in flight) and run (gradients, bubble, activation memory);
 * processes as ranks; messages above the eager limit, where a blocking
 * send deadlocks; data parallelism around a zero-bubble pipeline and
 * around an interleaved one. */
#include "grader.h"
#include "pipe_test.h"

#include <math.h>
#include <stdio.h>

static int peak_zbh1(int p, int v, int m, int r)
{
    (void)v, (void)r;
    return p < m ? p : m;
}

/* Megatron-LM's order: 2(p-1-r) + (v-1)p warm-up chunk-forwards, then one
 * more before the first backward frees a pair (section 5). */
static int peak_interleaved(int p, int v, int m, int r)
{
    int held = 2 * (p - 1 - r) + (v - 1) * p + 1;
    return held < v * m ? held : v * m;
}

TEST_HIDDEN(interleaved_schedule_bubble_and_messages, 2)
{
    dt_test_see("chapter 06, section 5");
    for (int p = 2; p <= 4; p++)
        for (int v = 2; v <= 3; v++)
            for (int m = p; m <= 3 * p; m += p) {
                dt_schedule *s = NULL;
                dt_sched_report rep;
                char what[64];
                snprintf(what, sizeof what, "interleaved p=%d v=%d m=%d", p, v, m);
                EXPECT_OK(lab_sched_interleaved(&s, p, v, m));
                EXPECT_OK(dt_sched_validate(s, &rep));
                int msgs = 0;
                for (int r = 0; r < p; r++)
                    msgs += rep.msgs_sent[r];
                EXPECT(msgs == 2 * (v * p - 1) * m, "%s: %d messages a step, expected 2(vp-1)m "
                       "= %d", what, msgs, 2 * (v * p - 1) * m);
                pipe_expect_schedule(s, what, 1, 2, 0, (double)(p - 1) / (v * m),
                                     peak_interleaved, "min(2(p-1-r) + (v-1)p + 1, vm) "
                                     "(section 5)");
            }
    dt_schedule *s = NULL;
    EXPECT_ERR(lab_sched_interleaved(&s, 4, 2, 6), DT_ERR_INVALID_ARG); /* m not a multiple of p */
}

TEST_HIDDEN(zbh1_schedule_bubble_and_memory, 2)
{
    dt_test_see("chapter 06, section 6");
    for (int p = 2; p <= 4; p++)
        for (int m = p; m <= 10; m++) {
            char what[64];
            dt_schedule *s = NULL;
            snprintf(what, sizeof what, "ZB-H1 p=%d m=%d", p, m);
            EXPECT_OK(lab_sched_zbh1(&s, p, m));
            pipe_expect_schedule(s, what, 1, 1, 1, (double)(p - 1) / (3 * m), peak_zbh1,
                                 "min(p, m) (section 6)");
        }
}

/* Two chunks per rank: the gradients, the bubble, and each rank's peak
 * of activation bytes (chunks of unequal size: 8 layers in 2p stages). */
TEST_HIDDEN_T(interleaved_runner_gradients_bubble_and_memory, 2, 60)
{
    dt_test_see("chapter 06, section 5");
    for (int p = 2; p <= 4; p += 2)
        for (int m = p; m <= 2 * p; m += p) {
            pipe_run run = {"deep:6,10,6,3", PIPE_INTERLEAVED, NULL, p, 2, 1, m, 2, 1, 1e-5,
                            (double)(p - 1) / (2 * m), 1, DT_BACKEND_THREAD, 0, 0, NULL};
            EXPECT_OK(pipe_launch(&run));
        }
}

TEST_HIDDEN_T(zbh1_runner_gradients_bubble_and_memory, 2, 60)
{
    dt_test_see("chapter 06, section 6");
    for (int p = 2; p <= 4; p++)
        for (int m = p; m <= 6; m++) {
            pipe_run run = {"deep:6,10,5,3", PIPE_ZBH1, NULL, p, 1, 1, m, 2, 1, 1e-5,
                            (double)(p - 1) / (3 * m), 1, DT_BACKEND_THREAD, 0, 0, NULL};
            EXPECT_OK(pipe_launch(&run));
        }
}

TEST_HIDDEN_T(onef1b_with_processes_as_ranks, 1, 40)
{
    dt_test_see("chapter 06, section 3");
    pipe_run run = {"deep:6,10,5,3", PIPE_1F1B, NULL, 3, 1, 1, 4, 3, 2, 1e-5, 0, 0,
                    DT_BACKEND_PROC, 0, 0, NULL};
    EXPECT_OK(pipe_launch(&run));
}

/* Cuts of 4 x 1200 floats (19,200 bytes, above the 16 KiB a send copies at
 * once): a send that waits to be received deadlocks 1F1B (section 3). */
TEST_HIDDEN_T(messages_above_the_eager_limit, 2, 40)
{
    dt_test_see("chapter 06, section 3");
    for (int k = PIPE_GPIPE; k <= PIPE_1F1B; k++) {
        pipe_run run = {"deep:6,1200,3,3", (pipe_sched_kind)k, NULL, 2, 1, 1, 3, 4, 1, 1e-5, 0, 0,
                        DT_BACKEND_THREAD, 0, 0, NULL};
        EXPECT_OK(pipe_launch(&run));
    }
}

TEST_HIDDEN_T(data_parallel_around_zbh1, 1, 40)
{
    dt_test_see("chapter 06, section 8");
    pipe_run run = {"deep:6,10,5,3", PIPE_ZBH1, NULL, 2, 1, 2, 2, 2, 3, 1e-5, 0, 0,
                    DT_BACKEND_THREAD, 0, 0, NULL};
    EXPECT_OK(pipe_launch(&run));
}

/* Two interleaved pipelines of two ranks, two chunks each: every chunk's
 * stage has its replica on the other pipeline, and each must be averaged. */
TEST_HIDDEN_T(data_parallel_around_interleaved, 1, 40)
{
    dt_test_see("chapter 06, sections 5 and 8");
    pipe_run run = {"deep:6,10,6,3", PIPE_INTERLEAVED, NULL, 2, 2, 2, 2, 2, 3, 1e-5, 0, 1,
                    DT_BACKEND_THREAD, 0, 0, NULL};
    EXPECT_OK(pipe_launch(&run));
}

/* ------------------------------------------------------------ predict: the formulas */

/* The formulas of sections 2 to 6, written here apart from the lab: idle
 * over busy time with equal stages, a free network. */
static double formula_bubble(int k, int p, int v, int m)
{
    switch (k) {
    case PIPE_INTERLEAVED: return (double)(p - 1) / ((double)v * m);
    case PIPE_ZBH1: return (double)(p - 1) / (3.0 * m);
    default: return (double)(p - 1) / m;
    }
}

TEST_HIDDEN(hidden_predict_bubble_against_the_formulas, 2)
{
    dt_test_see("chapter 06, sections 2 to 6");
    static const char *const name[] = {"gpipe", "1f1b", "interleaved", "zbh1"};
    for (int k = PIPE_GPIPE; k <= PIPE_ZBH1; k++)
        for (int p = 1; p <= 6; p++)
            for (int m = 1; m <= 12; m++)
                for (int v = 1; v <= (k == PIPE_INTERLEAVED ? 4 : 1); v++) {
                    if ((k == PIPE_INTERLEAVED && (v < 2 || m % p)) || (k == PIPE_ZBH1 && m < p))
                        continue;
                    double got = -1, want = formula_bubble(k, p, v, m);
                    EXPECT_OK(lab_pipe_predict_bubble(name[k], p, v, m, &got));
                    EXPECT(fabs(got - want) <= 1e-12, "%s, p=%d v=%d m=%d: "
                           "lab_pipe_predict_bubble says idle/busy %.6f, the formula of "
                           "section %d gives %.6f", pipe_kind_name((pipe_sched_kind)k), p, v, m,
                           got, k == PIPE_INTERLEAVED ? 5 : k == PIPE_ZBH1 ? 6 : 2 + 2 * k, want);
                }
}
