/* checkpoint.c - how often to checkpoint: Young's and Daly's intervals,
 * and Daly's expected waste (chapter 14, section 2). */
#include "dt/sim.h"

#include "dt/comm.h"
#include "dt/failure.h"

#include <math.h>

static double domain_error(const char *what, double value)
{
    dt_fail(DT_ERR_INVALID_ARG, "%s = %g is out of range", what, value);
    return NAN;
}

static int positive(double t) { return isfinite(t) && t > 0; }

/* tau = sqrt(2 delta M): the first-order optimum, where the time spent
 * checkpointing (delta / tau of the work) equals the rework expected
 * after a failure (tau / 2M). */
double dt_sim_ckpt_young(double delta, double M)
{
    if (!positive(delta)) return domain_error("checkpoint cost delta", delta);
    if (!positive(M)) return domain_error("MTBF M", M);
    return sqrt(2 * delta * M);
}

/* Daly's higher-order optimum: tau = sqrt(2 delta M) [1 + (1/3) x^(1/2) + (1/9) x] - delta,
 * x = delta / 2M, for delta < 2M; beyond it a checkpoint costs more than
 * the work it saves, and tau = M. */
double dt_sim_ckpt_daly(double delta, double M)
{
    if (!positive(delta)) return domain_error("checkpoint cost delta", delta);
    if (!positive(M)) return domain_error("MTBF M", M);
    if (delta >= 2 * M)
        return M;
    double x = delta / (2 * M);
    return sqrt(2 * delta * M) * (1 + sqrt(x) / 3 + x / 9) - delta;
}

/* waste = 1 - tau / (M e^{R/M} (e^{(tau + delta)/M} - 1)) (Daly's model,
 * T_wall = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau); expm1 keeps the
 * digits when tau + delta is small against M. */
double dt_sim_ckpt_waste(double tau, double delta, double R, double M)
{
    if (!positive(tau)) return domain_error("interval tau", tau);
    if (!(isfinite(delta) && delta >= 0)) return domain_error("checkpoint cost delta", delta);
    if (!(isfinite(R) && R >= 0)) return domain_error("restart R", R);
    if (!positive(M)) return domain_error("MTBF M", M);
    double wall_per_work = M * exp(R / M) * expm1((tau + delta) / M) / tau;
    return 1 - 1 / wall_per_work;
}

/* n independent exponential lifetimes: the first failure comes at rate
 * n / device_mtbf. */
double dt_sim_job_mtbf(double device_mtbf, int n)
{
    if (!positive(device_mtbf)) return domain_error("device MTBF", device_mtbf);
    if (n < 1) return domain_error("devices n", n);
    return device_mtbf / n;
}

/* Daly's assumptions, run rather than summed: each interval is tau of
 * work then delta of checkpoint, committed at its end; a failure inside
 * either costs what the interval did, plus a restart. */
double dt_sim_ckpt_run(double work, double tau, double delta, double R, double M, uint64_t seed,
                       long *failures)
{
    if (!positive(work)) return domain_error("work", work);
    if (!positive(tau)) return domain_error("interval tau", tau);
    if (!(isfinite(delta) && delta >= 0)) return domain_error("checkpoint cost delta", delta);
    if (!(isfinite(R) && R >= 0)) return domain_error("restart R", R);
    if (!positive(M)) return domain_error("MTBF M", M);
    double t = 0, done = 0;
    long k = 0;
    double next = dt_failure_time(seed, M, 0);
    while (done < work) {
        double piece = work - done < tau ? work - done : tau;
        if (t + piece + delta <= next) { /* the interval and its checkpoint commit */
            t += piece + delta, done += piece;
            continue;
        }
        t = next; /* lost: the interval's work, then a restart, itself interruptible */
        next = dt_failure_time(seed, M, (int)++k);
        while (t + R > next)
            t = next, next = dt_failure_time(seed, M, (int)++k);
        t += R;
    }
    if (failures)
        *failures = k;
    return t;
}
