/* plot.c - line plots as SVG: axes with ticks (linear, log2, log10), a
 * legend, and series drawn as points, lines, both, or bars (histograms).
 *
 * Layout (pixels):
 *
 *     +------------------------- title -------------------------+
 *     |      +---------------------------------+                |
 *     | ylab | plot area: grid, series         |  legend        |
 *     |      +---------------------------------+                |
 *     |                 xlabel                                   |
 *     +----------------------------------------------------------+
 */
#include "svg_out.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    double *x, *y; /* one block of 2 * count doubles; y = x + count */
    size_t count;
    dt_series_style style;
} series;

struct dt_plot {
    char *title, *xlabel, *ylabel;
    int width, height;
    dt_axis_scale xscale, yscale;
    series *series;
    size_t nseries, cap;
};

enum { MARGIN_LEFT = 80, MARGIN_TOP = 40, MARGIN_BOTTOM = 56, MARGIN_RIGHT = 24 };

void dt_plot_free(dt_plot *plot)
{
    if (!plot) return;
    for (size_t i = 0; i < plot->nseries; i++) {
        dt_mem_free(plot->series[i].name);
        dt_mem_free(plot->series[i].x);
    }
    dt_mem_free(plot->series);
    dt_mem_free(plot->title);
    dt_mem_free(plot->xlabel);
    dt_mem_free(plot->ylabel);
    dt_mem_free(plot);
}

dt_result dt_plot_create(dt_plot **out, const char *title, const char *xlabel, const char *ylabel)
{
    if (!out) return dt_fail(DT_ERR_INVALID_ARG, "plot create: NULL out");
    dt_plot *p = dt_mem_alloc(DT_MEM_OTHER, sizeof *p);
    if (!p) return dt_fail(DT_ERR_NOMEM, "no memory for a plot");
    p->title = svg_strdup(title);
    p->xlabel = svg_strdup(xlabel);
    p->ylabel = svg_strdup(ylabel);
    p->width = 640;
    p->height = 420;
    p->xscale = p->yscale = DT_AXIS_LINEAR;
    if (!p->title || !p->xlabel || !p->ylabel) {
        dt_plot_free(p);
        return dt_fail(DT_ERR_NOMEM, "no memory for a plot's labels");
    }
    *out = p;
    return DT_OK;
}

dt_result dt_plot_set_size(dt_plot *plot, int width, int height)
{
    if (!plot) return dt_fail(DT_ERR_INVALID_ARG, "plot size: NULL plot");
    if (width < 200 || width > 4000 || height < 200 || height > 4000)
        return dt_fail(DT_ERR_INVALID_ARG, "plot size %d x %d: each must be in [200, 4000]",
                       width, height);
    plot->width = width;
    plot->height = height;
    return DT_OK;
}

static int scale_valid(dt_axis_scale s)
{
    return s == DT_AXIS_LINEAR || s == DT_AXIS_LOG2 || s == DT_AXIS_LOG10;
}

/* Every value finite, and > 0 on a log axis. */
static dt_result check_values(const char *axis, dt_axis_scale scale, const double *v,
                              size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(v[i]))
            return dt_fail(DT_ERR_INVALID_ARG, "series '%s': %s[%zu] = %g is not finite", name,
                           axis, i, v[i]);
        if (scale != DT_AXIS_LINEAR && v[i] <= 0)
            return dt_fail(DT_ERR_INVALID_ARG, "series '%s': %s[%zu] = %g cannot go on a log axis",
                           name, axis, i, v[i]);
    }
    return DT_OK;
}

static dt_result set_scale(dt_plot *plot, int is_x, dt_axis_scale scale)
{
    if (!plot) return dt_fail(DT_ERR_INVALID_ARG, "plot scale: NULL plot");
    if (!scale_valid(scale)) return dt_fail(DT_ERR_INVALID_ARG, "plot scale: unknown scale %d", (int)scale);
    for (size_t i = 0; i < plot->nseries; i++) {
        const series *s = &plot->series[i];
        DT_CHECK(check_values(is_x ? "x" : "y", scale, is_x ? s->x : s->y, s->count, s->name));
    }
    if (is_x)
        plot->xscale = scale;
    else
        plot->yscale = scale;
    return DT_OK;
}

dt_result dt_plot_set_xscale(dt_plot *plot, dt_axis_scale scale) { return set_scale(plot, 1, scale); }
dt_result dt_plot_set_yscale(dt_plot *plot, dt_axis_scale scale) { return set_scale(plot, 0, scale); }

dt_result dt_plot_add_series(dt_plot *plot, const char *name, const double *x, const double *y,
                             size_t count, dt_series_style style)
{
    if (!plot || !x || !y)
        return dt_fail(DT_ERR_INVALID_ARG, "add series: NULL %s", !plot ? "plot" : !x ? "x" : "y");
    if (!name) name = "";
    if (count == 0) return dt_fail(DT_ERR_INVALID_ARG, "add series '%s': no points", name);
    if (style != DT_SERIES_POINTS && style != DT_SERIES_LINE && style != DT_SERIES_POINTS_AND_LINE &&
        style != DT_SERIES_BARS)
        return dt_fail(DT_ERR_INVALID_ARG, "add series '%s': unknown style %d", name, (int)style);
    DT_CHECK(check_values("x", plot->xscale, x, count, name));
    DT_CHECK(check_values("y", plot->yscale, y, count, name));
    DT_CHECK(svg_reserve((void **)&plot->series, &plot->cap, plot->nseries + 1, sizeof(series)));
    series s = {.name = svg_strdup(name), .count = count, .style = style};
    s.x = dt_mem_alloc(DT_MEM_OTHER, 2 * count * sizeof(double));
    if (!s.name || !s.x) {
        dt_mem_free(s.name);
        dt_mem_free(s.x);
        return dt_fail(DT_ERR_NOMEM, "add series '%s': no memory for %zu points", name, count);
    }
    s.y = s.x + count;
    memcpy(s.x, x, count * sizeof(double));
    memcpy(s.y, y, count * sizeof(double));
    plot->series[plot->nseries++] = s;
    return DT_OK;
}

dt_result dt_plot_add_function(dt_plot *plot, const char *name, double (*f)(double x, void *ctx),
                               void *ctx, double x0, double x1, int samples)
{
    if (!plot || !f) return dt_fail(DT_ERR_INVALID_ARG, "add function: NULL %s", plot ? "f" : "plot");
    if (samples < 2) return dt_fail(DT_ERR_INVALID_ARG, "add function: %d samples, need >= 2", samples);
    if (!isfinite(x0) || !isfinite(x1) || x0 >= x1)
        return dt_fail(DT_ERR_INVALID_ARG, "add function: range [%g, %g] is empty", x0, x1);
    int logx = plot->xscale != DT_AXIS_LINEAR;
    if (logx && x0 <= 0)
        return dt_fail(DT_ERR_INVALID_ARG, "add function: x0 = %g cannot go on a log axis", x0);
    double *xy = dt_mem_alloc(DT_MEM_OTHER, 2 * (size_t)samples * sizeof(double));
    if (!xy) return dt_fail(DT_ERR_NOMEM, "add function: no memory for %d samples", samples);
    for (int i = 0; i < samples; i++) {
        double t = (double)i / (samples - 1);
        double x = logx ? exp(log(x0) + t * (log(x1) - log(x0))) : x0 + t * (x1 - x0);
        if (i == samples - 1) x = x1; /* exactly the end, whatever the rounding */
        xy[i] = x;
        xy[samples + i] = f(x, ctx);
    }
    dt_result r = dt_plot_add_series(plot, name, xy, xy + samples, (size_t)samples, DT_SERIES_LINE);
    dt_mem_free(xy);
    return r;
}

/* ---------------------------------------------------------------- drawing */

typedef struct {
    svg_axis xa, ya;
    double x0, x1, y0, y1; /* the plot area in pixels; y0 is the top */
} frame;

static double px(const frame *fr, double v) { return fr->x0 + svg_axis_pos(&fr->xa, v) * (fr->x1 - fr->x0); }
static double py(const frame *fr, double v) { return fr->y1 - svg_axis_pos(&fr->ya, v) * (fr->y1 - fr->y0); }

/* Bars are laid out in the x axis's own coordinate: x on a linear axis,
 * log x on a log one, where equal gaps look equal. */
static double axis_coord(dt_axis_scale scale, double v) { return scale == DT_AXIS_LINEAR ? v : log(v); }
static double axis_value(dt_axis_scale scale, double c) { return scale == DT_AXIS_LINEAR ? c : exp(c); }

/* The smallest gap between two distinct x of a bar series, in axis
 * coordinates: every bar is 80% of it wide, so that neighbours never touch.
 * A series with one distinct x gets the gap 1 (linear) or log 2 (log). */
static dt_result bar_gap(const series *s, dt_axis_scale scale, double *gap)
{
    double *c = dt_mem_alloc(DT_MEM_OTHER, s->count * sizeof *c);
    if (!c) return dt_fail(DT_ERR_NOMEM, "bars of '%s': no memory for %zu points", s->name, s->count);
    for (size_t k = 0; k < s->count; k++) c[k] = axis_coord(scale, s->x[k]);
    dt_sort_doubles(c, s->count);
    *gap = INFINITY;
    for (size_t k = 1; k < s->count; k++)
        if (c[k] > c[k - 1]) *gap = fmin(*gap, c[k] - c[k - 1]);
    if (isinf(*gap)) *gap = scale == DT_AXIS_LINEAR ? 1.0 : log(2.0);
    dt_mem_free(c);
    return DT_OK;
}

/* The range every series covers: its points, and for bars the half bar
 * beyond the outer ones and the y = 0 they stand on (linear y axis). */
static dt_result data_range(const dt_plot *plot, double *xmin, double *xmax, double *ymin,
                            double *ymax)
{
    *xmin = *xmax = plot->series[0].x[0];
    *ymin = *ymax = plot->series[0].y[0];
    for (size_t i = 0; i < plot->nseries; i++) {
        const series *s = &plot->series[i];
        for (size_t k = 0; k < s->count; k++) {
            *xmin = fmin(*xmin, s->x[k]), *xmax = fmax(*xmax, s->x[k]);
            *ymin = fmin(*ymin, s->y[k]), *ymax = fmax(*ymax, s->y[k]);
        }
        if (s->style != DT_SERIES_BARS) continue;
        double gap;
        DT_CHECK(bar_gap(s, plot->xscale, &gap));
        *xmin = fmin(*xmin, axis_value(plot->xscale, axis_coord(plot->xscale, *xmin) - gap / 2));
        *xmax = fmax(*xmax, axis_value(plot->xscale, axis_coord(plot->xscale, *xmax) + gap / 2));
        if (plot->yscale == DT_AXIS_LINEAR) *ymin = fmin(*ymin, 0), *ymax = fmax(*ymax, 0);
    }
    return DT_OK;
}

static int legend_width(const dt_plot *plot)
{
    size_t longest = 0;
    for (size_t i = 0; i < plot->nseries; i++)
        if (strlen(plot->series[i].name) > longest) longest = strlen(plot->series[i].name);
    if (longest == 0) return 0;
    int w = 40 + 7 * (int)longest; /* about 7 px per character at 12 px */
    return w < plot->width / 3 ? w : plot->width / 3;
}

static void draw_axes(svg_writer *w, const dt_plot *plot, const frame *fr)
{
    char buf[64];
    svg_printf(w, "<g class=\"axes\" stroke=\"#ccc\" stroke-width=\"1\">\n");
    for (int i = 0; i < fr->xa.nticks; i++) {
        double x = px(fr, fr->xa.ticks[i]);
        svg_printf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, fr->y0, x, fr->y1 + 5);
    }
    for (int i = 0; i < fr->ya.nticks; i++) {
        double y = py(fr, fr->ya.ticks[i]);
        svg_printf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", fr->x0 - 5, y, fr->x1, y);
    }
    svg_printf(w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                  "stroke=\"#333\"/>\n</g>\n", fr->x0, fr->y0, fr->x1 - fr->x0, fr->y1 - fr->y0);
    svg_printf(w, "<g class=\"ticks\" fill=\"#333\">\n");
    for (int i = 0; i < fr->xa.nticks; i++) {
        svg_tick_label(fr->xa.ticks[i], buf, sizeof buf);
        svg_text(w, px(fr, fr->xa.ticks[i]), fr->y1 + 18, "middle", NULL, buf);
    }
    for (int i = 0; i < fr->ya.nticks; i++) {
        svg_tick_label(fr->ya.ticks[i], buf, sizeof buf);
        svg_text(w, fr->x0 - 8, py(fr, fr->ya.ticks[i]) + 4, "end", NULL, buf);
    }
    svg_printf(w, "</g>\n");
    /* Titles and labels within the canvas: shrunk, then wrapped (svg_text_fit). */
    svg_text_fit(w, plot->width / 2.0, 24, "middle", "class=\"title\"", plot->title, 16, 10,
                 plot->width - 16, 1);
    double lx = (fr->x0 + fr->x1) / 2;
    svg_text_fit(w, lx, plot->height - 14, "middle", "class=\"xlabel\"", plot->xlabel, SVG_FONT_SIZE,
                 9, 2 * fmin(lx, plot->width - lx) - 8, 1);
    char rot[96];
    double ly = (fr->y0 + fr->y1) / 2;
    snprintf(rot, sizeof rot, "class=\"ylabel\" transform=\"rotate(-90 16 %.1f)\"", ly);
    svg_text_fit(w, 16, ly, "middle", rot, plot->ylabel, SVG_FONT_SIZE, 9,
                 2 * fmin(ly, plot->height - ly) - 8, 1);
}

/* One <rect class="bar"> per point, from y = 0 (the bottom of a log axis)
 * to the point, clipped to the plot area. */
static dt_result draw_bars(svg_writer *w, const series *s, const frame *fr, const char *colour)
{
    double gap;
    DT_CHECK(bar_gap(s, fr->xa.scale, &gap));
    double base = fr->ya.scale == DT_AXIS_LINEAR ? py(fr, 0) : fr->y1;
    base = fmin(fmax(base, fr->y0), fr->y1);
    for (size_t k = 0; k < s->count; k++) {
        double c = axis_coord(fr->xa.scale, s->x[k]);
        double left = fmax(px(fr, axis_value(fr->xa.scale, c - 0.4 * gap)), fr->x0);
        double right = fmin(px(fr, axis_value(fr->xa.scale, c + 0.4 * gap)), fr->x1);
        double top = fmin(fmax(py(fr, s->y[k]), fr->y0), fr->y1);
        svg_printf(w, "<rect class=\"bar\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                      "fill=\"%s\"><title>%g: %g</title></rect>\n",
                   left, fmin(top, base), fmax(right - left, 0), fabs(base - top), colour,
                   s->x[k], s->y[k]);
    }
    return DT_OK;
}

static dt_result draw_series(svg_writer *w, const series *s, size_t index, const frame *fr)
{
    const char *colour = svg_colour(index);
    svg_printf(w, "<g class=\"series\" id=\"series-%zu\">\n<title>", index);
    svg_escaped(w, s->name);
    svg_printf(w, "</title>\n");
    if (s->style & DT_SERIES_LINE) {
        svg_printf(w, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
        for (size_t k = 0; k < s->count; k++)
            svg_printf(w, "%s%.2f,%.2f", k ? " " : "", px(fr, s->x[k]), py(fr, s->y[k]));
        svg_printf(w, "\"/>\n");
    }
    if (s->style & DT_SERIES_POINTS)
        for (size_t k = 0; k < s->count; k++)
            svg_printf(w, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\"/>\n",
                       px(fr, s->x[k]), py(fr, s->y[k]), colour);
    dt_result r = s->style == DT_SERIES_BARS ? draw_bars(w, s, fr, colour) : DT_OK;
    svg_printf(w, "</g>\n");
    return r;
}

static void draw_legend(svg_writer *w, const dt_plot *plot, const frame *fr)
{
    double x = fr->x1 + 16, y = fr->y0 + 8;
    svg_printf(w, "<g class=\"legend\">\n");
    for (size_t i = 0; i < plot->nseries; i++) {
        const series *s = &plot->series[i];
        if (!s->name[0]) continue;
        const char *colour = svg_colour(i);
        if (s->style & DT_SERIES_LINE)
            svg_printf(w, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"2\"/>\n", x, y, x + 20, y, colour);
        if (s->style & DT_SERIES_POINTS)
            svg_printf(w, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n", x + 10, y, colour);
        if (s->style == DT_SERIES_BARS)
            svg_printf(w, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"%s\"/>\n",
                       x + 4, y - 5, colour);
        /* a long name shrinks, then wraps, within the canvas */
        int lines = svg_text_fit(w, x + 26, y + 4, NULL, NULL, s->name, SVG_FONT_SIZE, 9,
                                 plot->width - (x + 26) - 4, 0);
        y += 18 + (lines - 1) * 1.2 * 9;
    }
    svg_printf(w, "</g>\n");
}

dt_result dt_plot_write_svg(const dt_plot *plot, const char *path)
{
    if (!plot || !path) return dt_fail(DT_ERR_INVALID_ARG, "write plot: NULL %s", plot ? "path" : "plot");
    if (plot->nseries == 0) return dt_fail(DT_ERR_INVALID_ARG, "write plot '%s': no series", plot->title);
    frame fr;
    double xmin, xmax, ymin, ymax;
    DT_CHECK(data_range(plot, &xmin, &xmax, &ymin, &ymax));
    svg_axis_fit(&fr.xa, plot->xscale, xmin, xmax);
    svg_axis_fit(&fr.ya, plot->yscale, ymin, ymax);
    int lw = legend_width(plot);
    fr.x0 = MARGIN_LEFT;
    fr.x1 = plot->width - MARGIN_RIGHT - lw;
    fr.y0 = MARGIN_TOP;
    fr.y1 = plot->height - MARGIN_BOTTOM;

    svg_writer w;
    DT_CHECK(svg_open(&w, path, plot->width, plot->height));
    draw_axes(&w, plot, &fr);
    dt_result r = DT_OK;
    for (size_t i = 0; i < plot->nseries && r == DT_OK; i++)
        r = draw_series(&w, &plot->series[i], i, &fr);
    if (lw > 0) draw_legend(&w, plot, &fr);
    dt_result closed = svg_close(&w, path);
    return r != DT_OK ? r : closed;
}
