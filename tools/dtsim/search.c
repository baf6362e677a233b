/* search.c - `dtsim search`: every layout of a cluster for a model
 * (dt_sim_search), the fastest first, and how long the search took. */
#include "dtsim.h"

#include <stdlib.h>

#define GIB 1073741824.0

static void print_row(int rank, const dt_sim_ranked *r)
{
    const dt_sim_layout *l = &r->layout;
    const dt_sim_cost *k = &r->cost;
    printf("%5d %4d %4d %5d %4d %3d %5d %4d %-9s %10.4f %12.6g %6.1f%% %8.2f\n", rank, l->tp, l->pp,
           l->dp, l->vpp, l->sp, l->micro_batch, l->zero, dt_sim_recompute_name(l->recompute),
           k->step_s, k->tokens_per_s, 100 * k->mfu, k->mem_bytes / GIB);
}

static void print_json_row(int rank, const dt_sim_ranked *r, int last)
{
    const dt_sim_layout *l = &r->layout;
    const dt_sim_cost *k = &r->cost;
    printf("    {\"rank\": %d, \"tp\": %d, \"pp\": %d, \"dp\": %d, \"vpp\": %d, \"sp\": %d, "
           "\"micro_batch\": %d, \"zero\": %d, \"recompute\": \"%s\", \"step_s\": %.17g, "
           "\"tokens_per_s\": %.17g, \"mfu\": %.17g, \"tflops_per_device\": %.17g, "
           "\"mem_bytes\": %.17g, \"fits\": true}%s\n",
           rank, l->tp, l->pp, l->dp, l->vpp, l->sp, l->micro_batch, l->zero,
           dt_sim_recompute_name(l->recompute), k->step_s, k->tokens_per_s, k->mfu,
           k->tflops_per_device, k->mem_bytes, last ? "" : ",");
}

int dtsim_search_main(int argc, char **argv)
{
    dtsim_opts o;
    int r = dtsim_plan_parse(argc, argv, 1, &o);
    if (r != DT_CLI_GO)
        return r;
    dt_sim_search_opts so = {o.devices, o.layout.global_batch, o.layout.dtype};
    dt_sim_bad bad;
    long feasible, tried;
    /* --top 0: every layout that fits; count them first */
    int cap = o.top;
    double t0 = dt_now();
    if (cap == 0) {
        if (dt_sim_search_eval(&o.model, &so, o.cluster, NULL, 0, &feasible, &tried, &bad) != DT_OK)
            return dtsim_refused(&bad);
        cap = feasible > 0 ? (int)feasible : 1;
    }
    dt_sim_ranked *best = calloc((size_t)cap, sizeof *best);
    if (!best)
        return fprintf(stderr, "dtsim: out of memory for %d layouts\n", cap), 1;
    if (dt_sim_search_eval(&o.model, &so, o.cluster, best, cap, &feasible, &tried, &bad) != DT_OK) {
        free(best);
        return dtsim_refused(&bad);
    }
    double seconds = dt_now() - t0;
    int shown = feasible < cap ? (int)feasible : cap;
    if (o.json) {
        printf("{\n  \"cluster\": \"%s\",\n  \"devices\": %d,\n  \"global_batch\": %d,\n"
               "  \"dtype\": \"%s\",\n  \"tried\": %ld,\n  \"feasible\": %ld,\n"
               "  \"search_s\": %.6g,\n  \"layouts\": [\n",
               o.cluster->name, o.devices, o.layout.global_batch, dt_sim_dtype_name(o.layout.dtype),
               tried, feasible, seconds);
        for (int i = 0; i < shown; i++)
            print_json_row(i + 1, &best[i], i == shown - 1);
        printf("  ]\n}\n");
    } else {
        printf("search: %d devices of %s; %s%s%d layers, hidden %d, %d heads, ffn %d, seq %d, "
               "vocab %d; global batch %d, %s\n",
               o.devices, o.cluster->name, o.model_name ? o.model_name : "",
               o.model_name ? ": " : "", o.model.layers, o.model.hidden, o.model.heads,
               o.model.ffn, o.model.seq, o.model.vocab, o.layout.global_batch,
               dt_sim_dtype_name(o.layout.dtype));
        printf("%ld layouts priced, %ld fit in %.2f GiB; the %d fastest:\n\n", tried, feasible,
               o.cluster->hbm_bytes / GIB, shown);
        printf(" rank   tp   pp    dp  vpp  sp micro zero recompute     step s     tokens/s    "
               "MFU  mem GiB\n");
        for (int i = 0; i < shown; i++)
            print_row(i + 1, &best[i]);
        printf("\nsearched in %.3f s\n", seconds);
    }
    free(best);
    return 0;
}
