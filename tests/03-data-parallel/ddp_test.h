/* ddp_test.h - what the tests of lab 03 share: a data set, a reference
 * trainer on one rank (written here, independent of the lab), and a rank
 * function that trains with the lab and checks itself. */
#ifndef DDP_TEST_H
#define DDP_TEST_H

#include "ddp.h"

#define DDP_DATA_N 240      /* samples of the test set: 240 = 2^4 * 3 * 5 */
#define DDP_DATA_SEED 11    /* of the samples and of the sampler's order */
#define DDP_MODEL_SEED 100  /* rank r creates its model from seed 100 + r */

/* One data-parallel run, checked inside the ranks (on every backend: a
 * rank's verdict is its function's result). */
typedef struct {
    const char *spec;       /* the model, e.g. "mlp:12,16,8,4" */
    lab_ddp_mode mode;
    size_t bucket_bytes;
    size_t micro_B;         /* samples per micro-batch per rank */
    int micro_steps;
    int steps;
    double tol;             /* relative tolerance against the reference */
} ddp_run;

/* The shared data set: 12 features, 4 classes, the same on every rank. */
dt_result ddp_test_data(dt_dataset *d);

/* Trains a model made from (spec, DDP_MODEL_SEED) on ONE rank for `steps`
 * steps, step t on samples [t*G, (t+1)*G) of the sampler's order of epoch 0
 * (G = global batch), with the same optimizer as the lab runs, into m;
 * grad0 (may be NULL; m's num_params floats) gets the first step's
 * gradient, the mean over the global batch. */
dt_result ddp_reference(dt_model *m, const char *spec, size_t G, int steps, float *grad0);

/* The optimizer every run uses: SGD, lr 0.1, momentum 0.9. */
dt_optim_config ddp_test_optim(void);

/* The rank function (arg: a ddp_job): trains with the lab as job->run
 * says, then checks
 *  - that the rank runs on job->backend (dt_test_on_backend);
 *  - that the lab made one broadcast and the expected number of allreduces
 *    (1 per step in FLAT mode, one per bucket per step otherwise);
 *  - on rank 0, the gradient after the first step's sync against the
 *    global batch's mean (a multiple of it is named: K, micro_steps), then
 *    the parameters against ddp_reference, both within run->tol;
 *  - that every rank holds rank 0's parameters bit for bit.
 * Fails with a message naming what differs. */
typedef struct {
    ddp_run run;
    dt_backend backend; /* where the ranks must run: DT_BACKEND's, or the one
                           a test asks for on purpose */
} ddp_job;

dt_result ddp_check_rank(dt_comm *world, void *arg);

/* dt_launch of ddp_check_rank on K ranks of the backend the environment
 * names (DT_BACKEND: `make check BACKEND=proc|mpi`), and of backend b. */
dt_result ddp_launch(int K, const ddp_run *run);
dt_result ddp_launch_on(int K, dt_backend b, const ddp_run *run);

#endif /* DDP_TEST_H */
