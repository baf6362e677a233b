/* test_ckpt.c - dt/ckpt.h: the checksum against its definition, a file's
 * bytes against the format the header documents, every type round trip,
 * each kind of damage refused with the file and the record named, loads
 * that are all or nothing, commits that are atomic (an abort and a crash
 * leave the old file), and a manifest that lists each shard. */
#include "grader.h"
#include "ckpt_util.h"
#include "dt/ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---------------------------------------------------------------- the checksum */

TEST(ckpt_crc32c_is_the_castagnoli_crc, 1)
{
    dt_test_see("lib/include/dt/ckpt.h, the format");
    unsigned char z[32] = {0}, ff[32], inc[32];
    memset(ff, 0xFF, sizeof ff);
    for (int i = 0; i < 32; i++)
        inc[i] = (unsigned char)i;
    /* RFC 3720 (iSCSI), appendix B.4, and the check value of "123456789" */
    EXPECT(dt_crc32c(0, "123456789", 9) == 0xE3069283u, "\"123456789\": %08x, expected e3069283",
           dt_crc32c(0, "123456789", 9));
    EXPECT(dt_crc32c(0, z, 32) == 0x8A9136AAu, "32 zeros: %08x", dt_crc32c(0, z, 32));
    EXPECT(dt_crc32c(0, ff, 32) == 0x62A8AB43u, "32 x ff: %08x", dt_crc32c(0, ff, 32));
    EXPECT(dt_crc32c(0, inc, 32) == 0x46DD794Eu, "00 .. 1f: %08x", dt_crc32c(0, inc, 32));
    EXPECT(dt_crc32c(0, NULL, 0) == 0, "nothing: 0");
    /* every length and alignment the 8-byte loop and its tail meet */
    unsigned char buf[320];
    dt_rng r;
    dt_rng_init(&r, 3, 0);
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)dt_rng_u64(&r);
    for (size_t at = 0; at < 8; at++)
        for (size_t n = 0; n + at <= sizeof buf; n += 1 + n / 8) {
            uint32_t want = ck_crc32c_bits(buf + at, n);
            EXPECT(dt_crc32c(0, buf + at, n) == want, "%zu bytes at offset %zu: %08x, the "
                   "definition gives %08x", n, at, dt_crc32c(0, buf + at, n), want);
            size_t cut = n / 3; /* in two pieces, chained */
            EXPECT(dt_crc32c(dt_crc32c(0, buf + at, cut), buf + at + cut, n - cut) == want,
                   "%zu bytes chained at %zu: not the CRC of the whole", n, cut);
        }
}

/* ---------------------------------------------------------------- the bytes */

typedef struct {
    unsigned char b[1024];
    size_t n;
} bytes;

static void put(bytes *f, const void *p, size_t n)
{
    if (n)
        memcpy(f->b + f->n, p, n);
    f->n += n;
}
static void put32(bytes *f, uint32_t v)
{
    unsigned char le[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                           (unsigned char)(v >> 24)};
    put(f, le, 4);
}
static void put64(bytes *f, uint64_t v)
{
    put32(f, (uint32_t)v);
    put32(f, (uint32_t)(v >> 32));
}
static void pad8(bytes *f)
{
    while (f->n % 8)
        f->b[f->n++] = 0;
}

/* One record as the header describes it; its CRC goes into chain. */
static void expect_record(bytes *f, const char *name, int type, int ndim, const uint64_t *shape,
                          const void *data, size_t bytes_, bytes *chain)
{
    size_t start = f->n, len = strlen(name);
    put32(f, (uint32_t)len);
    put32(f, (uint32_t)type | (uint32_t)ndim << 16); /* u16 type, u16 ndim */
    put64(f, bytes_);
    for (int i = 0; i < ndim; i++)
        put64(f, shape[i]);
    put(f, name, len);
    pad8(f);
    put(f, data, bytes_);
    pad8(f);
    uint32_t crc = ck_crc32c_bits(f->b + start, f->n - start);
    put32(f, crc);
    put32(f, 0);
    put32(chain, crc);
}

TEST(ckpt_file_bytes_are_the_documented_format, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, the format");
    char dir[CK_PATH], path[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f.dtck", dir);
    int64_t step = 0x0102030405060708;
    float w[6] = {1, 2, 3, 4, 5, 6};
    size_t wshape[2] = {2, 3}, eshape[1] = {0};
    dt_ckpt_writer *wr;
    dt_ckpt_file_info info;
    EXPECT_OK(dt_ckpt_create(&wr, path, DT_CKPT_SHARD, 1, 3));
    EXPECT_OK(dt_ckpt_put(wr, "step", DT_CKPT_I64, 0, NULL, &step));
    EXPECT_OK(dt_ckpt_put(wr, "w", DT_CKPT_F32, 2, wshape, w));
    EXPECT_OK(dt_ckpt_put(wr, "e", DT_CKPT_U8, 1, eshape, NULL));
    EXPECT_OK(dt_ckpt_commit(wr, &info));

    bytes f = {{0}, 0}, chain = {{0}, 0};
    put(&f, "DTCKPT\r\n", 8);
    put32(&f, 1), put32(&f, 1), put32(&f, 1), put32(&f, 3), put32(&f, 0); /* version, kind, rank, ranks, flags */
    put32(&f, ck_crc32c_bits(f.b, 28));
    put(&chain, f.b, 32);
    uint64_t ws[2] = {2, 3}, es[1] = {0};
    expect_record(&f, "step", 9, 0, NULL, &step, 8, &chain);
    expect_record(&f, "w", 1, 2, ws, w, 24, &chain);
    expect_record(&f, "e", 6, 1, es, NULL, 0, &chain);
    size_t trailer = f.n;
    put(&f, "DTCKEND\n", 8);
    put64(&f, 3);
    put64(&f, f.n + 16);
    put(&chain, f.b + trailer, 24);
    uint32_t sum = ck_crc32c_bits(chain.b, chain.n);
    put32(&f, sum), put32(&f, 0);

    size_t n;
    unsigned char *got = ck_slurp(path, &n);
    size_t first = 0;
    while (first < n && first < f.n && got[first] == f.b[first])
        first++;
    EXPECT(n == f.n && first == n, "the file has %zu bytes, the format %zu; they differ first at "
           "byte %zu (file %02x, format %02x)", n, f.n, first, first < n ? got[first] : 0,
           first < f.n ? f.b[first] : 0);
    EXPECT(info.bytes == n && info.checksum == sum, "commit reports %llu bytes, checksum %08x; "
           "the file's are %zu, %08x", (unsigned long long)info.bytes, info.checksum, n, sum);
    EXPECT(!ck_exists(strcat(strcpy((char *)f.b, path), ".tmp")), "PATH.tmp is left after a commit");
    free(got);
    ck_rmdir(dir);
}

/* ---------------------------------------------------------------- round trip */

TEST(ckpt_every_type_and_shape_round_trips, 1)
{
    char dir[CK_PATH], path[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/types.dtck", dir);
    unsigned char data[10][64];
    for (int t = 0; t < 10; t++)
        for (int i = 0; i < 64; i++)
            data[t][i] = (unsigned char)(t * 31 + i * 7);
    size_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1}, big = 100000;
    float *large = malloc(big * sizeof *large);
    for (size_t i = 0; i < big; i++)
        large[i] = (float)i * 0.5f;
    dt_ckpt_writer *w;
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_MANIFEST, 0, 4));
    for (int t = 1; t <= 10; t++) {
        char name[16];
        size_t count = 64 / dt_ckpt_type_size((dt_ckpt_type)t);
        snprintf(name, sizeof name, "type%d", t);
        EXPECT_OK(dt_ckpt_put(w, name, (dt_ckpt_type)t, 1, &count, data[t - 1]));
    }
    EXPECT_OK(dt_ckpt_put(w, "scalar", DT_CKPT_F64, 0, NULL, data[0]));
    EXPECT_OK(dt_ckpt_put(w, "eight.dims", DT_CKPT_U32, 8, ones, data[1]));
    EXPECT_OK(dt_ckpt_put(w, "large", DT_CKPT_F32, 1, &big, large));
    EXPECT_OK(dt_ckpt_commit(w, NULL));

    dt_ckpt_reader *r;
    EXPECT_OK(dt_ckpt_open(&r, path));
    const dt_ckpt_header *h = dt_ckpt_reader_header(r);
    EXPECT(h->kind == DT_CKPT_MANIFEST && h->rank == -1 && h->ranks == 4 && h->records == 13,
           "header: kind %d, rank %d of %d, %d records", h->kind, h->rank, h->ranks, h->records);
    for (int t = 1; t <= 10; t++) {
        const dt_ckpt_record *rec = dt_ckpt_record_at(r, t - 1);
        size_t count = 64 / dt_ckpt_type_size((dt_ckpt_type)t);
        EXPECT(rec && (int)rec->type == t && rec->ndim == 1 && rec->shape[0] == count &&
               rec->bytes == 64 && !memcmp(rec->data, data[t - 1], 64),
               "record %d (%s) does not read back as written", t - 1, dt_ckpt_type_name(t));
    }
    const dt_ckpt_record *s = dt_ckpt_find(r, "scalar"), *e = dt_ckpt_find(r, "eight.dims");
    EXPECT(s && s->ndim == 0 && s->count == 1 && s->bytes == 8 && !memcmp(s->data, data[0], 8),
           "a scalar is one element");
    EXPECT(e && e->ndim == 8 && e->count == 1 && !memcmp(e->data, data[1], 4), "eight dims");
    float *back = calloc(big, sizeof *back);
    EXPECT_OK(dt_ckpt_get(r, "large", DT_CKPT_F32, 1, &big, back));
    EXPECT(!memcmp(back, large, big * sizeof *back), "100000 floats read back");
    EXPECT(dt_ckpt_find(r, "nothing") == NULL && dt_ckpt_record_at(r, 13) == NULL,
           "no such record");
    dt_ckpt_close(r);
    free(large), free(back);
    ck_rmdir(dir);
}

/* ---------------------------------------------------------------- damage */

/* A good file of three records at path; *n its size. */
static void good_file(const char *path, size_t *n)
{
    dt_ckpt_writer *w;
    float a[4] = {1, 2, 3, 4}, b[8] = {5, 6, 7, 8, 9, 10, 11, 12};
    int32_t c[2] = {7, 9};
    size_t four = 4, eight = 8, two = 2;
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 0, 2));
    EXPECT_OK(dt_ckpt_put(w, "alpha", DT_CKPT_F32, 1, &four, a));
    EXPECT_OK(dt_ckpt_put(w, "beta", DT_CKPT_F32, 1, &eight, b));
    EXPECT_OK(dt_ckpt_put(w, "gamma", DT_CKPT_I32, 1, &two, c));
    EXPECT_OK(dt_ckpt_commit(w, NULL));
    unsigned char *f = ck_slurp(path, n);
    free(f);
}

/* Writes the first `keep` of the good bytes to bad, byte flip xored with
 * mask, and expects dt_ckpt_open to refuse it with want and a message that
 * names the file and says w1 and w2 (NULL: anything). */
static void expect_refused(const char *bad, const unsigned char *good, size_t n, size_t keep,
                           size_t flip, unsigned char mask, dt_result want, const char *w1,
                           const char *w2)
{
    unsigned char *b = malloc(n + 1);
    memcpy(b, good, n);
    if (flip < n)
        b[flip] ^= mask;
    ck_spit(bad, b, keep);
    dt_ckpt_reader *r = (dt_ckpt_reader *)1;
    dt_result res = dt_ckpt_open(&r, bad);
    const char *msg = dt_last_error();
    EXPECT(res == want && r == NULL, "%zu bytes kept, byte %zu ^ %02x: dt_ckpt_open returned %s "
           "(expected %s): %s", keep, flip, mask, dt_strerror(res), dt_strerror(want), msg);
    EXPECT(strstr(msg, bad) && (!w1 || strstr(msg, w1)) && (!w2 || strstr(msg, w2)),
           "%zu bytes kept, byte %zu ^ %02x: the message '%s' should name the file and say "
           "'%s'%s%s", keep, flip, mask, msg, w1 ? w1 : "", w2 ? " and " : "", w2 ? w2 : "");
    free(b);
}

TEST(ckpt_damage_is_refused_naming_file_and_record, 3)
{
    dt_test_see("lib/include/dt/ckpt.h, errors");
    char dir[CK_PATH], path[CK_FILE], bad[CK_FILE];
    size_t n;
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/good.dtck", dir);
    snprintf(bad, sizeof bad, "%s/bad.dtck", dir);
    good_file(path, &n);
    unsigned char *g = ck_slurp(path, &n);
    dt_ckpt_reader *r;
    snprintf(bad, sizeof bad, "%s/missing.dtck", dir);
    EXPECT_ERR(dt_ckpt_open(&r, bad), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), bad) != NULL, "a missing file is named: %s", dt_last_error());
    snprintf(bad, sizeof bad, "%s/bad.dtck", dir);

    /* the header: magic, line ends, its checksum, the version (checksum fixed) */
    expect_refused(bad, g, n, n, 0, 0x20, DT_ERR_INVALID_ARG, "not a checkpoint", NULL);
    expect_refused(bad, g, n, n, 6, 0x0D ^ 0x0A, DT_ERR_INVALID_ARG, "line ends", NULL);
    expect_refused(bad, g, n, n, 16, 0x01, DT_ERR_INVALID_ARG, "header", "checksum");
    unsigned char *v = malloc(n);
    memcpy(v, g, n);
    v[8] = 2;
    uint32_t crc = dt_crc32c(0, v, 28);
    memcpy(v + 28, &crc, 4);
    expect_refused(bad, v, n, n, n, 0, DT_ERR_INVALID_ARG, "version 2", NULL);
    free(v);
    /* cut short anywhere, or one byte more */
    size_t cuts[] = {0, 7, 31, 40, 63, 64, n / 2, n - 33, n - 32, n - 8, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++)
        expect_refused(bad, g, n, cuts[i], n, 0, DT_ERR_INVALID_ARG,
                       "truncated", NULL);
    unsigned char *longer = calloc(n + 1, 1);
    memcpy(longer, g, n);
    expect_refused(bad, longer, n + 1, n + 1, n + 1, 0, DT_ERR_INVALID_ARG, "truncated", NULL);
    free(longer);
    /* a bit changed in each record's data names that record */
    EXPECT_OK(dt_ckpt_open(&r, path));
    const char *names[3] = {"alpha", "beta", "gamma"};
    /* the data offsets, from the format: alpha at 64 (16 + 8 + 8 after 32),
       beta after alpha's 64 + 16 + 8 = 88 -> 88 + 32 = 120, gamma after
       beta's 120 + 32 + 8 = 160 -> 160 + 32 = 192 */
    size_t data_at[3] = {64, 120, 192};
    for (int i = 0; i < 3; i++) {
        EXPECT(!memcmp(g + data_at[i], dt_ckpt_record_at(r, i)->data, 4), "the data of %s is "
               "not at byte %zu, as the format puts it", names[i], data_at[i]);
        expect_refused(bad, g, n, n, data_at[i] + 3, 0x10, DT_ERR_INVALID_ARG, names[i],
                       "checksum");
    }
    dt_ckpt_close(r);
    /* the trailer's count */
    expect_refused(bad, g, n, n, n - 24, 0x01, DT_ERR_INVALID_ARG, NULL, NULL);
    free(g);
    ck_rmdir(dir);
}

/* ---------------------------------------------------------------- all or nothing */

typedef struct {
    float a[4];
    float b[8];
    int32_t c[2];
    long step;
} small_state;

/* mode 0: the state as saved; 1: gamma of another shape; 2: a record the
 * file lacks; 3: beta left out; 4: a config that differs. */
static dt_result visit(small_state *s, dt_ckpt_io *io, int mode)
{
    size_t four = 4, eight = 8, two = mode == 1 ? 1 : 2;
    uint64_t cfg = mode == 4 ? 8 : 7;
    DT_CHECK(dt_ckpt_io_push(io, "s"));
    DT_CHECK(dt_ckpt_io_expect(io, "config", DT_CKPT_U64, 0, NULL, &cfg));
    DT_CHECK(dt_ckpt_io_long(io, "step", &s->step));
    DT_CHECK(dt_ckpt_io_record(io, "a", DT_CKPT_F32, 1, &four, s->a));
    if (mode != 3)
        DT_CHECK(dt_ckpt_io_f32(io, "b", s->b, eight));
    DT_CHECK(dt_ckpt_io_record(io, "c", DT_CKPT_I32, 1, &two, s->c));
    if (mode == 2)
        DT_CHECK(dt_ckpt_io_f32(io, "d", s->b, 1));
    dt_ckpt_io_pop(io);
    return DT_OK;
}

TEST(ckpt_load_is_all_or_nothing, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, a state, both ways");
    char dir[CK_PATH], path[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/state.dtck", dir);
    small_state saved = {{1, 2, 3, 4}, {5, 6, 7, 8, 9, 10, 11, 12}, {13, 14}, 15}, s;
    dt_ckpt_io *io;
    EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&saved, io, 0), NULL));
    const char *says[5] = {NULL, "is i32 [2]; expected i32 [1]", "no record \"s.d\"",
                           "\"s.b\" is not part of this state", "\"s.config\" differs"};
    for (int mode = 1; mode <= 4; mode++) {
        memset(&s, 0x5A, sizeof s);
        small_state before = s;
        EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
        dt_result r = dt_ckpt_io_end(io, visit(&s, io, mode), NULL);
        EXPECT(r == DT_ERR_INVALID_ARG && strstr(dt_last_error(), path) &&
               strstr(dt_last_error(), says[mode]), "mode %d: %s: '%s' (expected a message "
               "naming the file and saying '%s')", mode, dt_strerror(r), dt_last_error(),
               says[mode]);
        EXPECT(!memcmp(&s, &before, sizeof s), "mode %d: a failed load wrote into the state",
               mode);
    }
    /* another rank's or world's file */
    EXPECT_ERR(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 1, 1), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 2), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "rank 0 of 1 ranks"), "names the file's rank: %s",
           dt_last_error());
    EXPECT_ERR(dt_ckpt_io_load(&io, path, DT_CKPT_MANIFEST, -1, -1), DT_ERR_INVALID_ARG);
    memset(&s, 0, sizeof s);
    EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, -1, -1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&s, io, 0), NULL));
    EXPECT(!memcmp(&s, &saved, sizeof s), "a good load restores every record");
    /* a failed save leaves the old file, and no temporary one */
    size_t n0, n1;
    unsigned char *before = ck_slurp(path, &n0);
    EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_ERR(dt_ckpt_io_end(io, visit(&saved, io, 1) == DT_OK ? DT_ERR_FAULT : DT_OK, NULL),
               DT_ERR_FAULT);
    unsigned char *after = ck_slurp(path, &n1);
    char tmp[CK_TMP];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    EXPECT(n0 == n1 && !memcmp(before, after, n0) && !ck_exists(tmp),
           "an aborted save changed the file or left %s", tmp);
    free(before), free(after);
    ck_rmdir(dir);
}

/* ---------------------------------------------------------------- atomic commits */

TEST(ckpt_commit_is_atomic, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, atomic writes");
    char dir[CK_PATH], path[CK_FILE], tmp[CK_TMP], latest[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/rank-00000.dtck", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    float a[3] = {1, 2, 3}, b[3] = {4, 5, 6};
    size_t three = 3, n0, n1;
    dt_ckpt_writer *w;
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_put(w, "x", DT_CKPT_F32, 1, &three, a));
    EXPECT_OK(dt_ckpt_commit(w, NULL));
    unsigned char *old = ck_slurp(path, &n0);
    /* an abort */
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_put(w, "x", DT_CKPT_F32, 1, &three, b));
    dt_ckpt_abort(w);
    unsigned char *now = ck_slurp(path, &n1);
    EXPECT(n0 == n1 && !memcmp(old, now, n0) && !ck_exists(tmp), "an abort changed the file");
    free(now);
    /* a crash: a process that dies between its records and the commit */
    pid_t pid = fork();
    EXPECT(pid >= 0, "fork");
    if (pid == 0) {
        dt_ckpt_writer *cw;
        if (dt_ckpt_create(&cw, path, DT_CKPT_SHARD, 0, 1) == DT_OK)
            dt_ckpt_put(cw, "x", DT_CKPT_F32, 1, &three, b);
        _exit(0);
    }
    int st;
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the crashing child");
    now = ck_slurp(path, &n1);
    EXPECT(n0 == n1 && !memcmp(old, now, n0), "a crash before the commit changed the file");
    free(now);
    dt_ckpt_reader *r;
    EXPECT(ck_exists(tmp), "the crash leaves its temporary file");
    EXPECT_ERR(dt_ckpt_open(&r, tmp), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "never committed"), "an uncommitted file: %s",
           dt_last_error());
    /* the next writer takes over the leftover */
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_put(w, "x", DT_CKPT_F32, 1, &three, b));
    EXPECT_OK(dt_ckpt_commit(w, NULL));
    float got[3];
    EXPECT_OK(dt_ckpt_open(&r, path));
    EXPECT_OK(dt_ckpt_get(r, "x", DT_CKPT_F32, 1, &three, got));
    EXPECT(!memcmp(got, b, sizeof b) && !ck_exists(tmp), "the commit replaced the file whole");
    dt_ckpt_close(r);
    /* a small file, atomically */
    snprintf(latest, sizeof latest, "%s/latest", dir);
    EXPECT_OK(dt_ckpt_write_atomic(latest, "step-7", 6));
    EXPECT_OK(dt_ckpt_write_atomic(latest, "step-14", 7));
    now = ck_slurp(latest, &n1);
    EXPECT(n1 == 7 && !memcmp(now, "step-14", 7), "latest holds the last name written");
    free(now), free(old);
    snprintf(latest, sizeof latest, "%s/sub", dir);
    EXPECT_OK(dt_ckpt_make_dir(latest));
    EXPECT_OK(dt_ckpt_make_dir(latest));
    EXPECT_ERR(dt_ckpt_make_dir(path), DT_ERR_IO);
    ck_rmdir(dir);
}

/* ---------------------------------------------------------------- the manifest */

TEST(ckpt_manifest_lists_each_shard, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, the format");
    char dir[CK_PATH], other[CK_PATH], path[CK_FILE], from[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    ck_tmpdir(other, sizeof other);
    enum { RANKS = 3 };
    dt_ckpt_file_info info[RANKS], elsewhere;
    for (int k = 0; k < RANKS; k++) {
        dt_ckpt_io *io;
        float x[5] = {(float)k, 1, 2, 3, 4};
        long step = 40;
        EXPECT_OK(dt_ckpt_shard_path(path, sizeof path, dir, k));
        EXPECT_OK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, k, RANKS));
        dt_ckpt_io_long(io, "step", &step);
        EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_f32(io, "x", x, 5), &info[k]));
        if (k == 1) { /* rank 1's shard of another checkpoint: other values */
            x[4] = 99;
            EXPECT_OK(dt_ckpt_shard_path(from, sizeof from, other, k));
            EXPECT_OK(dt_ckpt_io_save(&io, from, DT_CKPT_SHARD, k, RANKS));
            dt_ckpt_io_long(io, "step", &step);
            EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_f32(io, "x", x, 5), &elsewhere));
        }
    }
    dt_ckpt_io *io;
    long step = 40, got_step = 0;
    EXPECT_OK(dt_ckpt_io_save_manifest(&io, dir, RANKS, info));
    EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &step), NULL));
    EXPECT_OK(dt_ckpt_manifest_path(path, sizeof path, dir));
    EXPECT(strstr(path, "/manifest.dtck") != NULL, "the manifest's name: %s", path);
    EXPECT_OK(dt_ckpt_io_load_manifest(&io, dir, RANKS));
    const dt_ckpt_reader *m = dt_ckpt_io_reader(io);
    for (int k = 0; k < RANKS; k++) {
        dt_ckpt_file_info e;
        dt_ckpt_reader *r;
        EXPECT_OK(dt_ckpt_manifest_shard(m, k, &e));
        EXPECT(e.bytes == info[k].bytes && e.checksum == info[k].checksum, "shard %d's entry",
               k);
        EXPECT_OK(dt_ckpt_shard_path(path, sizeof path, dir, k));
        EXPECT_OK(dt_ckpt_open(&r, path));
        EXPECT_OK(dt_ckpt_verify(r, &e));
        EXPECT_OK(dt_ckpt_expect_header(r, DT_CKPT_SHARD, k, RANKS));
        EXPECT_ERR(dt_ckpt_expect_header(r, DT_CKPT_SHARD, (k + 1) % RANKS, RANKS),
                   DT_ERR_INVALID_ARG);
        dt_ckpt_close(r);
    }
    EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &got_step), NULL));
    EXPECT(got_step == 40, "the manifest's own record: step %ld", got_step);
    /* a shard of another checkpoint in its place is found */
    size_t n;
    unsigned char *b = ck_slurp(from, &n);
    EXPECT_OK(dt_ckpt_shard_path(path, sizeof path, dir, 1));
    ck_spit(path, b, n);
    free(b);
    dt_ckpt_reader *r;
    dt_ckpt_file_info e;
    EXPECT_OK(dt_ckpt_io_load_manifest(&io, dir, -1));
    EXPECT_OK(dt_ckpt_manifest_shard(dt_ckpt_io_reader(io), 1, &e));
    EXPECT_ERR(dt_ckpt_manifest_shard(dt_ckpt_io_reader(io), RANKS, &e), DT_ERR_INVALID_ARG);
    dt_ckpt_io_end(io, DT_ERR_FAULT, NULL);
    EXPECT_OK(dt_ckpt_open(&r, path));
    EXPECT_ERR(dt_ckpt_verify(r, &e), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), path) && strstr(dt_last_error(), "another checkpoint"),
           "the swapped shard is named: %s", dt_last_error());
    dt_ckpt_close(r);
    /* a missing manifest */
    EXPECT_ERR(dt_ckpt_io_load_manifest(&io, other, -1), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), "manifest.dtck"), "names the manifest: %s", dt_last_error());
    (void)elsewhere;
    ck_rmdir(dir), ck_rmdir(other);
}

/* ---------------------------------------------------------------- bad records */

TEST(ckpt_bad_names_and_shapes_are_refused, 1)
{
    char dir[CK_PATH], path[CK_FILE], longname[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/f.dtck", dir);
    float x[2] = {1, 2};
    size_t two = 2, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    memset(longname, 'a', 256);
    longname[256] = '\0';
    dt_ckpt_writer *w;
    EXPECT_ERR(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_create(&w, path, (dt_ckpt_kind)3, 0, 1), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_ckpt_create(&w, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_put(w, "x", DT_CKPT_F32, 1, &two, x));
    EXPECT_ERR(dt_ckpt_put(w, "x", DT_CKPT_F32, 1, &two, x), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "\"x\" twice"), "a duplicate: %s", dt_last_error());
    EXPECT_ERR(dt_ckpt_put(w, "a b", DT_CKPT_F32, 1, &two, x), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_put(w, "", DT_CKPT_F32, 1, &two, x), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_put(w, longname, DT_CKPT_F32, 1, &two, x), DT_ERR_INVALID_ARG);
    longname[255] = '\0';
    EXPECT_OK(dt_ckpt_put(w, longname, DT_CKPT_F32, 1, &two, x));
    EXPECT_ERR(dt_ckpt_put(w, "t", (dt_ckpt_type)11, 1, &two, x), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_put(w, "d", DT_CKPT_U8, 9, nine, x), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_put(w, "n", DT_CKPT_F32, 1, &two, NULL), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), path) && strstr(dt_last_error(), "\"n\""),
           "names the file and the record: %s", dt_last_error());
    EXPECT_OK(dt_ckpt_commit(w, NULL)); /* refused records wrote nothing */
    dt_ckpt_reader *r;
    float y[2];
    EXPECT_OK(dt_ckpt_open(&r, path));
    EXPECT(dt_ckpt_reader_header(r)->records == 2, "two records");
    EXPECT_ERR(dt_ckpt_get(r, "x", DT_CKPT_I32, 1, &two, y), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "is f32 [2]; expected i32 [2]"), "a type mismatch: %s",
           dt_last_error());
    EXPECT_ERR(dt_ckpt_get(r, "y", DT_CKPT_F32, 1, &two, y), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "no record \"y\""), "a missing record: %s", dt_last_error());
    dt_ckpt_close(r);
    char shard[16];
    EXPECT_ERR(dt_ckpt_shard_path(shard, sizeof shard, dir, 0), DT_ERR_INVALID_ARG);
    EXPECT(dt_ckpt_type_size(DT_CKPT_BF16) == 2 && !strcmp(dt_ckpt_type_name(DT_CKPT_U64), "u64")
           && dt_ckpt_type_of(DT_I8) == DT_CKPT_I8 && dt_ckpt_type_size((dt_ckpt_type)0) == 0,
           "the type table");
    ck_rmdir(dir);
}
