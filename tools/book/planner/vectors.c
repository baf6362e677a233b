/* vectors.c - the expected numbers of the web book's planner test (make
 * test-book): each vector of tests/lib/sim_vectors.h, the ones the C tests
 * check, planned by the native build of the same lib/sim sources the page
 * runs as WebAssembly, printed as JSON on stdout:
 *   [{"name": ..., "args": {"layers": ..., ..., "cluster": "dgx-a100-80gb"},
 *     "cost": {"params": ..., ...}  or  "error": "dt_last_error's message"}, ...]
 * Doubles print with 17 significant digits, which read back as the same
 * double: the browser's numbers must equal these exactly. */
#include "dt/sim.h"
#include "fields.h"
#include "sim_vectors.h"

#include <stdio.h>

static int first = 1;

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
    putchar('"');
}

static void vector(const char *name, const dt_sim_model *m, const dt_sim_layout *l,
                   const char *cluster)
{
    dt_sim_cost k;
    dt_result r = dt_sim_plan(m, l, dt_sim_cluster_preset(cluster), &k);
    printf("%s\n{\"name\": ", first ? "[" : ",");
    first = 0;
    json_string(name);
    printf(", \"args\": {");
#define ARG_M(f) printf("\"%s\": %d, ", #f, (int)m->f);
#define ARG_L(f) printf("\"%s\": %d, ", #f, (int)l->f);
    DT_BOOK_MODEL_ARGS(ARG_M)
    DT_BOOK_LAYOUT_ARGS(ARG_L)
    printf("\"cluster\": ");
    json_string(cluster);
    if (r != DT_OK) {
        printf("}, \"error\": ");
        json_string(dt_last_error());
        printf("}");
        return;
    }
    const char *sep = "";
    printf("}, \"cost\": {");
#define COST(f) printf("%s\"%s\": %.17g", sep, #f, (double)k.f), sep = ", ";
    DT_BOOK_COST_FIELDS(COST)
    printf("}}");
}

int main(void)
{
    dt_sim_model m;
    dt_sim_layout l;
    const char *selene = "dgx-a100-80gb";
    for (size_t i = 0; i < sizeof megatron2021 / sizeof megatron2021[0]; i++) {
        sim_run_args(&megatron2021[i], &m, &l);
        vector(megatron2021[i].name, &m, &l, selene);
    }
    for (size_t i = 0; i < sizeof korthikanti2022 / sizeof korthikanti2022[0]; i++) {
        sim_run_args(&korthikanti2022[i], &m, &l);
        vector(korthikanti2022[i].name, &m, &l, selene);
    }
    const struct {
        dt_sim_layout l;
        const char *field;
    } refusals[] = {
#define ROW(l, field, other) {l, field},
        SIM_REFUSALS(ROW)
#undef ROW
    };
    char name[128];
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++) {
        snprintf(name, sizeof name, "refused: %s (case %zu)", refusals[i].field, i);
        vector(name, &sim_gpt175, &refusals[i].l, selene);
    }
    for (size_t i = 0; i < sizeof sim_link_cases / sizeof sim_link_cases[0]; i++) {
        const sim_link_case *c = &sim_link_cases[i];
        l = sim_layout(c->tp, c->pp, c->dp, 1, 64, 1, DT_SIM_RECOMPUTE_FULL);
        snprintf(name, sizeof name, "links: tp %d pp %d dp %d", c->tp, c->pp, c->dp);
        vector(name, &sim_links_model, &l, selene);
    }
    printf("\n]\n");
    return ferror(stdout) ? 1 : 0;
}
