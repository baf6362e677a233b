/* compute_sgemm.c - sgemm GFLOP/s: libdt's dt_sgemm against calling
 * cblas_sgemm directly (and the built-in kernel, for reference), square
 * row-major products C = A B, one thread. Built and run by compute.sh.
 *
 * Each size runs the implementations in turns, several rounds, and reports
 * each one's fastest round: on a shared machine the other jobs only ever
 * slow a round down, so the fastest is the one they disturbed least, and
 * turns give both implementations the same chances.
 * Correctness is checked apart from timing: the results must agree. */
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

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int with_builtin = argc > 1 && !strcmp(argv[1], "--builtin");
    if (!dt_blas_available()) {
        printf("sgemm: libdt was built without OpenBLAS: nothing to compare\n");
        return 0;
    }
    dt_blas_set_threads(1);
    printf("%6s %10s %10s %10s %8s\n", "n", "libdt", "cblas", with_builtin ? "builtin" : "",
           "ratio");
    printf("%6s %10s %10s %10s %8s\n", "", "GFLOP/s", "GFLOP/s", with_builtin ? "GFLOP/s" : "",
           "libdt/cblas");
    int bad = 0;
    for (size_t n = 256; n <= 2048; n *= 2) {
        float *A = malloc(n * n * sizeof(float)), *B = malloc(n * n * sizeof(float));
        float *C[NUM_IMPL];
        for (int i = 0; i < NUM_IMPL; i++)
            C[i] = calloc(n * n, sizeof(float));
        for (size_t i = 0; i < n * n; i++) {
            A[i] = (float)((i * 7) % 13) - 6;
            B[i] = (float)((i * 5) % 11) - 5;
        }
        double flop = 2.0 * (double)n * (double)n * (double)n;
        int reps = n <= 512 ? 20 : n <= 1024 ? 9 : 5;
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
            qsort(t[i], (size_t)reps, sizeof(double), cmp);
            gf[i] = flop / t[i][0] / 1e9;
            /* integer data: every implementation gives the exact same C */
            if (memcmp(C[i], C[IMPL_CBLAS], n * n * sizeof(float))) {
                printf("sgemm n=%zu: %s differs from cblas\n", n, impl_names[i]);
                bad = 1;
            }
        }
        char builtin[16] = "";
        if (nimpl == NUM_IMPL)
            snprintf(builtin, sizeof builtin, "%.1f", gf[IMPL_BUILTIN]);
        printf("%6zu %10.1f %10.1f %10s %8.3f\n", n, gf[IMPL_LIBDT], gf[IMPL_CBLAS], builtin,
               gf[IMPL_LIBDT] / gf[IMPL_CBLAS]);
        fflush(stdout);
        free(A), free(B);
        for (int i = 0; i < NUM_IMPL; i++)
            free(C[i]);
    }
    return bad;
}
