/* scaling_test.h - what the visible and hidden tests of lab 12 share. */
#ifndef SCALING_TEST_H
#define SCALING_TEST_H

#include "scaling.h"

/* Predict, then measure (task (e)): lab_predict_step_time for workload w
 * (modeled mode) on n ranks over net against T_N worked out here from
 * sections 1, 7 and 9 (the serial part, the largest share of the batch
 * with the straggler's factor, the ring allreduce of dt/net.h), then
 * against the T_N of lab_sweep on the backend DT_BACKEND names, within
 * 1e-9 s. Fails the test naming the configuration and the three figures. */
void st_expect_step_prediction(const lab_workload *w, const char *net, int n);

#endif /* SCALING_TEST_H */
