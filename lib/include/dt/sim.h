/* dt/sim.h - the cost model above the collectives: how long a
 * data-parallel step or a pipeline takes, from the time of its compute and
 * of its communication. What a message or a collective algorithm costs on
 * a link is the network model's (dt/net.h: dt_net_ring_allreduce, ...,
 * dt_net_busbw); this layer combines those figures with compute.
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

#ifdef __cplusplus
}
#endif

#endif /* DT_SIM_H */
