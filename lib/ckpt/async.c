/* async.c - the asynchronous save: a snapshot into the saver's memory,
 * then a persist on the saver's thread through the same writer as a
 * synchronous save (write.c: dt_ckpt_create, dt_ckpt_put, dt_ckpt_commit).
 *
 * Training stops only for the snapshot (chapter 14, section 7):
 *
 *   stall = T(loop with async saves) - T(loop without)  ~ snapshot = S / memcpy bandwidth
 *
 * instead of the synchronous save's S / disk bandwidth + fsyncs. The
 * thread persists the save's files one at a time in the order queued,
 * each committed (fsync, rename, the folder's fsync) before the next is
 * opened; the first failure skips the rest, so a "latest" queued last is
 * moved only once every file before it is durable: the commit protocol of
 * section 5, unchanged.
 *
 * Who touches what: the caller's thread alone makes snapshots, and takes
 * and returns the memory pool; the saver's thread only reads a queued
 * file and writes its info. The lock orders the two (a file is complete
 * before it is queued, its info written before `next` passes it). */
#include "format.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char name[DT_CKPT_MAX_NAME + 1];
    dt_ckpt_type type;
    int ndim;
    size_t shape[DT_CKPT_MAX_DIMS];
    size_t bytes;
    void *data;             /* a block of the pool (dt_mem_alloc); NULL for 0 bytes */
} snap_rec;

struct ckpt_snap {
    dt_ckpt_saver *s;
    char *path;
    dt_ckpt_kind kind;
    int rank, ranks;
    int table;              /* a manifest: the shard table from the save's shards */
    int pointer;            /* dt_ckpt_write_atomic of recs[0] */
    snap_rec *recs;
    size_t n, cap;
    dt_ckpt_file_info info; /* the thread's, once committed */
};

enum { SAVE_IDLE, SAVE_OPEN, SAVE_SEALED }; /* sealed: in flight, taking no more files */

struct dt_ckpt_saver {
    pthread_mutex_t mu;
    pthread_cond_t work, done; /* done: on the monotonic clock, for the waits' deadlines */
    pthread_t thread;
    int stop, state;
    ckpt_snap **files;      /* the save's, in the order queued */
    size_t nfiles, cap, next; /* files[0 .. next) persisted or skipped */
    dt_result err;          /* the save's first failure, and its message */
    char why[1024];
    void **pool;            /* the blocks of the last save, by visit: the caller's */
    size_t npool, used;     /* used: visits of this save */
    dt_ckpt_file_info *infos; /* of the last save that succeeded */
    size_t ninfos;
};

/* ---------------------------------------------------------------- the persist (the thread) */

/* The shard table of f (a manifest) from the save's shards before it. */
static dt_result shard_table(dt_ckpt_saver *s, const ckpt_snap *f, uint64_t *bytes,
                             uint32_t *sums)
{
    for (size_t i = 0; i < s->next; i++) {
        const ckpt_snap *g = s->files[i];
        if (g->kind == DT_CKPT_SHARD && !g->pointer && g->ranks == f->ranks)
            bytes[g->rank] = g->info.bytes, sums[g->rank] = g->info.checksum;
    }
    return DT_OK;
}

/* Writes and commits f; bytes and sums: a manifest's shard table. */
static dt_result persist(ckpt_snap *f, const uint64_t *bytes, const uint32_t *sums)
{
    if (f->pointer)
        return dt_ckpt_write_atomic(f->path, f->recs[0].data, f->recs[0].bytes);
    dt_ckpt_writer *w;
    dt_result r = dt_ckpt_create(&w, f->path, f->kind, f->rank, f->ranks);
    if (r != DT_OK)
        return r; /* the writer's message, naming the file, is what the wait returns */
    size_t n = (size_t)f->ranks;
    if (f->table) /* first, as dt_ckpt_io_save_manifest writes them */
        r = dt_ckpt_put(w, "shards.bytes", DT_CKPT_U64, 1, &n, bytes);
    if (r == DT_OK && f->table)
        r = dt_ckpt_put(w, "shards.checksum", DT_CKPT_U32, 1, &n, sums);
    for (size_t i = 0; r == DT_OK && i < f->n; i++) {
        const snap_rec *c = &f->recs[i];
        r = dt_ckpt_put(w, c->name, c->type, c->ndim, c->shape, c->data);
    }
    if (r != DT_OK) {
        dt_ckpt_abort(w);
        return r;
    }
    return dt_ckpt_commit(w, &f->info);
}

static void *saver_thread(void *arg)
{
    dt_ckpt_saver *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && s->next == s->nfiles)
            pthread_cond_wait(&s->work, &s->mu);
        if (s->next == s->nfiles)
            break; /* stopped, and nothing left */
        ckpt_snap *f = s->files[s->next];
        dt_result r = s->err; /* a failure before: this file is skipped */
        uint64_t *bytes = NULL;
        uint32_t *sums = NULL;
        if (r == DT_OK && f->table) {
            bytes = calloc((size_t)f->ranks, sizeof *bytes);
            sums = calloc((size_t)f->ranks, sizeof *sums);
            r = bytes && sums ? shard_table(s, f, bytes, sums)
                              : dt_fail(DT_ERR_NOMEM, "%s: %d shards", f->path, f->ranks);
        }
        if (r == DT_OK) {
            pthread_mutex_unlock(&s->mu);
            r = persist(f, bytes, sums);
            pthread_mutex_lock(&s->mu);
        }
        free(bytes), free(sums);
        if (r != DT_OK && s->err == DT_OK) {
            s->err = r;
            snprintf(s->why, sizeof s->why, "%s", dt_last_error());
        }
        s->next++;
        pthread_cond_broadcast(&s->done);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---------------------------------------------------------------- the saver */

dt_result dt_ckpt_saver_create(dt_ckpt_saver **out)
{
    if (!out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_saver_create: NULL out");
    *out = NULL;
    dt_ckpt_saver *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(DT_ERR_NOMEM, "dt_ckpt_saver_create");
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->done, &ca);
    pthread_condattr_destroy(&ca);
    int e = pthread_create(&s->thread, NULL, saver_thread, s);
    if (e) {
        pthread_cond_destroy(&s->done), pthread_cond_destroy(&s->work);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return dt_fail(DT_ERR_NOMEM, "dt_ckpt_saver_create: its thread: %s", strerror(e));
    }
    *out = s;
    return DT_OK;
}

static void snap_free(ckpt_snap *f, dt_ckpt_saver *keep_blocks)
{
    for (size_t i = 0; i < f->n; i++) {
        if (!keep_blocks || !f->recs[i].data) {
            dt_mem_free(f->recs[i].data);
            continue;
        }
        dt_ckpt_saver *s = keep_blocks; /* back to the pool, in visit order */
        void **p = realloc(s->pool, (s->npool + 1) * sizeof *p);
        if (!p) {
            dt_mem_free(f->recs[i].data);
            continue;
        }
        s->pool = p;
        s->pool[s->npool++] = f->recs[i].data;
    }
    free(f->recs), free(f->path), free(f);
}

/* The save is over: its infos kept when it succeeded, its blocks pooled
 * for the next (the pool's unused blocks freed first). Under the lock, the
 * thread idle. */
static void end_save(dt_ckpt_saver *s)
{
    for (size_t i = 0; i < s->npool; i++)
        dt_mem_free(s->pool[i]);
    s->npool = 0;
    free(s->infos);
    s->infos = s->err == DT_OK && s->nfiles ? malloc(s->nfiles * sizeof *s->infos) : NULL;
    s->ninfos = s->infos ? s->nfiles : 0;
    for (size_t i = 0; i < s->nfiles; i++) {
        if (s->infos)
            s->infos[i] = s->files[i]->info;
        snap_free(s->files[i], s);
    }
    s->nfiles = s->next = 0;
    s->state = SAVE_IDLE;
}

dt_result dt_ckpt_saver_wait(dt_ckpt_saver *s, double timeout_s)
{
    if (!s || !(timeout_s >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_saver_wait: %s",
                       s ? "a timeout is >= 0 seconds" : "NULL saver");
    struct timespec dl;
    double t = timeout_s < 1e9 ? timeout_s : 1e9, whole = floor(t);
    clock_gettime(CLOCK_MONOTONIC, &dl);
    dl.tv_sec += (time_t)whole;
    dl.tv_nsec += (long)((t - whole) * 1e9);
    if (dl.tv_nsec >= 1000000000L)
        dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&s->mu);
    if (s->state == SAVE_IDLE) {
        pthread_mutex_unlock(&s->mu);
        return dt_fail(DT_ERR_STATE, "dt_ckpt_saver_wait: no save begun");
    }
    s->state = SAVE_SEALED;
    int e = 0;
    while (s->next < s->nfiles && e != ETIMEDOUT)
        e = pthread_cond_timedwait(&s->done, &s->mu, &dl);
    if (s->next < s->nfiles) {
        size_t next = s->next, n = s->nfiles;
        const char *path = s->files[next]->path;
        dt_result r = dt_fail(DT_ERR_TIMEOUT, "checkpoint save: %zu of %zu files persisted after "
                              "%g s, %s being written; the save goes on", next, n, timeout_s,
                              path);
        pthread_mutex_unlock(&s->mu);
        return r;
    }
    dt_result r = s->err;
    char why[sizeof s->why];
    memcpy(why, s->why, sizeof why);
    s->err = DT_OK;
    end_save(s);
    pthread_mutex_unlock(&s->mu);
    return r == DT_OK ? DT_OK : dt_fail(r, "%s", why);
}

dt_result dt_ckpt_saver_begin(dt_ckpt_saver *s, double timeout_s)
{
    if (!s)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_saver_begin: NULL saver");
    pthread_mutex_lock(&s->mu);
    int busy = s->state != SAVE_IDLE;
    pthread_mutex_unlock(&s->mu);
    dt_result r = busy ? dt_ckpt_saver_wait(s, timeout_s) : DT_OK;
    if (r != DT_OK)
        return r; /* the save before: its failure, or still running */
    s->state = SAVE_OPEN; /* the thread reads state never; the caller alone writes it now */
    s->used = 0;
    return DT_OK;
}

dt_result dt_ckpt_saver_info(const dt_ckpt_saver *s, int i, dt_ckpt_file_info *out)
{
    if (!s || !out || i < 0 || (size_t)i >= s->ninfos)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_saver_info: %s",
                       !s || !out ? "NULL argument" : "no such file in the last save that "
                       "succeeded");
    *out = s->infos[i];
    return DT_OK;
}

dt_result dt_ckpt_saver_destroy(dt_ckpt_saver *s, double timeout_s)
{
    if (!s)
        return DT_OK;
    dt_result r = DT_OK;
    if (s->state != SAVE_IDLE && (r = dt_ckpt_saver_wait(s, timeout_s)) == DT_ERR_TIMEOUT)
        return r;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    for (size_t i = 0; i < s->npool; i++)
        dt_mem_free(s->pool[i]);
    free(s->pool), free(s->files), free(s->infos);
    pthread_cond_destroy(&s->done), pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return r;
}

/* ---------------------------------------------------------------- snapshots (the caller) */

static dt_result open_save(dt_ckpt_saver *s, const char *what)
{
    if (!s)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL saver", what);
    if (s->state != SAVE_OPEN)
        return dt_fail(DT_ERR_STATE, "%s: %s", what, s->state == SAVE_IDLE
                       ? "no save begun (dt_ckpt_saver_begin)"
                       : "the save is in flight and takes no more files; wait for it, then "
                         "begin the next");
    return DT_OK;
}

/* Is shard `rank` of `ranks` queued in this save, and how often? */
static int shards_queued(dt_ckpt_saver *s, int rank, int ranks)
{
    int n = 0;
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->nfiles; i++)
        n += s->files[i]->kind == DT_CKPT_SHARD && !s->files[i]->pointer &&
             s->files[i]->ranks == ranks && s->files[i]->rank == rank;
    pthread_mutex_unlock(&s->mu);
    return n;
}

dt_result ckpt_snap_new(ckpt_snap **out, dt_ckpt_saver *s, const char *path, dt_ckpt_kind kind,
                        int rank, int ranks, int table)
{
    *out = NULL;
    DT_CHECK(open_save(s, "dt_ckpt_io_save_async"));
    if (!path || !*path)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_save_async: no path");
    if ((kind != DT_CKPT_SHARD && kind != DT_CKPT_MANIFEST) || ranks < 1 ||
        (kind == DT_CKPT_SHARD && (rank < 0 || rank >= ranks)))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a %s of rank %d of %d ranks", path,
                       kind == DT_CKPT_SHARD ? "shard" : kind == DT_CKPT_MANIFEST ? "manifest"
                       : "file of unknown kind", rank, ranks);
    for (int k = 0; table && k < ranks; k++) {
        int n = shards_queued(s, k, ranks);
        if (n != 1)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: the save has queued shard %d of %d ranks "
                           "%d times; its manifest lists each shard once", path, k, ranks, n);
    }
    ckpt_snap *f = calloc(1, sizeof *f);
    if (f)
        f->path = strdup(path);
    if (!f || !f->path) {
        free(f);
        return dt_fail(DT_ERR_NOMEM, "%s: the snapshot", path);
    }
    f->s = s, f->kind = kind, f->rank = kind == DT_CKPT_SHARD ? rank : -1, f->ranks = ranks;
    f->table = table;
    *out = f;
    return DT_OK;
}

/* A block of bytes for the next visit: the last save's block of the same
 * visit when it has the size (mapped and charged already), else a new one. */
static void *take_block(dt_ckpt_saver *s, size_t bytes)
{
    size_t k = s->used++;
    if (k < s->npool && s->pool[k] && dt_mem_size(s->pool[k]) == bytes) {
        void *b = s->pool[k];
        s->pool[k] = NULL;
        return b;
    }
    return dt_mem_alloc(DT_MEM_OTHER, bytes);
}

dt_result ckpt_snap_put(ckpt_snap *f, const char *name, dt_ckpt_type type, int ndim,
                        const size_t *shape, const void *data)
{
    size_t bytes;
    dt_result r = ckpt_check_record(f->path, name, type, ndim, shape, data, &bytes);
    if (r != DT_OK)
        return r;
    int dup = f->table && (!strcmp(name, "shards.bytes") || !strcmp(name, "shards.checksum"));
    for (size_t i = 0; !dup && i < f->n; i++)
        dup = !strcmp(f->recs[i].name, name);
    if (dup)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" twice", f->path, name);
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        snap_rec *p = realloc(f->recs, cap * sizeof *p);
        if (!p)
            return dt_fail(DT_ERR_NOMEM, "%s: record \"%s\"", f->path, name);
        f->recs = p, f->cap = cap;
    }
    snap_rec *c = &f->recs[f->n];
    memset(c, 0, sizeof *c);
    memcpy(c->name, name, strlen(name) + 1);
    c->type = type, c->ndim = ndim, c->bytes = bytes;
    if (ndim > 0)
        memcpy(c->shape, shape, (size_t)ndim * sizeof *shape);
    if (bytes) {
        if (!(c->data = take_block(f->s, bytes)))
            return dt_fail(DT_ERR_NOMEM, "%s: record \"%s\": a snapshot of %zu bytes", f->path,
                           name, bytes);
        memcpy(c->data, data, bytes); /* the snapshot: all that training waits for */
    }
    f->n++;
    return DT_OK;
}

void ckpt_snap_drop(ckpt_snap *f)
{
    if (f)
        snap_free(f, NULL);
}

dt_result ckpt_snap_queue(ckpt_snap *f)
{
    dt_ckpt_saver *s = f->s;
    dt_result r = open_save(s, f->path);
    pthread_mutex_lock(&s->mu);
    if (r == DT_OK && s->nfiles == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 8;
        ckpt_snap **p = realloc(s->files, cap * sizeof *p);
        if (p)
            s->files = p, s->cap = cap;
        else
            r = dt_fail(DT_ERR_NOMEM, "%s: queued", f->path);
    }
    if (r == DT_OK) {
        s->files[s->nfiles++] = f;
        pthread_cond_signal(&s->work);
    }
    pthread_mutex_unlock(&s->mu);
    if (r != DT_OK)
        ckpt_snap_drop(f);
    return r;
}

dt_result dt_ckpt_saver_write_atomic(dt_ckpt_saver *s, const char *path, const void *data,
                                     size_t bytes)
{
    ckpt_snap *f;
    size_t n = bytes;
    if (!data && bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_saver_write_atomic: NULL data");
    DT_CHECK(ckpt_snap_new(&f, s, path, DT_CKPT_SHARD, 0, 1, 0));
    f->pointer = 1;
    dt_result r = ckpt_snap_put(f, "pointer", DT_CKPT_U8, 1, &n, data);
    if (r != DT_OK) {
        ckpt_snap_drop(f);
        return r;
    }
    return ckpt_snap_queue(f);
}
