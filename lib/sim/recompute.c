/* recompute.c - what activation recomputation keeps and recomputes on a
 * chain of L equal layers (chapter 11, sections 6 and 7): the literature's
 * "activation checkpointing", named so that in libdt a checkpoint means
 * saved training state (dt/ckpt.h).
 *
 * The executor (dt/sim.h): a kept output lives from the forward to its
 * layer's backward; a dropped one is freed once the next layer has read
 * it, and its whole run of dropped layers is recomputed when the backward
 * reaches the kept layer right after the run. While run [p, q] is back in
 * memory, what is alive is every kept output before p, the run, and
 * output q + 1 (kept, its own backward not yet done): the run's peak is
 * kept_before(p) + (q - p + 1) + 1. At the start of the backward every
 * kept output is alive: the peak is also at least their count. */
#include "dt/sim.h"

#include <math.h>

static dt_sim_recompute_cost recompute_nan(void)
{
    dt_sim_recompute_cost r = {NAN, NAN};
    return r;
}

dt_sim_recompute_cost dt_sim_recompute_segments(int L, int k)
{
    if (L < 1 || k < 1 || k > L) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_sim_recompute_segments: %d segments of %d layers (need "
                "1 <= segments <= layers)", k, L);
        return recompute_nan();
    }
    /* Segments 0 .. k-2 of s layers keep their last output and drop s - 1;
     * the last keeps all of its L - (k-1) s. The run of segment j has j
     * kept outputs before it, so its peak is j + (s - 1) + 1 = j + s, below
     * the start of the backward's (k - 1) + (L - (k-1) s): the last
     * segment is at least s long. */
    double s = (double)(L / k), kept = (double)(k - 1) + ((double)L - (double)(k - 1) * s);
    dt_sim_recompute_cost r = {kept, (double)(k - 1) * (s - 1)};
    return r;
}

int dt_sim_recompute_min_peak(int L)
{
    /* With a peak of M, run t (t = 1, 2, ...) has at least t - 1 kept
     * outputs before it and one after: it holds at most M - t layers. At
     * most M outputs are kept, so L <= M + (M - 1) + ... + 1 = M (M + 1) / 2. */
    int M = 0;
    while (L > 0 && (long)M * (M + 1) / 2 < L)
        M++;
    return M;
}

double dt_sim_recompute_min_layers(int L, double M)
{
    if (L < 1 || !(M >= dt_sim_recompute_min_peak(L))) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_sim_recompute_min_layers: no plan of %d layers fits in a "
                "peak of %g outputs (the least is %d)", L, M, dt_sim_recompute_min_peak(L));
        return NAN;
    }
    /* At most M outputs are kept (they are all alive when the backward
     * starts), so at least L - M layers are dropped, each recomputed once;
     * the triangle above fits L - M dropped layers whenever M is at least
     * the least peak. */
    return M >= L ? 0 : (double)L - floor(M);
}

double dt_sim_recompute_overhead(double recomputed, int L, double bwd_over_fwd)
{
    if (L < 1 || !(recomputed >= 0 && recomputed <= L) || !(bwd_over_fwd >= 0)) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_sim_recompute_overhead: %g of %d layers recomputed, backward "
                "%g x forward (need 0 <= recomputed <= layers, ratio >= 0)", recomputed, L,
                bwd_over_fwd);
        return NAN;
    }
    return recomputed / (double)L / (1 + bwd_over_fwd);
}
