/* ckpt.c - a sharded checkpoint's write and read bandwidth against the
 * disk's own, measured in the same run (chapter 14, sections 5 and 7):
 *
 *   disk write   one file of S bytes, sequential 1 MiB writes, then fsync
 *   disk read    the same file read back in 1 MiB reads, its pages dropped
 *                from the page cache first (posix_fadvise DONTNEED)
 *   ckpt write   S bytes of f32 state over K thread ranks, each its shard
 *                through dt/ckpt.h (records, CRC32C, fsync, rename, the
 *                folder's fsync), then rank 0's manifest: the commit
 *                protocol's files, barrier to barrier
 *   ckpt read    every shard opened (read whole, every CRC checked), pages
 *                dropped first
 *   snapshot     the copy of the state into memory that an asynchronous
 *                save (snapshot, then persist in the background) stops
 *                training for: memcpy of S bytes, against ckpt write
 *
 *   ckpt [--dir DIR] [--mib S] [--ranks K] [--rounds R]
 *
 * Prints the median over rounds of each and the ratios, each round's
 * figures measured back to back (the disk's speed drifts between runs). */
#include "dt/ckpt.h"
#include "dt/cli.h"
#include "dt/comm.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ROUNDS = 31, CHUNK = 1 << 20 };

typedef struct {
    const char *dir;
    int mib, ranks, rounds;
} options;

typedef struct {
    const options *o;
    char folder[4096];
    double write_s, read_s;
} job;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd >= 0) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* The disk's own: S bytes written sequentially and fsynced, read back. */
static int disk(const char *path, size_t bytes, const char *buf, double *w, double *r)
{
    double t0 = dt_now();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -1;
    for (size_t at = 0; at < bytes; at += CHUNK)
        if (write(fd, buf + at, CHUNK) != CHUNK)
            return close(fd), -1;
    if (fsync(fd) != 0)
        return close(fd), -1;
    close(fd);
    *w = dt_now() - t0;
    drop_cache(path);
    char *in = malloc(CHUNK);
    t0 = dt_now();
    fd = open(path, O_RDONLY);
    size_t got = 0;
    ssize_t n;
    while (fd >= 0 && in && (n = read(fd, in, CHUNK)) > 0)
        got += (size_t)n;
    *r = dt_now() - t0;
    if (fd >= 0)
        close(fd);
    free(in);
    unlink(path);
    return got == bytes ? 0 : -1;
}

/* One rank's shard of S / K bytes, then the manifest; then each shard read. */
static dt_result rank_fn(dt_comm *w, void *arg)
{
    job *j = arg;
    int me = dt_comm_rank(w), K = dt_comm_size(w);
    size_t n = (size_t)j->o->mib * CHUNK / sizeof(float) / (size_t)K;
    float *state = malloc(n * sizeof *state);
    if (!state)
        return dt_fail(DT_ERR_NOMEM, "ckpt: %zu floats", n);
    for (size_t i = 0; i < n; i++)
        state[i] = (float)(i % 1000) * 0.001f + (float)me;
    char path[4200];
    dt_ckpt_file_info mine, all[64];
    dt_ckpt_io *io;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, j->folder, me));
    DT_CHECK(dt_barrier(w));
    double t0 = dt_now();
    DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, me, K));
    DT_CHECK(dt_ckpt_io_end(io, dt_ckpt_io_f32(io, "state", state, n), &mine));
    DT_CHECK(dt_allgather(&mine, all, sizeof mine, DT_U8, w));
    if (me == 0) {
        DT_CHECK(dt_ckpt_io_save_manifest(&io, j->folder, K, all));
        DT_CHECK(dt_ckpt_io_end(io, DT_OK, NULL));
    }
    DT_CHECK(dt_barrier(w));
    if (me == 0)
        j->write_s = dt_now() - t0;
    drop_cache(path);
    DT_CHECK(dt_barrier(w));
    t0 = dt_now();
    dt_ckpt_reader *rd;
    DT_CHECK(dt_ckpt_open(&rd, path));
    dt_ckpt_close(rd);
    DT_CHECK(dt_barrier(w));
    if (me == 0)
        j->read_s = dt_now() - t0;
    free(state);
    return DT_OK;
}

int main(int argc, char **argv)
{
    options o = {"build", 256, 4, 5};
    const dt_opt opts[] = {
        {"--dir", DT_OPT_DIR, &o.dir, .help = "a folder on the disk to measure"},
        {"--mib", DT_OPT_INT, &o.mib, .help = "bytes of state, MiB", .lo = 1, .hi = 65536},
        {"--ranks", DT_OPT_INT, &o.ranks, .help = "shards (thread ranks)", .lo = 1, .hi = 64},
        {"--rounds", DT_OPT_INT, &o.rounds, .help = "rounds (medians)", .lo = 1,
         .hi = MAX_ROUNDS},
    };
    dt_cli cli = {.prog = "ckpt", .opts = opts, .nopts = 4,
                  .about = "A sharded checkpoint's write and read bandwidth against the "
                           "disk's own, and the snapshot an asynchronous save stops for."};
    int st = dt_cli_read(&cli, argc, argv);
    if (st != DT_CLI_GO)
        return st;
    if ((size_t)o.mib * CHUNK / sizeof(float) % (size_t)o.ranks)
        return dt_cli_fail(&cli, "--ranks %d must divide the state's floats", o.ranks);
    size_t bytes = (size_t)o.mib * CHUNK;
    char *buf = malloc(bytes), *copy = malloc(bytes);
    if (!buf || !copy)
        return fprintf(stderr, "ckpt: out of memory for %d MiB\n", o.mib), 1;
    for (size_t i = 0; i < bytes; i++)
        buf[i] = (char)(i * 2654435761u >> 24);
    double dw[MAX_ROUNDS], dr[MAX_ROUNDS], cw[MAX_ROUNDS], cr[MAX_ROUNDS], sn[MAX_ROUNDS];
    double rw[MAX_ROUNDS], rr[MAX_ROUNDS], rs[MAX_ROUNDS];
    job j = {&o, "", 0, 0};
    char raw[4200];
    snprintf(raw, sizeof raw, "%s/ckpt-bench-raw", o.dir);
    for (int k = 0; k < o.rounds; k++) {
        if (disk(raw, bytes, buf, &dw[k], &dr[k]) != 0)
            return fprintf(stderr, "ckpt: %s: cannot write or read it back\n", raw), 1;
        snprintf(j.folder, sizeof j.folder, "%s/ckpt-bench-%d", o.dir, k);
        if (dt_ckpt_make_dir(j.folder) != DT_OK)
            return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
        dt_launch_opts lo;
        dt_launch_opts_init(&lo);
        lo.nranks = o.ranks, lo.backend = DT_BACKEND_THREAD, lo.timeout_s = 600;
        if (dt_launch(&lo, rank_fn, &j) != DT_OK)
            return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
        cw[k] = j.write_s, cr[k] = j.read_s;
        double t0 = dt_now();
        memcpy(copy, buf, bytes);
        sn[k] = dt_now() - t0;
        rw[k] = dw[k] / cw[k], rr[k] = dr[k] / cr[k], rs[k] = sn[k] / cw[k];
        char p[4300];
        for (int r = 0; r < o.ranks; r++) {
            dt_ckpt_shard_path(p, sizeof p, j.folder, r);
            unlink(p);
        }
        dt_ckpt_manifest_path(p, sizeof p, j.folder);
        unlink(p);
        rmdir(j.folder);
    }
    double MB = bytes / 1e6;
    printf("state %d MiB over %d shards, %d rounds (medians), folder %s\n", o.mib, o.ranks,
           o.rounds, o.dir);
    printf("disk write, sequential + fsync   %9.1f MB/s\n", MB / median(dw, o.rounds));
    printf("checkpoint write (commit)        %9.1f MB/s   %.3f of the disk's (per round)\n",
           MB / median(cw, o.rounds), median(rw, o.rounds));
    printf("disk read, page cache dropped    %9.1f MB/s\n", MB / median(dr, o.rounds));
    printf("checkpoint read (CRC checked)    %9.1f MB/s   %.3f of the disk's (per round)\n",
           MB / median(cr, o.rounds), median(rr, o.rounds));
    printf("snapshot (memcpy of the state)   %9.4f s      %.4f of the synchronous save's "
           "time\n", median(sn, o.rounds), median(rs, o.rounds));
    free(buf), free(copy);
    return 0;
}
