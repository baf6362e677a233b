/* hidden_threed.c - lab 13: hidden tests (staff only; graded, but not in
 * the student tree). Same functions, other cases. */
#include "grader.h"
#include "threed.h"

#include <math.h>
#include <string.h>

static dt_result sizes_rank(dt_comm *world, void *arg)
{
    const int *tp_pp = arg;
    lab_groups g;
    memset(&g, 0, sizeof g);
    DT_CHECK(lab_groups_create(&g, world, tp_pp[0], tp_pp[1]));
    int w = dt_comm_rank(world), T = tp_pp[0], P = tp_pp[1];
    /* the members of each group, summed: the tp group of w holds
       (d P + p) T + 0 .. T-1, the pp group (d P + i) T + t, the dp group
       (i P + p) T + t */
    int t = w % T, p = (w / T) % P, d = w / (T * P), D = dt_comm_size(world) / (T * P);
    int32_t me = w, s[3] = {0, 0, 0}, want[3];
    dt_result r = dt_allreduce(&me, &s[0], 1, DT_I32, DT_SUM, g.tp);
    if (r == DT_OK)
        r = dt_allreduce(&me, &s[1], 1, DT_I32, DT_SUM, g.pp);
    if (r == DT_OK)
        r = dt_allreduce(&me, &s[2], 1, DT_I32, DT_SUM, g.dp);
    want[0] = (d * P + p) * T * T + T * (T - 1) / 2;
    want[1] = d * P * P * T + T * P * (P - 1) / 2 + P * t;
    want[2] = T * P * D * (D - 1) / 2 + D * (p * T + t);
    for (int k = 0; r == DT_OK && k < 3; k++)
        if (s[k] != want[k])
            r = dt_fail(DT_ERR_MISMATCH, "TP %d x PP %d on %d ranks: world rank %d: its %s "
                        "group's members sum to %d, expected %d", T, P, dt_comm_size(world), w,
                        k == 0 ? "tensor-parallel" : k == 1 ? "pipeline" : "data-parallel",
                        (int)s[k], (int)want[k]);
    lab_groups_free(&g);
    return r;
}

TEST_HIDDEN_T(groups_of_sixteen_ranks, 2, 20)
{
    dt_test_see("chapter 13, section 1");
    static const int layouts[][2] = {{4, 2}, {2, 4}, {8, 2}, {1, 16}, {2, 2}};
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++) {
        dt_launch_opts o;
        EXPECT_OK(dt_launch_opts_init(&o));
        o.nranks = 16, o.backend = DT_BACKEND_THREAD, o.timeout_s = 20;
        EXPECT_OK(dt_launch(&o, sizes_rank, (void *)layouts[k]));
    }
}

TEST_HIDDEN(bubble_more_chunks, 1)
{
    dt_test_see("chapter 13, section 5");
    /* p = 8, v = 4, m = 16: 7 / 64 */
    EXPECT(fabs(lab_bubble(8, 4, 16) - 7.0 / 64) < 1e-15, "bubble(8, 4, 16) = %g, expected "
           "7/64", lab_bubble(8, 4, 16));
}

TEST_HIDDEN(memory_fp32_states, 1)
{
    dt_test_see("chapter 13, section 3");
    dt_sim_model m = {4, 32, 2, 128, 8, 64, 0};
    dt_sim_layout l;
    memset(&l, 0, sizeof l);
    l.tp = 1, l.pp = 2, l.dp = 2, l.vpp = 1, l.global_batch = 8, l.micro_batch = 2;
    l.dtype = DT_SIM_FP32, l.zero = 2, l.schedule = DT_SIM_1F1B;
    /* 2 layers of 4 32^2 + 2 32 128 + 3 32 + 128 + 192 = 12704, embedding 2048 and
       positions 256: 4 bytes a parameter, 4 of gradients over 2, 8 of state over 2 */
    double psi = 2 * 12704.0 + 2048 + 256;
    lab_memory got;
    EXPECT_OK(lab_memory_first_stage(&m, &l, &got));
    EXPECT(fabs(got.params + got.grads + got.optim - 10 * psi) < 1e-6 * psi,
           "fp32, ZeRO 2 over 2: states %.17g bytes, expected %.17g", got.params + got.grads +
           got.optim, 10 * psi);
}
