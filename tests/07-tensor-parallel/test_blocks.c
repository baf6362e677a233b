/* test_blocks.c - lab 07, tasks 2 and 3: the Megatron MLP (chapter 07,
 * section 3) and attention split by heads (section 4), each against the
 * same sub-block of the whole model on one rank, with one allreduce each
 * way; then the given block built from them (section 6). */
#include "grader.h"
#include "tp_test.h"

#include <stdio.h>


static void sub_on(int attention)
{
    int how[2] = {attention, 0};
    EXPECT_OK(tpt_launch_1_2_4(tpt_sub_rank, how));
}

TEST(mlp_matches_whole_layer, 3)
{
    dt_test_see("chapter 07, section 3");
    sub_on(0);
}
TEST(attention_matches_whole_layer, 3)
{
    dt_test_see("chapter 07, section 4");
    sub_on(1);
}

/* w (3C, C) and b (3C) hold their whole row index: each row of w_r must
 * come from the q, k or v rows of this rank's heads, q | k | v. */
TEST(shard_qkv_takes_heads, 2)
{
    dt_test_see("chapter 07, section 4");
    enum { C = 16, NH = 4 };
    static float w[3 * C * C], b[3 * C], w_r[3 * C * C], b_r[3 * C];
    for (int i = 0; i < 3 * C; i++) {
        b[i] = (float)i;
        for (int c = 0; c < C; c++)
            w[i * C + c] = (float)(i * 100 + c);
    }
    for (int t = 1; t <= 4; t *= 2)
        for (int r = 0; r < t; r++) {
            EXPECT_OK(lab_tp_shard_qkv(w_r, b_r, w, b, C, NH, t, r));
            int Cl = C / t;
            for (int i = 0; i < 3 * Cl; i++) {
                int whole = (i / Cl) * C + r * Cl + i % Cl; /* part, then the rank's heads */
                EXPECT(b_r[i] == (float)whole, "t=%d rank %d: b_r[%d] = %g, expected b[%d] "
                       "(the q, k and v rows of heads [%d, %d))", t, r, i,
                       (double)b_r[i], whole, r * NH / t, (r + 1) * NH / t);
                for (int c = 0; c < C; c++)
                    EXPECT(w_r[i * C + c] == w[whole * C + c], "t=%d rank %d: w_r[%d][%d] = "
                           "%g, expected w[%d][%d]", t, r, i, c,
                           (double)w_r[i * C + c], whole, c);
            }
        }
}

/* Fails unless call failed with DT_ERR_INVALID_ARG naming a and b. */
static dt_result refused(dt_result call, long a, long b, const char *what)
{
    char msg[256]; /* a copy: dt_fail below writes where dt_last_error points */
    snprintf(msg, sizeof msg, "%s", dt_last_error());
    if (call != DT_ERR_INVALID_ARG || !tpt_mentions(msg, a) || !tpt_mentions(msg, b))
        return dt_fail(DT_ERR_MISMATCH, "%s: %s \"%s\", expected DT_ERR_INVALID_ARG naming %ld "
                       "and %ld", what, dt_strerror(call), msg, a, b);
    return DT_OK;
}

/* On 4 ranks: the group refuses sizes that do not split, naming them. */
static dt_result sizes_rank(dt_comm *world, void *arg)
{
    (void)arg;
    lab_tp tp;
    dt_gpt_config v30 = {30, 8, 1, 4, 32}, ok = {32, 8, 1, 4, 32};
    DT_CHECK(refused(lab_tp_init(&tp, world, &v30, 2, 8, 0), 30, 4, "a vocabulary of 30"));
    DT_CHECK(refused(lab_tp_init(&tp, world, &ok, 1, 6, 1), 6, 4, "SP with 6 rows"));
    DT_CHECK(refused(lab_tp_init(&tp, world, &ok, 1, 9, 0), 9, 8, "9 tokens, context 8"));
    return DT_OK;
}

TEST(heads_not_divisible_rejected, 1)
{
    dt_test_see("chapter 07, section 4");
    enum { C = 30, NH = 6 }; /* 6 heads of 5 channels on 4 ranks */
    static float w[3 * C * C], b[3 * C], w_r[3 * C * C], b_r[3 * C];
    dt_clear_error();
    EXPECT_OK(refused(lab_tp_shard_qkv(w_r, b_r, w, b, C, NH, 4, 1), 6, 4, "6 heads"));
    EXPECT_OK(lab_tp_shard_qkv(w_r, b_r, w, b, C, NH, 3, 1)); /* 6 heads on 3 ranks split */
    EXPECT_OK(tpt_launch(4, DT_BACKEND_THREAD, sizes_rank, NULL));
}

TEST(block_two_allreduces_each_way, 3)
{
    dt_test_see("chapter 07, section 6");
    int sp = 0;
    EXPECT_OK(tpt_launch_1_2_4(tpt_block_rank, &sp));
}
