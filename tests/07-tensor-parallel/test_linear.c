/* test_linear.c - lab 07, task 1: column- and row-parallel linear layers
 * (chapter 07, section 2) on 1, 2 and 4 ranks, against the whole layer
 * computed exactly; each checks its collectives and their bytes. */
#include "grader.h"
#include "tp_test.h"

static void linear_on(int row, int backward)
{
    int how[3] = {row, backward, 0};
    EXPECT_OK(tpt_launch_1_2_4(tpt_linear_rank, how));
}

TEST(column_forward_no_communication, 2)
{
    dt_test_see("chapter 07, section 2");
    linear_on(0, 0);
}
TEST(column_backward_allreduces_dx, 3)
{
    dt_test_see("chapter 07, section 2");
    linear_on(0, 1);
}
TEST(row_forward_allreduces_then_bias, 3)
{
    dt_test_see("chapter 07, section 2");
    linear_on(1, 0);
}
TEST(row_backward_no_communication, 2)
{
    dt_test_see("chapter 07, section 2");
    linear_on(1, 1);
}
