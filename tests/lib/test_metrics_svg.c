/* test_metrics_svg.c - libdt metrics: the SVG line plots and Gantt charts.
 *
 * A small XML well-formedness checker reads back what was written: tags
 * nest and close, one root element, attributes quoted and not repeated, no
 * raw '<' or '&' in text or attribute values (only the five named entities
 * and character references). Then the document is searched for what must be
 * in it: one group per series with its points and line, the legend names,
 * the tick labels, the escaped title. */
#include "grader.h"

#include "dt/metrics.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the checker */

#define XML_MAX_DEPTH 64
#define XML_MAX_NAME 64
#define XML_MAX_ATTRS 32

typedef struct {
    const char *s;
    size_t i;
    char why[160];
} xml_doc;

static int xml_err(xml_doc *d, const char *what)
{
    snprintf(d->why, sizeof d->why, "offset %zu: %s", d->i, what);
    return 0;
}

static int name_start(char c) { return isalpha((unsigned char)c) || c == '_' || c == ':'; }
static int name_char(char c) { return name_start(c) || isdigit((unsigned char)c) || c == '-' || c == '.'; }

static void skip_ws(xml_doc *d)
{
    while (d->s[d->i] && isspace((unsigned char)d->s[d->i])) d->i++;
}

static int read_name(xml_doc *d, char *out)
{
    if (!name_start(d->s[d->i])) return xml_err(d, "expected a name");
    size_t k = 0;
    while (name_char(d->s[d->i])) {
        if (k + 1 >= XML_MAX_NAME) return xml_err(d, "name too long");
        out[k++] = d->s[d->i++];
    }
    out[k] = '\0';
    return 1;
}

/* At '&': one of &amp; &lt; &gt; &quot; &apos; &#N; &#xH; */
static int read_entity(xml_doc *d)
{
    static const char *const named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int k = 0; k < 5; k++)
        if (strncmp(d->s + d->i, named[k], strlen(named[k])) == 0) {
            d->i += strlen(named[k]);
            return 1;
        }
    size_t j = d->i + 1;
    if (d->s[j] != '#') return xml_err(d, "'&' that starts no entity");
    j++;
    int hex = d->s[j] == 'x';
    if (hex) j++;
    size_t digits = 0;
    while (hex ? isxdigit((unsigned char)d->s[j]) : isdigit((unsigned char)d->s[j])) j++, digits++;
    if (digits == 0 || d->s[j] != ';') return xml_err(d, "bad character reference");
    d->i = j + 1;
    return 1;
}

/* At '<' of a start tag: the name, the attributes, then '>' or '/>'. */
static int read_start_tag(xml_doc *d, char *name, int *empty)
{
    char attrs[XML_MAX_ATTRS][XML_MAX_NAME];
    int nattrs = 0;
    d->i++;
    if (!read_name(d, name)) return 0;
    for (;;) {
        size_t before = d->i;
        skip_ws(d);
        if (d->s[d->i] == '>') { d->i++; *empty = 0; return 1; }
        if (d->s[d->i] == '/' && d->s[d->i + 1] == '>') { d->i += 2; *empty = 1; return 1; }
        if (d->i == before) return xml_err(d, "attributes must be separated by white space");
        if (nattrs == XML_MAX_ATTRS) return xml_err(d, "too many attributes");
        if (!read_name(d, attrs[nattrs])) return 0;
        for (int k = 0; k < nattrs; k++)
            if (strcmp(attrs[k], attrs[nattrs]) == 0) return xml_err(d, "attribute repeated");
        nattrs++;
        skip_ws(d);
        if (d->s[d->i] != '=') return xml_err(d, "attribute without '='");
        d->i++;
        skip_ws(d);
        char q = d->s[d->i];
        if (q != '"' && q != '\'') return xml_err(d, "attribute value not quoted");
        d->i++;
        while (d->s[d->i] != q) {
            if (!d->s[d->i]) return xml_err(d, "attribute value not closed");
            if (d->s[d->i] == '<') return xml_err(d, "'<' in an attribute value");
            if (d->s[d->i] == '&') {
                if (!read_entity(d)) return 0;
            } else {
                d->i++;
            }
        }
        d->i++;
    }
}

/* At "<!--" or "<?": skips to the end of the comment or instruction. */
static int skip_special(xml_doc *d)
{
    const char *end = d->s[d->i + 1] == '?' ? "?>" : "-->";
    const char *at = strstr(d->s + d->i + 2, end);
    if (!at) return xml_err(d, "comment or instruction not closed");
    d->i = (size_t)(at - d->s) + strlen(end);
    return 1;
}

/* 1 when s is a well-formed XML document; else 0 with the reason in why. */
static int xml_well_formed(const char *s, char *why, size_t why_size)
{
    xml_doc d = {s, 0, ""};
    char stack[XML_MAX_DEPTH][XML_MAX_NAME];
    int depth = 0, roots = 0, ok = 1;
    while (ok && s[d.i]) {
        char c = s[d.i];
        if (c == '<' && (strncmp(s + d.i, "<!--", 4) == 0 || s[d.i + 1] == '?')) {
            ok = skip_special(&d);
        } else if (c == '<' && s[d.i + 1] == '/') {
            char name[XML_MAX_NAME];
            d.i += 2;
            ok = read_name(&d, name);
            if (ok) skip_ws(&d);
            if (ok && s[d.i] != '>') ok = xml_err(&d, "end tag without '>'");
            else if (ok && (depth == 0 || strcmp(stack[depth - 1], name) != 0))
                ok = xml_err(&d, "end tag does not match the open element");
            if (ok) d.i++, depth--;
        } else if (c == '<') {
            char name[XML_MAX_NAME];
            int empty = 0;
            if (depth == 0 && roots++ > 0) ok = xml_err(&d, "a second root element");
            if (ok) ok = read_start_tag(&d, name, &empty);
            if (ok && !empty) {
                if (depth == XML_MAX_DEPTH) ok = xml_err(&d, "nested too deep");
                else strcpy(stack[depth++], name);
            }
        } else if (c == '&') {
            ok = read_entity(&d);
        } else {
            if (depth == 0 && !isspace((unsigned char)c)) ok = xml_err(&d, "text outside the root");
            d.i++;
        }
    }
    if (ok && depth != 0) ok = xml_err(&d, "elements left open at the end");
    if (ok && roots != 1) ok = xml_err(&d, "no root element");
    snprintf(why, why_size, "%s", d.why);
    return ok;
}

/* ---------------------------------------------------------------- helpers */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (buf) buf[got] = '\0';
    return buf;
}

static size_t count_in(const char *from, const char *to, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(from, needle); p && (!to || p < to); p = strstr(p + 1, needle)) n++;
    return n;
}

static void temp_path(char *buf, size_t size, const char *what)
{
    snprintf(buf, size, "%s/test_%s.svg", dt_test_tmpdir(), what);
}

/* Reads path back, checks it is well-formed and returns its text. */
static char *read_svg(const char *path)
{
    char *doc = slurp(path);
    EXPECT(doc, "cannot read back %s", path);
    char why[200];
    EXPECT(xml_well_formed(doc, why, sizeof why), "%s is not well-formed XML: %s", path, why);
    EXPECT(strstr(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\""), "root is an svg element");
    return doc;
}

/* Writes the plot (or chart) to a temporary file, frees it, and returns
 * the text read back (well-formed, checked); the file is removed. */
static char *plot_svg(dt_plot *plot, const char *what)
{
    char path[4200];
    temp_path(path, sizeof path, what);
    EXPECT_OK(dt_plot_write_svg(plot, path));
    dt_plot_free(plot);
    char *doc = read_svg(path);
    unlink(path);
    return doc;
}

static char *gantt_svg(dt_gantt *g, const char *what)
{
    char path[4200];
    temp_path(path, sizeof path, what);
    EXPECT_OK(dt_gantt_write_svg(g, path));
    dt_gantt_free(g);
    char *doc = read_svg(path);
    unlink(path);
    return doc;
}

/* The fill colour of the <rect> whose <title> starts at title. */
static void region_fill(const char *doc, const char *title, char out[16])
{
    const char *r = title;
    while (r > doc && strncmp(r, "<rect", 5) != 0) r--;
    const char *fill = strstr(r, "fill=\"");
    out[0] = '\0';
    if (fill && fill < title) sscanf(fill + 6, "%15[^\"]", out);
}

/* ---------------------------------------------------------------- tests */

TEST(metrics_xml_checker_rejects_bad_documents, 1)
{
    char why[200];
    const char *good[] = {
        "<?xml version=\"1.0\"?>\n<svg a=\"1\" b='2'><g><text>a &amp; b &#60; &#x3c;</text></g><x/></svg>\n",
        "<!-- c --><r><s/></r>",
    };
    const char *bad[] = {
        "<svg><g></svg>",                    /* g not closed */
        "<svg><g></text></g></svg>",         /* mismatched end tag */
        "<svg a=1></svg>",                   /* unquoted attribute */
        "<svg a=\"1\" a=\"2\"></svg>",       /* repeated attribute */
        "<svg a=\"x<y\"></svg>",             /* raw < in an attribute */
        "<svg><text>a & b</text></svg>",     /* raw & in text */
        "<svg a=\"1\"b=\"2\"></svg>",        /* attributes run together */
        "<svg></svg><svg></svg>",            /* two roots */
        "<svg>",                             /* open at the end */
        "",                                  /* no root */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        EXPECT(xml_well_formed(good[i], why, sizeof why), "good[%zu] rejected: %s", i, why);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        EXPECT(!xml_well_formed(bad[i], why, sizeof why), "bad[%zu] accepted: %s", i, bad[i]);
}

static double amdahl_curve(double n, void *ctx)
{
    double p = *(const double *)ctx;
    return 1.0 / ((1 - p) + p / n);
}

TEST(metrics_plot_speedup_svg, 2)
{
    double n[] = {1, 2, 4, 8, 16}, s[] = {1, 1.9, 3.4, 5.6, 8.1};
    double p = 0.93;
    dt_plot *plot = NULL;
    EXPECT_OK(dt_plot_create(&plot, "speedup <N> & \"fit\"", "ranks N", "speedup T_1/T_N"));
    EXPECT_OK(dt_plot_set_xscale(plot, DT_AXIS_LOG2));
    EXPECT_OK(dt_plot_add_series(plot, "measured", n, s, 5, DT_SERIES_POINTS_AND_LINE));
    EXPECT_OK(dt_plot_add_function(plot, "Amdahl p=0.93", amdahl_curve, &p, 1, 16, 40));
    double ideal_x[] = {1, 16};
    EXPECT_OK(dt_plot_add_series(plot, "ideal", ideal_x, ideal_x, 2, DT_SERIES_LINE));
    char *doc = plot_svg(plot, "speedup");
    EXPECT(strstr(doc, "speedup &lt;N&gt; &amp; &quot;fit&quot;"), "title escaped");
    EXPECT(count_in(doc, NULL, "<g class=\"series\"") == 3, "3 series groups");
    const char *g0 = strstr(doc, "id=\"series-0\""), *g1 = strstr(doc, "id=\"series-1\""),
               *g2 = strstr(doc, "id=\"series-2\""), *leg = strstr(doc, "<g class=\"legend\">");
    EXPECT(g0 && g1 && g2 && leg && g0 < g1 && g1 < g2 && g2 < leg, "series in order, then the legend");
    EXPECT(count_in(g0, g1, "<circle") == 5, "measured: 5 points, got %zu", count_in(g0, g1, "<circle"));
    EXPECT(count_in(g0, g1, "<polyline") == 1, "measured: one line");
    EXPECT(count_in(g1, g2, "<circle") == 0 && count_in(g1, g2, "<polyline") == 1, "fit: a line only");
    /* 40 samples are 40 "x,y" pairs in the fit's polyline. */
    EXPECT(count_in(g1, g2, ",") == 40, "fit has %zu points, expected 40", count_in(g1, g2, ","));
    EXPECT(count_in(g2, leg, "<circle") == 0 && count_in(g2, leg, "<polyline") == 1, "ideal: a line");
    EXPECT(strstr(leg, ">measured</text>") && strstr(leg, ">Amdahl p=0.93</text>") &&
           strstr(leg, ">ideal</text>"), "legend names the series");
    /* log2 axis from 1 to 16: ticks at the powers of two. */
    const char *ticks = strstr(doc, "<g class=\"ticks\"");
    EXPECT(ticks, "tick group");
    for (int k = 1; k <= 16; k *= 2) {
        char label[32];
        snprintf(label, sizeof label, ">%d</text>", k);
        EXPECT(strstr(ticks, label), "tick %d on the log2 axis", k);
    }
    /* Points go left to right as N grows. */
    double cx_first = 0, cx_last = 0;
    EXPECT(sscanf(strstr(g0, "<circle cx=\"") + 12, "%lf", &cx_first) == 1, "first cx");
    const char *last = g0;
    for (int k = 0; k < 5; k++) last = strstr(last + 1, "<circle cx=\"");
    EXPECT(sscanf(last + 12, "%lf", &cx_last) == 1, "last cx");
    EXPECT(cx_first < cx_last, "N = 1 at %g is left of N = 16 at %g", cx_first, cx_last);
    free(doc);
}

TEST(metrics_plot_linear_and_log10, 1)
{
    double x[] = {1e3, 1e4, 1e5, 1e6}, y[] = {0.9, 0.8, 0.5, 0.25};
    dt_plot *plot = NULL;
    EXPECT_OK(dt_plot_create(&plot, "efficiency", "bytes", NULL));
    EXPECT_OK(dt_plot_set_size(plot, 800, 500));
    EXPECT_OK(dt_plot_add_series(plot, NULL, x, y, 4, DT_SERIES_POINTS));
    EXPECT_OK(dt_plot_set_xscale(plot, DT_AXIS_LOG10));
    char *doc = plot_svg(plot, "eff");
    EXPECT(strstr(doc, "width=\"800\" height=\"500\""), "size kept");
    EXPECT(count_in(doc, NULL, "<circle") == 4, "4 points and no legend marker");
    EXPECT(count_in(doc, NULL, "<polyline") == 0, "points style draws no line");
    EXPECT(strstr(doc, ">1000000</text>") && strstr(doc, ">1000</text>"), "log10 ticks");
    EXPECT(strstr(doc, ">0.2</text>") && strstr(doc, ">0.6</text>") && strstr(doc, ">1</text>"),
           "linear y ticks 0.2 to 1 in steps of 0.2");
    free(doc);
}

/* The bars of a series, left to right as written: x, y, width, height. */
typedef struct {
    double x, y, w, h;
} bar_box;

static int read_bars(const char *from, const char *to, bar_box *out, int max)
{
    int n = 0;
    for (const char *p = strstr(from, "<rect class=\"bar\""); p && (!to || p < to) && n < max;
         p = strstr(p + 1, "<rect class=\"bar\"")) {
        bar_box b;
        if (sscanf(p, "<rect class=\"bar\" x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"",
                   &b.x, &b.y, &b.w, &b.h) == 4)
            out[n++] = b;
    }
    return n;
}

/* A histogram: one bar per point, standing on y = 0 (every bar's bottom on
 * one line), as tall as its count (height / count the same for all), as
 * wide as each other, apart from their neighbours and inside the frame;
 * the x range holds the outer bars whole. On a log y axis the bars stand on
 * the bottom of the plot. */
TEST(metrics_plot_bars_histogram, 2)
{
    double tau[] = {0, 1, 2, 3, 31, 45}, count[] = {0, 12, 273, 40, 1, 8};
    const int nb = 6;
    for (int logy = 0; logy < 2; logy++) {
        dt_plot *plot = NULL;
        EXPECT_OK(dt_plot_create(&plot, "staleness", "tau", "gradients"));
        EXPECT_OK(dt_plot_add_series(plot, "asynchronous", tau + logy, count + logy,
                                     (size_t)(nb - logy), DT_SERIES_BARS));
        if (logy) EXPECT_OK(dt_plot_set_yscale(plot, DT_AXIS_LOG10));
        char *doc = plot_svg(plot, logy ? "bars_log" : "bars");
        double fx, fy, fw, fh;
        const char *frame = strstr(doc, "fill=\"none\" stroke=\"#333\"");
        EXPECT(frame, "the plot area's frame");
        while (frame > doc && strncmp(frame, "<rect", 5) != 0) frame--;
        EXPECT(sscanf(frame, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\" height=\"%lf\"", &fx, &fy,
                      &fw, &fh) == 4, "frame geometry");
        const char *leg = strstr(doc, "<g class=\"legend\">");
        EXPECT(leg && strstr(leg, ">asynchronous</text>"), "the legend names the bars");
        bar_box b[8];
        int n = read_bars(doc, leg, b, 8);
        EXPECT(n == nb - logy, "%d bars, expected %d", n, nb - logy);
        EXPECT(count_in(doc, NULL, "<circle") == 0 && count_in(doc, NULL, "<polyline") == 0,
               "bars draw no points and no line");
        double base = b[n - 1].y + b[n - 1].h, unit = b[n - 1].h / count[nb - 1];
        if (logy) EXPECT(fabs(base - (fy + fh)) < 0.01, "log y: bars stand on the bottom");
        for (int k = 0; k < n; k++) {
            const double c = count[k + logy];
            EXPECT(fabs(b[k].y + b[k].h - base) < 0.02, "bar %d's bottom at %g, not %g", k,
                   b[k].y + b[k].h, base);
            if (!logy)
                EXPECT(fabs(b[k].h - c * unit) < 0.02, "bar %d (count %g) is %g px tall, expected "
                       "%g", k, c, b[k].h, c * unit);
            EXPECT(fabs(b[k].w - b[0].w) < 0.02 && b[k].w > 0, "bar %d is %g px wide, bar 0 %g", k,
                   b[k].w, b[0].w);
            EXPECT(b[k].x >= fx - 0.01 && b[k].x + b[k].w <= fx + fw + 0.01 && b[k].y >= fy - 0.01,
                   "bar %d [%g, %g] outside the frame [%g, %g]", k, b[k].x, b[k].x + b[k].w, fx,
                   fx + fw);
            if (k > 0)
                EXPECT(b[k].x > b[k - 1].x + b[k - 1].w, "bar %d touches bar %d", k, k - 1);
        }
        free(doc);
    }
    dt_plot *plot = NULL;
    EXPECT_OK(dt_plot_create(&plot, "t", "x", "y"));
    EXPECT_ERR(dt_plot_add_series(plot, "s", tau, count, 2, (dt_series_style)5), DT_ERR_INVALID_ARG);
    dt_plot_free(plot);
}

TEST(metrics_plot_errors, 1)
{
    double x[] = {1, 2, 4}, y[] = {1, 0, 3}, bad[] = {1, NAN, 3};
    dt_plot *plot = NULL;
    EXPECT_ERR(dt_plot_create(NULL, "t", "x", "y"), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_plot_create(&plot, "t", "x", "y"));
    char path[4200];
    temp_path(path, sizeof path, "err");
    EXPECT_ERR(dt_plot_write_svg(plot, path), DT_ERR_INVALID_ARG); /* no series */
    EXPECT_ERR(dt_plot_write_svg(NULL, path), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_add_series(plot, "s", x, y, 0, DT_SERIES_LINE), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_add_series(plot, "s", NULL, y, 3, DT_SERIES_LINE), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_add_series(plot, "s", x, bad, 3, DT_SERIES_LINE), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_add_series(plot, "s", x, y, 3, (dt_series_style)7), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_set_size(plot, 10, 10), DT_ERR_INVALID_ARG);
    /* y[1] = 0 is fine on a linear axis, not on a log one, whichever comes first. */
    EXPECT_OK(dt_plot_add_series(plot, "s", x, y, 3, DT_SERIES_LINE));
    EXPECT_ERR(dt_plot_set_yscale(plot, DT_AXIS_LOG10), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "y[1]") && strstr(dt_last_error(), "log"), "says which: '%s'",
           dt_last_error());
    dt_plot_free(plot);
    EXPECT_OK(dt_plot_create(&plot, "t", "x", "y"));
    EXPECT_OK(dt_plot_set_yscale(plot, DT_AXIS_LOG2));
    EXPECT_ERR(dt_plot_add_series(plot, "s", x, y, 3, DT_SERIES_LINE), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_set_xscale(plot, (dt_axis_scale)9), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_plot_add_series(plot, "s", x, x, 3, DT_SERIES_LINE));
    EXPECT_ERR(dt_plot_add_function(plot, "f", amdahl_curve, NULL, 4, 1, 10), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_plot_write_svg(plot, "no-such-directory/x/plot.svg"), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "no-such-directory"), "names the path: '%s'", dt_last_error());
    dt_plot_free(plot);
    dt_plot_free(NULL);
}

TEST(metrics_gantt_pipeline_svg, 2)
{
    /* GPipe with 4 stages and 4 micro-batches, one time unit per pass:
     * stage s runs forward of micro-batch m at s + m, backward at
     * 2 * (4 + 3) - 1 - (s' + m) with s' = 3 - s (the backward runs up). */
    const int stages = 4, micro = 4;
    dt_gantt *g = NULL;
    EXPECT_OK(dt_gantt_create(&g, "GPipe 4 x 4", "time step", stages));
    EXPECT_OK(dt_gantt_set_row_label(g, 0, "stage 0 <first>"));
    char label[16];
    for (int s = 0; s < stages; s++)
        for (int m = 0; m < micro; m++) {
            snprintf(label, sizeof label, "F%d", m);
            EXPECT_OK(dt_gantt_add(g, s, s + m, s + m + 1, "forward", label));
            double b = (stages + micro - 1) + (stages - 1 - s) + m;
            snprintf(label, sizeof label, "B%d", m);
            EXPECT_OK(dt_gantt_add(g, s, b, b + 1, "backward", label));
        }
    char *doc = gantt_svg(g, "gantt");
    EXPECT(count_in(doc, NULL, "<rect class=\"region\"") == 32, "32 regions, got %zu",
           count_in(doc, NULL, "<rect class=\"region\""));
    const char *leg = strstr(doc, "<g class=\"legend\">");
    EXPECT(leg && strstr(leg, ">forward</text>") && strstr(leg, ">backward</text>"), "legend kinds");
    EXPECT(count_in(leg, NULL, "<rect") == 2, "one legend entry per kind");
    /* a label wider than the margin shrinks and wraps (svg_text_fit) */
    EXPECT(strstr(doc, ">stage 0") && strstr(doc, "&lt;first&gt;</") && strstr(doc, ">rank 3</text>"),
           "row labels");
    EXPECT(strstr(doc, ">F3</text>") && strstr(doc, ">B0</text>"), "region labels");
    /* Forward and backward have different colours. */
    const char *f = strstr(doc, "<title>forward F0"), *b = strstr(doc, "<title>backward B0");
    EXPECT(f && b, "region tooltips");
    char fill_f[16], fill_b[16];
    region_fill(doc, f, fill_f);
    region_fill(doc, b, fill_b);
    EXPECT(fill_f[0] == '#' && strcmp(fill_f, fill_b) != 0, "colours %s and %s", fill_f, fill_b);
    free(doc);
}

/* A box too thin for its label: the label goes in a strip above the box
 * (a row grows by that strip), centred on it and clear of the previous such
 * label; a wide box keeps its label inside. A chart whose labels all fit
 * keeps rows of 28 px. */
TEST(metrics_gantt_thin_box_labels, 1)
{
    for (int thin = 0; thin < 2; thin++) {
        dt_gantt *g = NULL;
        EXPECT_OK(dt_gantt_create(&g, "labels", "time", 2));
        EXPECT_OK(dt_gantt_add(g, 0, 0, 50, "compute", "wide"));
        if (thin) {
            EXPECT_OK(dt_gantt_add(g, 0, 50, 50.2, "compute", "L9"));
            EXPECT_OK(dt_gantt_add(g, 0, 50.2, 50.4, "compute", "L0"));
        }
        EXPECT_OK(dt_gantt_add(g, 1, 0, 100, "allreduce", "b0"));
        char *doc = gantt_svg(g, thin ? "gantt_thin" : "gantt_wide");
        int height = 0;
        EXPECT(sscanf(strstr(doc, "height=\"") + 8, "%d", &height) == 1, "svg height");
        EXPECT(height == 40 + 2 * (28 + 12 * thin) + 56, "%s: height %d, expected %d",
               thin ? "thin labels" : "labels that fit", height, 40 + 2 * (28 + 12 * thin) + 56);
        EXPECT(strstr(doc, "class=\"label\" fill=\"white\">wide</text>") &&
                   strstr(doc, "class=\"label\" fill=\"white\">b0</text>"),
               "labels that fit are inside their boxes");
        if (!thin) {
            EXPECT(!strstr(doc, "label outside"), "no label outside when all fit");
            free(doc);
            continue;
        }
        double l9x, l9y, l0x, boxy;
        const char *t9 = strstr(doc, "<title>compute L9"), *t0 = strstr(doc, "<title>compute L0");
        EXPECT(t9 && t0, "tooltips of the thin boxes");
        const char *r9 = t9;
        while (r9 > doc && strncmp(r9, "<rect", 5) != 0) r9--;
        EXPECT(sscanf(strstr(r9, " y=\"") + 4, "%lf", &boxy) == 1, "thin box's y");
        const char *o9 = strstr(doc, ">L9</text>"), *o0 = strstr(doc, ">L0</text>");
        EXPECT(o9 && o0, "the thin boxes' labels are written");
        while (o9 > doc && strncmp(o9, "<text", 5) != 0) o9--;
        while (o0 > doc && strncmp(o0, "<text", 5) != 0) o0--;
        EXPECT(sscanf(o9, "<text x=\"%lf\" y=\"%lf\"", &l9x, &l9y) == 2 &&
                   sscanf(o0, "<text x=\"%lf\"", &l0x) == 1,
               "label positions");
        EXPECT(strstr(o9, "label outside") && l9y < boxy, "L9 at y %g, above its box at %g", l9y,
               boxy);
        EXPECT(l0x - l9x >= 12, "L0 at x %g overlaps L9 at x %g", l0x, l9x);
        free(doc);
    }
}

TEST(metrics_gantt_errors, 1)
{
    dt_gantt *g = NULL;
    EXPECT_ERR(dt_gantt_create(&g, "t", "x", 0), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_create(NULL, "t", "x", 2), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_gantt_create(&g, "t", "x", 2));
    char path[4200];
    temp_path(path, sizeof path, "gerr");
    EXPECT_ERR(dt_gantt_write_svg(g, path), DT_ERR_INVALID_ARG); /* no regions */
    EXPECT_ERR(dt_gantt_add(g, 2, 0, 1, "k", NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_add(g, -1, 0, 1, "k", NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_add(g, 0, 1, 1, "k", NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_add(g, 0, 0, INFINITY, "k", NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_add(g, 0, 0, 1, NULL, NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_add(g, 0, 0, 1, "", NULL), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_gantt_set_row_label(g, 5, "x"), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_gantt_add(g, 1, 0.5, 2.5, "allreduce", NULL));
    EXPECT_ERR(dt_gantt_write_svg(g, "no-such-directory/x/g.svg"), DT_ERR_IO);
    dt_gantt_free(g);
    dt_gantt_free(NULL);
}

TEST(metrics_gantt_trace_in_clock_seconds, 1)
{
    /* A trace stamped with a monotonic clock starts far from 0: the axis
     * starts at the first region, which then sits at the left edge. */
    dt_gantt *g = NULL;
    EXPECT_OK(dt_gantt_create(&g, "trace", "time (s)", 2));
    EXPECT_OK(dt_gantt_add(g, 0, 5000.0, 5002.0, "compute", NULL));
    EXPECT_OK(dt_gantt_add(g, 1, 5001.0, 5004.0, "allreduce", NULL));
    char *doc = gantt_svg(g, "trace");
    const char *first = strstr(doc, "<rect class=\"region\" x=\"");
    double x = -1, w = -1;
    EXPECT(first && sscanf(first + 24, "%lf\" y=\"%*f\" width=\"%lf", &x, &w) == 2, "region geometry");
    EXPECT(x == 80, "first region at the left edge: x = %g", x);
    EXPECT(w > 100, "2 s of a 4 s axis is wide: %g px", w);
    EXPECT(!strstr(doc, ">0</text>"), "the axis does not start at 0");
    free(doc);
}

/* ------------------------------------------------ text within the canvas */

/* The number after ` name="` in the tag [t, gt), or dflt. */
static double attr_num(const char *t, const char *gt, const char *name, double dflt)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *a = strstr(t, key);
    return a && a < gt ? atof(a + strlen(key)) : dflt;
}

/* Characters of the text in [s, e): a UTF-8 code point or an entity each. */
static int text_chars(const char *s, const char *e)
{
    int n = 0;
    for (; s < e; s++) {
        if (*s == '&') s = strchr(s, ';');
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    }
    return n;
}

/* Every line of every <text> of doc lies inside the width x height canvas,
 * its width estimated at 0.6 em a character as the writer and
 * tests/chapters/lint.py estimate it (height: 0.8 em above the baseline,
 * 0.2 em below; a rotate(-90 cx cy) turns it). The first that does not,
 * and the smallest font size seen. */
static int texts_inside(const char *doc, double width, double height, char *why, size_t why_size,
                        double *min_size)
{
    *min_size = 1e9;
    for (const char *t = strstr(doc, "<text "); t; t = strstr(t + 1, "<text ")) {
        const char *gt = strchr(t, '>'), *end = strstr(t, "</text>");
        if (!gt || !end) return snprintf(why, why_size, "an unclosed <text>"), 0;
        double x = attr_num(t, gt, "x", 0), y = attr_num(t, gt, "y", 0);
        double size = attr_num(t, gt, "font-size", 12);
        *min_size = fmin(*min_size, size);
        const char *anchor = strstr(t, "text-anchor=\"");
        double shift = !anchor || anchor > gt ? 0 : !strncmp(anchor + 13, "middle", 6) ? 0.5
                       : !strncmp(anchor + 13, "end", 3) ? 1 : 0;
        const char *rot = strstr(t, "rotate(-90 ");
        double cx = 0, cy = 0;
        int turned = rot && rot < gt && sscanf(rot + 11, "%lf %lf", &cx, &cy) == 2;
        const char *line = gt + 1, *stop = end, *span = strstr(line, "<tspan");
        for (int more = 1; more;) {
            if (span && span < end) { /* a line of its own: its x, and dy from the last */
                const char *sgt = strchr(span, '>');
                x = attr_num(span, sgt, "x", x);
                y += attr_num(span, sgt, "dy", 0);
                line = sgt + 1;
                stop = strstr(line, "</tspan>");
                span = strstr(stop, "<tspan");
            } else {
                more = 0;
            }
            double w = 0.6 * size * text_chars(line, stop);
            double x0 = x - shift * w, x1 = x0 + w, y0 = y - 0.8 * size, y1 = y + 0.2 * size;
            if (turned) { /* (x, y) -> (cx + (y - cy), cy - (x - cx)) */
                double a0 = cx + (y0 - cy), a1 = cx + (y1 - cy), b0 = cy - (x1 - cx), b1 = cy - (x0 - cx);
                x0 = a0, x1 = a1, y0 = b0, y1 = b1;
            }
            if (x0 < 0 || x1 > width || y0 < 0 || y1 > height)
                return snprintf(why, why_size, "text '%.*s' at %.0f px spans [%.0f, %.0f] x [%.0f, %.0f] "
                                "on a %.0f x %.0f canvas", (int)(stop - line > 60 ? 60 : stop - line), line,
                                size, x0, x1, y0, y1, width, height), 0;
            if (!span || span > end) more = 0;
        }
    }
    return 1;
}

/* The words of s all in doc's text, in order, whatever lines they fell on. */
static int words_kept(const char *doc, const char *s)
{
    char word[64];
    const char *at = doc;
    for (int n; sscanf(s, "%63s%n", word, &n) == 1; s += n) {
        at = strstr(at, word);
        if (!at) return 0;
        at += strlen(word);
    }
    return 1;
}

TEST(metrics_svg_long_text_fits_the_canvas, 1)
{
    dt_test_see("lib/metrics/svg_out.h, svg_text_fit");
    /* 08-memory.svg's title once ran 126 px past both edges of 640 px. */
    const char *title89 = "rank 0 over one step, deep:64,512,8,10 on 4 ranks: model states at their "
                          "highest in each part";
    const char *title200 = "a title much longer than any canvas is wide, long enough that shrinking it to "
                           "the smallest size still leaves it too wide, so that it has to be wrapped "
                           "into lines: every word kept, every line inside";
    const char *name = "a legend entry whose name is far longer than the third of the width left to it";
    double x[] = {1, 2, 3}, y[] = {1, 4, 9};
    char why[200];
    double min_size;

    dt_plot *plot = NULL;
    EXPECT_OK(dt_plot_create(&plot, title89, "an x label", "a y label"));
    EXPECT_OK(dt_plot_add_series(plot, "DDP", x, y, 3, DT_SERIES_LINE));
    char *doc = plot_svg(plot, "fit89");
    EXPECT(texts_inside(doc, 640, 420, why, sizeof why, &min_size), "%s", why);
    EXPECT(!strstr(doc, "<tspan") && strstr(doc, title89), "an 89-character title shrinks onto one line");
    EXPECT(min_size >= 10, "no text below 10 px, got %g", min_size);
    free(doc);

    EXPECT_OK(dt_plot_create(&plot, title200, title200, title89));
    EXPECT_OK(dt_plot_add_series(plot, name, x, y, 3, DT_SERIES_POINTS_AND_LINE));
    EXPECT_OK(dt_plot_add_series(plot, "short", x, x, 3, DT_SERIES_LINE));
    doc = plot_svg(plot, "fit200");
    EXPECT(texts_inside(doc, 640, 420, why, sizeof why, &min_size), "%s", why);
    const char *leg = strstr(doc, "<g class=\"legend\">");
    EXPECT(leg && words_kept(doc, title200) && words_kept(leg, name), "every word of the title and the name");
    EXPECT(count_in(doc, NULL, "<tspan") >= 4, "the title and the name wrapped, got %zu lines",
           count_in(doc, NULL, "<tspan"));
    free(doc);

    /* A text that fits is written as it always was. */
    EXPECT_OK(dt_plot_create(&plot, "speedup", "ranks", "s"));
    EXPECT_OK(dt_plot_add_series(plot, "measured", x, y, 3, DT_SERIES_LINE));
    doc = plot_svg(plot, "fitshort");
    EXPECT(strstr(doc, "text-anchor=\"middle\" class=\"title\" font-size=\"16\">speedup</text>") &&
           strstr(doc, "y=\"52.0\">measured</text>"), "a short title and name unchanged");
    free(doc);

    dt_gantt *g = NULL;
    EXPECT_OK(dt_gantt_create(&g, title200, "time", 2));
    EXPECT_OK(dt_gantt_set_row_label(g, 0, "collectives and more"));
    EXPECT_OK(dt_gantt_add(g, 0, 0, 1, name, "F0"));
    EXPECT_OK(dt_gantt_add(g, 1, 1, 2, "compute", "B0"));
    doc = gantt_svg(g, "fitgantt");
    EXPECT(texts_inside(doc, 800, 10000, why, sizeof why, &min_size), "%s", why);
    EXPECT(words_kept(doc, title200) && words_kept(doc, name), "every word of the chart's title and kind");
    free(doc);
}
