/* presets.c - the planner's clusters, with the source of every figure;
 * the published models; and the names of its choices (dt/sim.h, "the
 * planner").
 *
 * A cluster is datasheet figures plus two tuned ones. Per device: dense
 * FLOP/s for 16-bit and fp32 math, HBM bytes and bandwidth. Per node:
 * devices, and one direction of one device's link inside the node and to
 * other nodes (alpha, beta as dt/net.h counts them; every DGX gives each
 * GPU its own InfiniBand adapter). The links are lib/net's topology
 * presets of the same name (topo): the same alpha and beta.
 *
 * The tuned figures. matmul_eff, the share of peak that a step's matrix
 * multiplies reach, was fitted on ONE published run (Korthikanti et al.
 * 2022, Table 5: GPT 175B with full recomputation on 64 A100s, 18.13 s a
 * step) and is the same for every other run the tests predict
 * (tests/lib/test_sim_published.c). net_eff, the share of a link's
 * bandwidth the collectives reach, is nccl-tests' measured allreduce bus
 * bandwidth over the NVLink peak on 8 A100 SXM4 (about 208 GB/s of 300,
 * NVIDIA/nccl-tests issue 178; 200 GB/s in issue 149): 0.7. The H100 and
 * laptop figures carry them over: no published run of those was used. */
#include "dt/sim.h"

#define GIB 1073741824.0

static const dt_sim_cluster presets[] = {
    /* NVIDIA DGX A100 (datasheet and "Defining AI Innovation with DGX
     * A100", NVIDIA developer blog, 2020): 8 A100 SXM4 joined by six
     * NVSwitches, 600 GB/s GPU to GPU both ways (300 a way); 8 single-port
     * ConnectX-6 HDR InfiniBand adapters, 200 Gb/s = 25 GB/s a way each.
     * A100 datasheet: BF16/FP16 Tensor Core 312 TFLOP/s dense (624 with
     * sparsity), FP32 19.5 TFLOP/s; 40 GB HBM2 at 1,555 GB/s (the device
     * reports 40,960 MiB). Alpha: lib/net's nvlink and ib200 presets. */
    {"dgx-a100-40gb", "dgx-a100", 312e12, 19.5e12, 40 * GIB, 1555e9, 8,
     {1e-6, 300e9, 0}, {1.5e-6, 25e9, 0}, 0.6846, 0.7},
    /* The same with A100 80GB: 80 GB HBM2e at 2,039 GB/s (81,920 MiB).
     * Selene, where the published runs ran, is made of these. */
    {"dgx-a100-80gb", "dgx-a100", 312e12, 19.5e12, 80 * GIB, 2039e9, 8,
     {1e-6, 300e9, 0}, {1.5e-6, 25e9, 0}, 0.6846, 0.7},
    /* NVIDIA DGX H100 (datasheet): 8 H100 SXM5, fourth-generation NVLink
     * through NVSwitch, 900 GB/s GPU to GPU both ways (450 a way); 8
     * ConnectX-7 adapters, 400 Gb/s NDR = 50 GB/s a way each. H100 SXM
     * datasheet: BF16 Tensor Core 1,979 TFLOP/s with sparsity, 989 dense;
     * FP32 67 TFLOP/s; 80 GB HBM3 at 3.35 TB/s. */
    {"dgx-h100", "dgx-h100", 989e12, 67e12, 80 * GIB, 3.35e12, 8,
     {1e-6, 450e9, 0}, {1.5e-6, 50e9, 0}, 0.6846, 0.7},
    /* A laptop of 8 Zen 4 cores, each core a "device" (the emulator's
     * ranks): two 256-bit FMA pipes a core (AMD's Zen 4 software
     * optimization guide) = 32 fp32 FLOP a cycle, 128 GFLOP/s at 4 GHz;
     * AVX-512 BF16 dot products twice that. 16 GiB of dual-channel
     * DDR5-5600 (89.6 GB/s) shared by the 8: 2 GiB and 11.2 GB/s each.
     * Links: lib/net's laptop topology (shm inside, 1 Gb Ethernet
     * between laptops). Its efficiencies are not tuned on any run: lab 13
     * measures the emulator against them. */
    {"laptop", "laptop", 256e9, 128e9, 2 * GIB, 11.2e9, 8,
     {0.3e-6, 5.6e9, 0}, {30e-6, 125e6, 0}, 0.5, 1.0},
};

#define NUM_PRESETS ((int)(sizeof presets / sizeof presets[0]))

/* strcmp, here so that the core needs nothing from libc but math */
static int same(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

const dt_sim_cluster *dt_sim_cluster_at(int i)
{
    return i >= 0 && i < NUM_PRESETS ? &presets[i] : 0;
}

const dt_sim_cluster *dt_sim_cluster_preset(const char *name)
{
    for (int i = 0; i < NUM_PRESETS; i++)
        if (same(name, presets[i].name))
            return &presets[i];
    return 0;
}

/* The models of the published runs that tests/lib/test_sim_published.c
 * predicts: sequences of 2,048 tokens, a vocabulary of 51,200 (GPT-2's,
 * padded), the MLP 4h wide, with dropout. */
static const struct {
    const char *name;
    dt_sim_model model;
} models[] = {
    /* Korthikanti et al. 2022, Table 3 */
    {"megatron-22b", {48, 6144, 64, 4 * 6144, 2048, 51200, 1}},
    /* GPT-3 (Brown et al. 2020, Table 2.1); Korthikanti et al.'s 175B */
    {"gpt3-175b", {96, 12288, 96, 4 * 12288, 2048, 51200, 1}},
    /* Megatron-Turing NLG (Smith et al. 2022); Korthikanti et al.'s 530B */
    {"mt-nlg-530b", {105, 20480, 128, 4 * 20480, 2048, 51200, 1}},
    /* Narayanan et al. 2021, Table 1's last row; Korthikanti et al.'s 1T */
    {"megatron-1t", {128, 25600, 160, 4 * 25600, 2048, 51200, 1}},
};

#define NUM_MODELS ((int)(sizeof models / sizeof models[0]))

const dt_sim_model *dt_sim_model_preset(const char *name)
{
    for (int i = 0; i < NUM_MODELS; i++)
        if (same(name, models[i].name))
            return &models[i].model;
    return 0;
}

const char *dt_sim_model_preset_name(int i) { return i >= 0 && i < NUM_MODELS ? models[i].name : 0; }

static const char *const recompute_names[DT_SIM_NUM_RECOMPUTE] = {"none", "selective", "full"};
static const char *const dtype_names[DT_SIM_NUM_DTYPES] = {"bf16", "fp16", "fp32"};
static const char *const schedule_names[DT_SIM_NUM_SCHEDULES] = {"1f1b", "gpipe"};

static int find(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (same(name, names[i]))
            return i;
    return -1;
}

const char *dt_sim_recompute_name(dt_sim_recompute r)
{
    return (int)r >= 0 && r < DT_SIM_NUM_RECOMPUTE ? recompute_names[r] : 0;
}

const char *dt_sim_dtype_name(dt_sim_dtype d)
{
    return (int)d >= 0 && d < DT_SIM_NUM_DTYPES ? dtype_names[d] : 0;
}

const char *dt_sim_schedule_name(dt_sim_schedule s)
{
    return (int)s >= 0 && s < DT_SIM_NUM_SCHEDULES ? schedule_names[s] : 0;
}

int dt_sim_recompute_parse(const char *name)
{
    return find(recompute_names, DT_SIM_NUM_RECOMPUTE, name);
}

int dt_sim_dtype_parse(const char *name) { return find(dtype_names, DT_SIM_NUM_DTYPES, name); }

int dt_sim_schedule_parse(const char *name)
{
    return find(schedule_names, DT_SIM_NUM_SCHEDULES, name);
}
