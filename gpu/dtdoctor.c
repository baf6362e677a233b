/* dtdoctor - the GPU side of `make doctor` (tools/doctor.sh runs it): the
 * driver's and the runtime's CUDA versions, NCCL's (the library loaded
 * against the header built with), the visible GPUs and the peer access
 * between them, then an allreduce on 1 rank and, where there are several
 * GPUs, on all of them through the nccl backend, checked exact.
 *
 * Exit status: 0 ready; 1 a failure (the line before says the next step);
 * 77 no GPU here (the suite's skip: automake's convention). */
#include "dt/comm.h"
#include "gpu.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_SKIP 77

static int fail(const char *what, const char *next)
{
    printf("doctor: FAIL: %s\n  next step: %s\n", what, next);
    return 1;
}

static dt_result one_allreduce(dt_comm *w, void *arg)
{
    (void)arg;
    int n = dt_comm_size(w);
    float h[256], *d = NULL;
    for (int i = 0; i < 256; i++)
        h[i] = (float)(dt_comm_rank(w) + i % 3);
    dt_result r = dt_gpu_alloc((void **)&d, sizeof h);
    if (r == DT_OK)
        r = dt_gpu_to_device(d, h, sizeof h);
    if (r == DT_OK)
        r = dt_allreduce(d, d, 256, DT_F32, DT_SUM, w);
    if (r == DT_OK)
        r = dt_gpu_to_host(h, d, sizeof h);
    for (int i = 0; r == DT_OK && i < 256; i++) {
        float want = (float)(n * (n - 1) / 2 + n * (i % 3));
        if (h[i] != want)
            r = dt_fail(DT_ERR_MISMATCH, "allreduce[%d] = %g, expected %g", i, h[i], want);
    }
    dt_gpu_free(d);
    return r;
}

static int allreduce_on(int ranks)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = ranks;
    o.backend = DT_BACKEND_NCCL;
    o.debug = 1;
    o.timeout_s = 60;
    dt_result r = dt_launch(&o, one_allreduce, NULL);
    if (r != DT_OK) {
        char what[600];
        snprintf(what, sizeof what, "allreduce on %d rank(s) through the nccl backend: %s", ranks,
                 dt_last_error());
        return fail(what, "NCCL_DEBUG=INFO make doctor shows NCCL's own account; a version "
                    "skew shows above");
    }
    printf("doctor: allreduce on %d rank(s) (nccl backend): exact\n", ranks);
    return 0;
}

/* dtdoctor: versions and GPUs ("doctor: gpus N" last); dtdoctor
 * --allreduce N: the allreduce on N ranks. Two runs, because the ranks are
 * forked processes: a child may not use CUDA once its parent has touched
 * it, so the allreduce's process never does. */
int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--allreduce") == 0)
        return allreduce_on(atoi(argv[2]));
    if (argc != 1) {
        fprintf(stderr, "usage: dtdoctor [--allreduce RANKS]\n");
        return 2;
    }
    int drv = 0, rt = 0, nccl = 0;
    cudaError_t e = cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    ncclGetVersion(&nccl);
    printf("doctor: CUDA runtime %d.%d (built against %d.%d), NCCL %d.%d.%d (header %d.%d.%d)\n",
           rt / 1000, rt % 1000 / 10, CUDART_VERSION / 1000, CUDART_VERSION % 1000 / 10,
           nccl / 10000, nccl / 100 % 100, nccl % 100, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
    if (e != cudaSuccess || drv == 0) {
        printf("doctor: SKIP: no GPU: no CUDA driver is loaded (%s)\n"
               "  next step: on a GPU machine, install the NVIDIA driver (nvidia-smi must list "
               "the GPUs); here, nothing: the GPU tests report themselves skipped\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "driver version 0");
        return EXIT_SKIP;
    }
    printf("doctor: driver supports CUDA %d.%d\n", drv / 1000, drv % 1000 / 10);
    if (drv < rt)
        return fail("the driver is older than the CUDA runtime (version skew)",
                    "upgrade the driver, or build with the CUDA toolkit the driver supports "
                    "(NVCC=/path/to/older/nvcc make gpu)");
    if (nccl / 100 != NCCL_VERSION_CODE / 100)
        return fail("the NCCL library loaded is not the one built against (version skew)",
                    "point LD_LIBRARY_PATH at the NCCL of the header, or rebuild: make gpu");
    if (dt_gpu_probe() != DT_OK) {
        printf("doctor: SKIP: %s\n  next step: on a GPU machine, check nvidia-smi and "
               "CUDA_VISIBLE_DEVICES\n", dt_last_error());
        return EXIT_SKIP;
    }
    int n = 0;
    cudaGetDeviceCount(&n);
    for (int i = 0; i < n; i++) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) == cudaSuccess)
            printf("doctor: GPU %d: %s, sm_%d%d, %.1f GiB\n", i, p.name, p.major, p.minor,
                   (double)p.totalGlobalMem / (1 << 30));
        for (int j = 0; j < n; j++) {
            int can = 0;
            if (j != i && cudaDeviceCanAccessPeer(&can, i, j) == cudaSuccess)
                printf("doctor:   peer access %d -> %d: %s\n", i, j, can ? "yes" : "no (NCCL "
                       "goes through host memory or the network)");
        }
    }
    if (n == 1)
        printf("doctor: one GPU only: an N-rank allreduce needs N GPUs; for functional tests "
               "of 2 and 4 ranks, DT_NCCL_HOSTID=1 (bench/gpu-check.sh)\n");
    printf("doctor: gpus %d\n", n);
    return 0;
}
