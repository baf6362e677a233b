/* test_sim_zero.c - libdt sim: the model states of ZeRO's stages and
 * their communication, against the paper's worked example and against
 * figures worked out by hand. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>
#include <string.h>

/* Rajbhandari et al. (SC 2020), figure 1: 7.5 B parameters, 64 devices,
 * mixed precision with Adam (K = 12): 120 GB, 31.4 GB, 16.6 GB, 1.9 GB,
 * to the paper's one decimal. */
TEST(sim_zero_memory_paper_example, 2)
{
    const double psi = 7.5e9, want[4] = {120, 31.4, 16.6, 1.9};
    for (int s = 0; s <= 3; s++) {
        dt_sim_memory m = dt_sim_zero_memory(s, psi, 64, dt_sim_mixed_precision_adam());
        double gb = m.total / 1e9;
        EXPECT(fabs(gb - want[s]) < 0.05, "stage %d: %.4f GB, the paper prints %.1f", s, gb,
               want[s]);
        EXPECT(m.total == m.params + m.grads + m.optim, "stage %d: total is the sum", s);
    }
    /* exactly: 4 psi + 12 psi / 64, 2 psi + 14 psi / 64, 16 psi / 64 */
    EXPECT(dt_sim_zero_memory(1, psi, 64, dt_sim_mixed_precision_adam()).total ==
           4 * psi + 12 * psi / 64, "stage 1: 4 psi + K psi / N");
    EXPECT(dt_sim_zero_memory(2, psi, 64, dt_sim_mixed_precision_adam()).total ==
           2 * psi + 14 * psi / 64, "stage 2: 2 psi + 14 psi / N");
    /* the reduction of stage 2 is 16 / (2 + 14 / N): 7.2x at N = 64, 8x only as N grows */
    double r64 = 16 * psi / dt_sim_zero_memory(2, psi, 64, dt_sim_mixed_precision_adam()).total;
    EXPECT(fabs(r64 - 7.2113) < 1e-3, "stage 2's reduction at N = 64: %.4f", r64);
}

/* fp32 with Adam, psi = 1000 on 4 devices: 4000 + 4000 + 8000 bytes split
 * as each stage says. */
TEST(sim_zero_memory_fp32_by_hand, 1)
{
    const double want[4][3] = {
        {4000, 4000, 8000}, {4000, 4000, 2000}, {4000, 1000, 2000}, {1000, 1000, 2000}};
    for (int s = 0; s <= 3; s++) {
        dt_sim_memory m = dt_sim_zero_memory(s, 1000, 4, dt_sim_fp32_adam());
        EXPECT(m.params == want[s][0] && m.grads == want[s][1] && m.optim == want[s][2],
               "stage %d: %g + %g + %g, expected %g + %g + %g", s, m.params, m.grads, m.optim,
               want[s][0], want[s][1], want[s][2]);
    }
    /* one device: every stage holds everything */
    for (int s = 0; s <= 3; s++)
        EXPECT(dt_sim_zero_memory(s, 1000, 1, dt_sim_fp32_adam()).total == 16000, "N = 1");
}

/* 2 psi for stages 0-2, 3 psi for stage 3, each times (N - 1) / N. */
TEST(sim_zero_comm_by_hand, 1)
{
    EXPECT(dt_sim_zero_comm_elems(0, 1000, 4) == 1500, "DP: 2 x 1000 x 3/4");
    EXPECT(dt_sim_zero_comm_elems(1, 1000, 4) == 1500, "ZeRO-1: RS + AG");
    EXPECT(dt_sim_zero_comm_elems(2, 1000, 4) == 1500, "ZeRO-2: RS + AG");
    EXPECT(dt_sim_zero_comm_elems(3, 1000, 4) == 2250, "ZeRO-3: AG + AG + RS");
    EXPECT(dt_sim_zero_comm_elems(3, 1000, 1) == 0, "one device sends nothing");
}

TEST(sim_zero_rejects_bad_input, 1)
{
    dt_sim_memory m = dt_sim_zero_memory(4, 10, 2, dt_sim_fp32_adam());
    EXPECT(isnan(m.total) && isnan(m.params) && strstr(dt_last_error(), "stage 4"),
           "stage 4: %g, '%s'", m.total, dt_last_error());
    m = dt_sim_zero_memory(1, -1, 2, dt_sim_fp32_adam());
    EXPECT(isnan(m.total) && strstr(dt_last_error(), "psi"), "psi -1: '%s'", dt_last_error());
    m = dt_sim_zero_memory(1, 10, 0, dt_sim_fp32_adam());
    EXPECT(isnan(m.total) && strstr(dt_last_error(), "n = 0"), "n 0: '%s'", dt_last_error());
    dt_sim_state_bytes bad = {4, -1, 8};
    m = dt_sim_zero_memory(1, 10, 2, bad);
    EXPECT(isnan(m.total) && strstr(dt_last_error(), "g = -1"), "g -1: '%s'", dt_last_error());
    EXPECT(isnan(dt_sim_zero_comm_elems(-1, 10, 2)), "stage -1");
}
