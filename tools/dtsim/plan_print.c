/* plan_print.c - one planned step as a table (the default), as JSON
 * (--json) or term by term with each formula (--explain). The numbers are
 * the library's (dt_sim_plan); the formulas printed beside them are those
 * of lib/sim/plan.c and plan_time.c, where each is derived. */
#include "dtsim.h"

#include <math.h>

#define GIB 1073741824.0

static const char *group_name(dt_sim_group g)
{
    return g == DT_SIM_GROUP_TP ? "tp" : g == DT_SIM_GROUP_PP ? "pp" : "dp";
}

static void print_header(const dtsim_opts *o, const dt_sim_cost *k)
{
    const dt_sim_model *m = &o->model;
    const dt_sim_layout *l = &o->layout;
    printf("model: %s%s%d layers, hidden %d, %d heads, ffn %d, seq %d, vocab %d%s: %.4g B "
           "parameters\n",
           o->model_name ? o->model_name : "", o->model_name ? ", " : "", m->layers, m->hidden,
           m->heads, m->ffn, m->seq, m->vocab, m->dropout ? ", dropout" : "", k->params / 1e9);
    printf("layout: tp %d x pp %d x dp %d = %d devices of %s; vpp %d, sp %s, micro-batch %d, "
           "%d micro-batches of global batch %d\n",
           l->tp, l->pp, l->dp, k->devices, o->cluster->name, l->vpp, l->sp ? "on" : "off",
           l->micro_batch, k->microbatches, l->global_batch);
    printf("        recompute %s, ZeRO %d, %s, %s\n", dt_sim_recompute_name(l->recompute), l->zero,
           dt_sim_dtype_name(l->dtype), dt_sim_schedule_name(l->schedule));
}

void dtsim_print_text(const dtsim_opts *o, const dt_sim_cost *k)
{
    print_header(o, k);
    printf("\nmemory per device (pipeline stage %d, %.4g B parameters)      GiB\n", k->mem_stage,
           k->params_device / 1e9);
    printf("  parameters                                        %10.2f\n", k->mem_params / GIB);
    printf("  gradients                                         %10.2f\n", k->mem_grads / GIB);
    printf("  optimizer state                                   %10.2f\n", k->mem_optim / GIB);
    printf("  activations (%5.1f micro-batches in flight)        %10.2f\n", k->inflight,
           k->mem_acts / GIB);
    printf("  total                                             %10.2f of %.2f: %s\n",
           k->mem_bytes / GIB, o->cluster->hbm_bytes / GIB, k->fits ? "fits" : "DOES NOT FIT");
    printf("\ntime per step                                              s\n");
    printf("  compute: matrix multiplies                        %10.4f\n", k->t_matmul);
    printf("           memory-bound operations                  %10.4f\n", k->t_memory);
    for (int i = 0; i < k->ncomm; i++) {
        const dt_sim_comm *c = &k->comm[i];
        printf("  %s %-22s %3d ranks %s %9.3g B x %-8.0f %10.4f\n", group_name(c->group),
               dt_net_algo_name(c->algo), c->ranks, c->inter ? "inter" : "intra", c->bytes,
               c->calls, c->seconds);
        printf("     (%s)\n", c->what);
    }
    printf("  bubble: (p - 1)/(v m) = %.4f of the ideal         %10.4f\n", k->bubble, k->t_bubble);
    printf("  optimizer step                                    %10.4f\n", k->t_optimizer);
    printf("  step                                              %10.4f\n", k->step_s);
    printf("\n%.6g tokens/s; model %.4g TFLOP/s per device, MFU %.1f%%; with recomputation "
           "%.4g TFLOP/s, HFU %.1f%%\n",
           k->tokens_per_s, k->tflops_per_device, 100 * k->mfu, k->hw_tflops_per_device,
           100 * k->hfu);
}

void dtsim_print_json(const dtsim_opts *o, const dt_sim_cost *k)
{
    const dt_sim_model *m = &o->model;
    const dt_sim_layout *l = &o->layout;
    printf("{\n  \"cluster\": \"%s\",\n", o->cluster->name);
    printf("  \"model\": {\"layers\": %d, \"hidden\": %d, \"heads\": %d, \"ffn\": %d, \"seq\": %d, "
           "\"vocab\": %d, \"dropout\": %d},\n",
           m->layers, m->hidden, m->heads, m->ffn, m->seq, m->vocab, m->dropout);
    printf("  \"layout\": {\"tp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, \"sp\": %d, "
           "\"global_batch\": %d, \"micro_batch\": %d, \"recompute\": \"%s\", \"zero\": %d, "
           "\"dtype\": \"%s\", \"schedule\": \"%s\"},\n",
           l->tp, l->pp, l->dp, l->vpp, l->sp, l->global_batch, l->micro_batch,
           dt_sim_recompute_name(l->recompute), l->zero, dt_sim_dtype_name(l->dtype),
           dt_sim_schedule_name(l->schedule));
    printf("  \"devices\": %d,\n  \"microbatches\": %d,\n  \"params\": %.17g,\n"
           "  \"params_device\": %.17g,\n",
           k->devices, k->microbatches, k->params, k->params_device);
    printf("  \"mem\": {\"params\": %.17g, \"grads\": %.17g, \"optim\": %.17g, \"acts\": %.17g},\n",
           k->mem_params, k->mem_grads, k->mem_optim, k->mem_acts);
    printf("  \"mem_bytes\": %.17g,\n  \"mem_stage\": %d,\n  \"inflight\": %.17g,\n"
           "  \"fits\": %s,\n",
           k->mem_bytes, k->mem_stage, k->inflight, k->fits ? "true" : "false");
    printf("  \"model_flops\": %.17g,\n  \"hw_flops\": %.17g,\n", k->model_flops, k->hw_flops);
    printf("  \"compute_s\": %.17g,\n  \"matmul_s\": %.17g,\n  \"memory_s\": %.17g,\n",
           k->t_compute, k->t_matmul, k->t_memory);
    printf("  \"comm\": [");
    for (int i = 0; i < k->ncomm; i++) {
        const dt_sim_comm *c = &k->comm[i];
        printf("%s\n    {\"group\": \"%s\", \"algo\": \"%s\", \"ranks\": %d, \"link\": \"%s\", "
               "\"bytes\": %.17g, \"calls\": %.17g, \"seconds\": %.17g, \"what\": \"%s\"}",
               i ? "," : "", group_name(c->group), dt_net_algo_name(c->algo), c->ranks,
               c->inter ? "inter" : "intra", c->bytes, c->calls, c->seconds, c->what);
    }
    printf("\n  ],\n  \"tp_s\": %.17g,\n  \"pp_s\": %.17g,\n  \"dp_s\": %.17g,\n", k->t_tp,
           k->t_pp, k->t_dp);
    printf("  \"bubble\": %.17g,\n  \"bubble_s\": %.17g,\n  \"optimizer_s\": %.17g,\n", k->bubble,
           k->t_bubble, k->t_optimizer);
    printf("  \"step_s\": %.17g,\n  \"tokens_per_s\": %.17g,\n  \"tflops_per_device\": %.17g,\n"
           "  \"hw_tflops_per_device\": %.17g,\n  \"mfu\": %.17g,\n  \"hfu\": %.17g\n}\n",
           k->step_s, k->tokens_per_s, k->tflops_per_device, k->hw_tflops_per_device, k->mfu,
           k->hfu);
}

static const char *closed_form(dt_net_algo a)
{
    switch (a) {
    case DT_NET_RING_ALLREDUCE:
        return "2 (k-1) (alpha + n / (k beta eff))";
    case DT_NET_RING_ALLGATHER:
    case DT_NET_RING_REDUCE_SCATTER:
        return "(k-1) (alpha + n / (k beta eff))";
    case DT_NET_P2P:
        return "(alpha + n / (beta eff))";
    default:
        return "dt/net.h";
    }
}

void dtsim_print_explain(const dtsim_opts *o, const dt_sim_cost *k)
{
    const dt_sim_model *m = &o->model;
    const dt_sim_layout *l = &o->layout;
    const dt_sim_cluster *c = o->cluster;
    int fp32 = l->dtype == DT_SIM_FP32;
    double peak = fp32 ? c->peak32 : c->peak16;
    print_header(o, k);
    printf("\nl %d, h %d, a %d, f %d, s %d, V %d; t %d, p %d, d %d, v %d, b %d, B %d; "
           "e %d bytes; p g k = %s\n",
           m->layers, m->hidden, m->heads, m->ffn, m->seq, m->vocab, l->tp, l->pp, l->dp, l->vpp,
           l->micro_batch, l->global_batch, fp32 ? 4 : 2, fp32 ? "4 4 8" : "2 2 12");
    printf("\nsizes\n");
    printf("  m = B / (d b)                                             = %d micro-batches\n",
           k->microbatches);
    printf("  params = l (4h^2 + 2hf + f + 9h) + Vh + sh + 2h           = %.6g\n", k->params);
    printf("  P_stage = (l/p) ((4h^2 + 2hf + 3h + f)/t + 6h) + ends     = %.6g (stage %d)\n",
           k->params_device, k->mem_stage);
    printf("\nmemory per device (stage %d)\n", k->mem_stage);
    printf("  parameters  = p P_stage / (ZeRO >= 3 ? d : 1)              = %.4f GiB\n",
           k->mem_params / GIB);
    printf("  gradients   = g P_stage / (ZeRO >= 2 ? d : 1)              = %.4f GiB\n",
           k->mem_grads / GIB);
    printf("  optimizer   = k P_stage / (ZeRO >= 1 ? d : 1)              = %.4f GiB\n",
           k->mem_optim / GIB);
    printf("  activations = layers in flight x kept a layer (+ ends)     = %.4f GiB\n"
           "                (%.2f micro-batches of the stage in flight; kept: Korthikanti's\n"
           "                sbh (4e + 2d)/(sp ? t : 1) + e sb (4h + 2f)/t + as^2b (e + d(1+e))/t,\n"
           "                less the scores when selective, e sbh when full)\n",
           k->mem_acts / GIB, k->inflight);
    printf("  total                                                     = %.4f GiB of %.2f: %s\n",
           k->mem_bytes / GIB, c->hbm_bytes / GIB, k->fits ? "fits" : "does not fit");
    printf("\ncompute\n");
    printf("  model FLOPs = 3 B s (l (8h^2 + 4hf + 4sh) + 2hV)           = %.6g\n", k->model_flops);
    printf("  hardware FLOPs = model + B s l (full: 8h^2 + 4hf + 4sh; selective: 4sh)"
           " = %.6g\n", k->hw_flops);
    printf("  t_matmul = m (last stage's FLOPs) / (peak x matmul_eff)    = %.6g s "
           "(peak %.4g, eff %.4g)\n", k->t_matmul, peak, c->matmul_eff);
    printf("  t_memory = m (l/p) (element-wise bytes) / hbm_bw            = %.6g s "
           "(hbm_bw %.4g B/s)\n", k->t_memory, c->hbm_bw);
    printf("\ncommunication (per step, the slowest stage; eff = net_eff %.3g)\n", c->net_eff);
    for (int i = 0; i < k->ncomm; i++) {
        const dt_sim_comm *x = &k->comm[i];
        const dt_net *link = x->inter ? &c->inter : &c->intra;
        printf("  %s %s, k = %d over the %s link (alpha %.3g s, beta %.4g B/s), n = %.6g B\n",
               group_name(x->group), dt_net_algo_name(x->algo), x->ranks,
               x->inter ? "inter-node" : "intra-node", link->alpha, link->beta, x->bytes);
        printf("     %.6g calls x %s = %.6g s   (%s)\n", x->calls, closed_form(x->algo),
               x->seconds, x->what);
    }
    printf("\npipeline\n");
    printf("  bubble = (p - 1) / (v m)                                  = %.6g\n", k->bubble);
    printf("  t_bubble = (p - 1) / v x T_mean (a micro-batch on the average stage) = %.6g s\n",
           k->t_bubble);
    printf("\n  t_optimizer = P_owned (2k + g + p) / hbm_bw                = %.6g s\n",
           k->t_optimizer);
    printf("\nstep = t_matmul + t_memory + t_tp + t_pp + t_bubble + t_dp + t_optimizer\n"
           "     = %.6g + %.6g + %.6g + %.6g + %.6g + %.6g + %.6g = %.6g s\n",
           k->t_matmul, k->t_memory, k->t_tp, k->t_pp, k->t_bubble, k->t_dp, k->t_optimizer,
           k->step_s);
    printf("tokens/s = B s / step                                       = %.6g\n", k->tokens_per_s);
    printf("model TFLOP/s per device = model FLOPs / step / devices     = %.6g\n",
           k->tflops_per_device);
    printf("MFU = model FLOP/s per device / peak                        = %.4f\n", k->mfu);
    printf("HFU = hardware FLOP/s per device / peak                     = %.4f\n", k->hfu);
}
