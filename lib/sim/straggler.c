/* straggler.c - synchronous steps with a straggler on the modeled clock:
 * waiting for all, backup workers, dropping the slowest k, and batches
 * sized to the ranks' speeds (chapter 14, section 9; dt/sim.h). */
#include "dt/sim.h"

#include <math.h>
#include <stdlib.h>

enum { MAX_WORKERS = 1024 };

static const char *const names[DT_NUM_STRAGGLE] = {"wait for all", "backup workers",
                                                   "drop the slowest", "adaptive batch"};

const char *dt_sim_straggle_name(dt_sim_straggle_policy p)
{
    return (unsigned)p < DT_NUM_STRAGGLE ? names[p] : "?";
}

static dt_result check(const dt_sim_straggle *s, dt_sim_straggle_policy p)
{
    const char *bad = NULL;
    if (s->workers < 1 || s->workers > MAX_WORKERS) bad = "workers (1 to 1024)";
    else if (s->extra < 0 || s->extra > MAX_WORKERS) bad = "extra (0 to 1024)";
    else if (p == DT_STRAGGLE_DROP && s->extra >= s->workers) bad = "extra (below workers)";
    else if (s->batch < s->workers || s->batch % s->workers) bad = "batch (a multiple of workers)";
    else if (!(isfinite(s->sample_s) && s->sample_s > 0)) bad = "sample_s (> 0)";
    else if (!(isfinite(s->grad_bytes) && s->grad_bytes >= 0)) bad = "grad_bytes (>= 0)";
    else if (!(s->slow_speed > 0 && s->slow_speed <= 1)) bad = "slow_speed (in (0, 1])";
    else if (!(s->p_slow >= 0 && s->p_slow <= 1)) bad = "p_slow (in [0, 1])";
    else if (s->slow_rank < -1 || s->slow_rank >= s->workers + s->extra) bad = "slow_rank";
    else if (s->steps < 1) bad = "steps (>= 1)";
    else if ((unsigned)p >= DT_NUM_STRAGGLE) bad = "policy";
    return bad ? dt_fail(DT_ERR_INVALID_ARG, "dt_sim_stragglers: bad %s", bad) : DT_OK;
}

/* b_i = B speed_i / sum_j speed_j: the floors, then the largest remainders
 * (ties: the lower rank) up; a rank rounded to 0 takes 1 from the largest. */
static void adaptive_batches(const double *speed, int K, int B, int *b)
{
    double total = 0, rest[MAX_WORKERS];
    for (int i = 0; i < K; i++)
        total += speed[i];
    int left = B;
    for (int i = 0; i < K; i++) {
        double share = B * speed[i] / total;
        b[i] = (int)floor(share);
        rest[i] = share - b[i], left -= b[i];
    }
    for (; left > 0; left--) {
        int top = 0;
        for (int i = 1; i < K; i++)
            top = rest[i] > rest[top] ? i : top;
        b[top]++, rest[top] = -1;
    }
    for (int i = 0; i < K; i++)
        while (b[i] < 1) {
            int top = 0;
            for (int k = 1; k < K; k++)
                top = b[k] > b[top] ? k : top;
            b[top]--, b[i]++;
        }
}

/* The m-th smallest of t[0..n), marking the first m in taken[]. Equal
 * times arrive in turn from rank `from` on (from = the step: no worker is
 * the one always dropped among equals, as dt_recv_any takes ties). */
static double first_m(const double *t, int n, int m, int from, int *taken)
{
    double last = 0;
    for (int i = 0; i < n; i++)
        taken[i] = 0;
    for (int k = 0; k < m; k++) {
        int best = -1;
        for (int j = 0; j < n; j++) {
            int i = (from + j) % n;
            if (!taken[i] && (best < 0 || t[i] < t[best]))
                best = i;
        }
        taken[best] = 1, last = t[best];
    }
    return last;
}

dt_result dt_sim_stragglers(const dt_sim_straggle *s, dt_sim_straggle_policy p,
                            dt_sim_straggle_out *out)
{
    if (!s || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_sim_stragglers: NULL argument");
    dt_result bad = check(s, p);
    if (bad != DT_OK)
        return bad;
    const int K = s->workers, W = K + (p == DT_STRAGGLE_BACKUP ? s->extra : 0);
    const int m = p == DT_STRAGGLE_DROP ? K - s->extra : K; /* gradients a step uses */
    double *speed = calloc((size_t)W, sizeof *speed), *prev = calloc((size_t)W, sizeof *prev);
    double *t = calloc((size_t)W, sizeof *t), *dealt = calloc((size_t)W, sizeof *dealt);
    double *kept = calloc((size_t)W, sizeof *kept);
    int *b = calloc((size_t)W, sizeof *b), *taken = calloc((size_t)W, sizeof *taken);
    dt_rng *rng = calloc((size_t)W, sizeof *rng);
    dt_result r = DT_OK;
    if (!speed || !prev || !t || !dealt || !kept || !b || !taken || !rng)
        r = dt_fail(DT_ERR_NOMEM, "dt_sim_stragglers: %d workers", W);
    double compute = 0, used = 0, computed = 0;
    for (int w = 0; r == DT_OK && w < W; w++)
        dt_rng_init(&rng[w], s->seed, (uint64_t)w), prev[w] = 1;
    /* the exchange: a ring allreduce among the m whose gradients count */
    double exchange = dt_net_ring_allreduce(&s->link, s->grad_bytes, m);
    for (int step = 0; r == DT_OK && step < s->steps; step++) {
        for (int w = 0; w < W; w++) {
            int slowed = dt_rng_uniform(&rng[w]) < s->p_slow || w == s->slow_rank;
            speed[w] = slowed ? s->slow_speed : 1;
            b[w] = s->batch / K;
        }
        if (p == DT_STRAGGLE_ADAPTIVE)
            adaptive_batches(prev, K, s->batch, b);
        for (int w = 0; w < W; w++) {
            t[w] = b[w] * s->sample_s / speed[w];
            prev[w] = speed[w]; /* the speed measured: b_w / t_w, per sample_s */
        }
        compute += first_m(t, W, m, step % W, taken);
        for (int w = 0; w < W; w++) {
            dealt[w] += b[w], computed += b[w];
            if (taken[w])
                kept[w] += b[w], used += b[w];
        }
    }
    if (r == DT_OK) {
        double lo = INFINITY, hi = 0;
        for (int w = 0; w < W; w++)
            lo = fmin(lo, kept[w] / dealt[w]), hi = fmax(hi, kept[w] / dealt[w]);
        *out = (dt_sim_straggle_out){compute / s->steps + exchange, compute / s->steps,
                                     used / s->steps, computed / s->steps, lo, hi};
    }
    free(speed), free(prev), free(t), free(dealt), free(kept), free(b), free(taken), free(rng);
    return r;
}
