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

#endif /* EXCHANGE_TEST_H */
