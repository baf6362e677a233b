/* membw.c - memory bandwidth, STREAM's way: copy (b -> a) and triad
 * (a = b + s c) over arrays far larger than the caches, T threads each on
 * its own arrays, the best of several repetitions (other jobs only ever
 * slow a repetition down). Bytes are counted as STREAM counts them: copy
 * reads and writes each element once (2 x 4 bytes per float), triad reads
 * two and writes one (3 x 4).
 *
 *   membw [--threads T] [--mib M] [--reps R] [--csv]
 *
 * Each thread owns arrays of M MiB (default 64) that it allocates and
 * touches itself. copy writes with non-temporal (streaming) stores, which
 * skip the read for ownership of each line, as the allreduce's shortcut
 * writes its outputs above 16 MiB: GB/s = (read + written bytes) / time is
 * then the traffic the memory system carried. (glibc's memcpy measured
 * 40-42 GB/s where this loop gave 50-54 on the project's Zen 5 machine.)
 * triad is a plain loop; its stores are counted once, as STREAM does,
 * though the caches also read each line before writing it.
 *
 * bench/table.sh takes the copy figure as the memory's bandwidth, to set
 * the floor of a large allreduce (docs in BENCHMARKS.md). */
#include "dt/core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

enum { MAX_THREADS = 64, MAX_REPS = 100 };

typedef struct {
    float *a, *b, *c;
    size_t n;
    int kind; /* 0 copy, 1 triad */
    double t0, t1;
    atomic_int *ready, *go;
} worker;

/* a[0..n) = b[0..n), written around the caches where the CPU can. */
static void copy_streaming(float *restrict a, const float *restrict b, size_t n)
{
    size_t i = 0;
#if defined(__SSE2__)
    for (; i < n && ((uintptr_t)(a + i) & 15); i++) /* up to a 16-byte boundary */
        a[i] = b[i];
    for (; i + 4 <= n; i += 4)
        _mm_stream_ps(a + i, _mm_loadu_ps(b + i));
    _mm_sfence(); /* streaming stores are weakly ordered: finish them */
#endif
    for (; i < n; i++)
        a[i] = b[i];
}

static void *run(void *arg)
{
    worker *w = arg;
    atomic_fetch_add(w->ready, 1);
    double deadline = dt_now() + 10;
    while (!atomic_load(w->go) && dt_now() < deadline) {
    }
    w->t0 = dt_now();
    if (w->kind == 0)
        copy_streaming(w->a, w->b, w->n);
    else {
        const float s = 3.0f;
        for (size_t i = 0; i < w->n; i++)
            w->a[i] = w->b[i] + s * w->c[i];
    }
    w->t1 = dt_now();
    return NULL;
}

/* One repetition of `kind` on every thread: seconds from the first start
 * to the last end; < 0 if a thread could not be started. */
static double once(worker *w, int threads, int kind)
{
    pthread_t tid[MAX_THREADS];
    atomic_int ready = 0, go = 0;
    int started = 0;
    for (int t = 0; t < threads; t++) {
        w[t].kind = kind, w[t].ready = &ready, w[t].go = &go;
        if (pthread_create(&tid[t], NULL, run, &w[t]) != 0)
            break;
        started++;
    }
    while (atomic_load(&ready) < started) {
    }
    atomic_store(&go, 1);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    if (started < threads)
        return -1;
    double first = w[0].t0, last = w[0].t1;
    for (int t = 1; t < threads; t++) {
        first = w[t].t0 < first ? w[t].t0 : first;
        last = w[t].t1 > last ? w[t].t1 : last;
    }
    return last - first;
}

static long parse_long(const char *name, const char *text, long lo, long hi)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < lo || v > hi) {
        fprintf(stderr, "membw: %s '%s': expected %ld..%ld\n", name, text, lo, hi);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 10, csv = 0;
    long mib = 64;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--csv"))
            csv = 1;
        else if (i + 1 < argc && !strcmp(argv[i], "--threads"))
            threads = (int)parse_long(argv[i], argv[i + 1], 1, MAX_THREADS), i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--mib"))
            mib = parse_long(argv[i], argv[i + 1], 1, 4096), i++;
        else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
            reps = (int)parse_long(argv[i], argv[i + 1], 1, MAX_REPS), i++;
        else {
            fprintf(stderr, "usage: membw [--threads T] [--mib M] [--reps R] [--csv]\n");
            return 2;
        }
    }
    size_t n = (size_t)mib << 20 >> 2; /* floats per array */
    worker w[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        w[t].n = n;
        w[t].a = malloc(n * sizeof(float)), w[t].b = malloc(n * sizeof(float));
        w[t].c = malloc(n * sizeof(float));
        if (!w[t].a || !w[t].b || !w[t].c) {
            fprintf(stderr, "membw: no memory for %d x 3 arrays of %ld MiB\n", threads, mib);
            return 1;
        }
    }
    /* first touch (and the page faults) before any timing */
    for (int t = 0; t < threads; t++)
        for (size_t i = 0; i < n; i++)
            w[t].a[i] = 0, w[t].b[i] = (float)(i % 7), w[t].c[i] = 1;
    double best[2] = {1e30, 1e30};
    for (int r = 0; r < reps; r++)
        for (int kind = 0; kind < 2; kind++) {
            double s = once(w, threads, kind);
            if (s < 0) {
                fprintf(stderr, "membw: could not start %d threads\n", threads);
                return 1;
            }
            best[kind] = s < best[kind] ? s : best[kind];
        }
    double bytes = (double)threads * (double)n * sizeof(float);
    double copy = 2 * bytes / best[0] / 1e9, triad = 3 * bytes / best[1] / 1e9;
    if (csv)
        printf("threads,mib,copy_gbs,triad_gbs\n%d,%ld,%.2f,%.2f\n", threads, mib, copy, triad);
    else
        printf("%d threads, %ld MiB arrays each: copy %.1f GB/s, triad %.1f GB/s (best of %d)\n",
               threads, mib, copy, triad, reps);
    for (int t = 0; t < threads; t++)
        free(w[t].a), free(w[t].b), free(w[t].c);
    return 0;
}
