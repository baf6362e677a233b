/* test_sim_memory.c - libdt sim: the activation memory of a transformer
 * layer (Korthikanti et al. 2022) against figures worked out by hand. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>

/* GPT-3 175B's layer: s = 2048, h = 12288, a = 96, on t = 8 ranks, b = 1.
 * 5as/(ht) = 5*96*2048 / (12288*8) = 10 and 5as/h = 80, so with 16-bit
 * activations and dropout
 *   TP:      sbh (10 + 24/8 + 10) = 23 sbh
 *   TP + SP: (sbh/8) (34 + 80)    = 14.25 sbh
 * and in float32 without dropout (4as/h = 64)
 *   TP:      sbh (16 + 48/8 + 64/8) = 30 sbh
 *   TP + SP: (sbh/8) (64 + 64)      = 16 sbh */
TEST(sim_act_bytes_gpt3_layer, 2)
{
    const double s = 2048, b = 1, h = 12288, a = 96, sbh = s * b * h;
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 8, 0, 2, 1) == 23 * sbh, "TP, 16-bit: %.0f",
           dt_sim_act_bytes_layer(s, b, h, a, 8, 0, 2, 1));
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 8, 1, 2, 1) == 14.25 * sbh, "TP+SP, 16-bit: %.0f",
           dt_sim_act_bytes_layer(s, b, h, a, 8, 1, 2, 1));
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 8, 0, 4, 0) == 30 * sbh, "TP, f32: %.0f",
           dt_sim_act_bytes_layer(s, b, h, a, 8, 0, 4, 0));
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 8, 1, 4, 0) == 16 * sbh, "TP+SP, f32: %.0f",
           dt_sim_act_bytes_layer(s, b, h, a, 8, 1, 4, 0));
    /* no parallelism: sbh (34 + 5as/h), the paper's equation (1) */
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 1, 0, 2, 1) == (34 + 80) * sbh, "t = 1");
    /* on one rank sequence parallelism changes nothing */
    EXPECT(dt_sim_act_bytes_layer(s, b, h, a, 1, 1, 2, 1) ==
               dt_sim_act_bytes_layer(s, b, h, a, 1, 0, 2, 1), "t = 1 with SP");
}

TEST(sim_act_bytes_rejects_bad_sizes, 1)
{
    EXPECT(isnan(dt_sim_act_bytes_layer(0, 1, 8, 2, 1, 0, 4, 0)), "s = 0");
    EXPECT(isnan(dt_sim_act_bytes_layer(8, 1, 8, 2, 0, 0, 4, 0)), "t = 0");
    EXPECT(isnan(dt_sim_act_bytes_layer(8, 1, 8, 2, 2, 2, 4, 0)), "sp = 2");
    EXPECT(isnan(dt_sim_act_bytes_layer(8, 1, 8, 2, 2, 0, 0, 0)), "e = 0");
}
