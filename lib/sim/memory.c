/* memory.c - the model states per device under data parallelism and
 * ZeRO's three stages, and what each stage sends per step (chapter 08).
 *
 * A stage decides which of the three states live in full on every device
 * and which in 1/n on each: with p, g and k bytes per parameter,
 *
 *   stage   parameters   gradients   optimizer state
 *   0       p psi        g psi       k psi
 *   1       p psi        g psi       k psi / n
 *   2       p psi        g psi / n   k psi / n
 *   3       p psi / n    g psi / n   k psi / n
 *
 * The paper's example (mixed precision, k = 12, 7.5 B parameters, 64
 * devices): 120 GB, 31.4 GB, 16.6 GB and 1.9 GB per device. */
#include "dt/sim.h"

#include <math.h>

dt_sim_state_bytes dt_sim_mixed_precision_adam(void)
{
    /* fp16 parameters and gradients; fp32 master copy, momentum, variance */
    return (dt_sim_state_bytes){2, 2, 12};
}

dt_sim_state_bytes dt_sim_fp32_adam(void)
{
    /* fp32 parameters and gradients; fp32 momentum and variance */
    return (dt_sim_state_bytes){4, 4, 8};
}

static int valid(int stage, double psi, int n)
{
    if (stage < 0 || stage > 3)
        return dt_fail(DT_ERR_INVALID_ARG, "ZeRO stage %d (0 to 3)", stage), 0;
    if (!(isfinite(psi) && psi >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "psi = %g parameters is out of range", psi), 0;
    if (n < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "n = %d devices is out of range", n), 0;
    return 1;
}

dt_sim_memory dt_sim_zero_memory(int stage, double psi, int n, dt_sim_state_bytes b)
{
    dt_sim_memory m = {NAN, NAN, NAN, NAN};
    if (!valid(stage, psi, n))
        return m;
    if (!(b.p >= 0 && b.g >= 0 && b.k >= 0 && isfinite(b.p + b.g + b.k))) {
        dt_fail(DT_ERR_INVALID_ARG, "bytes per parameter p = %g, g = %g, k = %g", b.p, b.g, b.k);
        return m;
    }
    /* stage s shards the last s of (parameters, gradients, optimizer state) */
    m.optim = b.k * psi / (stage >= 1 ? n : 1);
    m.grads = b.g * psi / (stage >= 2 ? n : 1);
    m.params = b.p * psi / (stage >= 3 ? n : 1);
    m.total = m.params + m.grads + m.optim;
    return m;
}

double dt_sim_zero_comm_elems(int stage, double psi, int n)
{
    if (!valid(stage, psi, n))
        return NAN;
    /* each ring pass (reduce-scatter or allgather) moves psi (n - 1) / n */
    double passes = stage == 3 ? 3 : 2;
    return passes * psi * (n - 1) / n;
}
