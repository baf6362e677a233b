/* mp_test.h - what the tests of lab 05 share: a batch, placements written
 * here (independent of the lab), the traffic a placement must cause, a
 * reference trainer on one rank, and a rank function that trains with the
 * lab and checks itself. */
#ifndef MP_TEST_H
#define MP_TEST_H

#include "mp.h"

#define MP_MODEL_SEED 7

/* A placement the tests ask for. In the first two the owner of the next
 * layer is always the next rank (mod K); the scattered one breaks that:
 * pairs of layers dealt from the last rank down, (K-1) - (l/2 mod K), so
 * that a rank may hold segments of different lengths, sends to lower
 * ranks, and wraps (L = 7, K = 3: 2 2 1 1 0 0 2). Every rank owns a layer
 * when L >= 2K - 1. */
typedef enum { MP_CONTIGUOUS = 0, MP_ROUND_ROBIN, MP_SCATTERED } mp_placement;

/* "contiguous", "round-robin", "scattered". */
const char *mp_placement_name(mp_placement p);

/* One model-parallel run, checked inside the ranks (so that it works with
 * the proc backend too, where nothing a rank writes comes back). */
typedef struct {
    const char *spec;        /* a deep MLP, e.g. "deep:12,16,5,4" (7 layers) */
    mp_placement placement;
    size_t B;                /* samples per step */
    int steps;               /* 1: gradients and loss are compared; more: parameters */
    double tol;              /* relative tolerance against one rank */
    const char *net;         /* the launch's network (NULL: none) */
    double t_f, t_b;         /* modeled seconds per layer (0: no modeled time) */
    double want_step_s;      /* > 0: the first step's modeled time must be this (1e-5
                                relative: it travels as a float) */
    const char *want_is;     /* what want_step_s is, for a failure (NULL: the chain of layers
                                and messages) */
} mp_run;

/* Integer-based inputs and labels of step t: B rows of `in` features. */
void mp_batch(size_t B, size_t in, size_t classes, int t, float *x, int32_t *y);

/* Stage k of K over L layers: [k L / K, (k+1) L / K), the tests' own
 * contiguous split (equal counts, so equal stages when K divides L). */
void mp_test_placement(mp_placement p, int L, int K, int *owner);

/* What rank sends in a step under owner: messages and bytes, counted here
 * from the cuts (section 3), for a batch of B samples. */
void mp_expected_traffic(const dt_model *m, const int *owner, int rank, size_t B,
                         uint64_t *msgs, uint64_t *bytes);

/* The rank function: trains run->steps steps with the lab and checks
 *  - after the first step: the input each of this rank's segments
 *    received, against one rank's forward;
 *  - with one step: the loss on the last layer's rank, and this rank's
 *    layers' gradients, against one rank with the whole model;
 *  - with more: this rank's layers' parameters against one rank trained
 *    alike (SGD with momentum);
 *  - the messages and bytes this rank sent (dt_comm_stats) against
 *    mp_expected_traffic;
 *  - with run->want_step_s: the first step's modeled time (the latest
 *    rank's clock).
 * Fails with a message naming what differs. */
dt_result mp_check_rank(dt_comm *world, void *arg);

/* dt_launch of mp_check_rank on K ranks of backend b. */
dt_result mp_launch(int K, dt_backend b, const mp_run *run);

#endif /* MP_TEST_H */
