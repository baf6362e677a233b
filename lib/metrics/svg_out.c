/* svg_out.c - the SVG writer, escaping, palette and axes shared by the line
 * plot and the Gantt chart. */
#include "svg_out.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

/* ---------------------------------------------------------------- writer */

dt_result svg_open(svg_writer *w, const char *path, int width, int height)
{
    w->failed = 0;
    w->f = fopen(path, "w");
    if (!w->f) return dt_fail(DT_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    svg_printf(w, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    svg_printf(w, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                  "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
               width, height, width, height);
    svg_printf(w, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", width,
               height);
    return DT_OK;
}

dt_result svg_close(svg_writer *w, const char *path)
{
    svg_printf(w, "</svg>\n");
    if (ferror(w->f)) w->failed = 1;
    if (fclose(w->f) != 0) w->failed = 1;
    w->f = NULL;
    if (w->failed) return dt_fail(DT_ERR_IO, "cannot write '%s'", path);
    return DT_OK;
}

void svg_printf(svg_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (vfprintf(w->f, fmt, ap) < 0) w->failed = 1;
    va_end(ap);
}

/* The first n bytes of s, escaped. */
static void escaped_n(svg_writer *w, const char *s, size_t n)
{
    for (const char *end = s ? s + n : s; s && s < end && *s; s++) {
        switch (*s) {
        case '&': svg_printf(w, "&amp;"); break;
        case '<': svg_printf(w, "&lt;"); break;
        case '>': svg_printf(w, "&gt;"); break;
        case '"': svg_printf(w, "&quot;"); break;
        case '\'': svg_printf(w, "&apos;"); break;
        default:
            /* Control characters are not allowed in XML 1.0: drop them. */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                if (fputc(*s, w->f) == EOF) w->failed = 1;
        }
    }
}

void svg_text(svg_writer *w, double x, double y, const char *anchor, const char *extra,
              const char *s)
{
    svg_printf(w, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (anchor) svg_printf(w, " text-anchor=\"%s\"", anchor);
    if (extra) svg_printf(w, " %s", extra);
    svg_printf(w, ">");
    svg_escaped(w, s);
    svg_printf(w, "</text>\n");
}

void svg_escaped(svg_writer *w, const char *s) { escaped_n(w, s, s ? strlen(s) : 0); }

/* Code points in the first n bytes of s: the bytes that do not continue one. */
static size_t code_points(const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && s[i]; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

double svg_text_width(const char *s, double size)
{
    return SVG_EM_WIDTH * size * (double)code_points(s ? s : "", s ? strlen(s) : 0);
}

/* The bytes of the next line of s that fit in max_chars code points: up to
 * the last blank that keeps it within, or a word cut at max_chars (never
 * inside a UTF-8 sequence); *next: where the line after starts. */
static size_t next_line(const char *s, size_t max_chars, const char **next)
{
    size_t i = 0, chars = 0, cut = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) { /* a code point starts here */
            if (chars == max_chars) break;
            chars++;
        }
        if (s[i] == ' ') cut = i;
    }
    if (!s[i] || s[i] == ' ') cut = i; /* the rest fits, or a blank ends the line */
    else if (cut == 0) cut = i;        /* a word too long: cut where a code point starts */
    *next = s + cut;
    while (**next == ' ') (*next)++;
    return cut;
}

int svg_text_fit(svg_writer *w, double x, double y, const char *anchor, const char *extra,
                 const char *s, double size, double min_size, double max_width, int centred)
{
    s = s ? s : "";
    double fit = size;
    while (fit > min_size && svg_text_width(s, fit) > max_width) fit = fmax(floor(fit - 1), min_size);
    char attrs[256];
    snprintf(attrs, sizeof attrs, "%s%s", extra ? extra : "", extra ? " " : "");
    if (fit != SVG_FONT_SIZE) {
        size_t n = strlen(attrs);
        snprintf(attrs + n, sizeof attrs - n, "font-size=\"%g\"", fit);
    } else if (extra) {
        attrs[strlen(attrs) - 1] = '\0';
    }
    if (svg_text_width(s, fit) <= max_width) {
        svg_text(w, x, y, anchor, attrs[0] ? attrs : NULL, s);
        return 1;
    }
    /* Wrapped: count the lines, then write them a line apart. */
    size_t max_chars = (size_t)fmax(1, floor(max_width / (SVG_EM_WIDTH * fit)));
    int lines = 0;
    for (const char *p = s; *p; lines++) next_line(p, max_chars, &p);
    double lh = 1.2 * fit;
    svg_printf(w, "<text x=\"%.1f\" y=\"%.1f\"", x, y);
    if (anchor) svg_printf(w, " text-anchor=\"%s\"", anchor);
    if (attrs[0]) svg_printf(w, " %s", attrs);
    svg_printf(w, ">");
    double dy = centred ? -(lines - 1) * lh / 2 : 0;
    for (const char *p = s; *p; dy = lh) {
        const char *line = p;
        size_t n = next_line(p, max_chars, &p);
        svg_printf(w, "<tspan x=\"%.1f\" dy=\"%.1f\">", x, dy);
        escaped_n(w, line, n);
        svg_printf(w, "</tspan>");
    }
    svg_printf(w, "</text>\n");
    return lines;
}

const char *svg_colour(size_t i)
{
    /* Ten colours that stay apart for the common forms of colour blindness. */
    static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                          "#bcbd22", "#17becf"};
    return palette[i % (sizeof palette / sizeof palette[0])];
}

/* ---------------------------------------------------------------- axes */

static void fit_linear(svg_axis *ax, double min, double max)
{
    if (max == min) { /* one value: widen around it so it has a place */
        double d = fabs(min) > 0 ? fabs(min) * 0.1 : 1.0;
        min -= d;
        max += d;
    }
    /* A step of 1, 2 or 5 times a power of ten giving about 5 intervals. */
    double raw = (max - min) / 5;
    double mag = pow(10, floor(log10(raw)));
    double norm = raw / mag;
    double step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
    double first = floor(min / step + 1e-9);
    double last = ceil(max / step - 1e-9);
    ax->lo = first * step;
    ax->hi = last * step;
    ax->nticks = 0;
    for (double k = first; k <= last + 0.5 && ax->nticks < SVG_MAX_TICKS; k += 1) {
        double v = k * step;
        ax->ticks[ax->nticks++] = fabs(v) < step * 1e-9 ? 0.0 : v; /* no "-0" */
    }
}

static void fit_log(svg_axis *ax, double base, double min, double max)
{
    double lb = log(base);
    double e0 = floor(log(min) / lb + 1e-9);
    double e1 = ceil(log(max) / lb - 1e-9);
    if (e1 <= e0) e1 = e0 + 1;
    /* Thin the ticks to at most about 12 by stepping over powers. */
    double every = ceil((e1 - e0) / 12);
    e1 = e0 + ceil((e1 - e0) / every) * every;
    ax->lo = pow(base, e0);
    ax->hi = pow(base, e1);
    ax->nticks = 0;
    for (double e = e0; e <= e1 + 0.5 && ax->nticks < SVG_MAX_TICKS; e += every)
        ax->ticks[ax->nticks++] = pow(base, e);
}

void svg_axis_fit(svg_axis *ax, dt_axis_scale scale, double min, double max)
{
    ax->scale = scale;
    if (scale == DT_AXIS_LOG2)
        fit_log(ax, 2, min, max);
    else if (scale == DT_AXIS_LOG10)
        fit_log(ax, 10, min, max);
    else
        fit_linear(ax, min, max);
}

double svg_axis_pos(const svg_axis *ax, double v)
{
    if (ax->scale == DT_AXIS_LINEAR) return (v - ax->lo) / (ax->hi - ax->lo);
    return (log(v) - log(ax->lo)) / (log(ax->hi) - log(ax->lo));
}

void svg_tick_label(double v, char *buf, size_t size)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, size, "%.0f", v);
    else
        snprintf(buf, size, "%g", v);
}

/* ---------------------------------------------------------------- memory */

char *svg_strdup(const char *s)
{
    if (!s) s = "";
    size_t len = strlen(s) + 1;
    char *copy = dt_mem_alloc(DT_MEM_OTHER, len);
    if (copy) memcpy(copy, s, len);
    return copy;
}

dt_result svg_reserve(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return DT_OK;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < need) ncap *= 2;
    void *grown = dt_mem_alloc(DT_MEM_OTHER, ncap * elem);
    if (!grown) return dt_fail(DT_ERR_NOMEM, "no memory for %zu plot elements", ncap);
    if (*arr) {
        memcpy(grown, *arr, *cap * elem);
        dt_mem_free(*arr);
    }
    *arr = grown;
    *cap = ncap;
    return DT_OK;
}
