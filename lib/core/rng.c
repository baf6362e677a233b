/* rng.c - a counter-based random number generator.
 *
 * Value i of the stream (seed, stream) is a hash of the three numbers, so it
 * does not depend on the order in which ranks draw: the same seed and rank
 * give the same numbers on every backend and every run. The mixer is the
 * splitmix64 finaliser applied to a combination of the inputs. */
#include "dt/core.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t dt_hash64(uint64_t seed, uint64_t stream, uint64_t i)
{
    uint64_t h = mix64(seed + 0x9e3779b97f4a7c15ULL);
    h = mix64(h ^ (stream * 0xd6e8feb86659fd93ULL + 0x632be59bd9b4e019ULL));
    return mix64(h ^ (i * 0x9e3779b97f4a7c15ULL));
}

void dt_rng_init(dt_rng *rng, uint64_t seed, uint64_t stream)
{
    rng->seed = seed;
    rng->stream = stream;
    rng->counter = 0;
}

uint64_t dt_rng_u64(dt_rng *rng)
{
    return dt_hash64(rng->seed, rng->stream, rng->counter++);
}

float dt_rng_uniform(dt_rng *rng)
{
    /* 24 random bits: every float in [0, 1) on a grid of 2^-24. */
    return (float)(dt_rng_u64(rng) >> 40) * (1.0f / 16777216.0f);
}

float dt_rng_normal(dt_rng *rng)
{
    /* Box-Muller; u1 is kept away from 0 so that log() stays finite. */
    double u1 = ((double)(dt_rng_u64(rng) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(dt_rng_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t dt_rng_below(dt_rng *rng, uint32_t n)
{
    if (n == 0)
        return 0;
    /* Multiply-shift: unbiased enough for shuffling (bias < n / 2^64). */
    return (uint32_t)(((unsigned __int128)dt_rng_u64(rng) * n) >> 64);
}

/* ---------------------------------------------------------------- filled streams
 *
 * Normals cost tens of nanoseconds each (a log and a cos), and every rank
 * of a job makes the same model: eight ranks of a 1.1 M-parameter model
 * drew 9 M normals where 1.1 M are distinct. The streams filled from their
 * start are kept here, the most recently used first, up to CACHE_BYTES
 * (a stream of at most half of it: section 5 of chapter 03 has eight
 * ranks make a 25 M-parameter model, 100 MB, three times). A
 * stream is drawn under the lock, so that the ranks that ask for it at the
 * same time wait for one draw rather than all make it (a bounded
 * computation: no rank waits on another's progress). */
#define CACHE_BYTES ((size_t)256 << 20)
#define CACHE_SLOTS 64

typedef struct {
    uint64_t seed, stream;
    size_t n;  /* normals kept: values 0..n-1 of the stream */
    float *z;
} kept_stream;

static kept_stream kept[CACHE_SLOTS]; /* kept[0] the most recently used */
static int nkept;
static size_t kept_bytes;
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;

/* A fork while another thread draws would leave the lock held in the child
 * (a proc rank is a fork of the test): fork waits for the draw. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&kept_lock);
}

static void fork_done(void)
{
    pthread_mutex_unlock(&kept_lock);
}

__attribute__((constructor)) static void rng_init_fork(void)
{
    pthread_atfork(fork_prepare, fork_done, fork_done);
}

static void draw(dt_rng *rng, float *out, size_t n)
{
    for (size_t j = 0; j < n; j++)
        out[j] = dt_rng_normal(rng);
}

static void drop_last(void)
{
    nkept--;
    kept_bytes -= kept[nkept].n * sizeof(float);
    free(kept[nkept].z);
}

/* The kept stream (seed, stream) with at least n values, moved to the
 * front; NULL when it cannot be kept. Called with kept_lock held. */
static kept_stream *keep(uint64_t seed, uint64_t stream, size_t n)
{
    if (n > CACHE_BYTES / 2 / sizeof(float))
        return NULL;
    int at = 0;
    while (at < nkept && !(kept[at].seed == seed && kept[at].stream == stream))
        at++;
    kept_stream k = {seed, stream, 0, NULL};
    if (at < nkept) {
        k = kept[at];
        memmove(&kept[1], &kept[0], (size_t)at * sizeof *kept);
    } else {
        if (nkept == CACHE_SLOTS)
            drop_last();
        memmove(&kept[1], &kept[0], (size_t)nkept * sizeof *kept);
        nkept++;
    }
    kept[0] = k;
    if (k.n >= n)
        return &kept[0];
    /* longer than kept: draw the values k.n..n-1 (two counters a normal) */
    while (nkept > 1 && kept_bytes + (n - k.n) * sizeof(float) > CACHE_BYTES)
        drop_last();
    float *z = realloc(k.z, n * sizeof(float));
    if (!z) {
        kept_bytes -= k.n * sizeof(float);
        free(k.z);
        memmove(&kept[0], &kept[1], (size_t)(nkept - 1) * sizeof *kept);
        nkept--;
        return NULL;
    }
    dt_rng r = {seed, stream, 2 * (uint64_t)k.n};
    draw(&r, z + k.n, n - k.n);
    kept_bytes += (n - k.n) * sizeof(float);
    kept[0].z = z;
    kept[0].n = n;
    return &kept[0];
}

void dt_rng_fill_normal(dt_rng *rng, float *out, size_t n)
{
    if (rng->counter == 0 && n > 0) {
        pthread_mutex_lock(&kept_lock);
        kept_stream *k = keep(rng->seed, rng->stream, n);
        if (k)
            memcpy(out, k->z, n * sizeof(float));
        pthread_mutex_unlock(&kept_lock);
        if (k) {
            rng->counter = 2 * (uint64_t)n;
            return;
        }
    }
    draw(rng, out, n);
}
