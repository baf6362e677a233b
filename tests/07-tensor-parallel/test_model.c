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

TEST(predict_then_measure_step_bytes, 3)
{
    dt_test_see("chapter 07, sections 2 to 7");
    /* 1. Against the formulas, on models the chapter does not work out. */
    static const dt_gpt_config cfgs[] = {
        {32, 8, 2, 4, 32}, {64, 16, 3, 8, 48}, {96, 12, 1, 4, 64}, {128, 32, 5, 8, 16}};
    static const size_t BT[][2] = {{2, 8}, {4, 12}, {1, 16}, {3, 8}};
    for (size_t c = 0; c < sizeof cfgs / sizeof *cfgs; c++)
        for (size_t k = 0; k < sizeof BT / sizeof *BT; k++)
            for (int t = 1; t <= 8; t *= 2)
                for (int sp = 0; sp <= 1; sp++) {
                    const dt_gpt_config *g = &cfgs[c];
                    size_t B = BT[k][0], T = BT[k][1];
                    if (g->vocab % (size_t)t || g->heads % (size_t)t || g->channels % (size_t)t ||
                        (B * T) % (size_t)t || T > g->context)
                        continue;
                    uint64_t got = 0, want = tpt_formula_step_bytes(g, B, T, t, sp);
                    EXPECT_OK(lab_tp_predict_step_bytes(g, B, T, t, sp, &got));
                    EXPECT(got == want, "%s, gpt:%zu,%zu,%zu,%zu,%zu, batch %zu x %zu, t = %d: "
                           "lab_tp_predict_step_bytes says %llu bytes per rank, the formulas "
                           "of sections 2 to 7 give %llu", sp ? "TP + SP" : "TP", g->vocab,
                           g->context, g->layers, g->heads, g->channels, B, T, t,
                           (unsigned long long)got, (unsigned long long)want);
                }
    uint64_t b = 7;
    EXPECT_ERR(lab_tp_predict_step_bytes(&cfgs[0], 3, 5, 2, 0, &b), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_tp_predict_step_bytes(&cfgs[2], 2, 8, 8, 0, &b), DT_ERR_INVALID_ARG);
    EXPECT(b == 7, "a refused prediction wrote %llu to *bytes", (unsigned long long)b);
    /* 2. Against what a step of your code sends (dt_comm_stats). */
    int how[2] = {3, 0};
    for (int t = 2; t <= 4; t *= 2)
        EXPECT_OK(tpt_launch(t, DT_BACKEND_THREAD, tpt_step_bytes_rank, how));
}
