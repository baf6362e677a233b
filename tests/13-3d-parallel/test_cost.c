/* test_cost.c - lab 13, task (c): the bubble, the first stage's memory and
 * each group's bytes per step, against formulas written here apart and
 * against lib/sim's planner (chapter 13, sections 1, 3 and 5). */
#include "grader.h"
#include "threed.h"

#include <math.h>
#include <string.h>

#define REL(a, b) (fabs((a) - (b)) <= 1e-12 * fabs(b))

TEST(bubble_with_interleaving, 2)
{
    dt_test_see("chapter 13, section 5");
    /* p = 4, m = 8: 3/8 without interleaving, 3/16 with two chunks a rank */
    EXPECT(REL(lab_bubble(4, 1, 8), 3.0 / 8), "bubble(p 4, v 1, m 8) = %g, expected 3/8",
           lab_bubble(4, 1, 8));
    EXPECT(REL(lab_bubble(4, 2, 8), 3.0 / 16), "bubble(p 4, v 2, m 8) = %g, expected 3/16",
           lab_bubble(4, 2, 8));
    /* MT-NLG's 35 stages, 1920 / 8 = 240 micro-batches of 1... with v = 3 */
    EXPECT(REL(lab_bubble(35, 3, 240), 34.0 / 720), "bubble(p 35, v 3, m 240) = %g, expected "
           "34/720", lab_bubble(35, 3, 240));
    EXPECT(lab_bubble(1, 1, 1) == 0, "one stage has no bubble: %g", lab_bubble(1, 1, 1));
    EXPECT(isnan(lab_bubble(0, 1, 4)) && isnan(lab_bubble(2, 0, 4)) && isnan(lab_bubble(2, 1, 0)),
           "p, v or m below 1 must give NaN");
}

static const dt_sim_model gpt22 = {48, 6144, 64, 4 * 6144, 2048, 51200, 1}; /* 22B */

static dt_sim_layout layout(int tp, int pp, int dp, int vpp, int zero, dt_sim_recompute rc)
{
    dt_sim_layout l;
    memset(&l, 0, sizeof l);
    l.tp = tp, l.pp = pp, l.dp = dp, l.vpp = vpp, l.global_batch = 64 * dp;
    l.micro_batch = 1, l.recompute = rc, l.zero = zero, l.dtype = DT_SIM_BF16;
    l.schedule = DT_SIM_1F1B;
    return l;
}

/* The model states alone, worked by hand: a 16-bit layout with one
 * pipeline stage holds 16 bytes a parameter of its shard, ZeRO-1 keeps 4 of
 * them whole and shards the 12 of Adam's state. */
TEST(memory_model_states, 2)
{
    dt_test_see("chapter 13, section 3");
    dt_sim_model m = {2, 64, 4, 256, 16, 100, 0};
    dt_sim_layout l = layout(2, 1, 4, 1, 0, DT_SIM_RECOMPUTE_NONE);
    l.global_batch = 8;
    /* a layer on one of 2 TP ranks: (4 64^2 + 2 64 256 + 3 64 + 256)/2 + 6 64 = 25184;
       the embedding 100 64 / 2 = 3200, the positions 16 64 = 1024, the last norm 128 */
    double psi = 2 * 25184.0 + 3200 + 1024 + 128;
    lab_memory got;
    EXPECT_OK(lab_memory_first_stage(&m, &l, &got));
    EXPECT(REL(got.params, 2 * psi) && REL(got.grads, 2 * psi) && REL(got.optim, 12 * psi),
           "ZeRO 0: parameters %.17g, gradients %.17g, optimizer %.17g bytes; expected %.17g, "
           "%.17g, %.17g", got.params, got.grads, got.optim, 2 * psi, 2 * psi, 12 * psi);
    l.zero = 1;
    EXPECT_OK(lab_memory_first_stage(&m, &l, &got));
    EXPECT(REL(got.optim, 12 * psi / 4) && REL(got.grads, 2 * psi),
           "ZeRO 1 over 4: optimizer %.17g, gradients %.17g; expected %.17g, %.17g", got.optim,
           got.grads, 3 * psi, 2 * psi);
    l.zero = 3;
    EXPECT_OK(lab_memory_first_stage(&m, &l, &got));
    EXPECT(REL(got.total - got.acts, 16 * psi / 4), "ZeRO 3 over 4: states %.17g, expected "
           "%.17g", got.total - got.acts, 4 * psi);
}

/* Every term against the planner's, for layouts whose first stage holds
 * the most (where the planner reports that stage). */
TEST(memory_matches_the_planner, 3)
{
    dt_test_see("chapter 13, section 3");
    const dt_sim_cluster *c = dt_sim_cluster_preset("dgx-a100-80gb");
    EXPECT(c != NULL, "no dgx-a100-80gb preset");
    if (!c)
        return;
    struct {
        int tp, pp, dp, vpp, zero;
        dt_sim_recompute rc;
    } ls[] = {{8, 1, 8, 1, 0, DT_SIM_RECOMPUTE_NONE},   {8, 4, 2, 1, 1, DT_SIM_RECOMPUTE_SELECTIVE},
              {4, 8, 2, 2, 0, DT_SIM_RECOMPUTE_FULL},   {2, 2, 16, 1, 2, DT_SIM_RECOMPUTE_FULL},
              {8, 8, 1, 3, 0, DT_SIM_RECOMPUTE_SELECTIVE}, {1, 1, 64, 1, 3, DT_SIM_RECOMPUTE_FULL}};
    int compared = 0;
    for (size_t i = 0; i < sizeof ls / sizeof *ls; i++) {
        dt_sim_layout l = layout(ls[i].tp, ls[i].pp, ls[i].dp, ls[i].vpp, ls[i].zero, ls[i].rc);
        dt_sim_cost plan;
        lab_memory got;
        EXPECT_OK(dt_sim_plan(&gpt22, &l, c, &plan));
        EXPECT_OK(lab_memory_first_stage(&gpt22, &l, &got));
        if (plan.mem_stage != 0)
            continue;
        compared++;
        EXPECT(REL(got.params, plan.mem_params) && REL(got.grads, plan.mem_grads) &&
                   REL(got.optim, plan.mem_optim) && REL(got.acts, plan.mem_acts) &&
                   REL(got.total, plan.mem_bytes),
               "TP %d PP %d DP %d v %d ZeRO %d %s: got params %.6g grads %.6g optim %.6g acts "
               "%.6g total %.6g bytes; the planner %.6g %.6g %.6g %.6g %.6g", l.tp, l.pp, l.dp,
               l.vpp, l.zero, dt_sim_recompute_name(l.recompute), got.params, got.grads,
               got.optim, got.acts, got.total, plan.mem_params, plan.mem_grads, plan.mem_optim,
               plan.mem_acts, plan.mem_bytes);
    }
    EXPECT(compared >= 4, "only %d layouts had the first stage as the planner's largest", compared);
}

/* Bytes per step by hand: m micro-batches, n = s b h e. */
TEST(group_bytes_by_hand, 2)
{
    dt_test_see("chapter 13, section 1");
    dt_sim_model m = {8, 64, 4, 256, 16, 100, 0};
    dt_sim_layout l = layout(4, 2, 2, 2, 0, DT_SIM_RECOMPUTE_NONE);
    l.global_batch = 16; /* m = 16 / (2 x 1) = 8 */
    double n = 16 * 1 * 64 * 2.0;
    lab_group_bytes got;
    EXPECT_OK(lab_group_bytes_per_step(&m, &l, &got));
    /* TP: 8 micro-batches x 4 layers x 4 allreduces x 2 (3/4) n */
    EXPECT(REL(got.tp, 8 * 4 * 4 * 1.5 * n), "TP bytes %.17g, expected %.17g", got.tp,
           8 * 4 * 4 * 1.5 * n);
    /* PP: 8 micro-batches x 2 chunks x 2 ways x n / 4 */
    EXPECT(REL(got.pp, 8 * 2 * 2 * n / 4), "PP bytes %.17g, expected %.17g", got.pp,
           8 * 2 * 2 * n / 4);
    /* DP: the first stage, 4 layers of (4 64^2 + 2 64 256 + 3 64 + 256)/4 + 384,
       embedding 1600 and positions 1024, 2 bytes each, allreduced over 2 */
    double psi = 4 * ((16384 + 32768 + 192 + 256) / 4.0 + 384) + 1600 + 1024;
    EXPECT(REL(got.dp, 2 * 0.5 * psi * 2), "DP bytes %.17g, expected %.17g", got.dp,
           2 * 0.5 * psi * 2);
    l.recompute = DT_SIM_RECOMPUTE_FULL;
    EXPECT_OK(lab_group_bytes_per_step(&m, &l, &got));
    EXPECT(REL(got.tp, 8 * 4 * 6 * 1.5 * n), "TP bytes with full recomputation %.17g, "
           "expected %.17g", got.tp, 8 * 4 * 6 * 1.5 * n);
    l.tp = 1, l.pp = 1, l.dp = 1, l.vpp = 1, l.global_batch = 4;
    EXPECT_OK(lab_group_bytes_per_step(&m, &l, &got));
    EXPECT(got.tp == 0 && got.pp == 0 && got.dp == 0, "one rank sends nothing: %g %g %g",
           got.tp, got.pp, got.dp);
}

/* The planner's communications of the same step, each call priced as a
 * ring sends from one rank: TP and DP agree with task (c). */
TEST(group_bytes_match_the_planner, 2)
{
    dt_test_see("chapter 13, section 1");
    const dt_sim_cluster *c = dt_sim_cluster_preset("dgx-a100-80gb");
    EXPECT(c != NULL, "no dgx-a100-80gb preset");
    if (!c)
        return;
    dt_sim_layout ls[] = {layout(8, 4, 4, 1, 0, DT_SIM_RECOMPUTE_NONE),
                          layout(4, 2, 8, 1, 0, DT_SIM_RECOMPUTE_FULL),
                          layout(2, 1, 32, 1, 1, DT_SIM_RECOMPUTE_SELECTIVE)};
    for (size_t i = 0; i < sizeof ls / sizeof *ls; i++) {
        dt_sim_cost plan;
        lab_group_bytes got;
        EXPECT_OK(dt_sim_plan(&gpt22, &ls[i], c, &plan));
        EXPECT_OK(lab_group_bytes_per_step(&gpt22, &ls[i], &got));
        double tp = 0, dp = 0;
        for (int k = 0; k < plan.ncomm; k++) {
            const dt_sim_comm *x = &plan.comm[k];
            double share = x->algo == DT_NET_RING_ALLREDUCE ? 2.0 * (x->ranks - 1) / x->ranks
                                                             : (x->ranks - 1.0) / x->ranks;
            if (x->group == DT_SIM_GROUP_TP && x->algo == DT_NET_RING_ALLREDUCE)
                tp += x->calls * x->bytes * share;
            if (x->group == DT_SIM_GROUP_DP)
                dp += x->calls * x->bytes * share;
        }
        EXPECT(REL(got.tp, tp), "TP %d PP %d DP %d: TP bytes %.6g, the planner's %.6g",
               ls[i].tp, ls[i].pp, ls[i].dp, got.tp, tp);
        if (plan.mem_stage == 0 || ls[i].pp == 1)
            EXPECT(REL(got.dp, dp), "TP %d PP %d DP %d ZeRO %d: DP bytes %.6g, the planner's "
                   "%.6g", ls[i].tp, ls[i].pp, ls[i].dp, ls[i].zero, got.dp, dp);
    }
}

TEST(cost_terms_refuse_bad_layouts, 1)
{
    dt_test_see("chapter 13, section 3");
    dt_sim_layout l = layout(8, 5, 1, 1, 0, DT_SIM_RECOMPUTE_NONE); /* 48 layers over 5 */
    lab_memory mem;
    lab_group_bytes by;
    EXPECT(lab_memory_first_stage(&gpt22, &l, &mem) == DT_ERR_INVALID_ARG,
           "48 layers over 5 stages accepted by lab_memory_first_stage");
    EXPECT(lab_group_bytes_per_step(&gpt22, &l, &by) == DT_ERR_INVALID_ARG,
           "48 layers over 5 stages accepted by lab_group_bytes_per_step");
    EXPECT(lab_memory_first_stage(NULL, &l, &mem) == DT_ERR_INVALID_ARG, "NULL model accepted");
}
