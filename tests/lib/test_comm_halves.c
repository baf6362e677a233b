/* test_comm_halves.c - dt_allreduce in two halves (dt_allreduce_scatter,
 * dt_allreduce_gather), as ZeRO uses them (chapter 08): after the first,
 * each rank's block of the cut (dt_block) holds dt_allreduce's bits; after
 * the second, every rank holds them all. On random data in f32 and bf16
 * (rounded at every step), where any other order of the additions shows;
 * with every algorithm (auto: the tiny allreduce, recursive doubling, the
 * ring and the one-pass shortcut, by size), N in {1, 2, 3, 5, 8}, counts
 * from 0 to 70001 (280 KB in f32), sum, average and max; with the ring and
 * direct algorithms the two halves send what the allreduce sends. */
#include "test_comm_util.h"

#include <stdio.h>

static const size_t halves_counts[] = {0, 1, 2, 7, 9, 1037, 70001}; /* 70001 last */

/* Random normal values in dtype t (f32 or bf16). */
static void fill_random(void *buf, dt_dtype t, size_t count, uint64_t seed, int rank)
{
    dt_rng rng;
    dt_rng_init(&rng, seed, (uint64_t)rank);
    for (size_t i = 0; i < count; i++) {
        float v = dt_rng_normal(&rng);
        if (t == DT_F32)
            ((float *)buf)[i] = v;
        else
            ((uint16_t *)buf)[i] = dt_f32_to_bf16(v);
    }
}

static uint64_t sent(dt_comm *c)
{
    dt_stats s;
    dt_comm_stats(c, &s);
    return s.bytes_sent;
}

/* One case: the allreduce's bits into want, the halves' into got. */
static void one_case(dt_comm *c, size_t count, dt_dtype t, dt_redop op)
{
    int n = dt_comm_size(c), r = dt_comm_rank(c);
    size_t es = dt_dtype_size(t), off, len;
    dt_block(count, n, r, &off, &len);
    char *want = tc_alloc(count, t), *got = tc_alloc(count, t);
    fill_random(want, t, count, 17 + count, r);
    memcpy(got, want, count * es);
    uint64_t b0 = sent(c);
    EXPECT_OK(dt_allreduce(want, want, count, t, op, c));
    uint64_t b1 = sent(c);
    EXPECT_OK(dt_allreduce_scatter(got, count, t, op, c));
    EXPECT(!memcmp(got + off * es, want + off * es, len * es), "count %zu, %s, %s, rank %d: "
           "block [%zu, +%zu) after dt_allreduce_scatter differs from dt_allreduce's", count,
           dt_dtype_name(t), dt_redop_name(op), r, off, len);
    EXPECT_OK(dt_allreduce_gather(got, count, t, c));
    uint64_t b2 = sent(c);
    EXPECT(!memcmp(got, want, count * es), "count %zu, %s, %s, rank %d: the two halves differ "
           "from dt_allreduce", count, dt_dtype_name(t), dt_redop_name(op), r);
    dt_algo algo = dt_comm_get_algo(c);
    if (algo == DT_ALGO_RING || algo == DT_ALGO_DIRECT)
        EXPECT(b2 - b1 == b1 - b0, "count %zu, %s: the halves sent %llu bytes, the allreduce "
               "%llu", count, dt_algo_name(algo), (unsigned long long)(b2 - b1),
               (unsigned long long)(b1 - b0));
    /* guards: the 64 bytes after each buffer (tc_alloc's 0xab) */
    for (size_t i = 0; i < 64; i++)
        EXPECT((unsigned char)got[count * es + i] == 0xab, "count %zu: written past the end",
               count);
    free(want);
    free(got);
}

static dt_result halves_rank(dt_comm *c, void *arg)
{
    (void)arg;
    const dt_dtype types[] = {DT_F32, DT_BF16};
    const dt_redop ops[] = {DT_SUM, DT_AVG, DT_MAX};
    /* the largest count is for auto's shortcut: the algorithms' code is
     * the same at 1037 */
    int auto_algo = dt_comm_get_algo(c) == DT_ALGO_AUTO;
    for (int ci = 0; ci < TC_LEN(halves_counts) - !auto_algo; ci++)
        for (int ti = 0; ti < TC_LEN(types); ti++)
            for (int oi = 0; oi < TC_LEN(ops); oi++)
                one_case(c, halves_counts[ci], types[ti], ops[oi]);
    return DT_OK;
}

static void halves_on(dt_backend backend)
{
    const int ns[] = {1, 2, 3, 5, 8};
    for (int ni = 0; ni < TC_LEN(ns); ni++)
        for (int ai = 0; ai < TC_LEN(tc_algos); ai++) {
            dt_launch_opts o = tc_opts(ns[ni], tc_algos[ai]);
            o.backend = backend;
            o.debug = ai % 2;
            dt_result r = dt_launch(&o, halves_rank, NULL);
            EXPECT(r == DT_OK, "%d ranks (%s), algo %s: %s: %s", ns[ni], dt_backend_name(backend),
                   dt_algo_name(tc_algos[ai]), dt_strerror(r), dt_last_error());
        }
}

TEST_T(comm_allreduce_halves_give_the_allreduce_bits, 3, 120) { halves_on(tc_backend()); }

TEST_T(comm_proc_allreduce_halves_give_the_allreduce_bits, 2, 120, .own_backend = 1)
{
    halves_on(DT_BACKEND_PROC);
}

/* The cut: lengths q or q+1, the longer first, in order and covering the
 * vector; an empty block for a rank out of range. */
TEST(comm_block_cuts_like_chapter_02, 1)
{
    size_t off, len;
    dt_block(10, 4, 0, &off, &len);
    EXPECT(off == 0 && len == 3, "10 on 4, block 0: [%zu, +%zu)", off, len);
    dt_block(10, 4, 2, &off, &len);
    EXPECT(off == 6 && len == 2, "10 on 4, block 2: [%zu, +%zu), chapter 02: 6, 2", off, len);
    dt_block(3, 5, 4, &off, &len);
    EXPECT(off == 3 && len == 0, "3 on 5, block 4: [%zu, +%zu)", off, len);
    dt_block(10, 4, 4, &off, &len);
    EXPECT(off == 0 && len == 0, "a rank out of range: [%zu, +%zu)", off, len);
    for (int n = 1; n <= 9; n++) {
        size_t end = 0;
        for (int r = 0; r < n; r++) {
            dt_block(1037, n, r, &off, &len);
            EXPECT(off == end && (len == 1037 / (size_t)n || len == 1037 / (size_t)n + 1),
                   "1037 on %d, block %d: [%zu, +%zu)", n, r, off, len);
            end = off + len;
        }
        EXPECT(end == 1037, "1037 on %d: the blocks end at %zu", n, end);
    }
}
