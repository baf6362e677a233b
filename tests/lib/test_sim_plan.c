/* test_sim_plan.c - libdt sim: the planner (dt_sim_plan_eval) against
 * formulas worked out by hand: the parameters and FLOPs in Narayanan et
 * al.'s closed forms, the memory by kind, the groups' links, each
 * collective's closed form, the bubble, the step as the sum of its terms,
 * and the refusals that name the bad field. (The published runs:
 * test_sim_published.c.) */
#include "grader.h"

#include "dt/sim.h"
#include "sim_vectors.h"

#include <math.h>
#include <string.h>

static const dt_sim_cluster *a100(void) { return dt_sim_cluster_preset("dgx-a100-80gb"); }

TEST(sim_plan_params_and_flops_closed_forms, 2)
{
    dt_sim_layout l = sim_layout(8, 8, 1, 1, 64, 1, DT_SIM_RECOMPUTE_FULL);
    dt_sim_cost k;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    double L = 96, h = 12288, s = 2048, V = 51200, B = 64;
    /* Megatron: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h)), plus the last layernorm */
    double P = 12 * L * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * L * h)) + 2 * h;
    EXPECT_NEAR(k.params, P, 1e-12);
    /* model FLOPs 72 B s l h^2 (1 + s/6h + V/12lh); with full recomputation 96 (... V/16lh) */
    EXPECT_NEAR(k.model_flops, 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h)), 1e-12);
    EXPECT_NEAR(k.hw_flops, 96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h)), 1e-12);
    /* selective recomputes QK^T and scores x V: 4 B s^2 l h more */
    l.recompute = DT_SIM_RECOMPUTE_SELECTIVE;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    EXPECT_NEAR(k.hw_flops - k.model_flops, 4 * B * s * s * L * h, 1e-9);
    EXPECT_NEAR(k.mfu, k.tflops_per_device * 1e12 / 312e12, 1e-12);
    EXPECT_NEAR(k.tokens_per_s, B * s / k.step_s, 1e-12);
}

/* On one device: the states are ZeRO's of every parameter, the
 * activations Korthikanti's per layer times the layers (no pipeline: one
 * micro-batch in flight) plus the embedding's mask and the output layer. */
TEST(sim_plan_memory_by_kind, 2)
{
    dt_sim_model m = {4, 256, 8, 1024, 128, 1000, 1};
    dt_sim_layout l = sim_layout(1, 1, 1, 1, 8, 2, DT_SIM_RECOMPUTE_NONE);
    dt_sim_cost k;
    EXPECT_OK(dt_sim_plan(&m, &l, a100(), &k));
    dt_sim_memory st = dt_sim_zero_memory(0, k.params, 1, dt_sim_mixed_precision_adam());
    EXPECT(k.params_device == k.params, "one stage holds all %g of %g", k.params_device, k.params);
    EXPECT_NEAR(k.mem_params, st.params, 1e-15);
    EXPECT_NEAR(k.mem_optim, st.optim, 1e-15);
    double s = 128, b = 2, h = 256, sbh = s * b * h;
    double layer = dt_sim_act_bytes_layer(s, b, h, 8, 1, 0, 2, 1);
    double ends = sbh /* embedding mask */ + 4 * sbh + 4 * s * b * 1000 /* output layer */;
    EXPECT_NEAR(k.mem_acts, 4 * layer + ends, 1e-12);
    EXPECT_NEAR(k.mem_bytes, k.mem_params + k.mem_grads + k.mem_optim + k.mem_acts, 1e-15);
    /* selective drops the scores; full keeps each layer's input and one layer whole */
    l.recompute = DT_SIM_RECOMPUTE_SELECTIVE;
    dt_sim_cost sel;
    EXPECT_OK(dt_sim_plan(&m, &l, a100(), &sel));
    EXPECT_NEAR(k.mem_acts - sel.mem_acts, 4 * dt_sim_act_bytes_scores(s, b, 8, 1, 2, 1), 1e-12);
    l.recompute = DT_SIM_RECOMPUTE_FULL;
    EXPECT_OK(dt_sim_plan(&m, &l, a100(), &sel));
    EXPECT_NEAR(sel.mem_acts, 4 * 2 * sbh + layer + ends, 1e-12);
    /* ZeRO 3 over 4 replicas: every state a quarter */
    l.dp = 4, l.zero = 3, l.global_batch = 32;
    EXPECT_OK(dt_sim_plan(&m, &l, a100(), &sel));
    EXPECT_NEAR(sel.mem_params + sel.mem_grads + sel.mem_optim, 16 * k.params / 4, 1e-12);
}

/* The first stage holds p micro-batches under 1F1B, l (1 + (p-1)/(p v))
 * layers' worth interleaved (Korthikanti et al. 4.2.3), all m under GPipe. */
TEST(sim_plan_micro_batches_in_flight, 1)
{
    dt_sim_layout l = sim_layout(8, 8, 1, 1, 64, 1, DT_SIM_RECOMPUTE_SELECTIVE);
    dt_sim_cost k;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    EXPECT(k.inflight == 8, "1F1B: %g in flight, want p = 8", k.inflight);
    l.vpp = 3;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    EXPECT_NEAR(k.inflight, 8 * (1 + 7.0 / 24), 1e-12);
    l.vpp = 1, l.schedule = DT_SIM_GPIPE;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    EXPECT(k.inflight == 64, "GPipe: %g in flight, want m = 64", k.inflight);
}

/* The bubble and the step: the step is the sum of its terms, and the
 * communication terms are dt/net.h's closed forms at beta x net_eff. */
TEST(sim_plan_step_is_its_terms, 2)
{
    const dt_sim_cluster *c = a100();
    dt_sim_layout l = sim_layout(8, 4, 2, 2, 64, 2, DT_SIM_RECOMPUTE_NONE);
    dt_sim_cost k;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, c, &k));
    EXPECT(k.microbatches == 16, "m = 64 / (2 x 2) = 16, got %d", k.microbatches);
    EXPECT_NEAR(k.bubble, 3.0 / (2 * 16), 1e-15);
    EXPECT_NEAR(k.step_s, k.t_compute + k.t_tp + k.t_pp + k.t_bubble + k.t_dp + k.t_optimizer,
                1e-12);
    double tp = 0, pp = 0, dp = 0;
    dt_net intra = c->intra, inter = c->inter;
    intra.beta *= c->net_eff, inter.beta *= c->net_eff;
    double n = 2048.0 * 2 * 12288 * 2; /* s b h e */
    for (int i = 0; i < k.ncomm; i++) {
        const dt_sim_comm *x = &k.comm[i];
        double one = dt_net_cost(x->algo, x->inter ? &inter : &intra, x->bytes, x->ranks);
        EXPECT_NEAR(x->seconds, x->calls * one, 1e-12);
        *(x->group == DT_SIM_GROUP_TP ? &tp : x->group == DT_SIM_GROUP_PP ? &pp : &dp) +=
            x->seconds;
        if (x->group == DT_SIM_GROUP_TP && x->algo == DT_NET_RING_ALLREDUCE)
            EXPECT(x->bytes == n && x->calls == 16 * 24 * 4 && !x->inter,
                   "TP allreduce: %g bytes, %g calls, inter %d", x->bytes, x->calls, x->inter);
        if (x->group == DT_SIM_GROUP_PP && x->algo == DT_NET_P2P)
            EXPECT(x->bytes == n / 8 && x->calls == 16 * 2 * 2 && x->inter,
                   "PP: %g bytes, %g calls (want 2 v m), inter %d", x->bytes, x->calls, x->inter);
    }
    /* the scatter/gather's allgather rides on the TP group but is the pipeline's */
    EXPECT_NEAR(tp + pp, k.t_tp + k.t_pp, 1e-12);
    EXPECT_NEAR(dp, k.t_dp, 1e-12);
    EXPECT(k.t_dp > 0 && k.t_bubble > 0, "dp %g, bubble %g", k.t_dp, k.t_bubble);
}

/* Ranks TP innermost, then PP, then DP, 8 to a node: a group inside a node
 * pays the NVLink, one spanning nodes the InfiniBand. */
TEST(sim_plan_groups_find_their_links, 1)
{
    const dt_sim_model m = sim_links_model;
    for (size_t i = 0; i < sizeof sim_link_cases / sizeof sim_link_cases[0]; i++) {
        const sim_link_case *c = &sim_link_cases[i];
        dt_sim_layout l = sim_layout(c->tp, c->pp, c->dp, 1, 64, 1, DT_SIM_RECOMPUTE_FULL);
        dt_sim_cost k;
        EXPECT_OK(dt_sim_plan(&m, &l, a100(), &k));
        for (int j = 0; j < k.ncomm; j++) {
            const dt_sim_comm *x = &k.comm[j];
            int want = x->group == DT_SIM_GROUP_TP   ? c->tp_inter
                       : x->group == DT_SIM_GROUP_PP ? c->pp_inter
                                                     : c->dp_inter;
            EXPECT(x->inter == want, "tp %d pp %d dp %d: %s group on the %s link, want %s",
                   c->tp, c->pp, c->dp, x->what, x->inter ? "inter" : "intra",
                   want ? "inter" : "intra");
        }
    }
}

/* A layout that does not fit says so; a slower network only slows it. */
TEST(sim_plan_fits_and_links_matter, 1)
{
    dt_sim_layout l = sim_layout(1, 1, 1, 1, 8, 1, DT_SIM_RECOMPUTE_NONE);
    dt_sim_cost k;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l, a100(), &k));
    EXPECT(!k.fits && k.mem_bytes > 16 * 174e9, "175B on one GPU: %g bytes, fits %d", k.mem_bytes,
           k.fits);
    dt_sim_cluster slow = *a100();
    dt_sim_layout l2 = sim_layout(8, 8, 2, 1, 64, 1, DT_SIM_RECOMPUTE_FULL);
    dt_sim_cost fast_k, slow_k;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l2, &slow, &fast_k));
    slow.inter.beta /= 10;
    EXPECT_OK(dt_sim_plan(&sim_gpt175, &l2, &slow, &slow_k));
    EXPECT(slow_k.t_pp > fast_k.t_pp && slow_k.t_dp > fast_k.t_dp &&
               slow_k.t_tp == fast_k.t_tp && slow_k.t_compute == fast_k.t_compute,
           "a slower inter-node link slows PP and DP only");
}

/* Each refusal names the field, its value and what it must be. */
TEST(sim_plan_refuses_naming_the_field, 2)
{
    struct {
        dt_sim_layout l;
        const char *field, *other;
    } cases[] = {
#define ROW(l, field, other) {l, field, other},
        SIM_REFUSALS(ROW)
#undef ROW
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        dt_sim_cost k;
        dt_sim_bad bad = {0};
        EXPECT(dt_sim_plan_eval(&sim_gpt175, &cases[i].l, a100(), &k, &bad) == DT_ERR_INVALID_ARG,
               "case %zu accepted", i);
        EXPECT(bad.field && !strcmp(bad.field, cases[i].field), "case %zu: field %s, want %s", i,
               bad.field ? bad.field : "(none)", cases[i].field);
        EXPECT((!bad.other && !cases[i].other) ||
                   (bad.other && cases[i].other && !strcmp(bad.other, cases[i].other)),
               "case %zu: checked against %s, want %s", i, bad.other ? bad.other : "(none)",
               cases[i].other ? cases[i].other : "(none)");
    }
    dt_sim_layout l = sim_layout(1, 1, 1, 1, 8, 1, 0);
    l.zero = 4;
    dt_sim_cost k;
    EXPECT(dt_sim_plan(&sim_gpt175, &l, a100(), &k) == DT_ERR_INVALID_ARG, "ZeRO 4 accepted");
    EXPECT(strstr(dt_last_error(), "zero = 4"), "message: %s", dt_last_error());
    l.zero = 0;
    dt_sim_model m = sim_gpt175;
    m.heads = 100; /* does not divide 12288 */
    EXPECT(dt_sim_plan(&m, &l, a100(), &k) == DT_ERR_INVALID_ARG, "100 heads accepted");
    EXPECT(strstr(dt_last_error(), "heads = 100") && strstr(dt_last_error(), "hidden = 12288"),
           "message: %s", dt_last_error());
    dt_sim_cluster c = *a100();
    c.matmul_eff = 0;
    EXPECT(dt_sim_plan(&sim_gpt175, &l, &c, &k) == DT_ERR_INVALID_ARG, "efficiency 0 accepted");
    EXPECT(strstr(dt_last_error(), "matmul_eff"), "message: %s", dt_last_error());
    EXPECT(dt_sim_plan(NULL, &l, a100(), &k) == DT_ERR_INVALID_ARG, "NULL model accepted");
}

TEST(sim_plan_presets_and_names, 1)
{
    const char *clusters[] = {"dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100", "laptop"};
    for (int i = 0; i < 4; i++) {
        const dt_sim_cluster *c = dt_sim_cluster_preset(clusters[i]);
        EXPECT(c && c == dt_sim_cluster_at(i), "cluster %s", clusters[i]);
        if (c)
            EXPECT(c->per_node == 8 && c->inter.beta < c->intra.beta && c->peak16 >= c->peak32,
                   "%s: 8 a node, a slower link between nodes", clusters[i]);
    }
    EXPECT(!dt_sim_cluster_at(4) && !dt_sim_cluster_preset("dgx") && !dt_sim_cluster_preset(NULL),
           "unknown clusters");
    EXPECT(dt_sim_model_preset("gpt3-175b") && dt_sim_model_preset("gpt3-175b")->hidden == 12288,
           "gpt3-175b");
    EXPECT(!dt_sim_model_preset("gpt5"), "unknown model");
    EXPECT(dt_sim_recompute_parse("selective") == DT_SIM_RECOMPUTE_SELECTIVE &&
               dt_sim_dtype_parse("fp32") == DT_SIM_FP32 &&
               dt_sim_schedule_parse("gpipe") == DT_SIM_GPIPE && dt_sim_dtype_parse("f64") < 0,
           "names parse");
    EXPECT(!strcmp(dt_sim_recompute_name(DT_SIM_RECOMPUTE_FULL), "full") &&
               !dt_sim_dtype_name(DT_SIM_NUM_DTYPES),
           "names print");
}

/* The search against a brute force of its own: on 8 devices, every layout
 * the search prices is one the planner accepts, the first is the fastest
 * that fits, and the list is sorted. */
TEST(sim_search_ranks_every_layout, 2)
{
    dt_sim_model m = {24, 2048, 16, 8192, 2048, 51200, 1};
    dt_sim_search_opts o = {8, 32, DT_SIM_BF16};
    dt_sim_ranked best[50];
    long feasible = -1, tried = -1;
    EXPECT_OK(dt_sim_search(&m, &o, a100(), best, 50, &feasible, &tried));
    /* brute force: tp | 8 (and 16), pp | 8/tp (and 24), dp = 8/(tp pp), b | 32/dp, v | 24/pp */
    long count = 0, fit = 0;
    double fastest = INFINITY;
    for (int tp = 1; tp <= 8; tp *= 2)
        for (int pp = 1; tp * pp <= 8; pp *= 2) {
            int dp = 8 / (tp * pp);
            for (int b = 1; b <= 32 / dp; b++)
                for (int v = 1; v <= 24 / pp; v++)
                    for (int sp = 0; sp <= (tp > 1); sp++)
                        for (int z = 0; z <= (dp > 1 ? 3 : 0); z++)
                            for (int r = 0; r < 3; r++) {
                                dt_sim_layout l = {tp, pp, dp, v, sp, 32, b, r, z, DT_SIM_BF16,
                                                   DT_SIM_1F1B};
                                dt_sim_cost k;
                                dt_sim_bad bad;
                                if ((32 / dp) % b || (24 / pp) % v ||
                                    dt_sim_plan_eval(&m, &l, a100(), &k, &bad) != DT_OK)
                                    continue;
                                count++;
                                if (k.fits)
                                    fit++, fastest = fmin(fastest, k.step_s);
                            }
        }
    EXPECT(tried == count && feasible == fit, "search priced %ld (%ld fit), brute force %ld (%ld)",
           tried, feasible, count, fit);
    EXPECT(feasible > 0 && best[0].cost.step_s == fastest, "first %g, fastest %g",
           best[0].cost.step_s, fastest);
    for (int i = 1; i < 50 && i < feasible; i++)
        EXPECT(best[i].cost.fits && best[i - 1].cost.step_s <= best[i].cost.step_s,
               "rank %d out of order", i);
    o.devices = 0;
    EXPECT(dt_sim_search(&m, &o, a100(), best, 50, &feasible, &tried) == DT_ERR_INVALID_ARG &&
               strstr(dt_last_error(), "devices"),
           "0 devices: %s", dt_last_error());
}
