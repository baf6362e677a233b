/* test_plots.c - lab 12, task (d): the two SVG plots exist, are well-formed
 * XML, have the series the spec names, and put the measured points where
 * their values say (checked through the pixel positions: on a log2 axis the
 * distances between points go as the log2 of their values' ratios, on a
 * linear axis as their differences). */
#include "grader.h"
#include "scaling.h"
#include "xmlcheck.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

/* Amdahl with p = 0.9: T_N = 10 + 90 / N; weak scaling T_N grows. */
static const int N5[] = {1, 2, 4, 8, 16};
static const double STRONG5[] = {100, 55, 32.5, 21.25, 15.625};
static const double WEAK5[] = {10, 11, 12, 14, 16};

typedef struct {
    char dir[256], speedup[300], efficiency[300];
} paths;

/* The test's files, removed when its process exits, passed or failed. */
static paths *to_remove;

static void remove_paths(void)
{
    if (!to_remove) return;
    unlink(to_remove->speedup);
    unlink(to_remove->efficiency);
    rmdir(to_remove->dir);
    to_remove = NULL;
}

static void make_paths(paths *p)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(p->dir, sizeof p->dir, "%s/lab12-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    EXPECT(mkdtemp(p->dir) != NULL, "cannot make a temporary folder %s", p->dir);
    snprintf(p->speedup, sizeof p->speedup, "%s/speedup.svg", p->dir);
    snprintf(p->efficiency, sizeof p->efficiency, "%s/efficiency.svg", p->dir);
    to_remove = p;
    atexit(remove_paths);
}

/* Reads an SVG, checks that it is well-formed, returns its series. */
static int read_svg(const char *path, xml_series *s, int max)
{
    char why[200];
    char *doc = xml_read_file(path);
    EXPECT(doc != NULL, "%s was not written", path);
    EXPECT(strstr(doc, "<svg") != NULL, "%s has no <svg> element", path);
    EXPECT(xml_well_formed(doc, why, sizeof why), "%s is not well-formed XML: %s", path, why);
    int count = xml_read_series(doc, s, max);
    free(doc);
    return count;
}

/* The measured series has count points, at pixel positions whose
 * distances from the first point match the values' (transformed) ones. */
static void expect_points(const xml_series *s, const char *what, size_t count, const double *x,
                          const double *y, int ylog)
{
    EXPECT(s != NULL, "%s: no series", what);
    EXPECT(s->npoints == (int)count, "%s: %d points drawn, expected %zu (as circles)", what,
           s->npoints, count);
    double fx0 = log2(x[0]), fy0 = ylog ? log2(y[0]) : y[0];
    double fx1 = log2(x[1]), fy1 = ylog ? log2(y[1]) : y[1];
    for (size_t i = 2; i < count; i++) {
        double fx = log2(x[i]), fy = ylog ? log2(y[i]) : y[i];
        double want_x = (fx - fx0) / (fx1 - fx0), got_x = (s->cx[i] - s->cx[0]) / (s->cx[1] - s->cx[0]);
        double want_y = (fy - fy0) / (fy1 - fy0), got_y = (s->cy[i] - s->cy[0]) / (s->cy[1] - s->cy[0]);
        EXPECT(fabs(got_x - want_x) < 0.01 * fabs(want_x) + 0.01,
               "%s: point %zu is at x %.2f px: not where N = %g goes on a log2 axis", what, i,
               s->cx[i], x[i]);
        EXPECT(fabs(got_y - want_y) < 0.01 * fabs(want_y) + 0.01,
               "%s: point %zu is at y %.2f px: not where %g goes on a %s axis", what, i, s->cy[i],
               y[i], ylog ? "log2" : "linear");
    }
    /* larger values are higher up: a smaller y in SVG */
    EXPECT((y[1] > y[0]) == (s->cy[1] < s->cy[0]), "%s: the y axis points down", what);
}

TEST(plots_are_well_formed_with_their_series, 2)
{
    paths p;
    make_paths(&p);
    lab_scaling_data d = {5, N5, STRONG5, WEAK5};
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    EXPECT_OK(lab_write_plots(&d, &fit, p.speedup, p.efficiency));
    xml_series s[8];
    int k = read_svg(p.speedup, s, 8);
    EXPECT(k == 3, "speedup plot: %d series, expected 3 (measured, ideal, Amdahl)", k);
    EXPECT(xml_find_series(s, k, "measured", 0), "speedup plot: no series named \"measured\"");
    EXPECT(xml_find_series(s, k, "ideal", 0), "speedup plot: no series named \"ideal\"");
    const xml_series *a = xml_find_series(s, k, "Amdahl", 1);
    EXPECT(a && a->has_line, "speedup plot: no curve named \"Amdahl...\"");
    k = read_svg(p.efficiency, s, 8);
    EXPECT(k == 3, "efficiency plot: %d series, expected 3 (measured, Amdahl, weak)", k);
    EXPECT(xml_find_series(s, k, "measured", 0), "efficiency plot: no series named \"measured\"");
    EXPECT(xml_find_series(s, k, "weak", 0), "efficiency plot: no series named \"weak\"");
    a = xml_find_series(s, k, "Amdahl", 1);
    EXPECT(a && a->has_line, "efficiency plot: no curve named \"Amdahl...\"");
    /* without weak-scaling times, no weak series */
    d.weak = NULL;
    EXPECT_OK(lab_write_plots(&d, &fit, p.speedup, p.efficiency));
    k = read_svg(p.efficiency, s, 8);
    EXPECT(k == 2 && !xml_find_series(s, k, "weak", 0),
           "efficiency plot without weak data: %d series, expected 2", k);
    remove_paths();
}

TEST(plots_put_the_measured_points_right, 3)
{
    paths p;
    make_paths(&p);
    lab_scaling_data d = {5, N5, STRONG5, WEAK5};
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    EXPECT_OK(lab_write_plots(&d, &fit, p.speedup, p.efficiency));
    double x[5], sp[5], eff[5], weak[5];
    for (int i = 0; i < 5; i++) {
        x[i] = N5[i];
        sp[i] = STRONG5[0] / STRONG5[i];
        eff[i] = sp[i] / N5[i];
        weak[i] = WEAK5[0] / WEAK5[i];
    }
    xml_series s[8];
    int k = read_svg(p.speedup, s, 8);
    expect_points(xml_find_series(s, k, "measured", 0), "speedup plot, measured", 5, x, sp, 1);
    k = read_svg(p.efficiency, s, 8);
    expect_points(xml_find_series(s, k, "measured", 0), "efficiency plot, measured", 5, x, eff, 0);
    expect_points(xml_find_series(s, k, "weak", 0), "efficiency plot, weak", 5, x, weak, 0);
    remove_paths();
}

TEST(plots_reject_bad_arguments, 1)
{
    paths p;
    make_paths(&p);
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    lab_scaling_data good = {5, N5, STRONG5, NULL};
    EXPECT_OK(lab_write_plots(&good, &fit, p.speedup, p.efficiency)); /* a valid call first */
    const int from2[] = {2, 4}, down[] = {1, 4, 2};
    const double t2[] = {1, 0.5}, t3[] = {1, 0.5, 0.6}, zero[] = {1, 0};
    lab_scaling_data one = {1, N5, STRONG5, NULL}, not1 = {2, from2, t2, NULL},
                     unsorted = {3, down, t3, NULL}, bad_t = {2, N5, zero, NULL};
    EXPECT_ERR(lab_write_plots(&one, &fit, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&not1, &fit, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&unsorted, &fit, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&bad_t, &fit, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(NULL, &fit, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&good, NULL, p.speedup, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&good, &fit, NULL, p.efficiency), DT_ERR_INVALID_ARG);
    EXPECT_ERR(lab_write_plots(&good, &fit, p.speedup, NULL), DT_ERR_INVALID_ARG);
    remove_paths();
}
