/* svg_out.h - what the line plot and the Gantt chart share: an SVG writer
 * that remembers the first I/O error, XML escaping, the colour palette,
 * axes with their ticks, and small allocation helpers. Private to
 * lib/metrics. */
#ifndef DT_METRICS_SVG_OUT_H
#define DT_METRICS_SVG_OUT_H

#include <stdio.h>

#include "dt/metrics.h"

/* ---------------------------------------------------------------- writer */

typedef struct {
    FILE *f;
    int failed; /* a write failed: reported once, at svg_close */
} svg_writer;

/* Opens path and writes the XML declaration and the <svg> element. */
dt_result svg_open(svg_writer *w, const char *path, int width, int height);

/* Closes </svg> and the file; DT_ERR_IO if any write or the close failed. */
dt_result svg_close(svg_writer *w, const char *path);

void svg_printf(svg_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes s with &, <, >, " and ' replaced by their entities. */
void svg_escaped(svg_writer *w, const char *s);

/* <text x y [anchor] [extra attributes]>escaped s</text> */
void svg_text(svg_writer *w, double x, double y, const char *anchor, const char *extra,
              const char *s);

/* The document's font size (svg_open), in pixels. */
#define SVG_FONT_SIZE 12.0

/* A text's estimated width, in em a character (a UTF-8 code point): sans-serif
 * averages about 0.5 em, digits and capitals run wider, so 0.6 errs on the
 * safe side. tests/chapters/lint.py checks every figure of the chapters with
 * the same estimate. */
#define SVG_EM_WIDTH 0.6

/* The estimated width of s at size pixels. */
double svg_text_width(const char *s, double size);

/* s at (x, y) within max_width pixels (across its anchor). As svg_text
 * writes it, with font-size="size" after extra (none at SVG_FONT_SIZE),
 * when it fits; else at the largest whole size down to min_size at which it
 * fits on one line; else wrapped at blanks (a word too long cut) into lines
 * of min_size, as <tspan>s 1.2 em apart, centred on y (centred) or the first
 * on y. Returns how many lines it took. */
int svg_text_fit(svg_writer *w, double x, double y, const char *anchor, const char *extra,
                 const char *s, double size, double min_size, double max_width, int centred);

/* The i-th colour of a palette that tells series apart ("#rrggbb"). */
const char *svg_colour(size_t i);

/* ---------------------------------------------------------------- axes */

#define SVG_MAX_TICKS 24

typedef struct {
    dt_axis_scale scale;
    double lo, hi;               /* the range drawn, rounded out to ticks */
    double ticks[SVG_MAX_TICKS]; /* tick values, ascending */
    int nticks;
} svg_axis;

/* Chooses a range covering [min, max] (min <= max, both > 0 on a log axis)
 * and its ticks: 1-2-5 steps on a linear axis, powers of the base on a log one. */
void svg_axis_fit(svg_axis *ax, dt_axis_scale scale, double min, double max);

/* Where v lies along the axis, 0 at lo and 1 at hi. */
double svg_axis_pos(const svg_axis *ax, double v);

/* A tick label: integers without exponent, other values with %g. */
void svg_tick_label(double v, char *buf, size_t size);

/* ---------------------------------------------------------------- memory */

/* A copy of s (NULL taken as ""), or NULL when memory is short. */
char *svg_strdup(const char *s);

/* Makes room for need elements of size elem in *arr (capacity *cap, grown
 * by doubling); DT_ERR_NOMEM leaves *arr as it was. */
dt_result svg_reserve(void **arr, size_t *cap, size_t need, size_t elem);

#endif /* DT_METRICS_SVG_OUT_H */
