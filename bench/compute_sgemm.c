/* compute_sgemm.c - sgemm GFLOP/s: libdt's dt_sgemm against calling
 * cblas_sgemm directly (and the built-in kernel, for reference), square
 * row-major products C = A B, one thread. Built and run by compute.sh.
 *
 * Each size runs the implementations in turns, several rounds, and reports
 * each one's fastest round: on a shared machine the other jobs only ever
 * slow a round down, so the fastest is the one they disturbed least, and
 * turns give both implementations the same chances.
 * Correctness is checked apart from timing: the results must agree.
 *
 *   compute_sgemm [--builtin] [--sizes N,N,...] [--csv]
 *
 * --sizes picks the sizes (default 256,512,1024,2048); --csv prints
 * "n,libdt_gflops,cblas_gflops" rows for scripts (bench/kernels.sh). */
#include "dt/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef DT_HAVE_OPENBLAS
#include <cblas.h>
#endif

enum { IMPL_LIBDT, IMPL_CBLAS, IMPL_BUILTIN, NUM_IMPL };
static const char *const impl_names[NUM_IMPL] = {"libdt", "cblas", "builtin"};

static void run(int impl, size_t n, const float *A, const float *B, float *C)
{
    if (impl == IMPL_LIBDT)
        dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, n, n, n, 1, A, n, B, n, 0, C, n);
    else if (impl == IMPL_BUILTIN)
        dt_sgemm_builtin(DT_NO_TRANS, DT_NO_TRANS, n, n, n, 1, A, n, B, n, 0, C, n);
#ifdef DT_HAVE_OPENBLAS
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, 1, A,
                    (int)n, B, (int)n, 0, C, (int)n);
#endif
}

/* One size: the implementations in turns, the fastest round of each.
 * Returns 1 when their results differ. */
static int measure(size_t n, int with_builtin, int csv)
{
    float *A = malloc(n * n * sizeof(float)), *B = malloc(n * n * sizeof(float));
    float *C[NUM_IMPL];
    for (int i = 0; i < NUM_IMPL; i++)
        C[i] = calloc(n * n, sizeof(float));
    for (size_t i = 0; i < n * n; i++) {
        A[i] = (float)((i * 7) % 13) - 6;
        B[i] = (float)((i * 5) % 11) - 5;
    }
    double flop = 2.0 * (double)n * (double)n * (double)n;
    int reps = n <= 512 ? 20 : n <= 1024 ? 9 : 5, bad = 0;
    double t[NUM_IMPL][20], gf[NUM_IMPL] = {0};
    int nimpl = with_builtin && n <= 1024 ? NUM_IMPL : IMPL_BUILTIN;
    for (int i = 0; i < nimpl; i++) /* warm up: first touches, thread pool */
        run(i, n, A, B, C[i]);
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < nimpl; i++) {
            double t0 = dt_now();
            run(i, n, A, B, C[i]);
            t[i][r] = dt_now() - t0;
        }
    for (int i = 0; i < nimpl; i++) {
        dt_sort_doubles(t[i], (size_t)reps);
        gf[i] = flop / t[i][0] / 1e9;
        /* integer data: every implementation gives the exact same C */
        if (memcmp(C[i], C[IMPL_CBLAS], n * n * sizeof(float))) {
            fprintf(stderr, "sgemm n=%zu: %s differs from cblas\n", n, impl_names[i]);
            bad = 1;
        }
    }
    char builtin[16] = "";
    if (nimpl == NUM_IMPL)
        snprintf(builtin, sizeof builtin, "%.1f", gf[IMPL_BUILTIN]);
    if (csv)
        printf("%zu,%.2f,%.2f\n", n, gf[IMPL_LIBDT], gf[IMPL_CBLAS]);
    else
        printf("%6zu %10.1f %10.1f %10s %8.3f\n", n, gf[IMPL_LIBDT], gf[IMPL_CBLAS], builtin,
               gf[IMPL_LIBDT] / gf[IMPL_CBLAS]);
    fflush(stdout);
    free(A), free(B);
    for (int i = 0; i < NUM_IMPL; i++)
        free(C[i]);
    return bad;
}

/* Parses "256,1024" into sizes[]; returns how many, 0 on a bad list. */
static int parse_sizes(const char *text, size_t *sizes, int max)
{
    int n = 0;
    for (const char *p = text; *p && n < max; n++) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > 16384 || (*end && *end != ','))
            return 0;
        sizes[n] = (size_t)v;
        p = *end ? end + 1 : end;
    }
    return n;
}

static void usage(void)
{
    fprintf(stderr, "usage: compute_sgemm [--builtin] [--sizes N,N,...] [--csv]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    int with_builtin = 0, csv = 0, nsizes = 4;
    size_t sizes[16] = {256, 512, 1024, 2048};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--builtin"))
            with_builtin = 1;
        else if (!strcmp(argv[i], "--csv"))
            csv = 1;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            if (!(nsizes = parse_sizes(argv[++i], sizes, 16))) {
                fprintf(stderr, "compute_sgemm: --sizes '%s': expected sizes 1..16384 "
                                "separated by commas\n", argv[i]);
                return 2;
            }
        } else
            usage();
    }
    if (!dt_blas_available()) {
        printf("sgemm: libdt was built without OpenBLAS: nothing to compare\n");
        return 0;
    }
    dt_blas_set_threads(1);
    if (csv)
        printf("n,libdt_gflops,cblas_gflops\n");
    else {
        printf("%6s %10s %10s %10s %8s\n", "n", "libdt", "cblas", with_builtin ? "builtin" : "",
               "ratio");
        printf("%6s %10s %10s %10s %8s\n", "", "GFLOP/s", "GFLOP/s",
               with_builtin ? "GFLOP/s" : "", "libdt/cblas");
    }
    int bad = 0;
    for (int s = 0; s < nsizes; s++)
        bad |= measure(sizes[s], with_builtin, csv);
    return bad;
}
