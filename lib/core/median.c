/* median.c - the median of a sample of timings, written once.
 *
 * Every figure measured on the wall clock or the CPU clock is quoted as a
 * median (docs/design.md: performance only through benchmarks, medians
 * and ratios): one slow run, when another program took the core, moves
 * the mean but not the median. */
#include "dt/core.h"

#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void dt_sort_doubles(double *v, size_t n)
{
    if (v && n > 1)
        qsort(v, n, sizeof *v, cmp_double);
}

double dt_median(double *v, size_t n)
{
    if (!v || n == 0)
        return NAN;
    dt_sort_doubles(v, n);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
