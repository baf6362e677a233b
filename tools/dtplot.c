/* dtplot - turns a CSV table into an SVG line plot or Gantt chart.
 *
 * Line plot: the first row names the columns, the first column is x and
 * every other column a series; an empty cell leaves that point out.
 *
 *     N,measured,Amdahl fit,ideal
 *     1,1.00,1.00,1
 *     2,1.86,1.87,2
 *
 * Gantt chart (--gantt): one region per row, "row,start,end,kind[,label]"
 * with a first line of column names.
 *
 *     rank,start,end,kind,label
 *     0,0,1,forward,F0
 *
 * Lines starting with '#' are comments. */
#include "dt/cli.h"
#include "dt/metrics.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_COLS 32
#define MAX_LINE 4096
#define MAX_ROWS 4096 /* rows of a Gantt chart */

typedef struct {
    const char *title, *xlabel, *ylabel, *in, *out;
    dt_axis_scale xscale, yscale;
    dt_series_style style;
    int gantt;
} options;

/* Fills o from argv: DT_CLI_GO, or the exit status (0 after --help). */
static int parse_args(int argc, char **argv, options *o)
{
    static const char *const logs[] = {"none", "2", "10", NULL};
    static const char *const styles[] = {"points", "line", "both", NULL};
    static const dt_axis_scale scales[] = {DT_AXIS_LINEAR, DT_AXIS_LOG2, DT_AXIS_LOG10};
    static const dt_series_style drawn[] = {DT_SERIES_POINTS, DT_SERIES_LINE,
                                            DT_SERIES_POINTS_AND_LINE};
    *o = (options){.title = "", .xlabel = "", .ylabel = ""};
    int logx = 0, logy = 0, style = 2;
    const dt_opt opts[] = {
        {"--title", DT_OPT_TEXT, &o->title, .help = "the plot's title", .arg = "T"},
        {"--xlabel", DT_OPT_TEXT, &o->xlabel, .help = "the x axis's label", .arg = "X"},
        {"--ylabel", DT_OPT_TEXT, &o->ylabel, .help = "the y axis's label", .arg = "Y"},
        {"--logx", DT_OPT_CHOICE, &logx, .help = "log x axis (every x > 0)", .choices = logs},
        {"--logy", DT_OPT_CHOICE, &logy, .help = "log y axis (every y > 0)", .choices = logs},
        {"--style", DT_OPT_CHOICE, &style, .help = "how series are drawn", .choices = styles},
        {"--gantt", DT_OPT_FLAG, &o->gantt, .help = "rows are row,start,end,kind[,label]"},
    };
    dt_cli cli = {.prog = "dtplot", .opts = opts, .nopts = (int)(sizeof opts / sizeof opts[0]),
                  .max_args = 2, .synopsis = "[options] INPUT.csv OUTPUT.svg",
                  .more = "A line plot's first CSV row names the columns: x, then one column "
                          "per series."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if (cli.nargs != 2)
        return dt_cli_fail(&cli, "needs an input CSV and an output SVG");
    o->in = cli.arg[0];
    o->out = cli.arg[1];
    o->xscale = scales[logx];
    o->yscale = scales[logy];
    o->style = drawn[style];
    return DT_CLI_GO;
}

/* Splits line at commas in place (no quoting); returns the number of cells. */
static int split(char *line, char **cells)
{
    int n = 0;
    line[strcspn(line, "\r\n")] = '\0';
    for (char *p = line;; p++) {
        if (n == MAX_COLS) return n;
        cells[n++] = p;
        p = strchr(p, ',');
        if (!p) return n;
        *p = '\0';
    }
}

/* A cell as a number: 1 when it is one, 0 when empty, -1 when it is not. */
static int cell_number(const char *s, double *v)
{
    while (*s == ' ') s++;
    if (!*s) return 0;
    char *end;
    *v = strtod(s, &end);
    while (*end == ' ') end++;
    return end != s && !*end ? 1 : -1;
}

/* The next line that is not blank or a comment, or NULL at the end. */
static char *next_line(FILE *f, char *buf, int *lineno)
{
    while (fgets(buf, MAX_LINE, f)) {
        ++*lineno;
        if (buf[0] != '#' && buf[strspn(buf, " \t\r\n")] != '\0') return buf;
    }
    return NULL;
}

/* Prints "dtplot: message" and returns 1, the exit status of a bad input. */
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "dtplot: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 1;
}

static int fail(const char *what)
{
    fprintf(stderr, "dtplot: %s: %s\n", what, dt_last_error());
    return 1;
}

static int plot_lines(FILE *f, const options *o)
{
    char header[MAX_LINE], buf[MAX_LINE], *names[MAX_COLS], *cells[MAX_COLS];
    int lineno = 0;
    if (!next_line(f, header, &lineno)) return bad("%s is empty", o->in);
    int ncols = split(header, names);
    if (ncols < 2) return bad("%s: need x and at least one series", o->in);
    size_t cap = 64, rows = 0;
    double *x = malloc(cap * sizeof *x), *y = malloc(cap * MAX_COLS * sizeof *y);
    char *have = malloc(cap * MAX_COLS);
    int rc = 0;
    while (!rc && x && y && have && next_line(f, buf, &lineno)) {
        if (rows == cap) {
            cap *= 2;
            x = realloc(x, cap * sizeof *x), y = realloc(y, cap * MAX_COLS * sizeof *y);
            have = realloc(have, cap * MAX_COLS);
            if (!x || !y || !have) break;
        }
        int n = split(buf, cells);
        if (n > ncols || cell_number(cells[0], &x[rows]) != 1)
            rc = bad("%s:%d: bad row", o->in, lineno);
        for (int c = 1; !rc && c < ncols; c++) {
            int k = c < n ? cell_number(cells[c], &y[rows * MAX_COLS + c]) : 0;
            if (k < 0) rc = bad("%s:%d: column %d is not a number", o->in, lineno, c + 1);
            have[rows * MAX_COLS + c] = k == 1;
        }
        rows++;
    }
    if (!rc && (!x || !y || !have)) rc = bad("out of memory");
    dt_plot *plot = NULL;
    if (!rc && dt_plot_create(&plot, o->title, o->xlabel, o->ylabel) != DT_OK) rc = fail("plot");
    if (!rc && (dt_plot_set_xscale(plot, o->xscale) || dt_plot_set_yscale(plot, o->yscale))) rc = fail("scale");
    double *sx = rc ? NULL : malloc((rows + 1) * sizeof *sx), *sy = rc ? NULL : malloc((rows + 1) * sizeof *sy);
    for (int c = 1; !rc && sx && sy && c < ncols; c++) {
        size_t k = 0;
        for (size_t r = 0; r < rows; r++)
            if (have[r * MAX_COLS + c]) sx[k] = x[r], sy[k++] = y[r * MAX_COLS + c];
        if (k > 0 && dt_plot_add_series(plot, names[c], sx, sy, k, o->style) != DT_OK) rc = fail(names[c]);
    }
    if (!rc && dt_plot_write_svg(plot, o->out) != DT_OK) rc = fail(o->out);
    dt_plot_free(plot);
    free(sx), free(sy), free(x), free(y), free(have);
    return rc;
}

static int plot_gantt(FILE *f, const options *o)
{
    char buf[MAX_LINE], *cells[MAX_COLS];
    int lineno = 0, rows = 0;
    /* First pass: the number of rows, the largest row index plus one. */
    next_line(f, buf, &lineno); /* the column names */
    long data_start = ftell(f);
    int start_line = lineno;
    while (next_line(f, buf, &lineno)) {
        double r;
        if (split(buf, cells) < 4 || cell_number(cells[0], &r) != 1 || r < 0 || r >= MAX_ROWS)
            return bad("%s:%d: expected row,start,end,kind[,label]", o->in, lineno);
        if ((int)r + 1 > rows) rows = (int)r + 1;
    }
    if (rows == 0) return bad("%s has no regions", o->in);
    dt_gantt *g = NULL;
    if (dt_gantt_create(&g, o->title, o->xlabel, rows) != DT_OK) return fail("gantt");
    fseek(f, data_start, SEEK_SET);
    lineno = start_line;
    int rc = 0;
    while (!rc && next_line(f, buf, &lineno)) {
        int n = split(buf, cells);
        double r, a, b;
        if (cell_number(cells[0], &r) != 1 || cell_number(cells[1], &a) != 1 || cell_number(cells[2], &b) != 1)
            rc = bad("%s:%d: bad numbers", o->in, lineno);
        else if (dt_gantt_add(g, (int)r, a, b, cells[3], n > 4 ? cells[4] : NULL) != DT_OK)
            rc = fail("region");
    }
    if (!rc && dt_gantt_write_svg(g, o->out) != DT_OK) rc = fail(o->out);
    dt_gantt_free(g);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    int st = parse_args(argc, argv, &o);
    if (st != DT_CLI_GO)
        return st;
    FILE *f = fopen(o.in, "r");
    if (!f)
        return bad("cannot open the input '%s': %s", o.in, strerror(errno));
    int rc = o.gantt ? plot_gantt(f, &o) : plot_lines(f, &o);
    fclose(f);
    if (rc == 0) printf("%s\n", o.out);
    return rc;
}
