/* test_core.c - libdt core: results, RNG, dtypes, memory accounting. */
#include "grader.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(core_strerror_and_last_error, 1)
{
    EXPECT(strcmp(dt_strerror(DT_ERR_TIMEOUT), "DT_ERR_TIMEOUT") == 0, "name of TIMEOUT");
    EXPECT(strcmp(dt_strerror((dt_result)999), "DT_ERR_UNKNOWN") == 0, "unknown result");
    EXPECT(dt_fail(DT_ERR_INVALID_ARG, "count %d", 7) == DT_ERR_INVALID_ARG, "dt_fail returns r");
    EXPECT(strcmp(dt_last_error(), "count 7") == 0, "last error = '%s'", dt_last_error());
    dt_clear_error();
    EXPECT(dt_last_error()[0] == '\0', "cleared");
}

static dt_result inner(void) { return dt_fail(DT_ERR_IO, "cannot open x"); }
static dt_result outer(void)
{
    DT_CHECK(inner());
    return DT_OK;
}

TEST(core_check_macro_locates_failure, 1)
{
    dt_clear_error();
    EXPECT(outer() == DT_ERR_IO, "DT_CHECK passes the result up");
    EXPECT(strstr(dt_last_error(), "test_core.c:") && strstr(dt_last_error(), "cannot open x"),
           "message '%s' has file:line and the cause", dt_last_error());
}

TEST(core_rng_is_counter_based, 1)
{
    dt_rng a, b;
    dt_rng_init(&a, 42, 3);
    dt_rng_init(&b, 42, 3);
    for (int i = 0; i < 100; i++)
        EXPECT(dt_rng_u64(&a) == dt_rng_u64(&b), "same seed and stream, same numbers");
    EXPECT(dt_hash64(42, 3, 5) == dt_hash64(42, 3, 5), "pure function");
    EXPECT(dt_hash64(42, 3, 5) != dt_hash64(42, 4, 5), "streams differ");
    double sum = 0, sq = 0;
    dt_rng_init(&a, 1, 0);
    for (int i = 0; i < 100000; i++) {
        float u = dt_rng_uniform(&a);
        EXPECT(u >= 0 && u < 1, "uniform in [0,1): %g", u);
        float z = dt_rng_normal(&a);
        sum += z;
        sq += (double)z * z;
    }
    EXPECT(fabs(sum / 100000) < 0.02, "normal mean %g", sum / 100000);
    EXPECT(fabs(sq / 100000 - 1) < 0.03, "normal variance %g", sq / 100000);
}

/* dt_rng_fill_normal gives the bits of dt_rng_normal called in order:
 * drawn (a stream from its start, first asked), copied (asked again, by
 * several threads at once), extended (asked longer) and from the middle of
 * a stream (not kept), and it leaves the counter where those calls would. */
enum { FILL_N = 5000, FILL_THREADS = 4 };

static int same_as_calls(uint64_t seed, uint64_t stream, uint64_t skip, size_t n)
{
    dt_rng a, b;
    dt_rng_init(&a, seed, stream);
    dt_rng_init(&b, seed, stream);
    for (uint64_t i = 0; i < skip; i++)
        dt_rng_normal(&a), dt_rng_normal(&b);
    float *got = malloc(n * sizeof *got);
    if (!got)
        return 0;
    dt_rng_fill_normal(&a, got, n);
    int same = 1;
    for (size_t i = 0; i < n; i++) {
        float want = dt_rng_normal(&b);
        same &= memcmp(&got[i], &want, sizeof want) == 0;
    }
    free(got);
    return same && a.counter == b.counter;
}

static void *fill_thread(void *arg)
{
    *(int *)arg = same_as_calls(77, 1, 0, FILL_N);
    return NULL;
}

TEST(core_rng_fill_normal_same_bits, 1)
{
    EXPECT(same_as_calls(77, 1, 0, FILL_N), "a stream drawn from its start");
    EXPECT(same_as_calls(77, 1, 0, FILL_N), "the same stream again (kept)");
    EXPECT(same_as_calls(77, 1, 0, FILL_N / 2), "a shorter part of it");
    EXPECT(same_as_calls(77, 1, 0, 3 * FILL_N), "a longer part (the kept one extended)");
    EXPECT(same_as_calls(77, 2, 0, FILL_N), "another stream");
    EXPECT(same_as_calls(78, 1, 0, FILL_N), "another seed");
    EXPECT(same_as_calls(77, 1, 123, FILL_N), "from the middle of a stream");
    EXPECT(same_as_calls(5, 9, 0, 5u << 20), "a long stream (5 M values)");
    pthread_t t[FILL_THREADS];
    int ok[FILL_THREADS] = {0};
    for (int i = 0; i < FILL_THREADS; i++)
        EXPECT(pthread_create(&t[i], NULL, fill_thread, &ok[i]) == 0, "thread %d", i);
    for (int i = 0; i < FILL_THREADS; i++) {
        pthread_join(t[i], NULL);
        EXPECT(ok[i], "thread %d of %d filling the same stream at once", i, FILL_THREADS);
    }
}

TEST(core_half_conversions, 1)
{
    EXPECT(dt_f32_to_f16(1.0f) == 0x3c00, "1.0 -> 0x%04x", dt_f32_to_f16(1.0f));
    EXPECT(dt_f32_to_f16(-2.0f) == 0xc000, "-2.0");
    EXPECT(dt_f32_to_f16(65504.0f) == 0x7bff, "largest half");
    EXPECT(dt_f32_to_f16(65520.0f) == 0x7c00, "65520 rounds to inf");
    EXPECT(dt_f32_to_f16(INFINITY) == 0x7c00, "inf");
    EXPECT(isnan(dt_f16_to_f32(dt_f32_to_f16(NAN))), "nan stays nan");
    EXPECT(dt_f32_to_f16(5.960464477539063e-08f) == 0x0001, "smallest subnormal");
    EXPECT(dt_f16_to_f32(0x0001) == 5.960464477539063e-08f, "subnormal back");
    /* ties to even: 1 + 2^-11 lies between 1 and 1 + 2^-10: rounds to 1 */
    EXPECT(dt_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00, "tie to even");
    EXPECT(dt_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01, "above the tie rounds up");
    for (uint32_t h = 0; h < 0x7c00; h++)
        EXPECT(dt_f32_to_f16(dt_f16_to_f32((uint16_t)h)) == h, "round trip 0x%04x", h);
    EXPECT(dt_f32_to_bf16(1.0f) == 0x3f80, "bf16 1.0");
    EXPECT(dt_bf16_to_f32(dt_f32_to_bf16(3.140625f)) == 3.140625f, "bf16 exact value");
    EXPECT(dt_f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80, "bf16 tie to even");
    EXPECT(isnan(dt_bf16_to_f32(dt_f32_to_bf16(NAN))), "bf16 nan");
    EXPECT(isinf(dt_bf16_to_f32(dt_f32_to_bf16(INFINITY))), "bf16 inf");
}

TEST(core_mem_accounting, 1)
{
    dt_mem_ctx *ctx = dt_mem_ctx_create();
    dt_mem_bind(ctx);
    float *p = dt_mem_alloc(DT_MEM_PARAM, 1000 * sizeof(float));
    float *g = dt_mem_alloc(DT_MEM_GRAD, 500);
    EXPECT(p && g, "allocations");
    EXPECT(((uintptr_t)p & 63) == 0, "64-byte aligned");
    EXPECT(p[999] == 0, "zeroed");
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_PARAM] == 4000 && s.current[DT_MEM_GRAD] == 500, "current");
    EXPECT(s.current_total == 4500, "total %zu", s.current_total);
    dt_mem_free(p);
    dt_mem_stats_get(&s);
    EXPECT(s.current[DT_MEM_PARAM] == 0 && s.peak[DT_MEM_PARAM] == 4000, "peak kept");
    EXPECT(s.peak_total == 4500, "peak of the sum %zu", s.peak_total);
    dt_mem_reset_peak();
    dt_mem_stats_get(&s);
    EXPECT(s.peak_total == 500, "reset peak");
    EXPECT(dt_mem_alloc(DT_MEM_OTHER, 0) == NULL, "0 bytes refused");
    EXPECT(dt_mem_alloc((dt_mem_tag)42, 8) == NULL, "unknown tag refused");
    dt_mem_bind(NULL);
    dt_mem_ctx_release(ctx);
    dt_mem_free(g); /* freed after its context was released: still credited safely */
}

static void *rank_allocs(void *arg)
{
    dt_mem_ctx *ctx = arg;
    dt_mem_bind(ctx);
    void *blocks[100];
    for (int i = 0; i < 100; i++)
        blocks[i] = dt_mem_alloc(DT_MEM_ACT, 64);
    for (int i = 0; i < 100; i++)
        dt_mem_free(blocks[i]);
    dt_mem_stats s;
    dt_mem_stats_get(&s);
    return (void *)(uintptr_t)(s.current_total == 0 && s.peak[DT_MEM_ACT] == 6400);
}

TEST(core_mem_per_rank_threads, 1)
{
    pthread_t t[4];
    dt_mem_ctx *ctx[4];
    for (int i = 0; i < 4; i++) {
        ctx[i] = dt_mem_ctx_create();
        pthread_create(&t[i], NULL, rank_allocs, ctx[i]);
    }
    for (int i = 0; i < 4; i++) {
        void *ok;
        pthread_join(t[i], &ok);
        EXPECT(ok, "rank %d saw its own figures", i);
        dt_mem_ctx_release(ctx[i]);
    }
}

/* ---------------------------------------------------------------- parsing and env */

TEST(core_parse_numbers_names_what_was_wrong, 1)
{
    long n = 7;
    EXPECT_OK(dt_parse_long("-n", "12", 1, 1024, &n));
    EXPECT(n == 12, "-n 12 gave %ld", n);
    static const char *const bad_longs[] = {"abc", "", "12x", "0", "1025", "-3", "1.5",
                                            "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad_longs / sizeof bad_longs[0]; i++) {
        n = 7;
        EXPECT_ERR(dt_parse_long("-n", bad_longs[i], 1, 1024, &n), DT_ERR_INVALID_ARG);
        char want[64];
        snprintf(want, sizeof want, "-n '%s'", bad_longs[i]);
        EXPECT(strstr(dt_last_error(), want) && strstr(dt_last_error(), "from 1 to 1024"),
               "message '%s' names -n, '%s' and the range", dt_last_error(), bad_longs[i]);
        EXPECT(n == 7, "a bad value changed the output to %ld", n);
    }
    double d = 0;
    EXPECT_OK(dt_parse_double("--comp", "2.5e-3", 0, 10, &d));
    EXPECT(d == 2.5e-3, "--comp gave %g", d);
    static const char *const bad_doubles[] = {"nan", "inf", "-1", "11", "1s", ""};
    for (size_t i = 0; i < sizeof bad_doubles / sizeof bad_doubles[0]; i++) {
        EXPECT_ERR(dt_parse_double("--comp", bad_doubles[i], 0, 10, &d), DT_ERR_INVALID_ARG);
        EXPECT(strstr(dt_last_error(), "--comp '"), "message '%s'", dt_last_error());
    }
    EXPECT(d == 2.5e-3, "bad values changed the output to %g", d);
}

TEST(core_parse_bytes, 1)
{
    /* one convention: K M G T = 2^10 .. 2^40 (Ki Mi Gi Ti the same), 1e6 decimal */
    static const struct { const char *text; size_t bytes; } good[] = {
        {"0", 0}, {"8", 8}, {"64K", 65536}, {"64k", 65536}, {"64Ki", 65536}, {"1.5K", 1536},
        {"1M", 1 << 20}, {"256M", 268435456}, {"256Mi", 268435456}, {"2G", (size_t)2 << 30},
        {"2Gi", (size_t)2 << 30}, {"1T", (size_t)1 << 40}, {"1e6", 1000000},
        {"2.5e3", 2500}, {"1e+3", 1000}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        size_t b = 1;
        EXPECT_OK(dt_parse_bytes("-b", good[i].text, 0, (size_t)1 << 40, &b));
        EXPECT(b == good[i].bytes, "-b %s gave %zu, expected %zu", good[i].text, b,
               good[i].bytes);
    }
    static const char *const bad[] = {"1T", "-8", "abc", "", "0.3", "1KB", "2G", "K", "0x10",
                                      "inf", "nan", "1Mib", "+8", "1 M", "1e-1", "1Q"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t b = 5;
        EXPECT_ERR(dt_parse_bytes("-b", bad[i], 0, (size_t)1 << 30, &b), DT_ERR_INVALID_ARG);
        char want[32];
        snprintf(want, sizeof want, "-b '%s'", bad[i]);
        EXPECT(strstr(dt_last_error(), want) && strstr(dt_last_error(), "K, M, G or T"),
               "message '%s' names '%s' and the suffixes", dt_last_error(), bad[i]);
        EXPECT(b == 5, "a bad size changed the output to %zu", b);
    }
}

TEST(core_median_and_cpu_time, 1)
{
    double odd[] = {5, 1, 4, 2, 3}, even[] = {8, 2, 6, 4}, one[] = {7};
    EXPECT(dt_median(odd, 5) == 3, "median of 1..5: %g", dt_median(odd, 5));
    EXPECT(odd[0] == 1 && odd[4] == 5, "sorted in place: %g .. %g", odd[0], odd[4]);
    EXPECT(dt_median(even, 4) == 5, "median of 2 4 6 8: the mean of 4 and 6, got %g",
           dt_median(even, 4));
    EXPECT(dt_median(one, 1) == 7, "median of one value");
    EXPECT(isnan(dt_median(one, 0)), "median of nothing is NaN");
    double v[] = {3, -1, 2, 2};
    dt_sort_doubles(v, 4);
    EXPECT(v[0] == -1 && v[1] == 2 && v[2] == 2 && v[3] == 3, "sorted: %g %g %g %g", v[0], v[1],
           v[2], v[3]);
    /* the thread's CPU clock moves with this thread's work, never backwards */
    double c0 = dt_thread_cpu(), c1;
    volatile double x = 0;
    while ((c1 = dt_thread_cpu()) == c0)
        for (int i = 0; i < 100000; i++)
            x += 1e-9 * i;
    EXPECT(c0 >= 0 && c1 > c0, "CPU time %g then %g", c0, c1);
}

TEST(core_env_variables_are_checked, 1)
{
    long n = 0;
    double d = 0;
    unsetenv("DT_TEST_KNOB");
    EXPECT_OK(dt_env_long("DT_TEST_KNOB", 42, 1, 100, &n));
    EXPECT(n == 42, "unset: the default, got %ld", n);
    setenv("DT_TEST_KNOB", "", 1);
    EXPECT_OK(dt_env_double("DT_TEST_KNOB", 0.5, 0, 1, &d));
    EXPECT(d == 0.5, "empty: the default, got %g", d);
    setenv("DT_TEST_KNOB", "17", 1);
    EXPECT_OK(dt_env_long("DT_TEST_KNOB", 42, 1, 100, &n));
    EXPECT(n == 17, "17 read as %ld", n);
    static const char *const bad[] = {"abc", "-5", "101", "17 ", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("DT_TEST_KNOB", bad[i], 1);
        n = 3;
        EXPECT_ERR(dt_env_long("DT_TEST_KNOB", 42, 1, 100, &n), DT_ERR_INVALID_ARG);
        char want[64];
        snprintf(want, sizeof want, "DT_TEST_KNOB='%s'", bad[i]);
        EXPECT(strstr(dt_last_error(), want), "message '%s' names the variable and '%s'",
               dt_last_error(), bad[i]);
        EXPECT(n == 3, "DT_TEST_KNOB=%s: no fallback may be written, got %ld", bad[i], n);
    }
    setenv("DT_TEST_KNOB", "abc", 1);
    EXPECT_ERR(dt_env_double("DT_TEST_KNOB", 1, 0, 10, &d), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "DT_TEST_KNOB='abc'"), "message '%s'", dt_last_error());
    unsetenv("DT_TEST_KNOB");
}
