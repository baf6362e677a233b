/* hidden_sched_ref.h - reference pipeline schedules for libdt's own tests of
 * lib/sched. The library carries no generators: building them is lab 06's
 * work (chapter 06). These stay with the tests that need known schedules
 * to check the simulator's figures against, in files named hidden_* so
 * that the student tree (make dist-student) leaves them out. */
#ifndef DT_TEST_SCHED_REF_H
#define DT_TEST_SCHED_REF_H

#include "dt/sched.h"

/* GPipe: every rank runs all its forwards, then all its backwards. */
dt_result ref_gpipe(dt_schedule **out, int p, int m);

/* 1F1B (PipeDream-flush): rank r runs min(p-1-r, m) forwards, then
 * alternates one forward and one backward, then the remaining backwards. */
dt_result ref_1f1b(dt_schedule **out, int p, int m);

/* Interleaved 1F1B (Megatron-LM) with v chunks per rank; m a multiple of p. */
dt_result ref_interleaved(dt_schedule **out, int p, int v, int m);

/* ZB-H1: 1F1B with the backward split into B and W, rank r running one
 * more warm-up forward and holding back r weight-gradient steps to fill
 * the end of the pipeline. */
dt_result ref_zbh1(dt_schedule **out, int p, int m);

#endif
