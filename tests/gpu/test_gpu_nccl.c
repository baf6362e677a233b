/* test_gpu_nccl.c - the nccl backend through the API, on device buffers:
 * every collective, point-to-point messages and dt_sendrecv, an async
 * allreduce, dt_comm_split, the stats, and a mismatch named before NCCL
 * sees the call. Exact: every value is a small integer in f32.
 *
 * Ranks: DT_NCCL_RANKS (default: one per visible GPU). More ranks than
 * GPUs need the NCCL_HOSTID route (DT_NCCL_HOSTID=1: each rank its own
 * "host", sockets on loopback), as bench/gpu-check.sh runs 2 and 4 ranks on
 * one GPU. Skipped where no GPU can be used. */
#include "gpu_test.h"

#include "dt/comm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 1031 /* not a multiple of the ranks: NCCL's tails run too */

static dt_launch_opts opts_for(int gpus)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    const char *v = getenv("DT_NCCL_RANKS");
    o.nranks = v ? atoi(v) : gpus;
    o.backend = DT_BACKEND_NCCL;
    o.debug = 1;
    o.timeout_s = 60;
    return o;
}

/* A device buffer of n floats holding host values h (or zeros). */
static float *dev(const float *h, size_t n)
{
    void *d = NULL;
    if (dt_gpu_alloc(&d, n * sizeof(float)) != DT_OK)
        return NULL;
    if (h)
        dt_gpu_to_device(d, h, n * sizeof(float));
    else {
        float *z = calloc(n, sizeof(float));
        dt_gpu_to_device(d, z, n * sizeof(float));
        free(z);
    }
    return d;
}

static dt_result check(const char *what, int rank, const float *dbuf, size_t n,
                       float (*want)(int rank, int size, size_t i), int size)
{
    float *h = malloc(n * sizeof(float));
    dt_result r = dt_gpu_to_host(h, dbuf, n * sizeof(float));
    for (size_t i = 0; r == DT_OK && i < n; i++)
        if (h[i] != want(rank, size, i))
            r = dt_fail(DT_ERR_MISMATCH, "%s: rank %d: [%zu] = %g, expected %g", what, rank, i,
                        h[i], want(rank, size, i));
    free(h);
    return r;
}

static float val(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 7)); }
static float w_sum(int rank, int size, size_t i) { (void)rank; return (float)(size * (size + 1) / 2 * (int)(i % 7)); }
static float w_bcast(int rank, int size, size_t i) { (void)rank; return val(size - 1, i); }
static float w_gather(int rank, int size, size_t i) { (void)rank; return val((int)(i / COUNT) % size, i % COUNT); }
static float w_scatter(int rank, int size, size_t i) { return w_sum(rank, size, (size_t)rank * COUNT + i); }
static float w_a2a(int rank, int size, size_t i) { (void)size; return (float)(1000 * (int)(i / COUNT) + rank); }
static float w_ring(int rank, int size, size_t i) { return val((rank + size - 1) % size, i); }

static dt_result every_collective(dt_comm *w, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(w), n = dt_comm_size(w);
    size_t all = (size_t)n * COUNT;
    float *h = malloc(all * sizeof(float));
    for (size_t i = 0; i < all; i++)
        h[i] = val(r, i);
    float *s = dev(h, all), *d = dev(NULL, all);
    dt_result x = s && d ? DT_OK : dt_fail(DT_ERR_NOMEM, "cudaMalloc");
    if (x == DT_OK)
        x = dt_barrier(w);
    if (x == DT_OK)
        x = dt_allreduce(s, d, COUNT, DT_F32, DT_SUM, w);
    if (x == DT_OK)
        x = check("allreduce", r, d, COUNT, w_sum, n);
    if (x == DT_OK)
        x = dt_broadcast(r == n - 1 ? s : NULL, d, COUNT, DT_F32, n - 1, w);
    if (x == DT_OK)
        x = check("broadcast", r, d, COUNT, w_bcast, n);
    if (x == DT_OK)
        x = dt_reduce(s, r == 0 ? d : NULL, COUNT, DT_F32, DT_SUM, 0, w);
    if (x == DT_OK && r == 0)
        x = check("reduce", r, d, COUNT, w_sum, n);
    if (x == DT_OK)
        x = dt_allgather(s, d, COUNT, DT_F32, w);
    if (x == DT_OK)
        x = check("allgather", r, d, all, w_gather, n);
    if (x == DT_OK)
        x = dt_reduce_scatter(s, d, COUNT, DT_F32, DT_SUM, w);
    if (x == DT_OK)
        x = check("reduce_scatter", r, d, COUNT, w_scatter, n);
    for (size_t i = 0; i < all; i++) /* block j goes to rank j */
        h[i] = (float)(1000 * r + (int)(i / COUNT));
    if (x == DT_OK)
        x = dt_gpu_to_device(s, h, all * sizeof(float));
    if (x == DT_OK)
        x = dt_alltoall(s, d, COUNT, DT_F32, w);
    if (x == DT_OK)
        x = check("alltoall", r, d, all, w_a2a, n);
    for (size_t i = 0; i < all; i++)
        h[i] = val(r, i);
    if (x == DT_OK)
        x = dt_gpu_to_device(s, h, all * sizeof(float));
    if (x == DT_OK) /* a ring shift: each sends right, receives from the left */
        x = dt_sendrecv(s, COUNT, (r + 1) % n, d, COUNT, (r + n - 1) % n, DT_F32, w);
    if (x == DT_OK)
        x = check("sendrecv", r, d, COUNT, w_ring, n);
    dt_request *req = NULL;
    if (x == DT_OK)
        x = dt_iallreduce(s, d, COUNT, DT_F32, DT_SUM, w, &req);
    if (x == DT_OK)
        x = dt_wait(req);
    if (x == DT_OK)
        x = check("iallreduce", r, d, COUNT, w_sum, n);
    dt_gpu_free(s), dt_gpu_free(d);
    free(h);
    return x;
}

TEST_T(gpu_nccl_every_collective, 3, 120, .own_backend = 1)
{
    dt_launch_opts o = opts_for(gpu_require());
    EXPECT_OK(dt_launch(&o, every_collective, NULL));
}

/* Host buffers, as the labs of chapters 03-08 pass them: staged through
 * device memory, the same results (in place too). */
static dt_result host_buffers(dt_comm *w, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(w), n = dt_comm_size(w);
    size_t all = (size_t)n * COUNT;
    float *h = malloc(all * sizeof(float)), *g = malloc(all * sizeof(float));
    for (size_t i = 0; i < COUNT; i++)
        h[i] = val(r, i);
    dt_result x = dt_allreduce(h, h, COUNT, DT_F32, DT_SUM, w);
    for (size_t i = 0; x == DT_OK && i < COUNT; i++)
        if (h[i] != w_sum(r, n, i))
            x = dt_fail(DT_ERR_MISMATCH, "host allreduce in place: rank %d: [%zu] = %g, "
                        "expected %g", r, i, h[i], w_sum(r, n, i));
    for (size_t i = 0; i < COUNT; i++)
        h[i] = val(r, i);
    if (x == DT_OK)
        x = dt_allgather(h, g, COUNT, DT_F32, w);
    for (size_t i = 0; x == DT_OK && i < all; i++)
        if (g[i] != w_gather(r, n, i))
            x = dt_fail(DT_ERR_MISMATCH, "host allgather: rank %d: [%zu] = %g, expected %g", r,
                        i, g[i], w_gather(r, n, i));
    if (x == DT_OK)
        x = dt_sendrecv(h, COUNT, (r + 1) % n, g, COUNT, (r + n - 1) % n, DT_F32, w);
    for (size_t i = 0; x == DT_OK && i < COUNT; i++)
        if (g[i] != w_ring(r, n, i))
            x = dt_fail(DT_ERR_MISMATCH, "host sendrecv: rank %d: [%zu] = %g, expected %g", r,
                        i, g[i], w_ring(r, n, i));
    free(h), free(g);
    return x;
}

TEST_T(gpu_nccl_host_buffers, 1, 120, .own_backend = 1)
{
    dt_launch_opts o = opts_for(gpu_require());
    EXPECT_OK(dt_launch(&o, host_buffers, NULL));
}

/* Split into even and odd ranks: each half's allreduce sums its own. */
static dt_result split_halves(dt_comm *w, void *arg)
{
    (void)arg;
    int r = dt_comm_rank(w);
    dt_comm *half = NULL;
    float one = 1.0f, *d = dev(&one, 1);
    dt_result x = dt_barrier(w);
    if (x == DT_OK)
        x = dt_comm_split(w, r % 2, r, &half);
    if (x == DT_OK)
        x = dt_allreduce(d, d, 1, DT_F32, DT_SUM, half);
    float got = 0;
    if (x == DT_OK)
        x = dt_gpu_to_host(&got, d, sizeof got);
    int want = dt_comm_size(half);
    if (x == DT_OK && got != (float)want)
        x = dt_fail(DT_ERR_MISMATCH, "rank %d: allreduce over its half = %g, expected %d", r,
                    got, want);
    dt_gpu_free(d);
    return x;
}

TEST_T(gpu_nccl_split, 1, 120, .own_backend = 1)
{
    dt_launch_opts o = opts_for(gpu_require());
    EXPECT_OK(dt_launch(&o, split_halves, NULL));
}

/* With debug on, rank 0 calls another count: the signature check over the
 * arena names the mismatch before NCCL is called (a hang otherwise). */
static dt_result mismatched(dt_comm *w, void *arg)
{
    (void)arg;
    float *d = dev(NULL, 8);
    dt_result x = dt_barrier(w);
    if (x == DT_OK)
        x = dt_allreduce(d, d, dt_comm_rank(w) == 0 ? 4 : 8, DT_F32, DT_SUM, w);
    dt_gpu_free(d);
    return x;
}

TEST_T(gpu_nccl_mismatch_named, 1, 120, .own_backend = 1)
{
    dt_launch_opts o = opts_for(gpu_require());
    if (o.nranks < 2)
        dt_test_skip("one rank: a mismatch needs two (DT_NCCL_RANKS=2 DT_NCCL_HOSTID=1)");
    dt_result r = dt_launch(&o, mismatched, NULL);
    EXPECT(r == DT_ERR_MISMATCH, "a mismatched allreduce gave %s (%s), expected "
           "DT_ERR_MISMATCH", dt_strerror(r), dt_last_error());
}
