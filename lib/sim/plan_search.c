/* plan_search.c - every layout of a cluster for a model, ranked by step
 * time (dt/sim.h, dt_sim_search_eval; chapter 13).
 *
 * The choices, for D devices and a global batch of B sequences:
 *   tp   divides D, the heads and the MLP width
 *   pp   divides D / tp and the layers
 *   dp   = D / (tp pp), and must divide B
 *   micro-batch  divides B / dp (m = B / (dp b) micro-batches)
 *   vpp  divides the layers of a stage; > 1 needs pp > 1 and m a
 *        multiple of pp (Megatron's interleaved schedule)
 *   sp   off, and on when tp > 1
 *   ZeRO 0, and 1 to 3 when dp > 1 (one replica has nothing to shard)
 *   recomputation none, selective, full
 * with the 1F1B schedule (GPipe takes as long and holds more). Each
 * layout is priced by dt_sim_plan_eval; those that fit are ranked. A
 * layout is a few hundred floating-point operations, so thousands of
 * layouts take milliseconds. */
#include "plan.h"

#include <math.h>

#define MAX_DIVISORS 1024 /* a number below 1e8 has at most 768 */

/* The divisors of n (n >= 1) in increasing order; returns their count. */
static int divisors(long n, long *out)
{
    int lo = 0, hi = 0;
    long high[MAX_DIVISORS / 2];
    for (long i = 1; i * i <= n; i++) {
        if (n % i)
            continue;
        out[lo++] = i;
        if (i != n / i)
            high[hi++] = n / i;
    }
    while (hi > 0)
        out[lo++] = high[--hi];
    return lo;
}

/* Whether a goes before b: the faster, then the one with less memory. */
static int before(const dt_sim_cost *a, const dt_sim_cost *b)
{
    if (a->step_s != b->step_s)
        return a->step_s < b->step_s;
    return a->mem_bytes < b->mem_bytes;
}

/* Puts r in best[0 .. *n) (sorted, at most cap long) if it ranks there. */
static void keep(dt_sim_ranked *best, int cap, int *n, const dt_sim_layout *l,
                 const dt_sim_cost *p)
{
    if (cap == 0 || (*n == cap && !before(p, &best[cap - 1].cost)))
        return;
    int i = *n < cap ? (*n)++ : cap - 1;
    while (i > 0 && before(p, &best[i - 1].cost)) {
        best[i] = best[i - 1];
        i--;
    }
    best[i].layout = *l;
    best[i].cost = *p;
}

static dt_result refuse(dt_sim_bad *bad, const char *field, double value, const char *need)
{
    if (bad)
        *bad = (dt_sim_bad){field, value, need, 0, 0};
    return DT_ERR_INVALID_ARG;
}

dt_result dt_sim_search_eval(const dt_sim_model *m, const dt_sim_search_opts *o,
                             const dt_sim_cluster *c, dt_sim_ranked *best, int cap,
                             long *feasible, long *tried, dt_sim_bad *bad)
{
    if (!o || !feasible || !tried)
        return refuse(bad, !o ? "opts" : "feasible", 0, "must not be NULL");
    if (cap < 0 || (cap > 0 && !best))
        return refuse(bad, "cap", cap, "must be >= 0, with room for cap layouts");
    if (o->devices < 1 || o->devices > 10000000)
        return refuse(bad, "devices", o->devices, "must be a whole number from 1 to 1e7");
    /* the model, the cluster, the batch and the dtype, on one device */
    dt_sim_layout one = {1, 1, 1, 1, 0, o->global_batch, 1, DT_SIM_RECOMPUTE_NONE, 0, o->dtype,
                         DT_SIM_1F1B};
    if (!dt_sim_plan_check(m, &one, c, bad))
        return DT_ERR_INVALID_ARG;

    long D = o->devices, B = o->global_batch;
    long tps[MAX_DIVISORS], pps[MAX_DIVISORS], mbs[MAX_DIVISORS], vps[MAX_DIVISORS];
    int ntp = divisors(D, tps), n = 0;
    *feasible = 0, *tried = 0;
    for (int i = 0; i < ntp; i++) {
        long t = tps[i];
        if (m->heads % t || m->ffn % t)
            continue;
        int npp = divisors(D / t, pps);
        for (int j = 0; j < npp; j++) {
            long p = pps[j], d = D / (t * p);
            if (m->layers % p || B % d)
                continue;
            int nmb = divisors(B / d, mbs), nvp = divisors(m->layers / p, vps);
            for (int u = 0; u < nmb; u++) {
                long micro = mbs[u], mcount = B / (d * micro);
                for (int w = 0; w < nvp; w++) {
                    long v = vps[w];
                    if (v > 1 && (p == 1 || mcount % p))
                        continue;
                    for (int sp = 0; sp <= (t > 1); sp++)
                        for (int zero = 0; zero <= (d > 1 ? 3 : 0); zero++)
                            for (int r = 0; r < DT_SIM_NUM_RECOMPUTE; r++) {
                                dt_sim_layout l = {(int)t, (int)p, (int)d, (int)v, sp, (int)B,
                                                   (int)micro, (dt_sim_recompute)r, zero,
                                                   o->dtype, DT_SIM_1F1B};
                                dt_sim_cost plan;
                                if (dt_sim_plan_eval(m, &l, c, &plan, 0) != DT_OK)
                                    continue;
                                ++*tried;
                                if (!plan.fits)
                                    continue;
                                ++*feasible;
                                keep(best, cap, &n, &l, &plan);
                            }
                }
            }
        }
    }
    return DT_OK;
}
