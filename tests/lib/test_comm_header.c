/* test_comm_header.c - dt/comm.h compiles on its own and keeps its shape. */
#include "dt/comm.h"
#include "grader.h"

TEST(comm_header_shape, 1)
{
    EXPECT(DT_NUM_REDOPS == 5 && DT_AVG == 4, "five reduction ops");
    EXPECT(DT_BACKEND_THREAD == 0, "thread is the default backend");
    EXPECT(DT_ALGO_AUTO == 0 && DT_NUM_ALGOS == 5, "auto, ring, tree, direct, binomial");
    EXPECT(DT_NUM_COLLS == 10, "ten counted call kinds");
    EXPECT(DT_MAX_RANKS == 1024, "1024 ranks at most");
    dt_stats s = {0};
    EXPECT(sizeof s.calls / sizeof s.calls[0] == DT_NUM_COLLS, "one counter per kind");
}
