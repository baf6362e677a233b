/* test_sim_recompute.c - libdt sim: activation recomputation on a chain
 * of equal layers, against every plan of chains of up to 14 layers. The
 * test walks each plan through the executor step by step (allocating and
 * freeing outputs as dt/sim.h says) and counts, independent of the
 * closed forms it checks. */
#include "grader.h"

#include "dt/sim.h"

#include <math.h>

/* Runs plan `keep` (bit i: layer i's output kept; the last layer's always)
 * of L layers through the executor, counting live outputs: the forward
 * frees a dropped output once the next layer has read it; the backward,
 * at layer i whose input is gone, recomputes the run of dropped layers
 * before i from the nearest output still alive, then frees output i after
 * layer i's backward. Returns the peak; *recomputed the layers run twice. */
static int walk(int L, unsigned keep, int *recomputed)
{
    int alive[32] = {0}, live = 0, peak = 0;
    *recomputed = 0;
    keep |= 1u << (L - 1);
    for (int i = 0; i < L; i++) {
        alive[i] = 1, live++;
        peak = live > peak ? live : peak;
        if (i > 0 && !(keep >> (i - 1) & 1))
            alive[i - 1] = 0, live--;
    }
    for (int i = L - 1; i >= 0; i--) {
        if (i > 0 && !alive[i - 1]) {
            int p = i - 1;
            while (p > 0 && !alive[p - 1])
                p--;
            for (int j = p; j < i; j++, ++*recomputed)
                alive[j] = 1, live++;
            peak = live > peak ? live : peak;
        }
        alive[i] = 0, live--;
    }
    return peak;
}

/* The plan checkpoint_sequential makes of k segments (dt/sim.h). */
static unsigned segments_plan(int L, int k)
{
    int s = L / k;
    unsigned keep = 0;
    for (int j = 0; j + 1 < k; j++)
        keep |= 1u << ((j + 1) * s - 1);
    for (int i = (k - 1) * s; i < L; i++)
        keep |= 1u << i;
    return keep;
}

TEST(sim_recompute_segments_against_the_executor, 2)
{
    for (int L = 1; L <= 24; L++)
        for (int k = 1; k <= L; k++) {
            int rec, peak = walk(L, segments_plan(L, k), &rec);
            dt_sim_recompute_cost c = dt_sim_recompute_segments(L, k);
            EXPECT(c.peak == peak && c.recomputed == rec, "L = %d, k = %d: formula peak %g, "
                   "recomputed %g; the executor holds %d and recomputes %d", L, k, c.peak,
                   c.recomputed, peak, rec);
        }
    /* the chapter's cases: 2 sqrt(L) - 1 outputs, (sqrt(L) - 1)^2 recomputed */
    dt_sim_recompute_cost c16 = dt_sim_recompute_segments(16, 4), c64 = dt_sim_recompute_segments(64, 8);
    EXPECT(c16.peak == 7 && c16.recomputed == 9, "L = 16: %g, %g", c16.peak, c16.recomputed);
    EXPECT(c64.peak == 15 && c64.recomputed == 49, "L = 64: %g, %g", c64.peak, c64.recomputed);
    EXPECT(isnan(dt_sim_recompute_segments(8, 0).peak) && isnan(dt_sim_recompute_segments(8, 9).peak) &&
           isnan(dt_sim_recompute_segments(0, 1).recomputed), "bad segment counts give NaN");
}

/* Every plan of L <= 14 layers: the least peak, and the fewest layers
 * recomputed within each peak, are the closed forms. */
TEST(sim_recompute_optimum_against_every_plan, 3)
{
    for (int L = 1; L <= 14; L++) {
        int best[16];
        for (int M = 0; M <= L; M++)
            best[M] = -1;
        for (unsigned keep = 0; keep < 1u << (L - 1); keep++) {
            int rec, peak = walk(L, keep, &rec);
            for (int M = peak; M <= L; M++)
                if (best[M] < 0 || rec < best[M])
                    best[M] = rec;
        }
        int least = 0;
        while (best[least] < 0)
            least++;
        EXPECT(dt_sim_recompute_min_peak(L) == least, "L = %d: least peak %d, every plan gives %d", L,
               dt_sim_recompute_min_peak(L), least);
        for (int M = 0; M <= L + 2; M++) {
            double want = M > L ? 0 : best[M], got = dt_sim_recompute_min_layers(L, M);
            if (M <= L && best[M] < 0)
                EXPECT(isnan(got), "L = %d, M = %d: no plan fits, got %g", L, M, got);
            else
                EXPECT(got == want, "L = %d, M = %d: %g recomputed, the best plan %g", L, M, got,
                       want);
        }
    }
    EXPECT(dt_sim_recompute_min_peak(64) == 11 && dt_sim_recompute_min_peak(16) == 6,
           "least peaks of 16 and 64 layers: %d, %d (6 and 11: 6*7/2 = 21, 11*12/2 = 66)",
           dt_sim_recompute_min_peak(16), dt_sim_recompute_min_peak(64));
}

TEST(sim_recompute_overhead_one_extra_forward, 1)
{
    EXPECT(dt_sim_recompute_overhead(64, 64, 2) == 1.0 / 3, "a whole forward: a third");
    EXPECT(dt_sim_recompute_overhead(9, 16, 2) == 9.0 / 48, "L = 16, k = 4: 9/48");
    EXPECT(dt_sim_recompute_overhead(0, 16, 2) == 0, "nothing recomputed");
    EXPECT(isnan(dt_sim_recompute_overhead(17, 16, 2)) && isnan(dt_sim_recompute_overhead(1, 16, -1)) &&
           isnan(dt_sim_recompute_overhead(1, 0, 2)), "bad arguments give NaN");
}
