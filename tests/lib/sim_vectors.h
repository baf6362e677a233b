/* sim_vectors.h - the planner's test vectors: the published runs that
 * test_sim_published.c predicts and the layouts that test_sim_plan.c
 * checks, in one place, for the web book replays them too: its planner
 * (dt_sim_plan compiled to WebAssembly, tools/book/planner/) must give the
 * native planner's numbers on every one of them (tools/book/planner/
 * vectors.c prints those; make test-book compares). */
#ifndef DT_TEST_SIM_VECTORS_H
#define DT_TEST_SIM_VECTORS_H

#include "dt/sim.h"

typedef struct {
    const char *name;
    int layers, hidden, heads;
    int tp, pp, gpus, batch, micro, vpp, sp;
    dt_sim_recompute recompute;
    double published; /* TFLOP/s per GPU (tflops = 1) or seconds a step */
    int tflops;
} sim_run;

/* Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
 * Clusters Using Megatron-LM" (SC 2021), Table 1 (weak scaling): sequence
 * 2,048, vocabulary 51,200, fp16, full recomputation; the achieved
 * TFLOP/s per GPU count 96 B s l h^2 (1 + s/6h + V/16lh) a step (the
 * paper's eq. 3: our hw_flops). The table gives no micro-batch size or
 * interleaving: assumed 1 and none. Columns: parameters (billions),
 * heads, hidden, layers, TP, PP, GPUs, batch, TFLOP/s per GPU. */
static const sim_run megatron2021[] = {
    {"1.7B (Table 1)", 24, 2304, 24, 1, 1, 32, 512, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 137, 1},
    {"3.6B (Table 1)", 30, 3072, 32, 2, 1, 64, 512, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 138, 1},
    {"7.5B (Table 1)", 36, 4096, 32, 4, 1, 128, 512, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 142, 1},
    {"18.4B (Table 1)", 40, 6144, 48, 8, 1, 256, 1024, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 135, 1},
    {"39.1B (Table 1)", 48, 8192, 64, 8, 2, 512, 1536, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 138, 1},
    {"76.1B (Table 1)", 60, 10240, 80, 8, 4, 1024, 1792, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 140, 1},
    {"145.6B (Table 1)", 80, 12288, 96, 8, 8, 1536, 2304, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 148, 1},
    {"310.1B (Table 1)", 96, 16384, 128, 8, 16, 1920, 2160, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 155, 1},
    {"529.6B (Table 1)", 105, 20480, 128, 8, 35, 2520, 2520, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 163,
     1},
    {"1008B (Table 1)", 128, 25600, 160, 8, 64, 3072, 3072, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 163, 1},
};

/* Korthikanti et al., "Reducing Activation Recomputation in Large
 * Transformer Models" (MLSys 2023), Table 5: seconds a step with full
 * recomputation, and with selective recomputation and sequence
 * parallelism ("present work"); the models and layouts of its Table 3 as
 * Calculon's validation encodes them (calculon-ai/calculon,
 * validation/NAME_full.json and NAME_seqsel.json: micro-batch 1, 4 for 22B; interleaving 3 for 175B
 * and 530B), one pipeline (no DP), fp16. */
static const sim_run korthikanti2022[] = {
    {"22B full (Table 5)", 48, 6144, 64, 8, 1, 8, 4, 4, 1, 0, DT_SIM_RECOMPUTE_FULL, 1.42, 0},
    {"22B selective+SP (Table 5)", 48, 6144, 64, 8, 1, 8, 4, 4, 1, 1,
     DT_SIM_RECOMPUTE_SELECTIVE, 1.10, 0},
    {"175B full (Table 5)", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 0, DT_SIM_RECOMPUTE_FULL, 18.13, 0},
    {"175B selective+SP (Table 5)", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 1,
     DT_SIM_RECOMPUTE_SELECTIVE, 13.75, 0},
    {"530B full (Table 5)", 105, 20480, 128, 8, 35, 280, 280, 1, 3, 0, DT_SIM_RECOMPUTE_FULL, 49.05,
     0},
    {"530B selective+SP (Table 5)", 105, 20480, 128, 8, 35, 280, 280, 1, 3, 1,
     DT_SIM_RECOMPUTE_SELECTIVE, 37.83, 0},
    {"1T full (Table 5)", 128, 25600, 160, 8, 64, 512, 512, 1, 1, 0, DT_SIM_RECOMPUTE_FULL, 94.42,
     0},
    {"1T selective+SP (Table 5)", 128, 25600, 160, 8, 64, 512, 512, 1, 1, 1,
     DT_SIM_RECOMPUTE_SELECTIVE, 71.49, 0},
};

/* A run's model and layout: sequences of 2,048 tokens, a vocabulary of
 * 51,200, the MLP 4h wide, dropout; one pipeline per gpus / (tp pp), fp16,
 * 1F1B, no ZeRO. */
static inline void sim_run_args(const sim_run *r, dt_sim_model *m, dt_sim_layout *l)
{
    dt_sim_model mm = {r->layers, r->hidden, r->heads, 4 * r->hidden, 2048, 51200, 1};
    dt_sim_layout ll = {r->tp, r->pp, r->gpus / (r->tp * r->pp), r->vpp, r->sp, r->batch,
                        r->micro, r->recompute, 0, DT_SIM_FP16, DT_SIM_1F1B};
    *m = mm, *l = ll;
}

/* test_sim_plan.c's layouts, on dgx-a100-80gb: bf16, 1F1B, no SP or ZeRO. */
static const dt_sim_model sim_gpt175 = {96, 12288, 96, 4 * 12288, 2048, 51200, 1};

static inline dt_sim_layout sim_layout(int tp, int pp, int dp, int vpp, int B, int b,
                                       dt_sim_recompute r)
{
    dt_sim_layout l = {tp, pp, dp, vpp, 0, B, b, r, 0, DT_SIM_BF16, DT_SIM_1F1B};
    return l;
}

/* Refused layouts of sim_gpt175: the field the refusal names, and the one
 * it was checked against. */
#define SIM_REFUSALS(X)                                                                  \
    X(sim_layout(5, 1, 1, 1, 8, 1, 0), "tp", "heads")                                   \
    X(sim_layout(1, 5, 1, 1, 8, 1, 0), "pp", "layers")                                  \
    X(sim_layout(1, 1, 1, 2, 8, 1, 0), "vpp", "pp")                                     \
    X(sim_layout(1, 8, 1, 5, 64, 1, 0), "vpp", "layers")                                \
    X(sim_layout(1, 8, 1, 2, 12, 1, 0), "global_batch", "pp")                           \
    X(sim_layout(1, 1, 3, 1, 8, 1, 0), "global_batch", "micro_batch")                   \
    X(sim_layout(0, 1, 1, 1, 8, 1, 0), "tp", 0)                                         \
    X(sim_layout(1, 1, 1, 1, 8, 0, 0), "micro_batch", 0)                                \
    X(sim_layout(1, 1, 1, 1, 8, 1, (dt_sim_recompute)7), "recompute", 0)

/* Layouts of a 32-layer model, 8 devices a node, ranks TP innermost, then
 * PP, then DP: whether each group spans nodes (full recomputation, batch
 * 64, micro-batch 1). */
static const dt_sim_model sim_links_model = {32, 4096, 32, 16384, 2048, 51200, 1};
typedef struct {
    int tp, pp, dp, tp_inter, pp_inter, dp_inter;
} sim_link_case;
static const sim_link_case sim_link_cases[] = {
    {8, 2, 2, 0, 1, 1},  /* TP fills a node: PP and DP cross */
    {2, 4, 2, 0, 0, 1},  /* TP x PP = 8: a pipeline inside a node */
    {2, 2, 2, 0, 0, 0},  /* 8 devices: one node */
    {16, 1, 2, 1, 0, 1}, /* TP across two nodes */
    {1, 1, 16, 0, 0, 1}, /* DP across two nodes */
    {4, 1, 2, 0, 0, 0},  /* two TP groups of 4 in one node */
};

#endif /* DT_TEST_SIM_VECTORS_H */
