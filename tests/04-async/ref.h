/* ref.h - lab 04's tests: the data once per test process, serial SGD as
 * the reference, and checks of staleness records. */
#ifndef LAB04_REF_H
#define LAB04_REF_H

#include "async.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static dt_dataset ref_train, ref_test;

static inline void ref_data(void)
{
    if (ref_train.n == 0)
        EXPECT_OK(lab_load_digits(&ref_train, &ref_test));
}

static inline dt_result ref_where_rank(dt_comm *world, void *arg)
{
    (void)arg;
    return dt_test_on_backend(dt_comm_rank(world), dt_test_backend());
}

/* The options of the tests' launches: nranks ranks on the backend that
 * DT_BACKEND names (`make check BACKEND=proc|mpi`), whose results come
 * back through the given launchers' out blocks. The launchers run given
 * code in their ranks, so the options are first shown to start ranks
 * where DT_BACKEND says, by a launch of ref_where_rank with them. */
static inline dt_launch_opts ref_opts(int nranks)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = nranks;
    o.net = "none";
    o.fault = "";
    o.timeout_s = 10; /* a wrong protocol fails in 10 s, before the test's deadline */
    EXPECT_OK(dt_launch(&o, ref_where_rank, NULL));
    return o;
}

/* Plain SGD, one worker: params_{t+1} = params_t - lr * grad(batch (worker,
 * t)) for t < steps, starting from the lab's initial parameters. The
 * caller frees the result. */
static inline float *ref_serial_sgd(int steps, int batch, float lr, uint64_t seed)
{
    lab_trainer t;
    EXPECT_OK(lab_trainer_init(&t, &ref_train, batch, seed, 0));
    size_t n = t.model.num_params;
    for (int s = 0; s < steps; s++) {
        EXPECT_OK(lab_trainer_gradient(&t, 0, s, NULL, NULL));
        for (size_t i = 0; i < n; i++)
            t.model.params[i] = t.model.params[i] - lr * t.model.grads[i];
    }
    float *p = malloc(n * sizeof *p);
    EXPECT(p != NULL, "out of memory");
    memcpy(p, t.model.params, n * sizeof *p);
    lab_trainer_free(&t);
    return p;
}

/* Synchronous SGD of K workers done serially: round r averages the
 * gradients of batches (w, r), w < K. */
static inline float *ref_sync_sgd(int rounds, int K, int batch, float lr, uint64_t seed)
{
    lab_trainer t;
    EXPECT_OK(lab_trainer_init(&t, &ref_train, batch, seed, 0));
    size_t n = t.model.num_params;
    double *sum = calloc(n, sizeof *sum);
    EXPECT(sum != NULL, "out of memory");
    for (int r = 0; r < rounds; r++) {
        memset(sum, 0, n * sizeof *sum);
        for (int w = 0; w < K; w++) {
            EXPECT_OK(lab_trainer_gradient(&t, w, r, NULL, NULL));
            for (size_t i = 0; i < n; i++)
                sum[i] += t.model.grads[i];
        }
        for (size_t i = 0; i < n; i++)
            t.model.params[i] -= (float)(lr * (sum[i] / K));
    }
    float *p = malloc(n * sizeof *p);
    EXPECT(p != NULL, "out of memory");
    memcpy(p, t.model.params, n * sizeof *p);
    free(sum);
    lab_trainer_free(&t);
    return p;
}

/* The largest |a[i] - b[i]|. */
static inline double ref_max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= m))
            m = d; /* NaN wins */
    }
    return m;
}

static inline float ref_accuracy(const float *params, size_t n)
{
    float acc = -1;
    EXPECT_OK(lab_accuracy(params, n, &ref_test, &acc));
    return acc;
}

/* Every server applied `updates` gradients, and the k-th gradient applied
 * by an asynchronous server (k from 0, which found the shard at version k)
 * has 0 <= tau <= k and tau <= bound (bound < 0: none). Returns the mean. */
static inline double ref_check_staleness(const lab_ps_result *res, int updates, int bound)
{
    double sum = 0;
    for (int s = 0; s < res->servers; s++) {
        EXPECT(res->applied[s] == updates, "server %d applied %d gradients, expected %d", s,
               res->applied[s], updates);
        const int *tau = res->staleness + (size_t)s * (size_t)updates;
        for (int k = 0; k < updates; k++) {
            EXPECT(tau[k] >= 0 && tau[k] <= k,
                   "server %d: gradient %d applied at version %d has staleness %d "
                   "(expected 0 .. %d)", s, k, k, tau[k], k);
            EXPECT(bound < 0 || tau[k] <= bound,
                   "server %d: gradient %d has staleness %d, above the bound %d", s, k,
                   tau[k], bound);
            sum += tau[k];
        }
    }
    return sum / ((double)res->servers * updates);
}

#endif /* LAB04_REF_H */
