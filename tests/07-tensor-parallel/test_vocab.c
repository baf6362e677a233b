/* test_vocab.c - lab 07, task 4: the embedding and the cross-entropy with
 * the vocabulary split over 1, 2 and 4 ranks (chapter 07, section 5). */
#include "grader.h"
#include "tp_test.h"

static void vocab_on(int xent)
{
    int how[2] = {xent, 0};
    EXPECT_OK(tpt_launch_1_2_4(tpt_vocab_rank, how));
}

TEST(vocab_embedding_one_allreduce, 3)
{
    dt_test_see("chapter 07, section 5");
    vocab_on(0);
}
TEST(vocab_cross_entropy_reduces_max_and_sums, 4)
{
    dt_test_see("chapter 07, section 5");
    vocab_on(1);
}
