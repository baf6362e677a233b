/* plan_time.c - the planner's times: compute, each communication, the
 * bubble and the step (dt/sim.h, "the planner"; chapter 13).
 *
 * THE STEP. A pipeline of p stages runs m micro-batches; with v model
 * chunks a rank (interleaving) its fill and drain shrink v-fold
 * (Narayanan et al. 2021, 2.2): the step takes
 *     m T_max + (p - 1)/v T_mean + T_dp + T_opt
 * where T_max is one micro-batch on the slowest stage (the last: it also
 * runs the output layer) and T_mean on the average stage, both counting
 * compute, the TP collectives and the pipeline's sends; T_dp the data-
 * parallel (or ZeRO) communication after the pipeline drains, not
 * overlapped (as in the published Megatron runs); T_opt the optimizer.
 * The bubble is (p - 1) / (v m) of the ideal time.
 *
 * COMPUTE. A layer's matrix multiplies take FLOPs / (peak x matmul_eff)
 * (plan.c gives the FLOPs); its element-wise operations are bound by
 * memory and take bytes / hbm_bw. Per layer and micro-batch, counting the
 * bytes each fused kernel of Megatron reads and writes, with R = sbh (or
 * sbh / t under SP: the part that TP replicates), e bytes an element, d
 * the dropout (1-byte masks):
 *   forward   layernorm x2        read x, write y             4e R
 *             bias-dropout-add x2 read 2, write 1, mask       2 (3e + d) R
 *             bias-GeLU           read, write (s b f / t)     2e sbf / t
 *             softmax             read, write (a s^2 b / t)   2e as^2b / t
 *             score dropout       read, write, mask           d (2e + 1) as^2b / t
 *   backward  layernorm x2        read x, dy, write dx        6e R
 *             dropout-add x2      read dy, mask, write dx     2d (2e + 1) R
 *             GeLU                read x, dy, write dx        3e sbf / t
 *             softmax             read y, dy, write dx        3e as^2b / t
 *             score dropout       read dy, mask, write dx     d (2e + 1) as^2b / t
 * Full recomputation runs the forward again (FLOPs, bytes and its TP
 * collectives); selective the scores' softmax and dropout and the two
 * score matrix multiplies (4 b s^2 h / t FLOPs).
 *
 * COMMUNICATION, each on its group's link with beta x net_eff (dt/net.h's
 * closed forms; n = s b h e, one micro-batch's activation):
 *   TP, per layer and micro-batch (Megatron: f and g of each block):
 *     without SP  allreduce of n: 2 forward + 2 backward (+ 2 recomputed)
 *     with SP     allgather and reduce-scatter of n in their place; the
 *                 backward gathers the layernorm outputs again for the
 *                 weight gradients (2 allgathers) unless recomputation did
 *   PP, per micro-batch: each rank receives its input and sends its output
 *     forward, and the gradients backward, v times with interleaving: 2v
 *     transfers of n / t (each TP rank sends its share: the activation is
 *     split under SP, else Narayanan et al.'s scatter/gather, which then
 *     gathers the whole inside the node: an allgather of n)
 *   DP, per step, of the stage's parameters P:
 *     ZeRO 0      allreduce of the gradients (P g bytes)
 *     ZeRO 1      reduce-scatter of the gradients, allgather of the
 *                 updated parameters (P g and P p bytes: an allreduce's time)
 *     ZeRO 2      the same, but the gradients are reduce-scattered after
 *                 each micro-batch's backward: no device may hold them
 *                 whole, so accumulating m micro-batches costs m of them
 *     ZeRO 3      per micro-batch: the parameters gathered for the forward
 *                 and again for the backward, the gradients reduce-scattered
 * OPTIMIZER: Adam reads and writes its state, reads the gradient and
 * writes the parameter, (2k + g + p) bytes a parameter it owns (a 1/d
 * share under ZeRO), at HBM bandwidth. */
#include "plan.h"

#include <math.h>

/* The time of one call of algo on a group of k ranks over link at
 * beta x net_eff. */
static double coll(dt_net_algo algo, const dt_net *link, double net_eff, double n, int k)
{
    if (k <= 1 && algo != DT_NET_P2P)
        return 0;
    dt_net at = *link;
    at.beta *= net_eff;
    return dt_net_cost(algo, &at, n, k);
}

/* Adds calls of algo (each time_one) to the plan's list; returns their time. */
static double add_comm(dt_sim_cost *plan, const char *what, dt_sim_group g, dt_net_algo algo,
                       int ranks, int inter, double bytes, double calls, double time_one)
{
    if (calls <= 0 || plan->ncomm >= DT_SIM_MAX_COMMS)
        return 0;
    dt_sim_comm *c = &plan->comm[plan->ncomm++];
    c->what = what, c->group = g, c->algo = algo, c->ranks = ranks, c->inter = inter;
    c->bytes = bytes, c->calls = calls, c->seconds = calls * time_one;
    return c->seconds;
}

/* One micro-batch's compute on one stage, split into matrix multiplies
 * and memory-bound work. */
typedef struct {
    double matmul, memory;
} stage_time;

static stage_time layer_compute(const dt_sim_layout *l, const dt_sim_cluster *c,
                                const dt_sim_dims *k)
{
    double s = k->s, b = k->b, h = k->h, f = k->f, t = k->t, e = k->e, d = k->dropout;
    double flops_mm = 2 * b * s * (4 * h * h + 2 * h * f) / t; /* the weights' */
    double flops_scores = 4 * b * s * s * h / t;                /* QK^T, scores x V */
    double fwd = flops_mm + flops_scores;
    double R = s * b * h / (l->sp ? t : 1), sbf = s * b * f / t, as2b = k->a * s * s * b / t;
    double scores_fwd = as2b * (2 * e + d * (2 * e + 1));
    double fwd_bytes = R * (10 * e + 2 * d) + 2 * e * sbf + scores_fwd;
    double bwd_bytes = R * (6 * e + 2 * d * (2 * e + 1)) + 3 * e * sbf +
                       as2b * (3 * e + d * (2 * e + 1));
    double flops = 3 * fwd, bytes = fwd_bytes + bwd_bytes;
    if (l->recompute == DT_SIM_RECOMPUTE_FULL)
        flops += fwd, bytes += fwd_bytes;
    else if (l->recompute == DT_SIM_RECOMPUTE_SELECTIVE)
        flops += flops_scores, bytes += scores_fwd;
    stage_time st = {flops / (k->peak * c->matmul_eff), bytes / c->hbm_bw};
    return st;
}

/* TP collectives of one micro-batch on one stage; added to the plan's
 * list for the m micro-batches of a step. */
static double tp_time(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                      dt_sim_cost *plan)
{
    if (l->tp == 1)
        return 0;
    const dt_net *link = k->tp_inter ? &c->inter : &c->intra;
    double n = k->s * k->b * k->h * k->e, per_mb = 0, layers = k->layers_stage;
    int full = l->recompute == DT_SIM_RECOMPUTE_FULL;
    if (!l->sp) {
        double t1 = coll(DT_NET_RING_ALLREDUCE, link, c->net_eff, n, l->tp), calls = 4 + 2 * full;
        add_comm(plan, full ? "allreduce: 2 forward, 2 backward, 2 recomputed a layer"
                            : "allreduce: 2 forward, 2 backward a layer",
                 DT_SIM_GROUP_TP, DT_NET_RING_ALLREDUCE, l->tp, k->tp_inter, n,
                 k->m * layers * calls, t1);
        return layers * calls * t1;
    }
    double ag = coll(DT_NET_RING_ALLGATHER, link, c->net_eff, n, l->tp);
    double rs = coll(DT_NET_RING_REDUCE_SCATTER, link, c->net_eff, n, l->tp);
    double ag_calls = 6, rs_calls = 4 + 2 * full;
    add_comm(plan, full ? "allgather: 2 forward, 2 backward, 2 recomputed a layer"
                        : "allgather: 2 forward, 2 backward, 2 again for weight gradients",
             DT_SIM_GROUP_TP, DT_NET_RING_ALLGATHER, l->tp, k->tp_inter, n,
             k->m * layers * ag_calls, ag);
    add_comm(plan, full ? "reduce-scatter: 2 forward, 2 backward, 2 recomputed a layer"
                        : "reduce-scatter: 2 forward, 2 backward a layer",
             DT_SIM_GROUP_TP, DT_NET_RING_REDUCE_SCATTER, l->tp, k->tp_inter, n,
             k->m * layers * rs_calls, rs);
    per_mb = layers * (ag_calls * ag + rs_calls * rs);
    return per_mb;
}

/* The pipeline's transfers of one micro-batch on one rank. */
static double pp_time(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                      dt_sim_cost *plan)
{
    if (l->pp == 1)
        return 0;
    const dt_net *link = k->pp_inter ? &c->inter : &c->intra;
    double n = k->s * k->b * k->h * k->e, calls = 2 * k->v;
    double p2p = coll(DT_NET_P2P, link, c->net_eff, n / k->t, 2);
    double per_mb = calls * p2p;
    add_comm(plan, "send/recv of an activation or its gradient, each TP rank its 1/tp",
             DT_SIM_GROUP_PP, DT_NET_P2P, 2, k->pp_inter, n / k->t, k->m * calls, p2p);
    if (l->tp > 1 && !l->sp) {
        const dt_net *tl = k->tp_inter ? &c->inter : &c->intra;
        double ag = coll(DT_NET_RING_ALLGATHER, tl, c->net_eff, n, l->tp);
        add_comm(plan, "allgather of each received share (scatter/gather)", DT_SIM_GROUP_TP,
                 DT_NET_RING_ALLGATHER, l->tp, k->tp_inter, n, k->m * calls, ag);
        per_mb += calls * ag;
    }
    return per_mb;
}

/* Data-parallel communication of a step, on the stage with the most
 * parameters. */
static double dp_time(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                      dt_sim_cost *plan)
{
    if (l->dp == 1)
        return 0;
    const dt_net *link = k->dp_inter ? &c->inter : &c->intra;
    double P = plan->params_device, g = P * k->bytes.g, p = P * k->bytes.p, t = 0;
    int d = l->dp, in = k->dp_inter;
    double ar = coll(DT_NET_RING_ALLREDUCE, link, c->net_eff, g, d);
    double rs = coll(DT_NET_RING_REDUCE_SCATTER, link, c->net_eff, g, d);
    double ag = coll(DT_NET_RING_ALLGATHER, link, c->net_eff, p, d);
    switch (l->zero) {
    case 0:
        t += add_comm(plan, "allreduce of the gradients", DT_SIM_GROUP_DP, DT_NET_RING_ALLREDUCE,
                      d, in, g, 1, ar);
        break;
    case 1:
        t += add_comm(plan, "reduce-scatter of the gradients", DT_SIM_GROUP_DP,
                      DT_NET_RING_REDUCE_SCATTER, d, in, g, 1, rs);
        t += add_comm(plan, "allgather of the updated parameters", DT_SIM_GROUP_DP,
                      DT_NET_RING_ALLGATHER, d, in, p, 1, ag);
        break;
    case 2:
        t += add_comm(plan, "reduce-scatter of each micro-batch's gradients", DT_SIM_GROUP_DP,
                      DT_NET_RING_REDUCE_SCATTER, d, in, g, k->m, rs);
        t += add_comm(plan, "allgather of the updated parameters", DT_SIM_GROUP_DP,
                      DT_NET_RING_ALLGATHER, d, in, p, 1, ag);
        break;
    default:
        t += add_comm(plan, "allgather of the parameters, forward and backward of each "
                            "micro-batch", DT_SIM_GROUP_DP, DT_NET_RING_ALLGATHER, d, in, p,
                      2 * k->m, ag);
        t += add_comm(plan, "reduce-scatter of each micro-batch's gradients", DT_SIM_GROUP_DP,
                      DT_NET_RING_REDUCE_SCATTER, d, in, g, k->m, rs);
    }
    return t;
}

void dt_sim_plan_times(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                       dt_sim_cost *plan)
{
    stage_time layer = layer_compute(l, c, k);
    /* the output layer's logits, forward and backward, on the last stage */
    double logits = 3 * 2 * k->b * k->s * k->h * k->V / k->t / (k->peak * c->matmul_eff);
    double stage = k->layers_stage * (layer.matmul + layer.memory);
    double last = stage + logits;
    double mean = ((k->p - 1) * stage + last) / k->p;

    double tp_mb = tp_time(l, c, k, plan);
    double pp_mb = pp_time(l, c, k, plan);
    plan->t_tp = k->m * tp_mb;
    plan->t_pp = k->m * pp_mb;
    plan->t_matmul = k->m * (k->layers_stage * layer.matmul + logits);
    plan->t_memory = k->m * k->layers_stage * layer.memory;
    plan->t_compute = plan->t_matmul + plan->t_memory; /* m x the last stage */
    plan->bubble = (k->p - 1) / (k->v * k->m);
    plan->t_bubble = (k->p - 1) / k->v * (mean + tp_mb + pp_mb);
    plan->t_dp = dp_time(l, c, k, plan);
    double owned = plan->params_device / (l->zero >= 1 ? k->d : 1);
    plan->t_optimizer = owned * (2 * k->bytes.k + k->bytes.g + k->bytes.p) / c->hbm_bw;

    plan->step_s = plan->t_compute + plan->t_tp + plan->t_pp + plan->t_bubble + plan->t_dp +
                   plan->t_optimizer;
    double devices = plan->devices;
    plan->tokens_per_s = k->B * k->s / plan->step_s;
    plan->tflops_per_device = plan->model_flops / plan->step_s / devices / 1e12;
    plan->hw_tflops_per_device = plan->hw_flops / plan->step_s / devices / 1e12;
    plan->mfu = plan->tflops_per_device * 1e12 / k->peak;
    plan->hfu = plan->hw_tflops_per_device * 1e12 / k->peak;
}
