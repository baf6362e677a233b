/* test_sim.c - libdt sim: step time with and without overlap, and the
 * pipeline bubble, against values worked out by hand. (The collectives'
 * costs are the network model's: test_net.c.) */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>

TEST(sim_step_and_bubble, 1)
{
    EXPECT(dt_sim_step_serial(3, 2) == 5, "serial 3 + 2");
    EXPECT(dt_sim_step_overlapped(3, 2) == 3, "overlapped, compute-bound");
    EXPECT(dt_sim_step_overlapped(1, 4) == 4, "overlapped, communication-bound");
    EXPECT_NEAR(dt_sim_bubble_fraction(4, 8), 3.0 / 11.0, 1e-15);
    EXPECT(dt_sim_bubble_fraction(1, 8) == 0, "one stage has no bubble");
    EXPECT(dt_sim_bubble_fraction(4, 1) == 0.75, "one micro-batch: 3/4 idle");
    EXPECT(isnan(dt_sim_bubble_fraction(0, 8)) && isnan(dt_sim_bubble_fraction(4, 0)), "bad counts");
    EXPECT(isnan(dt_sim_step_serial(-1, 2)) && isnan(dt_sim_step_overlapped(1, NAN)), "bad times");
}
