/* gantt.c - Gantt charts as SVG: one row per rank, coloured regions on a
 * shared time axis, one colour and one legend entry per kind of region.
 * Pipeline schedules (forward / backward / idle per stage) and traces
 * (compute / communication per rank) both draw as this. */
#include "svg_out.h"

#include <math.h>
#include <string.h>

typedef struct {
    int row;
    double start, end;
    size_t kind; /* index into kinds: the colour */
    char *label; /* NULL: none */
} region;

struct dt_gantt {
    char *title, *xlabel;
    int rows;
    char **row_labels;
    region *regions;
    size_t nregions, cap;
    char **kinds; /* distinct kinds, in order of first use */
    size_t nkinds, kcap;
};

enum { G_LEFT = 80, G_TOP = 40, G_ROW = 28, G_GAP = 4, G_BOTTOM = 56, G_WIDTH = 800,
       G_LEGEND = 160, G_STRIP = 12 };

/* The rows' geometry: a box of G_ROW - G_GAP pixels per row, and above it,
 * when some label does not fit inside its box, a strip of G_STRIP pixels
 * where such labels go instead. */
typedef struct {
    double x0, x1;  /* the time axis, in pixels */
    double pitch;   /* from one row to the next */
    double strip;   /* 0 or G_STRIP */
    double *ink;    /* per row: where the last outside label ends */
} layout;

void dt_gantt_free(dt_gantt *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->nregions; i++) dt_mem_free(g->regions[i].label);
    for (size_t i = 0; i < g->nkinds; i++) dt_mem_free(g->kinds[i]);
    for (int r = 0; g->row_labels && r < g->rows; r++) dt_mem_free(g->row_labels[r]);
    dt_mem_free(g->row_labels);
    dt_mem_free(g->regions);
    dt_mem_free(g->kinds);
    dt_mem_free(g->title);
    dt_mem_free(g->xlabel);
    dt_mem_free(g);
}

dt_result dt_gantt_create(dt_gantt **out, const char *title, const char *xlabel, int rows)
{
    if (!out) return dt_fail(DT_ERR_INVALID_ARG, "gantt create: NULL out");
    if (rows < 1 || rows > 4096) return dt_fail(DT_ERR_INVALID_ARG, "gantt create: %d rows, need 1..4096", rows);
    dt_gantt *g = dt_mem_alloc(DT_MEM_OTHER, sizeof *g);
    if (!g) return dt_fail(DT_ERR_NOMEM, "no memory for a Gantt chart");
    g->rows = rows;
    g->title = svg_strdup(title);
    g->xlabel = svg_strdup(xlabel);
    g->row_labels = dt_mem_alloc(DT_MEM_OTHER, (size_t)rows * sizeof(char *));
    int ok = g->title && g->xlabel && g->row_labels;
    for (int r = 0; ok && r < rows; r++) {
        char buf[32];
        snprintf(buf, sizeof buf, "rank %d", r);
        ok = (g->row_labels[r] = svg_strdup(buf)) != NULL;
    }
    if (!ok) {
        dt_gantt_free(g);
        return dt_fail(DT_ERR_NOMEM, "no memory for a Gantt chart of %d rows", rows);
    }
    *out = g;
    return DT_OK;
}

dt_result dt_gantt_set_row_label(dt_gantt *g, int row, const char *label)
{
    if (!g || !label) return dt_fail(DT_ERR_INVALID_ARG, "gantt row label: NULL %s", g ? "label" : "chart");
    if (row < 0 || row >= g->rows)
        return dt_fail(DT_ERR_INVALID_ARG, "gantt row label: row %d not in [0, %d)", row, g->rows);
    char *copy = svg_strdup(label);
    if (!copy) return dt_fail(DT_ERR_NOMEM, "no memory for a row label");
    dt_mem_free(g->row_labels[row]);
    g->row_labels[row] = copy;
    return DT_OK;
}

/* The index of kind, added to the list if new. */
static dt_result kind_index(dt_gantt *g, const char *kind, size_t *out)
{
    for (size_t i = 0; i < g->nkinds; i++)
        if (strcmp(g->kinds[i], kind) == 0) {
            *out = i;
            return DT_OK;
        }
    DT_CHECK(svg_reserve((void **)&g->kinds, &g->kcap, g->nkinds + 1, sizeof(char *)));
    char *copy = svg_strdup(kind);
    if (!copy) return dt_fail(DT_ERR_NOMEM, "no memory for a region kind");
    g->kinds[g->nkinds] = copy;
    *out = g->nkinds++;
    return DT_OK;
}

dt_result dt_gantt_add(dt_gantt *g, int row, double start, double end, const char *kind,
                       const char *label)
{
    if (!g) return dt_fail(DT_ERR_INVALID_ARG, "gantt add: NULL chart");
    if (!kind || !kind[0]) return dt_fail(DT_ERR_INVALID_ARG, "gantt add: a region needs a kind");
    if (row < 0 || row >= g->rows)
        return dt_fail(DT_ERR_INVALID_ARG, "gantt add: row %d not in [0, %d)", row, g->rows);
    if (!isfinite(start) || !isfinite(end) || !(start < end))
        return dt_fail(DT_ERR_INVALID_ARG, "gantt add: region [%g, %g) is empty or not finite", start, end);
    DT_CHECK(svg_reserve((void **)&g->regions, &g->cap, g->nregions + 1, sizeof(region)));
    region rg = {row, start, end, 0, NULL};
    if (label && !(rg.label = svg_strdup(label)))
        return dt_fail(DT_ERR_NOMEM, "no memory for a region label");
    dt_result r = kind_index(g, kind, &rg.kind);
    if (r != DT_OK) {
        dt_mem_free(rg.label);
        return r;
    }
    g->regions[g->nregions++] = rg;
    return DT_OK;
}

/* ---------------------------------------------------------------- drawing */

static void draw_time_axis(svg_writer *w, const svg_axis *ax, double x0, double x1, double y0,
                           double y1)
{
    char buf[64];
    svg_printf(w, "<g class=\"axes\" stroke=\"#ccc\">\n");
    for (int i = 0; i < ax->nticks; i++) {
        double x = x0 + svg_axis_pos(ax, ax->ticks[i]) * (x1 - x0);
        svg_printf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, y0, x, y1 + 5);
    }
    svg_printf(w, "</g>\n<g class=\"ticks\" fill=\"#333\">\n");
    for (int i = 0; i < ax->nticks; i++) {
        svg_tick_label(ax->ticks[i], buf, sizeof buf);
        svg_text(w, x0 + svg_axis_pos(ax, ax->ticks[i]) * (x1 - x0), y1 + 18, "middle", NULL, buf);
    }
    svg_printf(w, "</g>\n");
}

/* About 7 px a character at the default 12 px font; 6 px at 10 px. */
static int label_fits(const char *label, double width) { return width >= 7.0 * strlen(label) + 4; }

static double box_top(const layout *lay, int row) { return G_TOP + row * lay->pitch + lay->strip + G_GAP / 2.0; }

static void draw_region(svg_writer *w, const dt_gantt *g, const region *rg, const svg_axis *ax,
                        layout *lay)
{
    double a = lay->x0 + svg_axis_pos(ax, rg->start) * (lay->x1 - lay->x0);
    double b = lay->x0 + svg_axis_pos(ax, rg->end) * (lay->x1 - lay->x0);
    double y = box_top(lay, rg->row);
    double h = G_ROW - G_GAP;
    svg_printf(w, "<rect class=\"region\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                  "fill=\"%s\" stroke=\"white\" stroke-width=\"0.5\"><title>",
               a, y, b - a, h, svg_colour(rg->kind));
    svg_escaped(w, g->kinds[rg->kind]);
    if (rg->label) {
        svg_printf(w, " ");
        svg_escaped(w, rg->label);
    }
    svg_printf(w, " [%g, %g)</title></rect>\n", rg->start, rg->end);
    if (!rg->label || !rg->label[0]) return;
    if (label_fits(rg->label, b - a)) {
        svg_text(w, (a + b) / 2, y + h / 2 + 4, "middle", "class=\"label\" fill=\"white\"", rg->label);
        return;
    }
    /* A thin box: its label goes in the strip above it, centred on it, but
     * never over the previous outside label of the row. */
    double half = 3.0 * strlen(rg->label), mid = fmax((a + b) / 2, lay->ink[rg->row] + half + 2);
    lay->ink[rg->row] = mid + half;
    svg_text(w, mid, y - 3, "middle", "class=\"label outside\" font-size=\"10\" fill=\"#333\"",
             rg->label);
}

dt_result dt_gantt_write_svg(const dt_gantt *g, const char *path)
{
    if (!g || !path) return dt_fail(DT_ERR_INVALID_ARG, "write gantt: NULL %s", g ? "path" : "chart");
    if (g->nregions == 0) return dt_fail(DT_ERR_INVALID_ARG, "write gantt '%s': no regions", g->title);
    double lo = g->regions[0].start, hi = g->regions[0].end;
    for (size_t i = 0; i < g->nregions; i++) {
        lo = fmin(lo, g->regions[i].start);
        hi = fmax(hi, g->regions[i].end);
    }
    svg_axis ax;
    /* Time starts at 0 when the first region starts near it; a trace in
     * absolute clock seconds starts at its first region instead. */
    if (lo >= 0 && lo <= 0.25 * (hi - lo)) lo = 0;
    svg_axis_fit(&ax, DT_AXIS_LINEAR, lo, hi);
    /* The regions fill the width: drop the ticks the rounding added. */
    int first = 0;
    while (first < ax.nticks - 1 && ax.ticks[first] < lo) first++;
    while (ax.nticks > first + 1 && ax.ticks[ax.nticks - 1] > hi) ax.nticks--;
    memmove(ax.ticks, ax.ticks + first, (size_t)(ax.nticks - first) * sizeof(double));
    ax.nticks -= first;
    ax.lo = lo;
    ax.hi = hi;
    layout lay = {G_LEFT, G_WIDTH - G_LEGEND, G_ROW, 0, NULL};
    for (size_t i = 0; i < g->nregions && lay.strip == 0; i++) {
        const region *rg = &g->regions[i];
        double width = (svg_axis_pos(&ax, rg->end) - svg_axis_pos(&ax, rg->start)) * (lay.x1 - lay.x0);
        if (rg->label && rg->label[0] && !label_fits(rg->label, width)) lay.strip = G_STRIP;
    }
    lay.pitch = G_ROW + lay.strip;
    lay.ink = dt_mem_alloc(DT_MEM_OTHER, (size_t)g->rows * sizeof(double));
    if (!lay.ink) return dt_fail(DT_ERR_NOMEM, "write gantt: no memory for %d rows", g->rows);
    for (int r = 0; r < g->rows; r++) lay.ink[r] = -INFINITY;
    int height = (int)(G_TOP + g->rows * lay.pitch + G_BOTTOM);
    double x0 = lay.x0, x1 = lay.x1, y0 = G_TOP, y1 = G_TOP + g->rows * lay.pitch;

    svg_writer w;
    dt_result r0 = svg_open(&w, path, G_WIDTH, height);
    if (r0 != DT_OK) {
        dt_mem_free(lay.ink);
        return r0;
    }
    /* Titles and labels within the canvas: shrunk, then wrapped (svg_text_fit). */
    svg_text_fit(&w, G_WIDTH / 2.0, 24, "middle", "class=\"title\"", g->title, 16, 10, G_WIDTH - 16, 1);
    draw_time_axis(&w, &ax, x0, x1, y0, y1);
    svg_printf(&w, "<g class=\"rows\" fill=\"#333\">\n");
    for (int r = 0; r < g->rows; r++)
        svg_text_fit(&w, x0 - 8, box_top(&lay, r) + (G_ROW - G_GAP) / 2.0 + 4, "end", NULL,
                     g->row_labels[r], SVG_FONT_SIZE, 8, x0 - 12, 1);
    svg_printf(&w, "</g>\n<g class=\"regions\">\n");
    for (size_t i = 0; i < g->nregions; i++) draw_region(&w, g, &g->regions[i], &ax, &lay);
    dt_mem_free(lay.ink);
    svg_printf(&w, "</g>\n");
    svg_text_fit(&w, (x0 + x1) / 2, height - 14, "middle", "class=\"xlabel\"", g->xlabel, SVG_FONT_SIZE,
                 9, 2 * fmin((x0 + x1) / 2, G_WIDTH - (x0 + x1) / 2) - 8, 1);
    svg_printf(&w, "<g class=\"legend\">\n");
    double y = G_TOP;
    for (size_t k = 0; k < g->nkinds; k++) {
        svg_printf(&w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
                   x1 + 16, y, svg_colour(k));
        int lines = svg_text_fit(&w, x1 + 34, y + 10, NULL, NULL, g->kinds[k], SVG_FONT_SIZE, 9,
                                 G_WIDTH - (x1 + 34) - 4, 0);
        y += 18 + (lines - 1) * 1.2 * 9;
    }
    svg_printf(&w, "</g>\n");
    return svg_close(&w, path);
}
