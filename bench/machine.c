/* machine.c - the machine a benchmark ran on, as KEY=VALUE lines for the
 * scripts (bench/table.sh, bench/kernels.sh): the CPU, its cores and
 * memory, the BLAS, the kernels it runs and who chose them
 * (dt_blas_info_get), and the kernel sets this CPU can run. */
#include "dt/tensor.h"

#include <stdio.h>
#include <unistd.h>

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
    printf("\nsummary=%s\n", dt_blas_info_str(&info, line, sizeof line));
    return 0;
}
