/* rng.c - a counter-based random number generator.
 *
 * Value i of the stream (seed, stream) is a hash of the three numbers, so it
 * does not depend on the order in which ranks draw: the same seed and rank
 * give the same numbers on every backend and every run. The mixer is the
 * splitmix64 finaliser applied to a combination of the inputs. */
#include "dt/core.h"

#include <math.h>

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
