/* test_clip.c - lab 07, task 5: gradient-norm clipping when the
 * parameters are sharded (chapter 07, section 9). With small integer
 * gradients every sum of squares is exact, whatever the order of the
 * additions, so the clipped gradients and the norm must equal one rank's
 * clip of the whole gradient bit for bit. With gradients of 12
 * significant bits only the contract's order (a double per rank, then one
 * float allreduce) gives the norm bit for bit. */
#include "grader.h"
#include "tp_test.h"

#include <math.h>
#include <string.h>

enum { REP = 100, SPLIT = 1000 }; /* replicated floats; split floats per rank */

/* The whole model's gradient: the replicated part, then rank 0's split
 * part, rank 1's, ... Element i of stream 61, in [-3, 3]. */
static float whole_grad(size_t i) { return tpt_int(61, i, 3); }

/* One rank's clip of the whole gradient, as torch.nn.utils.clip_grad_norm_
 * computes it (the formula of tp.h). */
static float whole_clip(int t, float max_norm, float *coef_out)
{
    double total = 0;
    for (size_t i = 0; i < REP + (size_t)t * SPLIT; i++)
        total += (double)whole_grad(i) * whole_grad(i);
    float norm = sqrtf((float)total), coef = max_norm / (norm + 1e-6f);
    *coef_out = coef < 1 ? coef : 1;
    return norm;
}

static dt_result clip_rank(dt_comm *world, void *arg)
{
    const float *max_norm = arg;
    dt_gpt_config cfg = tpt_config(1);
    lab_tp tp;
    DT_CHECK(lab_tp_init(&tp, world, &cfg, TPT_B, TPT_T, 0));
    int t = tp.t, r = tp.rank;
    static _Thread_local float g[REP + SPLIT];
    lab_tp_model m = {0};
    m.grads = g, m.num_params = REP + SPLIT, m.num_replicated = REP;
    for (size_t i = 0; i < REP; i++)
        g[i] = whole_grad(i);
    for (size_t i = 0; i < SPLIT; i++)
        g[REP + i] = whole_grad(REP + (size_t)r * SPLIT + i);
    float coef, want_norm = whole_clip(t, *max_norm, &coef), norm = -1;
    dt_result res = dt_comm_stats_reset(world);
    if (res == DT_OK)
        res = lab_tp_clip_grad_norm(&tp, &m, *max_norm, &norm);
    if (res == DT_OK && memcmp(&norm, &want_norm, sizeof norm))
        res = dt_fail(DT_ERR_MISMATCH, "norm %.9g, one rank with the whole gradient gives %.9g "
                      "(every parameter of the whole model once)",
                      (double)norm, (double)want_norm);
    for (size_t i = 0; res == DT_OK && i < REP + SPLIT; i++) {
        size_t whole = i < REP ? i : REP + (size_t)r * SPLIT + (i - REP);
        float want = coef < 1 ? whole_grad(whole) * coef : whole_grad(whole);
        if (memcmp(&g[i], &want, sizeof want))
            res = dt_fail(DT_ERR_MISMATCH, "gradient %zu = %.9g after clipping to %g, one rank "
                          "gives %.9g", i, (double)g[i],
                          (double)*max_norm, (double)want);
    }
    dt_stats st;
    if (res == DT_OK)
        res = dt_comm_stats(world, &st);
    if (res == DT_OK && (st.calls[DT_COLL_ALLREDUCE] != 1 || st.bytes_sent > 4 * (uint64_t)t))
        res = dt_fail(DT_ERR_MISMATCH, "%llu allreduces sending %llu bytes; expected one "
                      "allreduce of one float",
                      (unsigned long long)st.calls[DT_COLL_ALLREDUCE],
                      (unsigned long long)st.bytes_sent);
    lab_tp_free(&tp);
    return res;
}

/* Gradients that are not integers: m / 2^10 with m in [2^11, 2^12), 12
 * significant bits, so that each square is exact in a float (24 bits) and
 * a rank's sum of squares (about 35 bits) is exact in a double but rounded
 * at each addition in a float. The contract's norm: each rank's squares
 * summed in double and rounded once, the t floats summed by one
 * allreduce. The reference makes that allreduce of its own parts on the
 * same communicator, so the t additions come in the same order in both. */
static float frac_grad(size_t i)
{
    uint64_t h = dt_hash64(62, 0, (uint64_t)i);
    float m = (float)(2048 + h % 2048);
    return (h >> 40 & 1 ? -m : m) / 1024.0f;
}

static dt_result clip_double_rank(dt_comm *world, void *arg)
{
    (void)arg;
    dt_gpt_config cfg = tpt_config(1);
    lab_tp tp;
    DT_CHECK(lab_tp_init(&tp, world, &cfg, TPT_B, TPT_T, 0));
    int t = tp.t, r = tp.rank;
    static _Thread_local float g[REP + SPLIT];
    lab_tp_model m = {0};
    m.grads = g, m.num_params = REP + SPLIT, m.num_replicated = REP;
    double exact = 0; /* the contract's part, and the float accumulator's beside it */
    float in_float = 0, part, total, part_f, total_f;
    for (size_t i = 0; i < REP + SPLIT; i++) {
        g[i] = frac_grad(i < REP ? i : REP + (size_t)r * SPLIT + (i - REP));
        if (i >= REP || r == 0)
            exact += (double)g[i] * g[i], in_float += g[i] * g[i];
    }
    part = (float)exact, part_f = in_float;
    dt_result res = dt_allreduce(&part, &total, 1, DT_F32, DT_SUM, tp.comm);
    if (res == DT_OK)
        res = dt_allreduce(&part_f, &total_f, 1, DT_F32, DT_SUM, tp.comm);
    float max_norm = 10, want_norm = sqrtf(total), norm = -1, coef = max_norm / (want_norm + 1e-6f);
    if (res == DT_OK)
        res = lab_tp_clip_grad_norm(&tp, &m, max_norm, &norm);
    if (res == DT_OK && memcmp(&norm, &want_norm, sizeof norm))
        res = dt_fail(DT_ERR_MISMATCH, "t=%d: norm %.9g of gradients with 12 significant bits; "
                      "the contract's is %.9g (each rank's squares summed in double, "
                      "dt_vec_sumsq, rounded once to a float, then one allreduce)%s", t,
                      (double)norm, (double)want_norm, norm == sqrtf(total_f)
                          ? ": yours is what a float accumulator gives, rounding away the low "
                            "bits of each square it adds" : "");
    for (size_t i = 0; res == DT_OK && i < REP + SPLIT; i++) {
        float want = frac_grad(i < REP ? i : REP + (size_t)r * SPLIT + (i - REP)) * coef;
        if (memcmp(&g[i], &want, sizeof want))
            res = dt_fail(DT_ERR_MISMATCH, "t=%d, rank %d: gradient %zu = %.9g after clipping to "
                          "%g, the contract's coefficient %.9g gives %.9g", t, r, i,
                          (double)g[i], (double)max_norm, (double)coef, (double)want);
    }
    lab_tp_free(&tp);
    return res;
}

TEST(clip_sums_squares_in_double, 1)
{
    dt_test_see("chapter 07, section 9");
    EXPECT_OK(tpt_launch_1_2_4(clip_double_rank, NULL));
}

TEST(clip_global_norm_bit_for_bit, 4)
{
    dt_test_see("chapter 07, section 9");
    float max_norm = 10; /* the norm is about 70 * sqrt(t): clipped */
    EXPECT_OK(tpt_launch_1_2_4(clip_rank, &max_norm));
}

TEST(clip_below_max_changes_nothing, 1)
{
    dt_test_see("chapter 07, section 9");
    float max_norm = 1e6f;
    EXPECT_OK(tpt_launch_1_2_4(clip_rank, &max_norm));
}
