/* test_sp.c - lab 07, task 6 (going further): sequence parallelism
 * (chapter 07, section 7). The linear layers with an all-gather before the
 * column-parallel layer and a reduce-scatter after the row-parallel one. */
#include "grader.h"
#include "tp_test.h"

static void sp_linear_on(int row, int backward)
{
    int how[3] = {row, backward, 1};
    EXPECT_OK(tpt_launch_1_2_4(tpt_linear_rank, how));
}

TEST(sp_column_gathers_rows, 2)
{
    dt_test_see("chapter 07, section 7");
    sp_linear_on(0, 0);
    sp_linear_on(0, 1);
}

TEST(sp_row_reduce_scatters_rows, 2)
{
    dt_test_see("chapter 07, section 7");
    sp_linear_on(1, 0);
    sp_linear_on(1, 1);
}

static void sp_on(dt_rank_fn fn, int *arg)
{
    for (int t = 2; t <= 4; t *= 2)
        EXPECT_OK(tpt_launch(t, DT_BACKEND_THREAD, fn, arg));
}

TEST(sp_embedding_reduce_scatters, 2)
{
    dt_test_see("chapter 07, section 7");
    int how[2] = {0, 1};
    sp_on(tpt_vocab_rank, how);
}

TEST(sp_block_same_bytes_as_allreduce, 3)
{
    dt_test_see("chapter 07, section 7");
    int sp = 1;
    sp_on(tpt_block_rank, &sp);
}

TEST_T(sp_gpt_matches_whole_model, 3, 20)
{
    dt_test_see("chapter 07, section 7");
    int how[2] = {2, 1};
    sp_on(tpt_gpt_rank, how);
}

TEST(sp_activations_divided_by_t, 2)
{
    dt_test_see("chapter 07, section 8");
    int sp = 1;
    sp_on(tpt_memory_rank, &sp);
}

/* Task 7 with sequence parallelism: the bytes of a training step, against
 * what a step of your code sends (the formulas: test_model.c). */
TEST(sp_predict_then_measure_step_bytes, 1)
{
    dt_test_see("chapter 07, section 7");
    int how[2] = {3, 1};
    sp_on(tpt_step_bytes_rank, how);
}
