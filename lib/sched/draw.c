/* draw.c - a schedule as text (one line per rank, in order or on a time
 * axis) and as an SVG Gantt chart through dt/metrics.h. */
#include "sched_internal.h"

#include <math.h>
#include <string.h>

#include "dt/metrics.h"

#define LABEL 24    /* room for a step's label */
#define MAX_COLS 400 /* a timeline wider than this is drawn with coarser columns */

/* The widest label of the schedule, plus the space that separates steps. */
static int cell_width(const dt_schedule *s)
{
    int w = 2;
    char buf[LABEL];
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++) {
            int n = dt_sched_step_label(s, &s->steps[r][i], buf, sizeof buf);
            if (n > w) w = n;
        }
    return w + 1;
}

static void print_in_order(FILE *f, const dt_schedule *s, int w)
{
    char buf[LABEL];
    for (int r = 0; r < s->ranks; r++) {
        fprintf(f, "rank %d |", r);
        for (int i = 0; i < s->nsteps[r]; i++) {
            dt_sched_step_label(s, &s->steps[r][i], buf, sizeof buf);
            if (i + 1 < s->nsteps[r]) fprintf(f, " %-*s", w - 1, buf);
            else fprintf(f, " %s", buf); /* no trailing blanks */
        }
        fprintf(f, "\n");
    }
}

/* The column width in time: the shortest step, or coarser when the
 * makespan would need more than MAX_COLS columns. */
static double column_time(const dt_schedule *s, const dt_sched_timing *t)
{
    double q = t->makespan;
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++) {
            double d = t->end[r][i] - t->start[r][i];
            if (d > 0 && d < q) q = d;
        }
    return fmax(q, t->makespan / MAX_COLS);
}

/* One rank's row: "." in every idle column, each step's label in its first
 * column and "-" through the rest of its span. Steps of cost 0 take no
 * column and are not shown. */
static void fill_row(const dt_schedule *s, const dt_sched_timing *t, int r, double q, int w,
                     char *line, int cols)
{
    char buf[LABEL];
    for (int c = 0; c < cols; c++) {
        memset(line + (size_t)c * w, ' ', (size_t)w);
        line[(size_t)c * w] = '.';
    }
    for (int i = 0; i < s->nsteps[r]; i++) {
        int c0 = (int)lround(t->start[r][i] / q), c1 = (int)lround(t->end[r][i] / q);
        if (!(t->end[r][i] > t->start[r][i])) continue;
        if (c1 <= c0) c1 = c0 + 1;
        if (c1 > cols) c1 = cols;
        if (c0 >= c1) continue;
        char *span = line + (size_t)c0 * w;
        size_t len = (size_t)(c1 - c0) * w;
        memset(span, '-', len - 1);
        span[len - 1] = ' ';
        int n = dt_sched_step_label(s, &s->steps[r][i], buf, sizeof buf);
        memcpy(span, buf, (size_t)n < len - 1 ? (size_t)n : len - 1);
    }
    size_t end = (size_t)cols * w;
    while (end > 0 && line[end - 1] == ' ') end--; /* no trailing blanks */
    line[end] = '\0';
}

static dt_result print_on_time_axis(FILE *f, const dt_schedule *s, const dt_sched_timing *t, int w)
{
    double q = column_time(s, t);
    int cols = (int)lround(t->makespan / q);
    if (cols < 1) cols = 1;
    char *line = dt_mem_alloc(DT_MEM_OTHER, (size_t)cols * w + 1);
    if (!line) return dt_fail(DT_ERR_NOMEM, "no memory to print a timeline of %d columns", cols);
    for (int r = 0; r < s->ranks; r++) {
        fill_row(s, t, r, q, w, line, cols);
        fprintf(f, "rank %d | %s\n", r, line);
    }
    dt_mem_free(line);
    return DT_OK;
}

dt_result dt_sched_print(FILE *f, const dt_schedule *s, const dt_sched_timing *t)
{
    if (!f || !s) return dt_fail(DT_ERR_INVALID_ARG, "schedule print: NULL %s", f ? "schedule" : "file");
    if (t && t->ranks != s->ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule print: timing of %d ranks for a schedule of %d",
                       t->ranks, s->ranks);
    int w = cell_width(s);
    if (t) DT_CHECK(print_on_time_axis(f, s, t, w));
    else print_in_order(f, s, w);
    if (ferror(f)) return dt_fail(DT_ERR_IO, "schedule print: write failed");
    return DT_OK;
}

/* "forward", "backward", "weight grad"; with chunks, "forward, chunk 1". */
static void region_kind(const dt_schedule *s, const dt_step *st, char *buf, size_t size)
{
    static const char *const names[DT_NUM_STEP_KINDS] = {"forward", "backward", "weight grad"};
    if (s->chunks == 1) snprintf(buf, size, "%s", names[st->kind]);
    else snprintf(buf, size, "%s, chunk %d", names[st->kind], st->stage / s->ranks);
}

static dt_result draw_regions(dt_gantt *g, const dt_schedule *s, const dt_sched_timing *t)
{
    char kind[48], label[16];
    for (int r = 0; r < s->ranks; r++)
        for (int i = 0; i < s->nsteps[r]; i++) {
            const dt_step *st = &s->steps[r][i];
            if (!(t->end[r][i] > t->start[r][i])) continue; /* cost 0: nothing to draw */
            region_kind(s, st, kind, sizeof kind);
            snprintf(label, sizeof label, "%d", st->micro);
            DT_CHECK(dt_gantt_add(g, r, t->start[r][i], t->end[r][i], kind, label));
        }
    return DT_OK;
}

dt_result dt_sched_write_svg(const dt_schedule *s, const dt_sched_timing *t, const char *title,
                             const char *xlabel, const char *path)
{
    if (!s || !t || !path)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule svg: NULL %s", !s ? "schedule" : !t ? "timing" : "path");
    if (t->ranks != s->ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "schedule svg: timing of %d ranks for a schedule of %d",
                       t->ranks, s->ranks);
    dt_gantt *g;
    DT_CHECK(dt_gantt_create(&g, title, xlabel ? xlabel : "time", s->ranks));
    dt_result r = draw_regions(g, s, t);
    if (r == DT_OK) r = dt_gantt_write_svg(g, path);
    dt_gantt_free(g);
    return r;
}
