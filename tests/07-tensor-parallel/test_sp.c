/* test_sp.c - lab 07, task 6 (going further): sequence parallelism
 * (chapter 07, section 7). The linear layers with an all-gather before the
 * column-parallel layer and a reduce-scatter after the row-parallel one. */
#include "grader.h"
#include "tp_test.h"

static void sp_linear_on(int row, int backward)
{
    for (int t = 1; t <= 4; t *= 2) {
        int how[3] = {row, backward, 1};
        EXPECT_OK(tpt_launch(t, DT_BACKEND_THREAD, tpt_linear_rank, how));
    }
}

TEST(sp_column_gathers_rows, 2) { sp_linear_on(0, 0); sp_linear_on(0, 1); }
TEST(sp_row_reduce_scatters_rows, 2) { sp_linear_on(1, 0); sp_linear_on(1, 1); }
