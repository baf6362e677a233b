/* machine.c - the machine a benchmark ran on, as KEY=VALUE lines for the
 * scripts (bench/table.sh, bench/kernels.sh): the CPU, its cores and
 * memory, the BLAS, the kernels it runs and who chose them
 * (dt_blas_info_get), the kernel sets this CPU can run, and a fingerprint
 * of the arithmetic dt_sgemm does under the kernels in use. */
#include "dt/tensor.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* FNV-1a over the bits of dt_sgemm's results on shapes from 1 to a few
 * hundred (odd, prime, the labs' own: 784 inputs, batches of 32-256), all
 * four transposes, beta 0 and 0.5. dt_sgemm is libdt's only BLAS call, so
 * two kernel sets with one fingerprint do the same arithmetic on these
 * shapes (OpenBLAS's Zen target runs Haswell's sgemm kernels, Cooperlake
 * SkylakeX's): test-kernels runs such a set once. 0 on an error. */
static uint64_t sgemm_fingerprint(void)
{
    static const int shapes[][3] = {{1, 1, 1},     {1, 64, 784},  {3, 5, 7},     {16, 16, 16},
                                    {33, 65, 17},  {32, 10, 128}, {64, 784, 32}, {128, 128, 128},
                                    {257, 31, 100}, {8, 1000, 64}, {200, 200, 3}, {256, 64, 784}};
    uint64_t h = 1469598103934665603ULL;
    uint32_t seed = 1;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        size_t m = (size_t)shapes[t][0], n = (size_t)shapes[t][1], k = (size_t)shapes[t][2];
        float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b),
              *c = malloc(m * n * sizeof *c);
        if (!a || !b || !c) {
            free(a), free(b), free(c);
            return 0;
        }
        for (size_t i = 0; i < m * k; i++)
            seed = seed * 1103515245u + 12345u, a[i] = (float)((int)(seed >> 8) % 2001 - 1000) / 997;
        for (size_t i = 0; i < k * n; i++)
            seed = seed * 1103515245u + 12345u, b[i] = (float)((int)(seed >> 8) % 2001 - 1000) / 991;
        for (int form = 0; form < 8; form++) {
            dt_trans ta = form & 1 ? DT_TRANS : DT_NO_TRANS, tb = form & 2 ? DT_TRANS : DT_NO_TRANS;
            for (size_t i = 0; i < m * n; i++)
                c[i] = (float)(i % 7) / 8;
            if (dt_sgemm(ta, tb, m, n, k, 1.0f, a, ta ? m : k, b, tb ? k : n, form & 4 ? 0.5f : 0,
                         c, n) != DT_OK) {
                free(a), free(b), free(c);
                return 0;
            }
            const unsigned char *p = (const unsigned char *)c;
            for (size_t i = 0; i < m * n * sizeof *c; i++)
                h = (h ^ p[i]) * 1099511628211ULL;
        }
        free(a), free(b), free(c);
    }
    return h;
}

int main(void)
{
    dt_blas_info info;
    dt_result r = dt_blas_info_get(&info);
    if (r != DT_OK) {
        fprintf(stderr, "machine: %s\n", dt_last_error());
        return 1;
    }
    char line[400], features[200];
    dt_cpu_features_str(info.cpu.features, features, sizeof features);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    printf("cpu=%s\n", info.cpu.model_name);
    printf("cpu_vendor=%s\ncpu_family=%d\ncpu_model=%d\n", info.cpu.vendor, info.cpu.family,
           info.cpu.model);
    printf("cpu_isa=%s\ncpu_features=%s\n", dt_isa_name(info.cpu.isa), features);
    printf("cores=%ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("memory_gib=%.1f\n", (double)pages * (double)page / (1 << 30));
    printf("blas=%s\nblas_config=%s\n", info.library, info.config);
    printf("kernels=%s\nkernels_by=%s\nblas_choice=%s\n", info.kernels,
           dt_blas_chooser_name(info.chosen_by), info.blas_choice);
    /* the kernel set of each level this CPU runs, from the lowest */
    const char *own = dt_blas_kernels_better("Prescott", &info.cpu);
    printf("cpu_kernels=%s\nkernel_sets=Prescott", own ? own : "");
    for (int isa = DT_ISA_AVX; isa <= (int)info.cpu.isa; isa++) {
        dt_cpu_info level = {.isa = (dt_isa)isa};
        printf(" %s", dt_blas_kernels_better("Prescott", &level));
    }
    printf("\nsgemm_fingerprint=%016llx\n", (unsigned long long)sgemm_fingerprint());
    printf("summary=%s\n", dt_blas_info_str(&info, line, sizeof line));
    return 0;
}
