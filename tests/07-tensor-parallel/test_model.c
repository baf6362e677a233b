/* test_model.c - lab 07: the whole tiny GPT on 1, 2 and 4 ranks against
 * the library's GPT on one rank (chapter 07, sections 2 to 6), and the
 * memory each rank holds (section 8). */
#include "grader.h"
#include "tp_test.h"

#include <math.h>
#include <string.h>

TEST_T(gpt_matches_whole_model, 5, 20)
{
    dt_test_see("chapter 07, sections 2 to 5");
    int how[2] = {2, 0}; /* two blocks, no sequence parallelism */
    EXPECT_OK(tpt_launch_1_2_4(tpt_gpt_rank, how));
}

TEST(memory_split_by_t, 3)
{
    dt_test_see("chapter 07, section 8");
    int sp = 0;
    EXPECT_OK(tpt_launch_1_2_4(tpt_memory_rank, &sp));
}

/* ------------------------------------------------------------ task 7: predict, then measure */

/* Your prediction against what a training step of your code sends
 * (dt_comm_stats), on 2 and 4 ranks. Hidden tests hold the prediction to
 * the formulas on models no run here makes. */
TEST(predict_then_measure_step_bytes, 3)
{
    dt_test_see("chapter 07, sections 2 to 7");
    int how[2] = {3, 0};
    for (int t = 2; t <= 4; t *= 2)
        EXPECT_OK(tpt_launch(t, DT_BACKEND_THREAD, tpt_step_bytes_rank, how));
    static const dt_gpt_config cfg = {32, 8, 2, 4, 32};
    uint64_t b = 7;
    EXPECT_ERR(lab_tp_predict_step_bytes(&cfg, 3, 5, 2, 0, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_tp_predict_step_bytes(&cfg, 2, 8, 8, 0, &b), DT_ERR_INVALID_ARG);
    EXPECT(b == 7, "a refused prediction wrote %llu to *bytes", (unsigned long long)b);
}
