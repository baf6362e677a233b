/* hidden_fsdp.c - lab 09's hidden tests: ranks as processes, the GPT in
 * units of blocks, FSDP without prefetch, the backward's prefetch and its
 * reduce-scatters in the trace, five ranks. */
#include "grader.h"
#include "fsdp_test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

TEST_HIDDEN_T(fsdp_on_proc_backend, 2, 30)
{
    dt_test_see("chapter 09, sections 2 and 4");
    fsdp_run run = {FT_MLP, 0, 1, 1, 0, 0, 4, 2, FT_PARAMS | FT_MEAN | FT_CALLS | FT_PEAK2, NULL,
                    0, 0};
    EXPECT_OK(ft_launch(3, DT_BACKEND_PROC, "none", &run));
}

/* embed + block 1, block 2, head: three units, both resharding modes. */
TEST_HIDDEN_T(fsdp_gpt_grouped_units, 1, 30)
{
    dt_test_see("chapter 09, sections 1 and 5");
    fsdp_run on = {FT_GPT, 500, 1, 1, 0, 0, 3, 3,
                   FT_PARAMS | FT_MEAN | FT_PEAK2 | FT_BYTES | FT_CALLS, NULL, 0, 0};
    fsdp_run off = on;
    off.reshard = 0, off.checks = FT_PARAMS | FT_MEAN | FT_FULL | FT_BYTES | FT_CALLS;
    EXPECT_OK(ft_launch(4, DT_BACKEND_THREAD, "none", &on));
    EXPECT(on.units == 3, "%s wrapped at 500 parameters: %d units, expected 3 (embedding and "
           "block 1, block 2, head)", FT_GPT, on.units);
    EXPECT_OK(ft_launch(4, DT_BACKEND_THREAD, "none", &off));
}

TEST_HIDDEN_T(fsdp_without_prefetch_trains_the_same, 1, 30)
{
    dt_test_see("chapter 09, section 2");
    for (int reshard = 0; reshard <= 1; reshard++) {
        fsdp_run run = {FT_MLP, 0, 0, reshard, 0, 0, 4, 3,
                        FT_PARAMS | FT_MEAN | FT_CALLS | FT_BYTES, NULL, 0, 0};
        EXPECT_OK(ft_launch(3, DT_BACKEND_THREAD, "none", &run));
    }
}

/* In the backward (units last to first, one layer each), unit u-1's
 * all-gather runs while unit u computes its backward. */
TEST_HIDDEN_T(backward_prefetch_overlaps, 1, 30)
{
    dt_test_see("chapter 09, section 4");
    char path[4200];
    snprintf(path, sizeof path, "%s/fsdp-btrace.json", dt_test_tmpdir());
    fsdp_run run = {FT_BIG, 0, 1, 1, 30e-6, 60e-6, 4, 1, 0, path, 0, 0};
    dt_result r = ft_launch(2, DT_BACKEND_THREAD, "ib100", &run);
    ft_span ag[64], comp[64];
    int U = run.units, nag = ft_trace_spans(path, "allgather", 1, ag, 64);
    int nc = ft_trace_spans(path, "compute", 0, comp, 64);
    remove(path); /* before any verdict: a failed launch leaves nothing either */
    EXPECT_OK(r);
    EXPECT(nag >= 2 * U && nc >= 2 * U, "%d all-gathers (asynchronous) and %d compute regions "
           "for %d units", nag, nc, U);
    for (int j = 0; j + 1 < U; j++) /* comp[U + j]: the backward of unit U-1-j */
        EXPECT(ag[U + j + 1].s < comp[U + j].e && ag[U + j + 1].e > comp[U + j].s,
               "unit %d's all-gather [%.1f, %.1f) us does not overlap unit %d's backward "
               "[%.1f, %.1f) us", U - 2 - j, ag[U + j + 1].s, ag[U + j + 1].e, U - 1 - j,
               comp[U + j].s, comp[U + j].e);
}

/* The backward's other asynchronous collective: unit u's reduce-scatter
 * runs while unit u-1 computes its backward, and is waited for only after
 * it (the post_backward postcondition: the gradients of u and of the unit
 * before it in the backward held at once). */
TEST_HIDDEN_T(backward_reduce_scatter_overlaps, 1, 30)
{
    dt_test_see("chapter 09, section 4");
    char path[4200];
    snprintf(path, sizeof path, "%s/fsdp-rtrace.json", dt_test_tmpdir());
    fsdp_run run = {FT_BIG, 0, 1, 1, 30e-6, 60e-6, 4, 1, 0, path, 0, 0};
    dt_result r = ft_launch(2, DT_BACKEND_THREAD, "ib100", &run);
    ft_span rs[64], comp[64];
    int U = run.units, nrs = ft_trace_spans(path, "reduce_scatter", 1, rs, 64);
    int nc = ft_trace_spans(path, "compute", 0, comp, 64);
    remove(path); /* before any verdict: a failed run leaves nothing behind */
    EXPECT(r == DT_OK, "ft_launch: %s", dt_last_error());
    EXPECT(nrs >= U && nc >= 2 * U, "%d reduce-scatters (asynchronous) and %d compute regions "
           "for %d units", nrs, nc, U);
    /* rs[j]: unit U-1-j's reduce-scatter; comp[U + j + 1]: unit U-2-j's backward */
    for (int j = 0; j + 1 < U; j++) {
        ft_span a = rs[j], c = comp[U + j + 1];
        EXPECT(a.s < c.e && a.e > c.s, "unit %d's reduce-scatter [%.1f, %.1f) us does not "
               "overlap unit %d's backward [%.1f, %.1f) us: %s", U - 1 - j, a.s, a.e, U - 2 - j,
               c.s, c.e, fabs(a.e - c.s) < 1e-3
                   ? "the backward began only when the reduce-scatter ended, so it was waited "
                     "for as soon as it was started"
                   : "it was over before that backward began; the rank waited for something "
                     "else in between (an all-gather not prefetched?)");
    }
}

TEST_HIDDEN_T(fsdp_five_ranks, 1, 30)
{
    dt_test_see("chapter 09, sections 2 and 3");
    fsdp_run run = {FT_MLP, 0, 1, 1, 0, 0, 3, 2,
                    FT_PARAMS | FT_MEAN | FT_PEAK2 | FT_BYTES | FT_CALLS, NULL, 0, 0};
    EXPECT_OK(ft_launch(5, DT_BACKEND_THREAD, "none", &run));
}

/* Predict, then measure, under every switch: the deep MLP in units of
 * about 700 parameters, the GPT by blocks, a single unit. */
TEST_HIDDEN_T(predict_peaks_under_every_switch, 2, 30)
{
    dt_test_see("chapter 09, sections 1, 3 and 5");
    for (int prefetch = 0; prefetch <= 1; prefetch++)
        for (int reshard = 0; reshard <= 1; reshard++)
            ft_expect_peak_prediction(FT_MLP, 700, prefetch, reshard, 3);
    ft_expect_peak_prediction(FT_GPT, 500, 1, 1, 4);
    ft_expect_peak_prediction(FT_UNEVEN, 0, 0, 1, 2);
    ft_expect_peak_prediction(FT_UNEVEN, (size_t)1 << 40, 1, 1, 3);
    dt_model m;
    size_t p, g;
    lab_fsdp_config cfg = {dt_adamw_config(0.01f), 0, 1, 1, NULL, NULL};
    EXPECT_OK(dt_model_create_spec(&m, FT_MLP, FT_SEED));
    EXPECT_ERR(lab_fsdp_predict_peak(&m, &cfg, 0, &p, &g), DT_ERR_INVALID_ARG);
    dt_model_free(&m);
}
