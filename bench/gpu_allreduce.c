/* gpu_allreduce.c - the nccl backend's dt_allreduce beside a raw
 * ncclAllReduce loop, timed the same way, in nccl-tests' table (size,
 * count, type, redop, time, algbw, busbw, #wrong). Built by `make gpu`
 * (bench/gpu_*.c); run by bench/gpu-check.sh on a GPU machine.
 *
 *   gpu_allreduce --impl dt|raw [--ranks N] [-b MIN] [-e MAX] [-f FACTOR] [--iters K]
 *
 * Both: out of place, f32 sum, every send element 1 (every received one
 * must be N: #wrong counts those that are not), K timed iterations after 5
 * of warm-up, each iteration one allreduce waited for on the host (the
 * blocking dt_allreduce's contract, which the raw loop keeps with
 * cudaStreamSynchronize). dt runs N ranks through dt_launch (one process
 * and GPU each); raw runs the N GPUs from one process (ncclCommInitAll).
 * Rank 0 prints; time is the median iteration in microseconds. */
#include "dt/comm.h"
#include "dt/core.h"
#include "dt/net.h"
#include "gpu.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    size_t min, max;
    double factor;
    int iters, ranks, raw;
} bench_opts;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void row(const bench_opts *o, size_t bytes, double *t, long wrong)
{
    qsort(t, (size_t)o->iters, sizeof *t, cmp_double);
    double s = t[o->iters / 2];
    double algbw = (double)bytes / s / 1e9;
    printf("%12zu %12zu %6s %6s %10.2f %8.2f %8.2f %7ld\n", bytes, bytes / 4, "float", "sum",
           s * 1e6, algbw, algbw * dt_net_busbw_factor(DT_COLL_ALLREDUCE, o->ranks), wrong);
}

static void header(const bench_opts *o)
{
    printf("# %s allreduce, %d rank(s), out of place, median of %d iterations\n",
           o->raw ? "raw ncclAllReduce" : "dt_allreduce (nccl backend)", o->ranks, o->iters);
    printf("%12s %12s %6s %6s %10s %8s %8s %7s\n", "size(B)", "count", "type", "redop",
           "time(us)", "algbw", "busbw", "#wrong");
}

static long count_wrong(const float *dev, size_t n, float want)
{
    float *h = malloc(n * sizeof *h);
    long wrong = 0;
    if (!h || dt_gpu_to_host(h, dev, n * sizeof *h) != DT_OK)
        wrong = (long)n;
    for (size_t i = 0; h && wrong == 0 && i < n; i++)
        wrong += h[i] != want;
    free(h);
    return wrong;
}

static dt_result dt_rank(dt_comm *w, void *arg)
{
    const bench_opts *o = arg;
    int n = dt_comm_size(w);
    float *s = NULL, *r = NULL, *ones = malloc(o->max);
    double *t = malloc(sizeof *t * (size_t)o->iters);
    for (size_t i = 0; i < o->max / 4; i++)
        ones[i] = 1.0f;
    DT_CHECK(dt_gpu_alloc((void **)&s, o->max));
    DT_CHECK(dt_gpu_alloc((void **)&r, o->max));
    DT_CHECK(dt_gpu_to_device(s, ones, o->max));
    if (dt_comm_rank(w) == 0)
        header(o);
    for (size_t b = o->min; b <= o->max; b = (size_t)((double)b * o->factor) / 4 * 4) {
        for (int i = 0; i < 5; i++)
            DT_CHECK(dt_allreduce(s, r, b / 4, DT_F32, DT_SUM, w));
        for (int i = 0; i < o->iters; i++) {
            double t0 = dt_now();
            DT_CHECK(dt_allreduce(s, r, b / 4, DT_F32, DT_SUM, w));
            t[i] = dt_now() - t0;
        }
        if (dt_comm_rank(w) == 0)
            row(o, b, t, count_wrong(r, b / 4, (float)n));
        if (o->factor <= 1.0)
            break;
    }
    dt_gpu_free(s), dt_gpu_free(r);
    free(ones), free(t);
    return DT_OK;
}

#define NCCL_OK(call)                                                                   \
    do {                                                                                \
        ncclResult_t e_ = (call);                                                       \
        if (e_ != ncclSuccess) {                                                        \
            fprintf(stderr, "gpu_allreduce: %s: %s\n", #call, ncclGetErrorString(e_)); \
            return 1;                                                                   \
        }                                                                               \
    } while (0)

static int raw(const bench_opts *o)
{
    int n = o->ranks;
    ncclComm_t *comms = calloc((size_t)n, sizeof *comms);
    cudaStream_t *st = calloc((size_t)n, sizeof *st);
    float **s = calloc((size_t)n, sizeof *s), **r = calloc((size_t)n, sizeof *r);
    float *ones = malloc(o->max);
    double *t = malloc(sizeof *t * (size_t)o->iters);
    for (size_t i = 0; i < o->max / 4; i++)
        ones[i] = 1.0f;
    NCCL_OK(ncclCommInitAll(comms, n, NULL));
    for (int d = 0; d < n; d++) {
        cudaSetDevice(d);
        cudaStreamCreate(&st[d]);
        if (dt_gpu_alloc((void **)&s[d], o->max) != DT_OK ||
            dt_gpu_alloc((void **)&r[d], o->max) != DT_OK ||
            dt_gpu_to_device(s[d], ones, o->max) != DT_OK) {
            fprintf(stderr, "gpu_allreduce: %s\n", dt_last_error());
            return 1;
        }
    }
    header(o);
    for (size_t b = o->min; b <= o->max; b = (size_t)((double)b * o->factor) / 4 * 4) {
        for (int i = -5; i < o->iters; i++) {
            double t0 = dt_now();
            NCCL_OK(ncclGroupStart());
            for (int d = 0; d < n; d++)
                NCCL_OK(ncclAllReduce(s[d], r[d], b / 4, ncclFloat32, ncclSum, comms[d], st[d]));
            NCCL_OK(ncclGroupEnd());
            for (int d = 0; d < n; d++)
                cudaStreamSynchronize(st[d]);
            if (i >= 0)
                t[i] = dt_now() - t0;
        }
        cudaSetDevice(0);
        row(o, b, t, count_wrong(r[0], b / 4, (float)n));
        if (o->factor <= 1.0)
            break;
    }
    for (int d = 0; d < n; d++)
        ncclCommDestroy(comms[d]);
    return 0;
}

int main(int argc, char **argv)
{
    bench_opts o = {8, 64u << 20, 2.0, 20, 1, 0};
    long ranks = 1, iters = 20;
    dt_result pr = DT_OK;
    for (int i = 1; pr == DT_OK && i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) {
            pr = dt_fail(DT_ERR_INVALID_ARG, "%s: needs a value", argv[i]);
        } else if (!strcmp(argv[i], "--impl") && (!strcmp(v, "raw") || !strcmp(v, "dt"))) {
            o.raw = !strcmp(v, "raw");
        } else if (!strcmp(argv[i], "--ranks")) {
            pr = dt_parse_long("--ranks", v, 1, 64, &ranks);
        } else if (!strcmp(argv[i], "--iters")) {
            pr = dt_parse_long("--iters", v, 1, 100000, &iters);
        } else if (!strcmp(argv[i], "-b")) {
            pr = dt_parse_bytes("-b", v, 4, (size_t)1 << 34, &o.min);
        } else if (!strcmp(argv[i], "-e")) {
            pr = dt_parse_bytes("-e", v, 4, (size_t)1 << 34, &o.max);
        } else if (!strcmp(argv[i], "-f")) {
            pr = dt_parse_double("-f", v, 1.0, 1024.0, &o.factor);
        } else {
            pr = dt_fail(DT_ERR_INVALID_ARG, "unknown option '%s %s'", argv[i], v);
        }
        i++;
    }
    if (pr == DT_OK && o.max < o.min)
        pr = dt_fail(DT_ERR_INVALID_ARG, "-e %zu is below -b %zu", o.max, o.min);
    if (pr != DT_OK) {
        fprintf(stderr, "gpu_allreduce: %s\nusage: gpu_allreduce --impl dt|raw [--ranks N] "
                "[-b MIN] [-e MAX] [-f FACTOR] [--iters K]\n", dt_last_error());
        return 2;
    }
    o.ranks = (int)ranks;
    o.iters = (int)iters;
    if (o.raw)
        return raw(&o);
    dt_launch_opts lo;
    dt_launch_opts_init(&lo);
    lo.nranks = o.ranks;
    lo.backend = DT_BACKEND_NCCL;
    lo.timeout_s = 120;
    dt_result r = dt_launch(&lo, dt_rank, &o);
    if (r != DT_OK)
        fprintf(stderr, "gpu_allreduce: %s\n", dt_last_error());
    return r == DT_OK ? 0 : 1;
}
