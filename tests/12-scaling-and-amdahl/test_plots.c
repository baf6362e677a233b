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

/* Measured times, not exactly Amdahl's: under the exact law the speedup is
 * an affine function of the efficiency (S = (1 - p E) / (1 - p)), and a plot
 * of one in place of the other would put the points in the same places. */
static const int N5[] = {1, 2, 4, 8, 16};
static const double STRONG5[] = {100, 56, 30, 20, 16};
static const double WEAK5[] = {10, 11, 12, 14, 16};

/* Writes the plots into a fresh temporary folder (null_path 1 or 2 passes
 * NULL for the speedup or the efficiency path), reads back what was written
 * (*speedup_doc and *efficiency_doc, NULL when missing; free them), and
 * removes the folder before anything is checked: a failed check ends the
 * test's process at once, with no chance to clean up. */
static dt_result call_lab_write_plots(const lab_scaling_data *d, const lab_amdahl *fit, int null_path,
                              char **speedup_doc, char **efficiency_doc)
{
    char dir[4200], sp[4300], ef[4300];
    snprintf(dir, sizeof dir, "%s/lab12-XXXXXX", dt_test_tmpdir());
    EXPECT(mkdtemp(dir) != NULL, "cannot make a temporary folder %s", dir);
    snprintf(sp, sizeof sp, "%s/speedup.svg", dir);
    snprintf(ef, sizeof ef, "%s/efficiency.svg", dir);
    dt_result r = lab_write_plots(d, fit, null_path == 1 ? NULL : sp, null_path == 2 ? NULL : ef);
    *speedup_doc = xml_read_file(sp);
    *efficiency_doc = xml_read_file(ef);
    unlink(sp);
    unlink(ef);
    rmdir(dir);
    return r;
}

/* Checks that an SVG document is well-formed, returns its series. */
static int read_svg(const char *doc, const char *what, xml_series *s, int max)
{
    char why[200];
    EXPECT(doc != NULL, "the %s plot was not written", what);
    EXPECT(strstr(doc, "<svg") != NULL, "the %s plot has no <svg> element", what);
    EXPECT(xml_well_formed(doc, why, sizeof why), "the %s plot is not well-formed XML: %s", what, why);
    return xml_read_series(doc, s, max);
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
    EXPECT((y[1] > y[0]) == (s->cy[1] < s->cy[0]),
           "%s: point 1 (value %g) is drawn %s point 0 (value %g): larger values go higher", what,
           y[1], s->cy[1] < s->cy[0] ? "above" : "below", y[0]);
}

TEST(plots_are_well_formed_with_their_series, 2)
{
    dt_test_see("chapter 12, section 10, task (d)");
    lab_scaling_data d = {5, N5, STRONG5, WEAK5};
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    char *sdoc, *edoc;
    EXPECT_OK(call_lab_write_plots(&d, &fit, 0, &sdoc, &edoc));
    xml_series s[8];
    int k = read_svg(sdoc, "speedup", s, 8);
    EXPECT(k == 3, "speedup plot: %d series, expected 3 (measured, ideal, Amdahl)", k);
    EXPECT(xml_find_series(s, k, "measured", 0), "speedup plot: no series named \"measured\"");
    EXPECT(xml_find_series(s, k, "ideal", 0), "speedup plot: no series named \"ideal\"");
    const xml_series *a = xml_find_series(s, k, "Amdahl", 1);
    EXPECT(a && a->has_line, "speedup plot: no curve named \"Amdahl...\"");
    k = read_svg(edoc, "efficiency", s, 8);
    EXPECT(k == 3, "efficiency plot: %d series, expected 3 (strong scaling, Amdahl, weak scaling)",
           k);
    EXPECT(xml_find_series(s, k, "strong scaling", 0),
           "efficiency plot: no series named \"strong scaling\"");
    EXPECT(xml_find_series(s, k, "weak scaling", 0),
           "efficiency plot: no series named \"weak scaling\"");
    a = xml_find_series(s, k, "Amdahl", 1);
    EXPECT(a && a->has_line, "efficiency plot: no curve named \"Amdahl...\"");
    free(sdoc);
    free(edoc);
    /* without weak-scaling times, no weak series */
    d.weak = NULL;
    EXPECT_OK(call_lab_write_plots(&d, &fit, 0, &sdoc, &edoc));
    k = read_svg(edoc, "efficiency", s, 8);
    EXPECT(k == 2 && !xml_find_series(s, k, "weak scaling", 0),
           "efficiency plot without weak data: %d series, expected 2", k);
    free(sdoc);
    free(edoc);
}

TEST(plots_put_the_measured_points_right, 3)
{
    dt_test_see("chapter 12, sections 10 and 11");
    lab_scaling_data d = {5, N5, STRONG5, WEAK5};
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    char *sdoc, *edoc;
    EXPECT_OK(call_lab_write_plots(&d, &fit, 0, &sdoc, &edoc));
    double x[5], sp[5], eff[5], weak[5];
    for (int i = 0; i < 5; i++) {
        x[i] = N5[i];
        sp[i] = STRONG5[0] / STRONG5[i];
        eff[i] = sp[i] / N5[i];
        weak[i] = WEAK5[0] / WEAK5[i];
    }
    xml_series s[8];
    int k = read_svg(sdoc, "speedup", s, 8);
    expect_points(xml_find_series(s, k, "measured", 0), "speedup plot, measured", 5, x, sp, 1);
    k = read_svg(edoc, "efficiency", s, 8);
    expect_points(xml_find_series(s, k, "strong scaling", 0), "efficiency plot, strong scaling", 5,
                  x, eff, 0);
    expect_points(xml_find_series(s, k, "weak scaling", 0), "efficiency plot, weak scaling", 5, x,
                  weak, 0);
    free(sdoc);
    free(edoc);
}

TEST(plots_reject_bad_arguments, 1)
{
    dt_test_see("chapter 12, section 10");
    lab_amdahl fit = {.p = 0.9, .t1 = 100, .residual = 0};
    lab_scaling_data good = {5, N5, STRONG5, NULL};
    char *sdoc, *edoc;
    EXPECT_OK(call_lab_write_plots(&good, &fit, 0, &sdoc, &edoc)); /* a valid call first */
    free(sdoc), free(edoc);
    const int from2[] = {2, 4}, down[] = {1, 4, 2};
    const double t2[] = {1, 0.5}, t3[] = {1, 0.5, 0.6}, zero[] = {1, 0};
    lab_scaling_data one = {1, N5, STRONG5, NULL}, not1 = {2, from2, t2, NULL},
                     unsorted = {3, down, t3, NULL}, bad_t = {2, N5, zero, NULL};
    const lab_scaling_data *bad[] = {&one, &not1, &unsorted, &bad_t, NULL};
    for (int i = 0; i < 5; i++) {
        EXPECT_ERR(call_lab_write_plots(bad[i], &fit, 0, &sdoc, &edoc), DT_ERR_INVALID_ARG);
        free(sdoc), free(edoc);
    }
    EXPECT_ERR(call_lab_write_plots(&good, NULL, 0, &sdoc, &edoc), DT_ERR_INVALID_ARG);
    free(sdoc), free(edoc);
    EXPECT_ERR(call_lab_write_plots(&good, &fit, 1, &sdoc, &edoc), DT_ERR_INVALID_ARG);
    free(sdoc), free(edoc);
    EXPECT_ERR(call_lab_write_plots(&good, &fit, 2, &sdoc, &edoc), DT_ERR_INVALID_ARG);
    free(sdoc), free(edoc);
}
