/* test_comm_out.c - what ranks hand back (dt_launch_opts.out, dt_rank_out):
 * on every backend the caller finds each rank's block as the rank left it,
 * after a failed launch too; a bad pair of out and out_bytes is refused.
 * The launches take their backends from tc_backends (test_comm_util.h). */
#include "test_comm_util.h"

#include <stdio.h>

typedef struct {
    int rank, size;
    double clock;
    unsigned char fill[3000]; /* more than one small message */
} out_block;

static unsigned char fill_byte(int rank, size_t i) { return (unsigned char)(rank * 7 + i); }

/* Each rank finds its block zeroed, fills it, and finds the same block
 * through a communicator split from the world; rank *arg then fails. */
static dt_result out_rank(dt_comm *world, void *arg)
{
    int rank = dt_comm_rank(world), fail = *(const int *)arg;
    out_block *b = dt_rank_out(world);
    if (!b)
        return dt_fail(DT_ERR_STATE, "dt_rank_out gave NULL with out set");
    for (size_t i = 0; i < sizeof *b; i++)
        if (((unsigned char *)b)[i] != 0)
            return dt_fail(DT_ERR_STATE, "the block starts with byte %zu = %d, not 0", i,
                           ((unsigned char *)b)[i]);
    b->rank = rank;
    b->size = dt_comm_size(world);
    for (size_t i = 0; i < sizeof b->fill; i++)
        b->fill[i] = fill_byte(rank, i);
    dt_comm *half = NULL;
    DT_CHECK(dt_comm_split(world, rank % 2, rank, &half));
    void *again = dt_rank_out(half);
    DT_CHECK(dt_comm_free(half));
    if (again != b)
        return dt_fail(DT_ERR_STATE, "dt_rank_out of a split communicator is %p, of the world %p",
                       again, (void *)b);
    DT_CHECK(dt_barrier(world));
    b->clock = dt_clock(world);
    if (rank == fail)
        return dt_fail(DT_ERR_INVALID_ARG, "rank %d fails on purpose", rank);
    return DT_OK;
}

static void expect_blocks(const out_block *out, int n, dt_backend b)
{
    for (int r = 0; r < n; r++) {
        EXPECT(out[r].rank == r && out[r].size == n, "%s, %d ranks: block %d says rank %d of %d",
               dt_backend_name(b), n, r, out[r].rank, out[r].size);
        for (size_t i = 0; i < sizeof out[r].fill; i++)
            EXPECT(out[r].fill[i] == fill_byte(r, i), "%s, %d ranks: block %d byte %zu is %d, "
                   "expected %d", dt_backend_name(b), n, r, i, out[r].fill[i], fill_byte(r, i));
    }
}

static void out_on(dt_backend b)
{
    for (int n = 1; n <= 3; n += 2) {
        out_block out[3];
        memset(out, 0x5a, sizeof out); /* zeroed by the launch before any rank starts */
        dt_launch_opts o = tc_opts(n, DT_ALGO_AUTO);
        o.backend = b;
        o.net = "ib100";
        o.out = out;
        o.out_bytes = sizeof out[0];
        int fail = -1;
        EXPECT_OK(dt_launch(&o, out_rank, &fail));
        expect_blocks(out, n, b);
        EXPECT(n == 1 || out[0].clock > 0, "%s: the barrier's modeled time %g came back as 0",
               dt_backend_name(b), out[0].clock);
        fail = n - 1; /* a failed launch still hands back what the ranks wrote */
        EXPECT_ERR(dt_launch(&o, out_rank, &fail), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), "fails on purpose"), "message '%s'", dt_last_error());
        expect_blocks(out, n, b);
    }
}

TEST_T(comm_out_blocks_come_back, 2, 30)
{
    dt_backend b[2];
    for (int i = 0, n = tc_backends(b); i < n; i++)
        out_on(b[i]);
    EXPECT(dt_rank_out(NULL) == NULL, "dt_rank_out(NULL) is not NULL");
}

TEST(comm_out_refuses_bad_sizes, 1)
{
    char buf[16];
    static const struct {
        int set;
        size_t bytes;
    } bad[] = {{1, 0}, {0, 8}, {1, (size_t)1 << 31}};
    for (size_t i = 0; i < TC_LEN(bad); i++) {
        dt_launch_opts o = tc_opts(2, DT_ALGO_AUTO);
        o.out = bad[i].set ? buf : NULL;
        o.out_bytes = bad[i].bytes;
        int fail = -1;
        EXPECT_ERR(dt_launch(&o, out_rank, &fail), DT_ERR_INVALID_ARG);
        char want[64];
        snprintf(want, sizeof want, "out_bytes = %zu", bad[i].bytes);
        EXPECT(strstr(dt_last_error(), want), "message '%s' lacks '%s'", dt_last_error(), want);
    }
}
