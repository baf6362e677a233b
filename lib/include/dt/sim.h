/* dt/sim.h - the cost model above the collectives: how long a
 * data-parallel step or a pipeline takes, from the time of its compute and
 * of its communication; and how many bytes of activations a transformer
 * layer keeps. What a message or a collective algorithm costs on a link is
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

#ifdef __cplusplus
}
#endif

#endif /* DT_SIM_H */
