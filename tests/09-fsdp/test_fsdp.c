/* test_fsdp.c - lab 09: FSDP. The multi-rank tests train with the lab
 * inside dt_launch and check, inside the ranks, the parameters against
 * the library's data parallelism, the memory per tag, the collectives and
 * bytes of every step (see fsdp_test.c); the prefetch tests read the
 * modeled clock and the communicator's trace. */
#include "grader.h"
#include "fsdp_test.h"
#include "dt/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ task 1 */

static void expect_wrap(const char *spec, size_t min, int n, const int *starts)
{
    dt_model m;
    dt_unit u[16];
    int got = -1;
    EXPECT_OK(dt_model_create_spec(&m, spec, 1));
    EXPECT_OK(lab_fsdp_wrap(&m, min, u, &got));
    EXPECT(got == n, "%s, min %zu parameters: %d units, expected %d", spec, min, got, n);
    for (int i = 0; i < n; i++) {
        dt_unit want;
        EXPECT_OK(dt_unit_of(&m, starts[i], i + 1 < n ? starts[i + 1] : m.num_layers, &want));
        EXPECT(!memcmp(&u[i], &want, sizeof want), "%s, min %zu: unit %d is layers [%d, %d) "
               "at [%zu, +%zu), expected [%d, %d) at [%zu, +%zu)", spec, min, i, u[i].first,
               u[i].last, u[i].offset, u[i].count, want.first, want.last, want.offset,
               want.count);
    }
    dt_model_free(&m);
}

/* deep:12,24,4,5 has layers of 312, 600, 600, 600, 600, 125 parameters;
 * the GPT 96 (embedding), 510, 510 (blocks), 78 (head). */
TEST(wrap_groups_consecutive_layers, 1)
{
    dt_test_see("chapter 09, section 1");
    expect_wrap(FT_MLP, 0, 6, (const int[]){0, 1, 2, 3, 4, 5});
    expect_wrap(FT_MLP, 600, 5, (const int[]){0, 2, 3, 4, 5});         /* 312 < 600: joins */
    expect_wrap(FT_MLP, 1000, 3, (const int[]){0, 3, 5});              /* 1512, 1200, 125 */
    expect_wrap(FT_MLP, 2000, 2, (const int[]){0, 4});                 /* the last takes the rest */
    expect_wrap(FT_MLP, (size_t)1 << 40, 1, (const int[]){0});
    expect_wrap(FT_GPT, 500, 3, (const int[]){0, 2, 3});               /* embed + block1, block2, head */
    expect_wrap(FT_GPT, 1, 4, (const int[]){0, 1, 2, 3});              /* each block its unit */
}

/* ------------------------------------------------------------ tasks 2 and 3 */

static dt_result gather_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_model m, init;
    lab_fsdp f;
    dt_mem_stats a, b;
    dt_stats s;
    lab_fsdp_config cfg = {dt_adamw_config(0.01f), 0, 1, 1, NULL, NULL};
    int K = dt_comm_size(w);
    DT_CHECK(dt_model_create_spec(&init, FT_MLP, FT_SEED));
    DT_CHECK(dt_model_create_spec(&m, FT_MLP, FT_SEED));
    dt_result r = lab_fsdp_init(&f, w, &m, &cfg);
    for (int u = 0; r == DT_OK && u < f.num_units; u++) {
        lab_fsdp_unit *un = &f.units[u];
        size_t full = ft_shard(un->unit.count, K) * (size_t)K;
        dt_mem_stats_get(&a);
        r = lab_fsdp_unshard_start(&f, u);
        if (r == DT_OK && (!un->params || !un->gather))
            r = dt_fail(DT_ERR_STATE, "%d ranks, rank %d, unit %d: after unshard_start params "
                        "%p, gather %p: an all-gather must be in flight", K, dt_comm_rank(w), u,
                        (void *)un->params, (void *)un->gather);
        if (r == DT_OK)
            r = lab_fsdp_unshard_start(&f, u); /* in flight already: nothing */
        if (r == DT_OK)
            r = lab_fsdp_unshard_wait(&f, u);
        dt_mem_stats_get(&b);
        if (r == DT_OK && (un->gather || b.current[DT_MEM_PARAM] - a.current[DT_MEM_PARAM] !=
                                             4 * full))
            r = dt_fail(DT_ERR_MISMATCH, "%d ranks, rank %d, unit %d gathered: gather %p, %zu "
                        "more bytes of PARAM, expected NULL and %zu", K, dt_comm_rank(w), u,
                        (void *)un->gather,
                        b.current[DT_MEM_PARAM] - a.current[DT_MEM_PARAM], 4 * full);
        for (size_t i = 0; r == DT_OK && i < full; i++) {
            float want = i < un->unit.count ? init.params[un->unit.offset + i] : 0;
            if (un->params[i] != want)
                r = dt_fail(DT_ERR_MISMATCH, "%d ranks, rank %d, unit %d gathered: params[%zu] = "
                            "%g, expected %g (%s)", K, dt_comm_rank(w), u, i,
                            (double)un->params[i], (double)want,
                            i < un->unit.count ? "the initial parameter" : "padding");
        }
        if (r == DT_OK)
            r = lab_fsdp_unshard_wait(&f, u); /* gathered already: no second all-gather */
        if (r == DT_OK)
            r = lab_fsdp_reshard(&f, u);
        dt_mem_stats_get(&b);
        if (r == DT_OK && (un->params || b.current[DT_MEM_PARAM] != a.current[DT_MEM_PARAM]))
            r = dt_fail(DT_ERR_MISMATCH, "%d ranks, rank %d, unit %d resharded: params %p, "
                        "PARAM %zu bytes, before the gather %zu", K, dt_comm_rank(w), u,
                        (void *)un->params,
                        b.current[DT_MEM_PARAM], a.current[DT_MEM_PARAM]);
    }
    if (r == DT_OK)
        r = dt_comm_stats(w, &s);
    if (r == DT_OK && s.calls[DT_COLL_ALLGATHER] != (uint64_t)f.num_units)
        r = dt_fail(DT_ERR_MISMATCH, "%d ranks, rank %d: %llu all-gathers for %d units "
                    "gathered once each (a second unshard_start or unshard_wait of a unit "
                    "gathered or in flight starts none)", K, dt_comm_rank(w),
                    (unsigned long long)s.calls[DT_COLL_ALLGATHER], f.num_units);
    if (r == DT_OK || f.units)
        lab_fsdp_free(&f);
    dt_model_free(&m), dt_model_free(&init);
    return r;
}

static void launch_plain(dt_rank_fn fn, int K0, int K1)
{
    for (int K = K0; K <= K1; K++) {
        dt_launch_opts o;
        dt_launch_opts_init(&o);
        o.nranks = K, o.backend = DT_BACKEND_THREAD, o.timeout_s = 5;
        EXPECT_OK(dt_launch(&o, fn, NULL));
    }
}

TEST(unshard_gathers_and_reshard_frees, 2)
{
    dt_test_see("chapter 09, section 2");
    launch_plain(gather_rank, 1, 4);
}

/* Every rank's gradients of unit u are (i % 7) + r K: their mean is
 * (i % 7) + K (K - 1) / 2, exactly. */
static dt_result reduce_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_model m;
    lab_fsdp f;
    lab_fsdp_config cfg = {dt_adamw_config(0.01f), 0, 1, 1, NULL, NULL};
    int K = dt_comm_size(w), rank = dt_comm_rank(w);
    DT_CHECK(dt_model_create_spec(&m, FT_MLP, FT_SEED));
    dt_result r = lab_fsdp_init(&f, w, &m, &cfg);
    for (int u = 0; r == DT_OK && u < f.num_units; u++) {
        lab_fsdp_unit *un = &f.units[u];
        size_t c = ft_shard(un->unit.count, K), full = c * (size_t)K;
        if (!(un->grads = dt_mem_alloc(DT_MEM_GRAD, full * sizeof(float))))
            r = dt_fail(DT_ERR_NOMEM, "reduce test: gradients");
        for (size_t i = 0; r == DT_OK && i < full; i++)
            un->grads[i] = (float)(i % 7) + (float)(rank * K);
        if (r == DT_OK)
            r = lab_fsdp_reduce_start(&f, u);
        if (r == DT_OK)
            r = lab_fsdp_reduce_wait(&f, u);
        if (r == DT_OK && (un->grads || un->reduce))
            r = dt_fail(DT_ERR_STATE, "%d ranks, rank %d, unit %d reduced: grads %p, reduce %p, "
                        "expected both NULL", K, rank, u, (void *)un->grads,
                        (void *)un->reduce);
        for (size_t i = 0; r == DT_OK && i < c; i++) {
            float want = (float)(((size_t)rank * c + i) % 7) + (float)(K * (K - 1)) / 2;
            if (un->grad_shard[i] != want)
                r = dt_fail(DT_ERR_MISMATCH, "unit %d, rank %d: grad_shard[%zu] = %g, the mean "
                            "of element %zu over the ranks is %g%s", u, rank, i,
                            (double)un->grad_shard[i], (size_t)rank * c + i, (double)want,
                            K > 1 && un->grad_shard[i] == K * want
                                ? ": that is their sum, not their mean" : "");
        }
    }
    if (r == DT_OK || f.units)
        lab_fsdp_free(&f);
    dt_model_free(&m);
    return r;
}

TEST(reduce_scatters_into_the_shard, 2)
{
    dt_test_see("chapter 09, section 2");
    launch_plain(reduce_rank, 1, 4);
}

/* ------------------------------------------------------------ task 4 */

static fsdp_run plain(const char *spec, int prefetch, int reshard, int checks)
{
    fsdp_run r = {spec, 0, prefetch, reshard, 0, 0, 4, 3, checks, NULL, 0, 0};
    return r;
}

TEST_T(fsdp_equals_ddp, 3, 30)
{
    dt_test_see("chapter 09, section 2");
    for (int K = 1; K <= 4; K++) {
        fsdp_run run = plain(FT_MLP, 1, 1, FT_PARAMS | FT_MEAN | FT_CALLS);
        EXPECT_OK(ft_launch(K, DT_BACKEND_THREAD, "none", &run));
    }
    for (int K = 2; K <= 3; K++) {
        fsdp_run run = plain(FT_GPT, 1, 1, FT_PARAMS | FT_MEAN | FT_CALLS);
        EXPECT_OK(ft_launch(K, DT_BACKEND_THREAD, "none", &run));
    }
}

/* Prefetching holds the next unit beside this one: never more than two
 * units' parameters (or gradients: this one's, and the last one's in its
 * reduce-scatter) beside the shards; 3 psi a step. */
TEST_T(fsdp_holds_at_most_two_units, 2, 30)
{
    dt_test_see("chapter 09, section 3");
    for (int K = 2; K <= 4; K++) {
        fsdp_run run = plain(FT_MLP, 1, 1, FT_PEAK2 | FT_BYTES | FT_CALLS);
        EXPECT_OK(ft_launch(K, DT_BACKEND_THREAD, "none", &run));
    }
    fsdp_run run = plain(FT_GPT, 1, 1, FT_PEAK2 | FT_BYTES);
    EXPECT_OK(ft_launch(4, DT_BACKEND_THREAD, "none", &run));
}

/* The modeled step of FT_BIG on 4 ranks over ib100, each layer's forward
 * 30 us and backward 60 us: with prefetch, every forward all-gather but
 * the first runs under the previous unit's compute (each is shorter than
 * it), so the step is shorter by at least half of their sum. */
TEST_T(prefetch_lowers_the_modeled_step, 2, 30)
{
    dt_test_see("chapter 09, section 4");
    fsdp_run with = {FT_BIG, 0, 1, 1, 30e-6, 60e-6, 4, 2, FT_CALLS, NULL, 0, 0};
    fsdp_run without = with;
    without.prefetch = 0;
    EXPECT_OK(ft_launch(4, DT_BACKEND_THREAD, "ib100", &with));
    EXPECT_OK(ft_launch(4, DT_BACKEND_THREAD, "ib100", &without));
    dt_model m;
    dt_net link;
    double hidden = 0;
    EXPECT_OK(dt_model_create_spec(&m, FT_BIG, 1));
    EXPECT_OK(dt_net_link("ib100", &link));
    for (int i = 1; i < m.num_layers; i++)
        hidden += dt_net_ring_allgather(&link, 4.0 * 4 * (double)ft_shard(
                                            m.layers[i].param_count, 4), 4);
    dt_model_free(&m);
    EXPECT(with.step_s < without.step_s - 0.5 * hidden, "modeled step %.1f us with prefetch, "
           "%.1f us without: prefetch must hide at least half of the forward's all-gathers "
           "after the first (%.1f us)", with.step_s * 1e6, without.step_s * 1e6, hidden * 1e6);
}

/* One step traced: in the forward, unit i+1's all-gather runs while unit
 * i computes (their modeled spans overlap), for every i. */
TEST_T(trace_shows_the_next_gather_under_this_compute, 2, 30)
{
    dt_test_see("chapter 09, section 4");
    char path[4200];
    snprintf(path, sizeof path, "%s/fsdp-trace.json", dt_test_tmpdir());
    fsdp_run run = {FT_BIG, 0, 1, 1, 30e-6, 60e-6, 4, 1, 0, path, 0, 0};
    dt_result r = ft_launch(2, DT_BACKEND_THREAD, "ib100", &run);
    ft_span ag[64], comp[64];
    int nag = ft_trace_spans(path, "allgather", 1, ag, 64);
    int nc = ft_trace_spans(path, "compute", 0, comp, 64);
    if (nag < run.units) /* blocking all-gathers: on the rank's own track */
        nag = ft_trace_spans(path, "allgather", 0, ag, 64);
    remove(path); /* before any verdict: a failed launch leaves nothing either */
    EXPECT_OK(r);
    int U = run.units;
    EXPECT(U >= 3 && nag >= U && nc >= U, "the trace holds %d all-gathers and %d compute "
           "regions of rank 0 for %d units", nag, nc, U);
    for (int i = 0; i + 1 < U; i++) /* the first U of each: the forward's */
        EXPECT(ag[i + 1].s < comp[i].e && ag[i + 1].e > comp[i].s, "unit %d's all-gather "
               "[%.1f, %.1f) us does not overlap unit %d's forward [%.1f, %.1f) us: it was not "
               "prefetched", i + 1, ag[i + 1].s, ag[i + 1].e, i, comp[i].s, comp[i].e);
}

/* Without resharding a unit stays gathered from its forward to its
 * backward: the whole model at once (ZeRO-2's parameters), no second
 * all-gather: 2 psi a step instead of 3. */
TEST_T(reshard_off_keeps_parameters_and_sends_2_psi, 2, 30)
{
    dt_test_see("chapter 09, section 5");
    for (int K = 2; K <= 4; K++) {
        fsdp_run off = plain(FT_MLP, 1, 0, FT_PARAMS | FT_MEAN | FT_FULL | FT_BYTES | FT_CALLS);
        fsdp_run on = plain(FT_MLP, 1, 1, FT_PEAK2 | FT_BYTES | FT_CALLS);
        EXPECT_OK(ft_launch(K, DT_BACKEND_THREAD, "none", &off));
        EXPECT_OK(ft_launch(K, DT_BACKEND_THREAD, "none", &on));
    }
}

/* ------------------------------------------------------------ task 5 */

/* Predict, then measure: the peaks of a model whose two largest units are
 * not neighbours, on three ranks, with prefetch and resharding. */
TEST_T(predict_peak_memory_then_measure, 2, 30)
{
    dt_test_see("chapter 09, sections 1, 3 and 5");
    ft_expect_peak_prediction(FT_UNEVEN, 0, 1, 1, 3);
}
