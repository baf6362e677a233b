/* dt/sim.h - the cost model above the collectives: how long a
 * data-parallel step or a pipeline takes, from the time of its compute and
 * of its communication; and how many bytes of activations a transformer
 * layer keeps, and what activation recomputation keeps and recomputes.
 * What a message or a collective algorithm costs on a link is
 * the network model's (dt/net.h: dt_net_ring_allreduce, ..., dt_net_busbw);
 * this layer combines those figures with compute.
 *
 * As in dt/metrics.h, a formula given an argument outside its domain returns
 * NaN and records why (dt_last_error). */
#ifndef DT_SIM_H
#define DT_SIM_H

#include "dt/core.h"
#include "dt/net.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- steps */

/* A data-parallel step: compute then communicate, T = T_comp + T_comm. */
double dt_sim_step_serial(double t_comp, double t_comm);

/* The same step with the gradient communication fully overlapped with the
 * backward pass: T = max(T_comp, T_comm) (the bound that bucketing nears). */
double dt_sim_step_overlapped(double t_comp, double t_comm);

/* The pipeline bubble of a GPipe or 1F1B schedule with p >= 1 stages and
 * m >= 1 micro-batches: the fraction of the time a stage idles,
 * (p - 1) / (m + p - 1). */
double dt_sim_bubble_fraction(int stages, int microbatches);

/* ---------------------------------------------------------------- memory */

/* Bytes of activations one transformer layer keeps for its backward
 * (Korthikanti et al. 2022): sequence length s, micro-batch b, hidden size
 * h, a heads, t tensor-parallel ranks (1: none), sp 1 with sequence
 * parallelism, e bytes per activation element, dropout 1 when the layer
 * has dropout (1-byte masks, and the attention dropout's output). With
 * e = 2 and dropout, the paper's
 *     TP:       sbh (10 + 24/t + 5as/(ht))
 *     TP + SP:  (sbh/t) (34 + 5as/h)
 * and in general sbh (4e + 2d) / (sp ? t : 1) + 12 e sbh / t
 * + a s^2 b (e + d (1 + e)) / t (d = dropout). NaN for a size <= 0, t < 1,
 * e <= 0, or sp or dropout other than 0 and 1. */
double dt_sim_act_bytes_layer(double s, double b, double h, double a, int t, int sp, double e,
                              int dropout);

/* The same for an MLP of width f (the paper's f = 4h): the split region
 * keeps Q, K, V and the projection's input (4 sbh) and the MLP's two
 * f-wide inputs (2 sbf), so it is e sb (4h + 2f) / t, and
 *     sbh (4e + 2d) / (sp ? t : 1) + e sb (4h + 2f) / t + a s^2 b (e + d (1 + e)) / t.
 * dt_sim_act_bytes_layer is this with f = 4h. NaN as there, or for f <= 0. */
double dt_sim_act_bytes_layer_ffn(double s, double b, double h, double a, double f, int t, int sp,
                                  double e, int dropout);

/* The attention scores' share of it, a s^2 b (e + d (1 + e)) / t: what
 * selective recomputation drops and recomputes. NaN for bad arguments. */
double dt_sim_act_bytes_scores(double s, double b, double a, int t, double e, int dropout);

/* ---------------------------------------------------------------- activation recomputation
 * (the literature's "activation checkpointing"; in libdt a checkpoint is
 * saved training state, dt/ckpt.h)
 *
 * A chain of L layers whose outputs all have the same size (chapter 11's
 * deep MLP stack), run by chapter 11's executor: a KEPT output stays in
 * memory from the forward until its layer's backward; a DROPPED one is
 * freed as soon as the next layer has read it and recomputed, once, with
 * the rest of its run of dropped layers, when the backward first needs
 * it. The last layer's output (the logits) is always kept. Figures count
 * layer outputs at the peak, in units of one output, beyond the working
 * set every plan holds (the input, the gradients between layers, the
 * loss's buffers). With a kept outputs in all and runs of dropped layers
 * the peak is
 *     max(a, max over runs of (kept outputs before the run + its length + 1))
 * (the 1: the kept output right after the run, still waiting for its own
 * backward while the run is recomputed). */
typedef struct {
    double peak;       /* layer outputs held at the peak */
    double recomputed; /* layers run a second time, in the backward */
} dt_sim_recompute_cost;

/* k segments, as torch.utils.checkpoint.checkpoint_sequential cuts them:
 * the first k - 1 of s = floor(L / k) layers, the last of the rest; each
 * segment but the last keeps only its last output, the last keeps all of
 * them. Then
 *     recomputed = (k - 1)(s - 1),  peak = k - 1 + L - (k - 1) s = L - recomputed,
 * which for k dividing L is peak = k - 1 + L/k, least at k = sqrt(L):
 * 2 sqrt(L) - 1. k = 1 keeps everything (peak L, nothing recomputed).
 * NaN in both for L < 1 or k outside [1, L]. */
dt_sim_recompute_cost dt_sim_recompute_segments(int L, int k);

/* The least peak any plan reaches on L layers: the smallest M with
 * M (M + 1) / 2 >= L (runs of M - 1, M - 2, ..., 1 dropped layers, each
 * followed by one kept output), about sqrt(2 L); 0 for L < 1. */
int dt_sim_recompute_min_peak(int L);

/* The fewest layers any plan recomputes within a peak of M outputs:
 * max(0, L - M) when M >= dt_sim_recompute_min_peak(L) (each output of memory
 * saves one layer of recomputation); NaN when no plan fits (M below the
 * least peak) or L < 1. */
double dt_sim_recompute_min_layers(int L, double M);

/* The share of a training step spent recomputing: the forward of
 * `recomputed` of L equal layers on top of a step of one forward and a
 * backward that takes bwd_over_fwd times a forward,
 *     overhead = (recomputed / L) / (1 + bwd_over_fwd),
 * 1/3 for one whole extra forward with a backward twice the forward. NaN
 * for L < 1, recomputed outside [0, L] or bwd_over_fwd < 0. */
double dt_sim_recompute_overhead(double recomputed, int L, double bwd_over_fwd);

/* ---------------------------------------------------------------- memory (chapters 08, 09)
 *
 * The model states of data parallelism and of ZeRO's stages (Rajbhandari,
 * Rasley, Ruwase and He, "ZeRO: Memory Optimizations Toward Training
 * Trillion Parameter Models", SC 2020). A convention says what one
 * parameter costs in bytes: p for the copy the forward and backward read,
 * g for its gradient, k for the optimizer's state (with mixed precision k
 * holds the fp32 master copy too). Every figure names its convention:
 *   the paper's mixed precision with Adam   p = 2, g = 2, k = 12   (16 in all)
 *   fp32 with Adam (this workbook's labs)   p = 4, g = 4, k = 8    (16 in all)
 * Buffers, activations and fragmentation are left out, as in the paper. */
typedef struct {
    double p, g, k;
} dt_sim_state_bytes;

dt_sim_state_bytes dt_sim_mixed_precision_adam(void); /* 2, 2, 12 */
dt_sim_state_bytes dt_sim_fp32_adam(void);            /* 4, 4, 8 */

/* Bytes per device of each part of the model states of psi parameters on
 * n devices; total is their sum. */
typedef struct {
    double params, grads, optim, total;
} dt_sim_memory;

/* Stage 0 is data parallelism (every state on every device); stage s
 * partitions the first s of optimizer state, gradients, parameters:
 *   stage 0   (p + g + k) psi
 *   stage 1   (p + g) psi + k psi / n
 *   stage 2   p psi + (g + k) psi / n
 *   stage 3   (p + g + k) psi / n
 * A stage outside 0..3, psi < 0, n < 1 or a negative byte count gives
 * NaN in every field and records why. */
dt_sim_memory dt_sim_zero_memory(int stage, double psi, int n, dt_sim_state_bytes b);

/* Elements of the parameters' size each device sends per step with ring
 * collectives, the unit of the paper's section 7: stages 0 to 2 move
 * 2 psi (n - 1) / n (an allreduce, or a reduce-scatter of the gradients
 * and an allgather of the parameters), stage 3 3 psi (n - 1) / n (the
 * parameters gathered for the forward and again for the backward, and a
 * reduce-scatter of the gradients). Times the element size for bytes. NaN
 * as above. */
double dt_sim_zero_comm_elems(int stage, double psi, int n);

/* ---------------------------------------------------------------- the planner (chapter 13)
 *
 * What one training step of a transformer costs on a cluster, for a
 * layout of tensor (tp), pipeline (pp, vpp) and data (dp) parallelism:
 * memory per device by kind, compute, each communication by group and
 * algorithm, the pipeline bubble, the step time, MFU, and whether it fits.
 * The files say how each term is derived: plan.c (sizes, FLOPs, memory),
 * plan_time.c (times), plan_search.c (every layout of a cluster),
 * presets.c (the clusters and models, with their sources).
 *
 * Ranks are laid out TP innermost, then PP, then DP: rank = tp_rank + tp
 * (pp_rank + pp dp_rank), placed on nodes of per_node devices by block. A
 * group whose ranks all share a node uses the link inside a node; one
 * that spans nodes is priced on the link between nodes (its ring waits
 * for its slowest hop).
 *
 * The core (dt_sim_plan_eval, dt_sim_search_eval, the presets and names)
 * is pure: no I/O, no allocation, no global state, nothing from libc but
 * math, so that it compiles alone (the web book builds it for the page).
 * It reports a bad argument in a dt_sim_bad; dt_sim_plan and
 * dt_sim_search are the same calls recording the message (dt_last_error). */

typedef enum {
    DT_SIM_RECOMPUTE_NONE = 0, /* every activation kept */
    DT_SIM_RECOMPUTE_SELECTIVE, /* the attention scores dropped and recomputed */
    DT_SIM_RECOMPUTE_FULL,      /* only each layer's input kept; the forward run twice */
    DT_SIM_NUM_RECOMPUTE
} dt_sim_recompute;

/* 16-bit types train in mixed precision (2 + 2 + 12 bytes a parameter,
 * dt_sim_mixed_precision_adam); fp32 in 4 + 4 + 8 (dt_sim_fp32_adam). */
typedef enum { DT_SIM_BF16 = 0, DT_SIM_FP16, DT_SIM_FP32, DT_SIM_NUM_DTYPES } dt_sim_dtype;

/* 1F1B (interleaved when vpp > 1) holds at most pp micro-batches on the
 * first stage; GPipe holds all of them. */
typedef enum { DT_SIM_1F1B = 0, DT_SIM_GPIPE, DT_SIM_NUM_SCHEDULES } dt_sim_schedule;

/* A GPT-style decoder: layers blocks of attention (heads heads) and an MLP
 * of width ffn, sequences of seq tokens, a vocabulary of vocab words (the
 * output layer tied to the embedding). dropout 1: after attention, after
 * the MLP and on the attention scores (GPT-3 and Megatron's runs). */
typedef struct {
    int layers, hidden, heads, ffn, seq, vocab;
    int dropout;
} dt_sim_model;

typedef struct {
    int tp, pp, dp;
    int vpp;       /* model chunks per pipeline rank: 1, or > 1 interleaved */
    int sp;        /* 1: sequence parallelism inside the TP group */
    int global_batch, micro_batch; /* sequences per step, per micro-batch */
    dt_sim_recompute recompute;
    int zero;      /* ZeRO stage 0..3 over the DP group */
    dt_sim_dtype dtype;
    dt_sim_schedule schedule;
} dt_sim_layout;

/* A cluster: devices of peak FLOP/s and HBM, per_node of them on a node,
 * the links inside and between nodes (dt_net: one direction of one
 * device's link), and its two tuned figures: the share of peak that
 * matrix multiplies reach and the share of a link's bandwidth that the
 * collectives reach. Memory-bound work runs at the HBM bandwidth. */
typedef struct {
    const char *name;
    const char *topo;        /* lib/net's topology preset these links are */
    double peak16, peak32;   /* dense FLOP/s per device, 16-bit and fp32 */
    double hbm_bytes, hbm_bw; /* per device: bytes, bytes/s */
    int per_node;
    dt_net intra, inter;
    double matmul_eff, net_eff;
} dt_sim_cluster;

/* The presets by name ("dgx-a100-40gb", "dgx-a100-80gb", "dgx-h100",
 * "laptop"), NULL when unknown; dt_sim_cluster_at(i) walks them (NULL
 * past the last). presets.c gives each figure's source. */
const dt_sim_cluster *dt_sim_cluster_preset(const char *name);
const dt_sim_cluster *dt_sim_cluster_at(int i);

/* The models of the published runs by name ("megatron-22b", "gpt3-175b",
 * "mt-nlg-530b", "megatron-1t"), NULL when unknown;
 * dt_sim_model_preset_name(i) walks their names (NULL past the last). */
const dt_sim_model *dt_sim_model_preset(const char *name);
const char *dt_sim_model_preset_name(int i);

/* "none" "selective" "full"; "bf16" "fp16" "fp32"; "1f1b" "gpipe"; NULL
 * out of range. The parsers take those names: -1 when unknown. */
const char *dt_sim_recompute_name(dt_sim_recompute r);
const char *dt_sim_dtype_name(dt_sim_dtype d);
const char *dt_sim_schedule_name(dt_sim_schedule s);
int dt_sim_recompute_parse(const char *name);
int dt_sim_dtype_parse(const char *name);
int dt_sim_schedule_parse(const char *name);

/* Why arguments were refused: field (a field of dt_sim_model,
 * dt_sim_layout, dt_sim_cluster or dt_sim_search_opts, e.g. "tp") = value
 * breaks need (e.g. "must divide heads"); other names the field it was
 * checked against (NULL when none) and other_value its value. */
typedef struct {
    const char *field;
    double value;
    const char *need;
    const char *other;
    double other_value;
} dt_sim_bad;

typedef enum { DT_SIM_GROUP_TP = 0, DT_SIM_GROUP_PP, DT_SIM_GROUP_DP } dt_sim_group;

/* One kind of communication of a step: calls of an algorithm (dt/net.h)
 * on a group of ranks, each moving bytes (n as NCCL counts it), over the
 * link inside a node or between nodes, taking seconds per step in all on
 * the critical path of the slowest stage (the bubble's share apart). */
typedef struct {
    const char *what;
    dt_sim_group group;
    dt_net_algo algo;
    int ranks, inter;
    double bytes, calls, seconds;
} dt_sim_comm;

#define DT_SIM_MAX_COMMS 8

/* What one step costs: step_s = t_compute + t_tp + t_pp + t_bubble + t_dp
 * + t_optimizer (t_pp holds the pipeline's sends and the allgathers of
 * Narayanan et al.'s scatter/gather, which comm lists in the TP group).
 * Memory is the device that holds the most (the first or the last stage).
 * FLOPs are the whole step's: model_flops those of the model (forward and
 * backward), hw_flops with the recomputation on top. */
typedef struct {
    double params;          /* the model's */
    double params_device;   /* on that device's stage */
    int devices, microbatches;
    double inflight;        /* micro-batches of a whole stage held by the first stage */
    double mem_params, mem_grads, mem_optim, mem_acts, mem_bytes;
    int mem_stage;          /* 0: the first stage holds the most; pp - 1: the last */
    int fits;               /* mem_bytes <= the device's HBM */
    double model_flops, hw_flops;
    double t_matmul, t_memory, t_compute; /* t_compute = t_matmul + t_memory */
    dt_sim_comm comm[DT_SIM_MAX_COMMS];
    int ncomm;
    double t_tp, t_pp, t_dp;
    double bubble;          /* (pp - 1) / (vpp m) */
    double t_bubble, t_optimizer;
    double step_s, tokens_per_s;
    double tflops_per_device, hw_tflops_per_device, mfu, hfu;
} dt_sim_cost;

/* Checks the arguments (DT_ERR_INVALID_ARG with *bad filled when one is
 * wrong), then fills *plan. */
dt_result dt_sim_plan_eval(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                           dt_sim_cost *plan, dt_sim_bad *bad);

/* The same, recording "field = value: need (other = value)" for
 * dt_last_error. */
dt_result dt_sim_plan(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_cost *plan);

/* Every layout of devices devices: tp dividing heads and ffn, pp dividing
 * layers, dp the rest (dividing global_batch), each micro-batch size and
 * vpp that divides, sp on and off (tp > 1), ZeRO 0..3 (dp > 1), each
 * recomputation, the 1F1B schedule, in dtype. */
typedef struct {
    int devices, global_batch;
    dt_sim_dtype dtype;
} dt_sim_search_opts;

typedef struct {
    dt_sim_layout layout;
    dt_sim_cost cost;
} dt_sim_ranked;

/* Evaluates every layout and keeps the cap fastest that fit, fastest
 * first (ties: less memory first), in best[0 .. min(cap, *feasible));
 * *feasible counts the layouts that fit, *tried those evaluated. cap may
 * be 0 (count only). DT_ERR_INVALID_ARG with *bad for bad arguments. */
dt_result dt_sim_search_eval(const dt_sim_model *m, const dt_sim_search_opts *o,
                             const dt_sim_cluster *c, dt_sim_ranked *best, int cap,
                             long *feasible, long *tried, dt_sim_bad *bad);
dt_result dt_sim_search(const dt_sim_model *m, const dt_sim_search_opts *o,
                        const dt_sim_cluster *c, dt_sim_ranked *best, int cap, long *feasible,
                        long *tried);

/* ---------------------------------------------------------------- checkpoint interval (chapter 14)
 *
 * A job that checkpoints every tau seconds of work, each checkpoint costing
 * delta seconds (C), restarting in R seconds after a failure, failures
 * arriving as a Poisson process of mean time between failures M (seconds).
 * Every time is in the same unit; the functions take seconds by convention.
 *
 * Young (CACM 1974), to first order:   tau = sqrt(2 delta M).
 * Daly (FGCS 22, 2006), to higher order, for delta < 2M:
 *     tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta,
 * and tau = M for delta >= 2M. NaN for delta or M not > 0 (finite). */
double dt_sim_ckpt_young(double delta, double M);
double dt_sim_ckpt_daly(double delta, double M);

/* Daly's model of the wall time of T_s seconds of work:
 *     T_wall = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau,
 * and the share of it wasted (checkpoints, rework, restarts):
 *     waste = 1 - T_s / T_wall = 1 - tau / (M e^{R/M} (e^{(tau + delta)/M} - 1)).
 * NaN for tau, M not > 0 or delta, R < 0. */
double dt_sim_ckpt_waste(double tau, double delta, double R, double M);

/* A job of n devices, each failing independently with an MTBF of
 * device_mtbf: failures of the job come n times as often, M = device_mtbf / n.
 * NaN for n < 1 or device_mtbf not > 0. */
double dt_sim_job_mtbf(double device_mtbf, int n);

/* The same job run on the modeled clock with failures injected: work
 * seconds of work in intervals of tau, each followed by a checkpoint of
 * delta; failure k comes at dt_failure_time(seed, M, k) (dt/failure.h) of
 * the wall time; a failure loses the work since the last checkpoint
 * committed (a checkpoint cut short commits nothing), then a restart of R
 * (itself cut short by a failure that falls in it). Returns the wall time;
 * *failures (may be NULL) the failures met. NaN for bad arguments. */
double dt_sim_ckpt_run(double work, double tau, double delta, double R, double M, uint64_t seed,
                       long *failures);

/* ---------------------------------------------------------------- stragglers (chapter 14, section 9)
 *
 * Synchronous data-parallel steps on the modeled clock: a global batch of
 * B samples, a sample costing sample_s / speed of compute on a worker of
 * that speed, then a ring allreduce of grad_bytes among the workers whose
 * gradients the step uses (dt_net_ring_allreduce on link). A worker's
 * speed is 1, but slow_rank's is slow_speed every step, and each worker's
 * is slow_speed at each step with probability p_slow (drawn from seed,
 * one stream a worker). The policies:
 *   WAIT_ALL  K workers of B / K samples; the step waits for the slowest:
 *             max_i b_i sample_s / speed_i.
 *   BACKUP    K + extra workers of B / K samples (Chen et al., 2016); the
 *             step takes the first K gradients (equal times: in turn from
 *             worker step mod (K + extra) on, so none is always last) and
 *             drops the rest: their samples are lost, the mean is over the
 *             K B / K = B that arrived.
 *   DROP      K workers; the step takes the first K - extra gradients:
 *             B (K - extra) / K samples a step, their mean.
 *   ADAPTIVE  K workers, b_i = B speed_i / sum_j speed_j of the speeds
 *             measured at the step before (equal shares at the first),
 *             rounded by largest remainder, each at least 1; every sample
 *             counts, with the weights b_i / B.
 * B must be a multiple of K; extra < K for DROP. */
typedef enum {
    DT_STRAGGLE_WAIT_ALL,
    DT_STRAGGLE_BACKUP,
    DT_STRAGGLE_DROP,
    DT_STRAGGLE_ADAPTIVE,
    DT_NUM_STRAGGLE
} dt_sim_straggle_policy;

typedef struct {
    int workers;       /* K, 1 .. 1024 */
    int extra;         /* BACKUP: spare workers; DROP: gradients not waited for */
    int batch;         /* B */
    double sample_s;   /* one sample's compute at speed 1 (> 0) */
    double grad_bytes; /* the gradient's bytes (>= 0) */
    dt_net link;       /* its allreduce's link */
    int slow_rank;     /* -1: none */
    double slow_speed; /* in (0, 1] */
    double p_slow;     /* in [0, 1] */
    uint64_t seed;
    int steps;         /* >= 1 */
} dt_sim_straggle;

typedef struct {
    double step_s;    /* mean over the steps: compute waited for + allreduce */
    double compute_s; /* mean of the compute waited for */
    double used;      /* mean samples in a step's update */
    double computed;  /* mean samples computed a step, the dropped included */
    double share_min, share_max; /* over the workers: of the samples dealt to
                                    one, the fraction that reached an update */
} dt_sim_straggle_out;

/* The policy's figures over s->steps steps. DT_ERR_INVALID_ARG naming a
 * bad field. */
dt_result dt_sim_stragglers(const dt_sim_straggle *s, dt_sim_straggle_policy p,
                            dt_sim_straggle_out *out);
const char *dt_sim_straggle_name(dt_sim_straggle_policy p);

#ifdef __cplusplus
}
#endif

#endif /* DT_SIM_H */
