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
 *   stall        a training loop on one rank (an sgemm of G x G x G a
 *                step, and a write into the state) in intervals of E
 *                steps, cycling through three kinds: no save, a
 *                synchronous save of the S bytes of state (a shard, the
 *                manifest, "latest": dt_ckpt_io_save), the same save
 *                asynchronously (dt_ckpt_saver). The async stall is the
 *                time an interval with an async save takes beyond one
 *                without, against the synchronous save's own time (issue
 *                31's target: below 0.10); N cycles a round
 *
 *   ckpt [--dir DIR] [--mib S] [--ranks K] [--rounds R] [--gemm G]
 *        [--every E] [--saves N]
 *
 * Prints the median over rounds of each and the ratios, each round's
 * figures measured back to back (the disk's speed drifts between runs). */
#include "dt/ckpt.h"
#include "dt/cli.h"
#include "dt/comm.h"
#include "dt/tensor.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ROUNDS = 31, CHUNK = 1 << 20 };

typedef struct {
    const char *dir;
    int mib, ranks, rounds, gemm, every, saves;
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

/* ---------------------------------------------------------------- the stall */

typedef struct {
    const options *o;
    float *state, *a, *b, *c;
    size_t n;
    long step;
    dt_ckpt_saver *saver;
    char folder[4096], latest[4200];
} trainer;

/* One rank's checkpoint of the state at its step: a shard, the manifest, "latest". */
static dt_result save_sync(trainer *t)
{
    char path[4200];
    dt_ckpt_io *io;
    dt_ckpt_file_info info;
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, t->folder, 0));
    DT_CHECK(dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, 0, 1));
    DT_CHECK(dt_ckpt_io_end(io, dt_ckpt_io_f32(io, "state", t->state, t->n), &info));
    DT_CHECK(dt_ckpt_io_save_manifest(&io, t->folder, 1, &info));
    DT_CHECK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &t->step), NULL));
    return dt_ckpt_write_atomic(t->latest, "ckpt-stall", 10);
}

/* The same files, asynchronously: returns after the snapshot. */
static dt_result save_async(trainer *t)
{
    char path[4200];
    dt_ckpt_io *io;
    DT_CHECK(dt_ckpt_saver_begin(t->saver, 600));
    DT_CHECK(dt_ckpt_shard_path(path, sizeof path, t->folder, 0));
    DT_CHECK(dt_ckpt_io_save_async(&io, t->saver, path, DT_CKPT_SHARD, 0, 1));
    DT_CHECK(dt_ckpt_io_end(io, dt_ckpt_io_f32(io, "state", t->state, t->n), NULL));
    DT_CHECK(dt_ckpt_io_save_manifest_async(&io, t->saver, t->folder, 1));
    DT_CHECK(dt_ckpt_io_end(io, dt_ckpt_io_long(io, "step", &t->step), NULL));
    return dt_ckpt_saver_write_atomic(t->saver, t->latest, "ckpt-stall", 10);
}

/* An interval of the loop: a save (mode 0 none, 1 synchronous, 2
 * asynchronous), then E training steps; an asynchronous save is waited
 * for at the interval's end, so that its persist is charged to its own
 * interval (the wait is stall too when the persist outlasts the steps). */
typedef struct {
    double wall, cpu;  /* the interval's, and the training thread's own CPU time */
    double call, wait; /* the save's call; the async persist left at the end */
} interval;

static dt_result run_interval(trainer *t, int mode, interval *out)
{
    size_t G = (size_t)t->o->gemm;
    double t0 = dt_now(), cpu0 = dt_thread_cpu();
    if (mode)
        DT_CHECK(mode == 1 ? save_sync(t) : save_async(t));
    out->call = dt_now() - t0;
    for (int i = 0; i < t->o->every; i++, t->step++) {
        DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, G, G, G, 1.0f, t->a, G, t->b, G, 0.0f, t->c,
                          G));
        t->state[(size_t)t->step * 4099 % t->n] = t->c[(size_t)t->step % (G * G)]; /* the update */
    }
    double w0 = dt_now();
    if (mode == 2)
        DT_CHECK(dt_ckpt_saver_wait(t->saver, 600));
    out->wait = dt_now() - w0;
    out->wall = dt_now() - t0;
    out->cpu = dt_thread_cpu() - cpu0;
    return DT_OK;
}

static void remove_checkpoint(const char *folder, int ranks)
{
    char p[4300];
    for (int r = 0; r < ranks; r++) {
        dt_ckpt_shard_path(p, sizeof p, folder, r);
        unlink(p);
    }
    dt_ckpt_manifest_path(p, sizeof p, folder);
    unlink(p);
    rmdir(folder);
}

enum { MAX_CYCLES = 64 * MAX_ROUNDS };

/* N cycles a round, each an interval of every mode, adjacent in time (a
 * load that drifts moves all three alike), the first mode rotating. The
 * stall of cycle c, as issue 31 measures it:
 *     stall_c = (wall_async - wall_none) / call_sync
 * the loop time an asynchronous save adds, over a synchronous save's. */
static int stall(const options *o, size_t bytes)
{
    trainer t = {.o = o, .n = bytes / sizeof(float)};
    size_t G = (size_t)o->gemm;
    t.state = dt_mem_alloc(DT_MEM_PARAM, bytes);
    t.a = dt_mem_alloc(DT_MEM_ACT, G * G * sizeof(float));
    t.b = dt_mem_alloc(DT_MEM_ACT, G * G * sizeof(float));
    t.c = dt_mem_alloc(DT_MEM_ACT, G * G * sizeof(float));
    if (!t.state || !t.a || !t.b || !t.c)
        return fprintf(stderr, "ckpt: out of memory for the training loop\n"), 1;
    for (size_t i = 0; i < G * G; i++)
        t.a[i] = (float)(i % 7) * 0.1f, t.b[i] = (float)(i % 5) * 0.01f;
    for (size_t i = 0; i < t.n; i++)
        t.state[i] = (float)(i % 1000) * 0.001f;
    snprintf(t.folder, sizeof t.folder, "%s/ckpt-stall", o->dir);
    snprintf(t.latest, sizeof t.latest, "%s/ckpt-stall-latest", o->dir);
    if (dt_ckpt_make_dir(t.folder) != DT_OK || dt_ckpt_saver_create(&t.saver) != DT_OK)
        return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
    static double none[MAX_CYCLES], sync_add[MAX_CYCLES], sync_call[MAX_CYCLES];
    static double async_add[MAX_CYCLES], async_call[MAX_CYCLES], async_wait[MAX_CYCLES];
    static double ratio[MAX_CYCLES], cpu_sync[MAX_CYCLES], cpu_async[MAX_CYCLES];
    int cycles = o->rounds * o->saves;
    interval warm; /* one of each first: the saver's snapshot memory mapped, caches warm */
    for (int mode = 0; mode < 3; mode++)
        if (run_interval(&t, mode, &warm) != DT_OK)
            return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
    for (int c = 0; c < cycles; c++) {
        interval iv[3];
        for (int i = 0; i < 3; i++)
            if (run_interval(&t, (c + i) % 3, &iv[(c + i) % 3]) != DT_OK)
                return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
        none[c] = iv[0].wall;
        sync_add[c] = iv[1].wall - iv[0].wall, sync_call[c] = iv[1].call;
        async_add[c] = iv[2].wall - iv[0].wall, async_call[c] = iv[2].call;
        async_wait[c] = iv[2].wait;
        cpu_sync[c] = iv[1].cpu - iv[0].cpu, cpu_async[c] = iv[2].cpu - iv[0].cpu;
        ratio[c] = async_add[c] / sync_call[c];
    }
    dt_result r = dt_ckpt_saver_destroy(t.saver, 600);
    remove_checkpoint(t.folder, 1);
    unlink(t.latest);
    if (r != DT_OK)
        return fprintf(stderr, "ckpt: %s\n", dt_last_error()), 1;
    size_t n = (size_t)cycles;
    printf("training loop: sgemm %d x %d x %d a step (%s), an interval of %d steps %.3f s; "
           "%d cycles (medians) of 3 intervals: none, a synchronous save, an asynchronous save "
           "(%d MiB: 1 shard, manifest, latest)\n", o->gemm, o->gemm, o->gemm,
           dt_blas_available() ? "OpenBLAS, 1 thread" : "built-in kernel", o->every,
           dt_median(none, n), cycles, o->mib);
    printf("synchronous save: its call       %9.3f s   the interval's time added %+.3f s\n",
           dt_median(sync_call, n), dt_median(sync_add, n));
    printf("asynchronous save: its call      %9.4f s   the interval's time added %+.3f s "
           "(persist left at the interval's end %.4f s)\n", dt_median(async_call, n),
           dt_median(async_add, n), dt_median(async_wait, n));
    printf("async stall / sync save          %9.4f       (median of per-cycle ratios; the "
           "target < 0.10)\n", dt_median(ratio, n));
    printf("the training thread's own CPU time added: synchronous %.3f s, asynchronous %.4f s "
           "(the snapshot)\n", dt_median(cpu_sync, n), dt_median(cpu_async, n));
    printf("note: the persist's thread (CRC32C, write, fsync) shares the %ld cores with the "
           "loop: under load its CPU time is stall\n", sysconf(_SC_NPROCESSORS_ONLN));
    dt_mem_free(t.state), dt_mem_free(t.a), dt_mem_free(t.b), dt_mem_free(t.c);
    return 0;
}

int main(int argc, char **argv)
{
    options o = {"build", 256, 4, 5, 1024, 40, 3};
    const dt_opt opts[] = {
        {"--dir", DT_OPT_DIR, &o.dir, .help = "a folder on the disk to measure"},
        {"--mib", DT_OPT_INT, &o.mib, .help = "bytes of state, MiB", .lo = 1, .hi = 65536},
        {"--ranks", DT_OPT_INT, &o.ranks, .help = "shards (thread ranks)", .lo = 1, .hi = 64},
        {"--rounds", DT_OPT_INT, &o.rounds, .help = "rounds (medians)", .lo = 1,
         .hi = MAX_ROUNDS},
        {"--gemm", DT_OPT_INT, &o.gemm, .help = "the training step's sgemm size G", .lo = 16,
         .hi = 8192},
        {"--every", DT_OPT_INT, &o.every, .help = "steps an interval of the training loop",
         .lo = 1, .hi = 100000},
        {"--saves", DT_OPT_INT, &o.saves, .help = "cycles of the training loop a round",
         .lo = 1, .hi = 64},
    };
    dt_cli cli = {.prog = "ckpt", .opts = opts, .nopts = 7,
                  .about = "A sharded checkpoint's write and read bandwidth against the "
                           "disk's own, the snapshot an asynchronous save stops for, and "
                           "the stall it adds to a training loop."};
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
        remove_checkpoint(j.folder, o.ranks);
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
    return stall(&o, bytes);
}
