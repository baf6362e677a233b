/* exchange_test.h - one exchange of lab 10 run and checked against the
 * reference (cmp_test.c), shared by the visible and the hidden tests. */
#ifndef EXCHANGE_TEST_H
#define EXCHANGE_TEST_H

#include "cmp_test.h"

/* `steps` syncs of method cc on K ranks of backend b (each rank checks
 * itself, so that the proc backend works too), on the model spec (NULL:
 * CMP_SPEC) with
 * the inputs of cmp_exchange_*: after each, every rank's mean gradient,
 * C(v), residual (and 1-bit server residual) against the reference, bit
 * for bit when tol is 0 (else within tol, relative); g + e_old = C(v) +
 * e_new bit for bit; the collectives the method calls, and the bytes where
 * the chapter's formula is exact. Fails the test with what differs. */
void exchange_expect_on(const lab_compress_config *cc, int K, int steps, double tol,
                        dt_backend b, const char *spec);

/* The same on threads, with CMP_SPEC. */
void exchange_expect(const lab_compress_config *cc, int K, int steps, double tol);

/* Predict, then measure (task 8): lab_topk_crossover for the model spec's
 * gradient (n floats, n divisible by K, d* n not an integer) on K thread
 * ranks over net (gamma 0), against section 6's d* = 1/K + alpha beta /
 * (8 n) worked out here, then against the modeled time of the exchanges
 * (after a barrier, from the latest start to the latest end): top-k with
 * floor(d* n) pairs no slower than the dense allreduce, and with one pair
 * more slower. Fails the test naming the configuration and every figure. */
void crossover_expect(const char *spec, int K, const char *net);

#endif /* EXCHANGE_TEST_H */
