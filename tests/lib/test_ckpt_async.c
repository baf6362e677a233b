/* test_ckpt_async.c - dt/ckpt.h's asynchronous save: the files it writes
 * are the synchronous save's, byte for byte; the snapshot is taken before
 * the call returns (buffers overwritten at once change nothing saved); a
 * failure in the background reaches the wait naming the file, and stops
 * the commit protocol before "latest"; one save flies at a time; every
 * wait has a timeout.
 *
 * The saver's thread is held where a test needs it by a FIFO put in
 * place of a file's PATH.tmp: opening it for writing blocks until the
 * test opens its other end, so "still running" is a fact, not a race. */
#include "grader.h"
#include "ckpt_util.h"
#include "dt/ckpt.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { N = 3000, RANKS = 2 };

typedef struct {
    float x[N];
    long step;
    dt_rng rng;
} state;

static void fill(state *s, int rank, float v)
{
    for (int i = 0; i < N; i++)
        s->x[i] = v + (float)i * 0.25f + (float)rank;
    s->step = 7 + rank;
    dt_rng_init(&s->rng, 42, (uint64_t)rank);
    dt_rng_u64(&s->rng);
}

static dt_result visit(state *s, dt_ckpt_io *io)
{
    DT_CHECK(dt_ckpt_io_push(io, "model"));
    DT_CHECK(dt_ckpt_io_f32(io, "x", s->x, N));
    dt_ckpt_io_pop(io);
    DT_CHECK(dt_ckpt_io_rng(io, "rng", &s->rng));
    DT_CHECK(dt_ckpt_io_expect_str(io, "config", "async-test"));
    return dt_ckpt_io_long(io, "step", &s->step);
}

static void shard_of(char *out, const char *dir, int k)
{
    EXPECT_OK(dt_ckpt_shard_path(out, CK_FILE, dir, k));
}

static void expect_same_file(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = ck_slurp(a, &na), *y = ck_slurp(b, &nb);
    EXPECT(na == nb && !memcmp(x, y, na), "%s (%zu bytes) differs from the synchronous save's "
           "%s (%zu bytes)", b, nb, a, na);
    free(x), free(y);
}

/* Queues the checkpoint of st[0 .. RANKS) into dir: shards, manifest, "latest". */
static void save_async(dt_ckpt_saver *sv, const char *dir, state *st, const char *latest)
{
    char path[CK_FILE];
    dt_ckpt_io *io;
    long step = st[0].step;
    for (int k = 0; k < RANKS; k++) {
        shard_of(path, dir, k);
        EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, k, RANKS));
        EXPECT_OK(dt_ckpt_io_end(io, visit(&st[k], io), NULL));
    }
    EXPECT_OK(dt_ckpt_io_save_manifest_async(&io, sv, dir, RANKS));
    EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &step), NULL));
    if (latest)
        EXPECT_OK(dt_ckpt_saver_write_atomic(sv, latest, dir, strlen(dir)));
}

TEST(ckpt_async_save_is_the_sync_save, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, saving asynchronously");
    char sync[CK_PATH], async[CK_PATH], a[CK_FILE], b[CK_FILE], latest[CK_FILE];
    ck_tmpdir(sync, sizeof sync);
    ck_tmpdir(async, sizeof async);
    static state st[RANKS], back;
    dt_ckpt_file_info info[RANKS], got;
    dt_ckpt_io *io;
    for (int k = 0; k < RANKS; k++) {
        fill(&st[k], k, 1.5f);
        shard_of(a, sync, k);
        EXPECT_OK(dt_ckpt_io_save(&io, a, DT_CKPT_SHARD, k, RANKS));
        EXPECT_OK(dt_ckpt_io_end(io, visit(&st[k], io), &info[k]));
    }
    long step = st[0].step;
    EXPECT_OK(dt_ckpt_io_save_manifest(&io, sync, RANKS, info));
    EXPECT_OK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &step), NULL));

    dt_ckpt_saver *sv;
    dt_mem_stats before, after;
    dt_mem_stats_get(&before);
    EXPECT_OK(dt_ckpt_saver_create(&sv));
    snprintf(latest, sizeof latest, "%s/latest", async);
    for (int round = 0; round < 2; round++) { /* the second reuses the first's snapshot memory */
        EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
        save_async(sv, async, st, latest);
        if (round == 0) {
            dt_mem_stats_get(&after);
            EXPECT(after.current[DT_MEM_OTHER] >= before.current[DT_MEM_OTHER] +
                   RANKS * sizeof st[0].x, "the snapshot is charged to the rank under "
                   "DT_MEM_OTHER: %zu bytes more, expected at least %zu",
                   after.current[DT_MEM_OTHER] - before.current[DT_MEM_OTHER],
                   RANKS * sizeof st[0].x);
        }
        EXPECT_OK(dt_ckpt_saver_wait(sv, 30));
        for (int k = 0; k < RANKS; k++) {
            EXPECT_OK(dt_ckpt_saver_info(sv, k, &got));
            EXPECT(got.bytes == info[k].bytes && got.checksum == info[k].checksum,
                   "shard %d's info: %llu bytes, checksum %08x; the synchronous save's %llu, "
                   "%08x", k, (unsigned long long)got.bytes, got.checksum,
                   (unsigned long long)info[k].bytes, info[k].checksum);
            shard_of(a, sync, k), shard_of(b, async, k);
            expect_same_file(a, b);
        }
        EXPECT_OK(dt_ckpt_manifest_path(a, sizeof a, sync));
        EXPECT_OK(dt_ckpt_manifest_path(b, sizeof b, async));
        expect_same_file(a, b);
        size_t n;
        char *name = (char *)ck_slurp(latest, &n);
        EXPECT(n == strlen(async) && !memcmp(name, async, n), "\"latest\" names the checkpoint");
        free(name);
    }
    EXPECT_ERR(dt_ckpt_saver_info(sv, RANKS + 2, &got), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_ckpt_saver_destroy(sv, 30));
    dt_mem_stats_get(&after);
    EXPECT(after.current[DT_MEM_OTHER] == before.current[DT_MEM_OTHER],
           "the saver's memory is given back: %zu bytes left",
           after.current[DT_MEM_OTHER] - before.current[DT_MEM_OTHER]);
    /* and it loads back, bit for bit */
    shard_of(b, async, 1);
    memset(&back, 0, sizeof back);
    EXPECT_OK(dt_ckpt_io_load(&io, b, DT_CKPT_SHARD, 1, RANKS));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&back, io), NULL));
    EXPECT(!memcmp(&back, &st[1], sizeof back), "the loaded state is the saved one");
    ck_rmdir(sync), ck_rmdir(async);
}

/* Puts a FIFO where the saver's thread will open path's PATH.tmp. */
static void fifo_at(const char *path, char *tmp)
{
    snprintf(tmp, CK_TMP, "%s.tmp", path);
    EXPECT(mkfifo(tmp, 0600) == 0, "mkfifo %s", tmp);
}

TEST(ckpt_async_snapshot_is_taken_before_the_call_returns, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, saving asynchronously");
    char dir[CK_PATH], path[CK_FILE], tmp[CK_TMP];
    ck_tmpdir(dir, sizeof dir);
    static state st, want, back;
    dt_ckpt_saver *sv;
    dt_ckpt_io *io;
    EXPECT_OK(dt_ckpt_saver_create(&sv));
    /* 1. the thread held at its file's open while the buffers change: the
     * bytes it then writes are the snapshot's */
    fill(&st, 0, 3.0f);
    want = st;
    shard_of(path, dir, 0);
    fifo_at(path, tmp);
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&st, io), NULL));
    memset(st.x, 0xAB, sizeof st.x); /* training goes on */
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 0), DT_ERR_TIMEOUT);
    int fd = open(tmp, O_RDWR); /* the other end: the thread's open returns, its writes fit */
    EXPECT(fd >= 0, "open %s", tmp);
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 30), DT_ERR_IO); /* fsync of a FIFO fails */
    static unsigned char got[2 * sizeof st.x];
    ssize_t n = read(fd, got, sizeof got);
    close(fd);
    EXPECT(n > (ssize_t)sizeof want.x, "the thread wrote the records: %zd bytes", n);
    int found = 0;
    for (ssize_t at = 0; !found && at + (ssize_t)sizeof want.x <= n; at += 4)
        found = !memcmp(got + at, want.x, sizeof want.x);
    EXPECT(found, "the bytes written are not the state as it was at the call: the snapshot "
           "was taken after it returned");
    /* 2. a real file: overwritten right after the call, loaded back whole */
    fill(&st, 0, 5.0f);
    want = st;
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&st, io), NULL));
    memset(st.x, 0xCD, sizeof st.x);
    st.step = -1;
    EXPECT_OK(dt_ckpt_saver_wait(sv, 30));
    EXPECT_OK(dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&back, io), NULL));
    EXPECT(!memcmp(&back, &want, sizeof back), "the file holds the state at the call");
    EXPECT_OK(dt_ckpt_saver_destroy(sv, 30));
    ck_rmdir(dir);
}

TEST(ckpt_async_failure_is_reported_and_stops_before_latest, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, saving asynchronously");
    char dir[CK_PATH], gone[CK_FILE], path[CK_FILE], latest[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    snprintf(gone, sizeof gone, "%s/no-such-folder", dir);
    snprintf(latest, sizeof latest, "%s/latest", dir);
    EXPECT_OK(dt_ckpt_write_atomic(latest, "old", 3));
    static state st[RANKS];
    fill(&st[0], 0, 1), fill(&st[1], 1, 1);
    dt_ckpt_saver *sv;
    EXPECT_OK(dt_ckpt_saver_create(&sv));
    /* a shard that cannot be written: the wait names it; no manifest, "latest" kept */
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    save_async(sv, gone, st, latest);
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 30), DT_ERR_IO);
    shard_of(path, gone, 0);
    EXPECT(strstr(dt_last_error(), path) != NULL, "the failure names the file %s: %s", path,
           dt_last_error());
    size_t n;
    char *name = (char *)ck_slurp(latest, &n);
    EXPECT(n == 3 && !memcmp(name, "old", 3), "\"latest\" moved after a failed save");
    free(name);
    /* the manifest failing after good shards: "latest" is not moved either */
    char half[CK_FILE], manifest[CK_FILE];
    snprintf(half, sizeof half, "%s/half", dir);
    EXPECT_OK(dt_ckpt_make_dir(half));
    EXPECT_OK(dt_ckpt_manifest_path(manifest, sizeof manifest, half));
    EXPECT(mkdir(manifest, 0700) == 0, "mkdir %s", manifest); /* the rename over it fails */
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    save_async(sv, half, st, latest);
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 30), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), manifest) != NULL, "the failure names the manifest %s: %s",
           manifest, dt_last_error());
    shard_of(path, half, 1);
    EXPECT(ck_exists(path), "the shards before the manifest were committed");
    name = (char *)ck_slurp(latest, &n);
    EXPECT(n == 3 && !memcmp(name, "old", 3), "\"latest\" moved though the manifest failed");
    free(name);
    /* the saver goes on: the next save commits */
    EXPECT(rmdir(manifest) == 0, "rmdir %s", manifest);
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    save_async(sv, half, st, latest);
    EXPECT_OK(dt_ckpt_saver_wait(sv, 30));
    name = (char *)ck_slurp(latest, &n);
    EXPECT(n == strlen(half) && !memcmp(name, half, n), "\"latest\" names the new checkpoint");
    free(name);
    EXPECT_OK(dt_ckpt_saver_destroy(sv, 30));
    ck_rmdir(dir);
}

TEST(ckpt_async_one_save_flies_and_waits_time_out, 2)
{
    dt_test_see("lib/include/dt/ckpt.h, saving asynchronously");
    char dir[CK_PATH], path[CK_FILE], tmp[CK_TMP], other[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    static state st;
    fill(&st, 0, 2);
    dt_ckpt_saver *sv;
    dt_ckpt_io *io;
    EXPECT_OK(dt_ckpt_saver_create(&sv));
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 1), DT_ERR_STATE); /* nothing begun */
    shard_of(path, dir, 0);
    EXPECT_ERR(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1), DT_ERR_STATE);
    EXPECT(io == NULL && strstr(dt_last_error(), "no save begun"), "%s", dt_last_error());
    fifo_at(path, tmp);
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&st, io), NULL));
    /* the thread is held in the file's open: every wait ends at its timeout */
    double t0 = dt_now();
    EXPECT_ERR(dt_ckpt_saver_wait(sv, 0.2), DT_ERR_TIMEOUT);
    EXPECT(dt_now() - t0 >= 0.19, "the wait returned before its timeout");
    EXPECT(strstr(dt_last_error(), path), "the timeout names the file being written: %s",
           dt_last_error());
    /* a second save waits for the first: it times out, and is not begun */
    EXPECT_ERR(dt_ckpt_saver_begin(sv, 0.05), DT_ERR_TIMEOUT);
    snprintf(other, sizeof other, "%s/other.dtck", dir);
    EXPECT_ERR(dt_ckpt_io_save_async(&io, sv, other, DT_CKPT_SHARD, 0, 1), DT_ERR_STATE);
    EXPECT(strstr(dt_last_error(), "in flight"), "a file for a save in flight: %s",
           dt_last_error());
    EXPECT_ERR(dt_ckpt_saver_write_atomic(sv, other, "x", 1), DT_ERR_STATE);
    EXPECT_ERR(dt_ckpt_saver_destroy(sv, 0.05), DT_ERR_TIMEOUT); /* s stays valid */
    int fd = open(tmp, O_RDWR);
    EXPECT(fd >= 0, "open %s", tmp);
    /* the begin waits it out, and returns the first save's failure */
    EXPECT_ERR(dt_ckpt_saver_begin(sv, 30), DT_ERR_IO);
    EXPECT(strstr(dt_last_error(), path) && strstr(dt_last_error(), "fsync"),
           "the first save's failure, naming its file: %s", dt_last_error());
    close(fd);
    EXPECT(!ck_exists(other) && !ck_exists(tmp), "nothing else written, the temporary removed");
    EXPECT_OK(dt_ckpt_saver_begin(sv, 30));
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, other, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_end(io, visit(&st, io), NULL));
    EXPECT_OK(dt_ckpt_saver_destroy(sv, 30)); /* waits for it */
    EXPECT(ck_exists(other), "the save in flight at destroy was committed");
    ck_rmdir(dir);
}

TEST(ckpt_async_bad_input_is_refused, 1)
{
    dt_test_see("lib/include/dt/ckpt.h, saving asynchronously");
    char dir[CK_PATH], path[CK_FILE];
    ck_tmpdir(dir, sizeof dir);
    dt_ckpt_saver *sv;
    dt_ckpt_io *io;
    float x[2] = {1, 2};
    EXPECT_ERR(dt_ckpt_saver_create(NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_ckpt_saver_create(&sv));
    EXPECT_ERR(dt_ckpt_saver_begin(NULL, 1), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_ckpt_saver_begin(sv, 1));
    EXPECT_ERR(dt_ckpt_saver_wait(sv, -1), DT_ERR_INVALID_ARG);
    shard_of(path, dir, 0);
    EXPECT_ERR(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 2, 2), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_io_save_async(&io, NULL, path, DT_CKPT_SHARD, 0, 1), DT_ERR_INVALID_ARG);
    /* a bad record is refused at its visit, synchronously, and nothing is queued */
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_OK(dt_ckpt_io_f32(io, "x", x, 2));
    EXPECT_ERR(dt_ckpt_io_f32(io, "x", x, 2), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "\"x\" twice"), "a name used twice: %s", dt_last_error());
    EXPECT_ERR(dt_ckpt_io_end(io, DT_OK, NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_ckpt_io_save_async(&io, sv, path, DT_CKPT_SHARD, 0, 1));
    EXPECT_ERR(dt_ckpt_io_f32(io, "bad name", x, 2), DT_ERR_INVALID_ARG);
    EXPECT_ERR(dt_ckpt_io_end(io, DT_OK, NULL), DT_ERR_INVALID_ARG);
    /* a manifest whose shards the save has not queued */
    EXPECT_ERR(dt_ckpt_io_save_manifest_async(&io, sv, dir, 1), DT_ERR_INVALID_ARG);
    EXPECT(strstr(dt_last_error(), "shard 0"), "names the missing shard: %s", dt_last_error());
    EXPECT_OK(dt_ckpt_saver_wait(sv, 10)); /* an empty save */
    EXPECT(!ck_exists(path), "a refused file is not written");
    EXPECT_OK(dt_ckpt_saver_destroy(sv, 10));
    EXPECT_OK(dt_ckpt_saver_destroy(NULL, 0));
    ck_rmdir(dir);
}
