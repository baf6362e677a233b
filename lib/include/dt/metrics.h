/* dt/metrics.h - measuring scaling: speedup, efficiency, Amdahl's and
 * Gustafson's laws, the Karp-Flatt serial fraction, load imbalance,
 * communication efficiency, throughput; and an SVG writer for line plots and
 * Gantt charts that needs no plotting library (a browser opens the file).
 *
 * Conventions of this layer:
 *  - A formula returns a double. An argument outside the formula's domain
 *    (a time <= 0, a rank count < 1, a fraction outside [0, 1], a NaN) gives
 *    NaN and records why (dt_last_error), as sqrt(-1) does: a mistake shows
 *    up as "nan" in a table instead of a plausible number.
 *  - Anything that takes arrays, allocates or writes a file returns a
 *    dt_result; on failure its outputs are left unchanged.
 *  - Times are in seconds, N is the number of ranks.
 */
#ifndef DT_METRICS_H
#define DT_METRICS_H

#include <stddef.h>

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- scaling */

/* Strong scaling (fixed total work): S = T_1 / T_N. */
double dt_speedup(double t1, double tn);

/* Strong-scaling efficiency: E = S / N = T_1 / (N * T_N). 1 is ideal. */
double dt_efficiency_strong(double t1, double tn, int n);

/* Weak-scaling efficiency (fixed work per rank, so N ranks do N times the
 * work of one): E = T_1 / T_N. 1 is ideal: the time per step does not grow.
 * The matching scaled speedup: N * T_1 / T_N = N * E when every part of the
 * work grows with N; ((1 - p) + p * N) * T_1 / T_N when only the parallel
 * part grows and the serial part stays fixed, as Gustafson's law assumes. */
double dt_efficiency_weak(double t1, double tn);

/* Amdahl's law, p the parallel fraction of the one-rank time:
 * S(N) = 1 / ((1 - p) + p / N); p in [0, 1], N >= 1. */
double dt_amdahl_speedup(double p, int n);

/* Gustafson's law (the parallel part grows with N, the serial part does not):
 * scaled speedup S(N) = (1 - p) + p * N; p in [0, 1], N >= 1. */
double dt_gustafson_speedup(double p, int n);

/* The Karp-Flatt metric, the experimentally determined serial fraction,
 * from a measured speedup S on N > 1 ranks:
 * e = (1/S - 1/N) / (1 - 1/N). Under Amdahl's law e = 1 - p exactly; an e
 * that grows with N points to overhead (communication, imbalance) rather
 * than a fixed serial part. */
double dt_karp_flatt(double speedup, int n);

/* Communication efficiency: T_comp / (T_comp + T_comm); both >= 0, not both 0. */
double dt_comm_efficiency(double t_comp, double t_comm);

/* Throughput: items (samples, tokens) per second; items >= 0, seconds > 0. */
double dt_throughput(double items, double seconds);

/* Load imbalance of per-rank times t[0..count-1] (each >= 0, mean > 0):
 * (max_i t_i - min_i t_i) / mean(t). 0 is perfectly balanced. */
dt_result dt_load_imbalance(const double *t, size_t count, double *out);

/* ---------------------------------------------------------------- Amdahl fit */

/* The result of fitting Amdahl's law T_N = T_1 * ((1 - p) + p / N) to
 * measurements (N_i, T_i). */
typedef struct {
    double p;        /* the parallel fraction; not clamped: noise may put it
                      * slightly outside [0, 1], which is itself a finding */
    double t1;       /* the one-rank time of the model (given or fitted) */
    double residual; /* root mean square of T_i - model(N_i), in seconds */
} dt_amdahl_fit;

/* Fits p with T_1 known (e.g. measured on its own, or the mean of the N = 1
 * runs). The model is linear in p:
 *     T_1 - T_N = p * T_1 * (1 - 1/N)
 * so p = sum(x*y) / sum(x*x) with x = T_1 (1 - 1/N), y = T_1 - T_N.
 * Needs count >= 1 and at least one N > 1; every N >= 1, T > 0, t1 > 0. */
dt_result dt_amdahl_fit_known_t1(const int *n, const double *t, size_t count,
                                 double t1, dt_amdahl_fit *out);

/* Fits T_1 and p jointly: T_N = a + b / N is a straight line in 1/N, with
 * a = T_1 (1 - p) the serial time and b = T_1 p the parallelisable time, so
 * ordinary least squares of T on 1/N gives a and b, then T_1 = a + b and
 * p = b / (a + b). Every point weighs the same. Needs at least two distinct
 * N; every N >= 1, T > 0; fails if the fitted T_1 is not positive. */
dt_result dt_amdahl_fit_joint(const int *n, const double *t, size_t count,
                              dt_amdahl_fit *out);

/* ---------------------------------------------------------------- line plots */

typedef enum {
    DT_AXIS_LINEAR = 0,
    DT_AXIS_LOG2,  /* ticks at powers of two: rank counts */
    DT_AXIS_LOG10, /* ticks at powers of ten: sizes, times */
} dt_axis_scale;

/* How a series is drawn: its points as dots, joined by a line, or both;
 * or as bars, for a histogram: a bar from y = 0 (the bottom of a log y
 * axis) up to each point, centred on its x, all of one width that leaves a
 * gap between the closest two. A bar series widens the x range by half a
 * bar on each side, and the y range of a linear axis always holds 0. */
typedef enum {
    DT_SERIES_POINTS = 1,
    DT_SERIES_LINE = 2,
    DT_SERIES_POINTS_AND_LINE = 3,
    DT_SERIES_BARS = 4,
} dt_series_style;

/* A line plot: a title, two labelled axes and any number of named series,
 * each with its own colour and an entry in the legend. The axes' ranges
 * cover every series (rounded out to ticks). */
typedef struct dt_plot dt_plot;

/* Creates an empty plot 640 x 420 pixels with linear axes. The strings are
 * copied (NULL is taken as ""). *out is the new plot; free it with
 * dt_plot_free. */
dt_result dt_plot_create(dt_plot **out, const char *title, const char *xlabel,
                         const char *ylabel);

/* Frees the plot and its series. NULL is ignored. */
void dt_plot_free(dt_plot *plot);

/* Size in pixels, each in [200, 4000]. */
dt_result dt_plot_set_size(dt_plot *plot, int width, int height);

/* Scale of each axis. On a log axis every value must be > 0: checked here
 * against the series already added, and by each later add. */
dt_result dt_plot_set_xscale(dt_plot *plot, dt_axis_scale scale);
dt_result dt_plot_set_yscale(dt_plot *plot, dt_axis_scale scale);

/* Adds a series of count >= 1 points (x[i], y[i]), copied. Every value must
 * be finite, and > 0 on a log axis. name labels the legend (NULL or "" leaves
 * the series out of the legend). */
dt_result dt_plot_add_series(dt_plot *plot, const char *name, const double *x,
                             const double *y, size_t count, dt_series_style style);

/* Adds the curve y = f(x, ctx) for x from x0 to x1 as a line of `samples`
 * points (>= 2), spaced evenly on the x axis's scale (so a log axis gets
 * evenly spaced points in log x): e.g. the fitted Amdahl curve or the ideal
 * line S = N. Set the x scale before calling. */
dt_result dt_plot_add_function(dt_plot *plot, const char *name,
                               double (*f)(double x, void *ctx), void *ctx,
                               double x0, double x1, int samples);

/* Writes the plot as an SVG document to path. Fails with
 * DT_ERR_INVALID_ARG if the plot has no series, DT_ERR_IO if the file cannot
 * be opened or written. Each series is one <g class="series"> holding a
 * <polyline> (line style), one <circle> per point (points style) or one
 * <rect class="bar"> per point (bars). */
dt_result dt_plot_write_svg(const dt_plot *plot, const char *path);

/* ---------------------------------------------------------------- Gantt charts */

/* A Gantt chart: one row per rank, each row a set of coloured, optionally
 * labelled regions [start, end) on a shared time axis. Regions of the same
 * kind ("forward", "backward", "allreduce", ...) share a colour and one
 * legend entry. For pipeline schedules and traces. */
typedef struct dt_gantt dt_gantt;

/* Creates a chart of rows >= 1 rows (labelled "rank 0", "rank 1", ...).
 * xlabel names the time axis (e.g. "time (ms)" or "step"). */
dt_result dt_gantt_create(dt_gantt **out, const char *title, const char *xlabel,
                          int rows);

void dt_gantt_free(dt_gantt *gantt);

/* Replaces the label of a row (e.g. "stage 2"). */
dt_result dt_gantt_set_row_label(dt_gantt *gantt, int row, const char *label);

/* Adds a region [start, end) to row (0 <= row < rows), with start < end,
 * both finite. kind (not NULL or empty) picks the colour; label (may be
 * NULL), e.g. the micro-batch number, is written inside the box when it fits
 * and always in the region's tooltip (<title>). */
dt_result dt_gantt_add(dt_gantt *gantt, int row, double start, double end,
                       const char *kind, const char *label);

/* Writes the chart as SVG. Fails with DT_ERR_INVALID_ARG if it has no
 * region, DT_ERR_IO if the file cannot be written. Each region is one
 * <rect class="region">. */
dt_result dt_gantt_write_svg(const dt_gantt *gantt, const char *path);

/* ---------------------------------------------------------------- traces */

/* One region of a trace file the communicator writes (DT_TRACE,
 * dt_launch_opts.trace_path: Chrome's trace-event format, process 0 the
 * wall clock, process 1 the modeled clock, track 2 rank + lane). */
typedef struct {
    char name[32];   /* "compute", or a collective: "allreduce", "allgather", ... */
    int modeled;     /* 1: on the modeled clock, 0: the wall clock */
    int rank;
    int lane;        /* 0: the rank's own timeline (a wait for an asynchronous
                        operation shows there too); 1: its asynchronous operations */
    double start_s, end_s;
} dt_trace_region;

/* Reads every region of a trace file into *out (malloc'ed, *n of them;
 * free it with free()), sorted by clock (wall first), rank, lane, start,
 * end and name: the same order however the ranks' writes interleaved, and
 * program order within a rank's lane. DT_ERR_IO when the file cannot be
 * read, DT_ERR_INVALID_ARG when it holds no region. */
dt_result dt_trace_read(const char *path, dt_trace_region **out, size_t *n);

#ifdef __cplusplus
}
#endif

#endif /* DT_METRICS_H */
