/* plan.h - what the planner's files share (lib/sim only): the figures of
 * one step that the memory and the time both use. */
#ifndef DT_SIM_PLAN_H
#define DT_SIM_PLAN_H

#include "dt/sim.h"

/* The sizes of a step on one device, as doubles (products overflow int). */
typedef struct {
    double l, h, a, f, s, V;  /* the model */
    double t, p, d, v, b, B;  /* the layout */
    double m;                 /* micro-batches per step: B / (d b) */
    double e;                 /* bytes of an activation element */
    double dropout;
    double layers_stage;      /* l / p */
    double layer_params;      /* one layer's parameters on one TP rank */
    dt_sim_state_bytes bytes; /* p, g, k bytes a parameter */
    double peak;              /* FLOP/s of the dtype, before matmul_eff */
    int tp_inter, pp_inter, dp_inter; /* 1: the group spans nodes */
} dt_sim_dims;

/* 1 when every argument is in range; else 0 with *bad filled. */
int dt_sim_plan_check(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_bad *bad);

/* The dims of checked arguments. */
void dt_sim_plan_dims(const dt_sim_model *m, const dt_sim_layout *l, const dt_sim_cluster *c,
                      dt_sim_dims *k);

/* plan_time.c: the times of a step, from dims (plan's sizes filled). */
void dt_sim_plan_times(const dt_sim_layout *l, const dt_sim_cluster *c, const dt_sim_dims *k,
                       dt_sim_cost *plan);

#endif /* DT_SIM_PLAN_H */
