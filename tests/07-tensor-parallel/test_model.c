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
