/* test_nn_gradcheck.h - central finite differences for the nn tests.
 *
 * A check perturbs every element of a buffer by +-eps, evaluates a scalar
 * loss (in double) each time, and compares (L(x+eps) - L(x-eps)) / 2 eps
 * with the analytic gradient. The error is measured over the whole buffer,
 *     |g - fd| / max(|g|, |fd|)      (Euclidean norms),
 * which is robust to single tiny entries whose relative error means
 * nothing in float32. */
#ifndef TEST_NN_GRADCHECK_H
#define TEST_NN_GRADCHECK_H

#include "grader.h"

#include <math.h>
#include <stdlib.h>

typedef double (*gc_loss_fn)(void *ctx);

/* Returns the relative error of grad (n) against finite differences of
 * loss(ctx) with respect to x (n). Fails the test when grad is all zero:
 * a check that compares zeros proves nothing.
 *
 * A step that crosses a ReLU kink gives a meaningless difference. Such an
 * element shows itself by one-sided differences that disagree, and is left
 * out; at most a tenth of the elements may be left out, so a real error
 * cannot hide there. */
static inline double gc_rel_error(gc_loss_fn loss, void *ctx, float *x, const float *grad,
                                  size_t n, float eps)
{
    double diff = 0, gn = 0, fn = 0, l0 = loss(ctx);
    size_t skipped = 0;
    for (size_t i = 0; i < n; i++) {
        float keep = x[i], up = keep + eps, down = keep - eps;
        x[i] = up;
        double lp = loss(ctx);
        x[i] = down;
        double lm = loss(ctx);
        x[i] = keep;
        /* divide by the steps actually taken, which float rounding may change */
        double fwd = (lp - l0) / ((double)up - keep), bwd = (l0 - lm) / ((double)keep - down);
        if (fabs(fwd - bwd) > 0.1 * (fabs(fwd) + fabs(bwd)) + 1e-3) {
            skipped++;
            continue;
        }
        double fd = (lp - lm) / ((double)up - (double)down);
        diff += (grad[i] - fd) * (grad[i] - fd);
        gn += (double)grad[i] * grad[i];
        fn += fd * fd;
    }
    EXPECT(skipped * 10 <= n, "%zu of %zu elements sit on a kink: choose other test data",
           skipped, n);
    EXPECT(gn > 0, "the analytic gradient is all zero: the check would prove nothing");
    double den = sqrt(gn > fn ? gn : fn);
    return sqrt(diff) / den;
}

/* Deterministic values in [-scale, scale], away from 0 by at least
 * margin*scale (keeps relu's kink away from finite-difference steps). */
static inline void gc_fill(float *x, size_t n, uint64_t seed, float scale, float margin)
{
    dt_rng r;
    dt_rng_init(&r, seed, 99);
    for (size_t i = 0; i < n; i++) {
        float u = dt_rng_uniform(&r) * 2 - 1;
        float mag = margin + (1 - margin) * fabsf(u);
        x[i] = scale * (u < 0 ? -mag : mag);
    }
}

/* sum of out[i] * w[i] in double: the loss whose gradient w.r.t. out is w */
static inline double gc_dot(const float *out, const float *w, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)out[i] * w[i];
    return s;
}

#endif /* TEST_NN_GRADCHECK_H */
