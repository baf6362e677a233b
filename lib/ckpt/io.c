/* io.c - a state saved and loaded by one function (dt_ckpt_io), the
 * manifest, and the paths of a checkpoint folder.
 *
 * Saving, a visit is dt_ckpt_put. Loading, the reader has checked the
 * whole file already; a visit checks its record's type and shape and
 * queues (record, destination); dt_ckpt_io_end checks that no record of
 * the file went unvisited and only then copies the queue. That is what
 * makes a load all or nothing: no destination is written before every
 * check of every record has passed. */
#include "format.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 16 };

typedef struct {
    const dt_ckpt_record *rec;
    void *dst;
} pending;

struct dt_ckpt_io {
    int loading;
    dt_result err;                 /* the first failure: it sticks */
    dt_ckpt_writer *w;             /* saving */
    ckpt_snap *snap;               /* saving asynchronously (async.c) */
    dt_ckpt_reader *r;             /* loading */
    unsigned char *visited;        /* loading: per record of r */
    pending *todo;
    size_t num_todo, cap_todo;
    char prefix[DT_CKPT_MAX_NAME + 1];
    size_t len;                    /* of prefix */
    size_t stack[MAX_DEPTH];       /* len before each push */
    int depth;
};

/* ---------------------------------------------------------------- paths */

dt_result dt_ckpt_shard_path(char *out, size_t cap, const char *dir, int rank)
{
    if (!out || !dir || rank < 0 || rank > 99999)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_shard_path: %s",
                       !out || !dir ? "NULL argument" : "rank out of 0 .. 99999");
    int n = snprintf(out, cap, "%s/rank-%05d.dtck", dir, rank);
    if (n < 0 || (size_t)n >= cap)
        return dt_fail(DT_ERR_INVALID_ARG, "%s/rank-%05d.dtck: longer than %zu bytes", dir, rank,
                       cap);
    return DT_OK;
}

dt_result dt_ckpt_manifest_path(char *out, size_t cap, const char *dir)
{
    if (!out || !dir)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_manifest_path: NULL argument");
    int n = snprintf(out, cap, "%s/manifest.dtck", dir);
    if (n < 0 || (size_t)n >= cap)
        return dt_fail(DT_ERR_INVALID_ARG, "%s/manifest.dtck: longer than %zu bytes", dir, cap);
    return DT_OK;
}

/* ---------------------------------------------------------------- begin, end */

static dt_result io_new(dt_ckpt_io **out, int loading)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return dt_fail(DT_ERR_NOMEM, "dt_ckpt_io");
    (*out)->loading = loading;
    return DT_OK;
}

static void io_free(dt_ckpt_io *io)
{
    dt_ckpt_abort(io->w);
    ckpt_snap_drop(io->snap);
    dt_ckpt_close(io->r);
    free(io->visited), free(io->todo);
    free(io);
}

dt_result dt_ckpt_io_save(dt_ckpt_io **io, const char *path, dt_ckpt_kind kind, int rank,
                          int ranks)
{
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_save: NULL io");
    *io = NULL;
    dt_ckpt_io *s;
    DT_CHECK(io_new(&s, 0));
    dt_result r = dt_ckpt_create(&s->w, path, kind, rank, ranks);
    if (r != DT_OK) {
        io_free(s);
        return r;
    }
    *io = s;
    return DT_OK;
}

/* A file of s's save: visits snapshot its records (async.c). */
static dt_result save_async(dt_ckpt_io **io, dt_ckpt_saver *s, const char *path,
                            dt_ckpt_kind kind, int rank, int ranks, int table)
{
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_save_async: NULL io");
    *io = NULL;
    dt_ckpt_io *a;
    DT_CHECK(io_new(&a, 0));
    dt_result r = ckpt_snap_new(&a->snap, s, path, kind, rank, ranks, table);
    if (r != DT_OK) {
        io_free(a);
        return r;
    }
    *io = a;
    return DT_OK;
}

dt_result dt_ckpt_io_save_async(dt_ckpt_io **io, dt_ckpt_saver *s, const char *path,
                                dt_ckpt_kind kind, int rank, int ranks)
{
    return save_async(io, s, path, kind, rank, ranks, 0);
}

dt_result dt_ckpt_io_save_manifest_async(dt_ckpt_io **io, dt_ckpt_saver *s, const char *dir,
                                         int ranks)
{
    char path[4096];
    if (io)
        *io = NULL;
    DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
    return save_async(io, s, path, DT_CKPT_MANIFEST, -1, ranks, 1);
}

dt_result dt_ckpt_io_load(dt_ckpt_io **io, const char *path, dt_ckpt_kind kind, int rank,
                          int ranks)
{
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_load: NULL io");
    *io = NULL;
    dt_ckpt_io *s;
    DT_CHECK(io_new(&s, 1));
    dt_result r = dt_ckpt_open(&s->r, path);
    if (r == DT_OK)
        r = dt_ckpt_expect_header(s->r, kind, rank, ranks);
    if (r == DT_OK) {
        int n = dt_ckpt_reader_header(s->r)->records;
        if (!(s->visited = calloc((size_t)n + 1, 1)))
            r = dt_fail(DT_ERR_NOMEM, "%s: %d records", path, n);
    }
    if (r != DT_OK) {
        io_free(s);
        return r;
    }
    *io = s;
    return DT_OK;
}

int dt_ckpt_io_loading(const dt_ckpt_io *io) { return io && io->loading; }
const dt_ckpt_reader *dt_ckpt_io_reader(const dt_ckpt_io *io) { return io ? io->r : NULL; }

/* Every record of the file visited, then every copy made. */
static dt_result finish_load(dt_ckpt_io *io)
{
    const dt_ckpt_header *h = dt_ckpt_reader_header(io->r);
    for (int i = 0; i < h->records; i++)
        if (!io->visited[i])
            return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" is not part of this state "
                           "(a checkpoint of another configuration?)",
                           dt_ckpt_reader_path(io->r), dt_ckpt_record_at(io->r, i)->name);
    for (size_t i = 0; i < io->num_todo; i++)
        memcpy(io->todo[i].dst, io->todo[i].rec->data, io->todo[i].rec->bytes);
    return DT_OK;
}

dt_result dt_ckpt_io_end(dt_ckpt_io *io, dt_result status, dt_ckpt_file_info *info)
{
    if (!io)
        return status != DT_OK ? status : dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_end: NULL io");
    dt_result r = io->err != DT_OK ? io->err : status;
    if (r == DT_OK && io->loading)
        r = finish_load(io);
    if (r == DT_OK && io->snap) {
        r = ckpt_snap_queue(io->snap); /* the persist's own result is the saver's wait's */
        io->snap = NULL;
    } else if (r == DT_OK && !io->loading) {
        r = dt_ckpt_commit(io->w, info);
        io->w = NULL; /* commit freed it */
    }
    io_free(io);
    return r;
}

/* ---------------------------------------------------------------- names */

dt_result dt_ckpt_io_push(dt_ckpt_io *io, const char *part)
{
    if (!io || !part)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_push: NULL %s", io ? "part" : "io");
    if (io->err != DT_OK)
        return io->err;
    size_t n = strlen(part);
    if (io->depth == MAX_DEPTH || io->len + n + 1 > DT_CKPT_MAX_NAME)
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "checkpoint: the prefix \"%s\" + \"%s.\" is "
                                 "too long or too deep", io->prefix, part);
    io->stack[io->depth++] = io->len;
    memcpy(io->prefix + io->len, part, n);
    io->prefix[io->len + n] = '.';
    io->len += n + 1;
    io->prefix[io->len] = '\0';
    return DT_OK;
}

void dt_ckpt_io_pop(dt_ckpt_io *io)
{
    if (io && io->depth > 0) {
        io->len = io->stack[--io->depth];
        io->prefix[io->len] = '\0';
    }
}

/* The full name of a visit into out (DT_CKPT_MAX_NAME + 1 bytes). */
static dt_result full_name(dt_ckpt_io *io, const char *name, char *out)
{
    size_t n = name ? strlen(name) : 0;
    if (!name || io->len + n > DT_CKPT_MAX_NAME)
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "checkpoint: record \"%s%.100s\": %s",
                                 io->prefix, name ? name : "", name ? "name too long" : "NULL name");
    memcpy(out, io->prefix, io->len);
    memcpy(out + io->len, name, n + 1);
    return DT_OK;
}

/* Loading: the file's record called name, checked against type and shape
 * and marked visited (a second visit is a bug of the state function). */
static dt_result take(dt_ckpt_io *io, const char *name, dt_ckpt_type type, int ndim,
                      const size_t *shape, const dt_ckpt_record **out)
{
    const dt_ckpt_record *rec = dt_ckpt_find(io->r, name);
    dt_result r = ckpt_match(io->r, rec, name, type, ndim, shape);
    if (r != DT_OK)
        return io->err = r;
    int i = (int)(rec - dt_ckpt_record_at(io->r, 0));
    if (io->visited[i])
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" visited twice by one "
                                 "state", dt_ckpt_reader_path(io->r), name);
    io->visited[i] = 1;
    *out = rec;
    return DT_OK;
}

/* ---------------------------------------------------------------- visits */

dt_result dt_ckpt_io_record(dt_ckpt_io *io, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, void *data)
{
    char full[DT_CKPT_MAX_NAME + 1];
    const dt_ckpt_record *rec;
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_record: NULL io");
    if (io->err != DT_OK)
        return io->err;
    DT_CHECK(full_name(io, name, full));
    if (!io->loading) {
        dt_result r = io->snap ? ckpt_snap_put(io->snap, full, type, ndim, shape, data)
                               : dt_ckpt_put(io->w, full, type, ndim, shape, data);
        return r == DT_OK ? DT_OK : (io->err = r);
    }
    size_t count, bytes;
    if (!ckpt_shape_bytes(type, ndim, shape, &count, &bytes) || (!data && count))
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\": a bad type, shape or "
                                 "NULL data", dt_ckpt_reader_path(io->r), full);
    DT_CHECK(take(io, full, type, ndim, shape, &rec));
    if (!bytes)
        return DT_OK;
    if (io->num_todo == io->cap_todo) {
        size_t cap = io->cap_todo ? 2 * io->cap_todo : 16;
        pending *p = realloc(io->todo, cap * sizeof *p);
        if (!p)
            return io->err = dt_fail(DT_ERR_NOMEM, "checkpoint: %zu records", cap);
        io->todo = p, io->cap_todo = cap;
    }
    io->todo[io->num_todo++] = (pending){rec, data};
    return DT_OK;
}

dt_result dt_ckpt_io_f32(dt_ckpt_io *io, const char *name, float *data, size_t count)
{
    return dt_ckpt_io_record(io, name, DT_CKPT_F32, 1, &count, data);
}

_Static_assert(sizeof(long) == 8, "dt_ckpt_io_long stores a long as i64");

dt_result dt_ckpt_io_long(dt_ckpt_io *io, const char *name, long *v)
{
    return dt_ckpt_io_record(io, name, DT_CKPT_I64, 0, NULL, v);
}

dt_result dt_ckpt_io_u64(dt_ckpt_io *io, const char *name, uint64_t *v)
{
    return dt_ckpt_io_record(io, name, DT_CKPT_U64, 0, NULL, v);
}

/* dt_rng is three uint64_t in a row: one u64 [3] record */
_Static_assert(sizeof(dt_rng) == 24 && offsetof(dt_rng, stream) == 8 &&
               offsetof(dt_rng, counter) == 16, "dt_rng's layout");

dt_result dt_ckpt_io_rng(dt_ckpt_io *io, const char *name, dt_rng *rng)
{
    size_t three = 3;
    return dt_ckpt_io_record(io, name, DT_CKPT_U64, 1, &three, rng);
}

dt_result dt_ckpt_io_expect(dt_ckpt_io *io, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, const void *value)
{
    char full[DT_CKPT_MAX_NAME + 1];
    const dt_ckpt_record *rec;
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_expect: NULL io");
    if (io->err != DT_OK)
        return io->err;
    DT_CHECK(full_name(io, name, full));
    if (!io->loading)
        return dt_ckpt_io_record(io, name, type, ndim, shape, (void *)(uintptr_t)value);
    size_t count, bytes, size = dt_ckpt_type_size(type);
    if (!ckpt_shape_bytes(type, ndim, shape, &count, &bytes) || (!value && count))
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\": a bad type, shape or "
                                 "NULL value", dt_ckpt_reader_path(io->r), full);
    rec = dt_ckpt_find(io->r, full);
    if (rec && type == DT_CKPT_U8 && ndim == 1 && rec->type == DT_CKPT_U8 && rec->ndim == 1 &&
        (rec->bytes != bytes || memcmp(rec->data, value, bytes))) /* a string */
        return io->err = dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" is \"%.*s\"; this run "
                                 "has \"%.*s\"", dt_ckpt_reader_path(io->r), full,
                                 (int)(rec->bytes < 200 ? rec->bytes : 200),
                                 (const char *)rec->data, (int)(bytes < 200 ? bytes : 200),
                                 (const char *)value);
    DT_CHECK(take(io, full, type, ndim, shape, &rec));
    if (!bytes || !memcmp(rec->data, value, bytes))
        return DT_OK;
    size_t i = 0;
    while (!memcmp((const char *)rec->data + i * size, (const char *)value + i * size, size))
        i++;
    return io->err = dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" differs from this run's, "
                             "first at element %zu of %zu", dt_ckpt_reader_path(io->r), full, i,
                             count);
}

dt_result dt_ckpt_io_expect_str(dt_ckpt_io *io, const char *name, const char *value)
{
    size_t n = value ? strlen(value) : 0;
    return dt_ckpt_io_expect(io, name, DT_CKPT_U8, 1, &n, value);
}

/* ---------------------------------------------------------------- the manifest */

dt_result dt_ckpt_io_save_manifest(dt_ckpt_io **io, const char *dir, int ranks,
                                   const dt_ckpt_file_info *shards)
{
    char path[4096];
    if (!io || !shards || ranks < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_save_manifest: %s",
                       ranks < 1 ? "no ranks" : "NULL argument");
    *io = NULL;
    DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
    size_t n = (size_t)ranks;
    uint64_t *bytes = malloc(n * sizeof *bytes);
    uint32_t *sums = malloc(n * sizeof *sums);
    dt_result r = bytes && sums ? DT_OK : dt_fail(DT_ERR_NOMEM, "%s: %d shards", path, ranks);
    for (size_t i = 0; r == DT_OK && i < n; i++)
        bytes[i] = shards[i].bytes, sums[i] = shards[i].checksum;
    if (r == DT_OK)
        r = dt_ckpt_io_save(io, path, DT_CKPT_MANIFEST, -1, ranks);
    if (r == DT_OK)
        r = dt_ckpt_io_record(*io, "shards.bytes", DT_CKPT_U64, 1, &n, bytes);
    if (r == DT_OK)
        r = dt_ckpt_io_record(*io, "shards.checksum", DT_CKPT_U32, 1, &n, sums);
    free(bytes), free(sums);
    if (r != DT_OK && *io) {
        dt_ckpt_io_end(*io, r, NULL);
        *io = NULL;
    }
    return r;
}

dt_result dt_ckpt_io_load_manifest(dt_ckpt_io **io, const char *dir, int ranks)
{
    char path[4096];
    const dt_ckpt_record *rec;
    if (!io)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_io_load_manifest: NULL io");
    *io = NULL;
    DT_CHECK(dt_ckpt_manifest_path(path, sizeof path, dir));
    DT_CHECK(dt_ckpt_io_load(io, path, DT_CKPT_MANIFEST, -1, ranks));
    size_t n = (size_t)dt_ckpt_reader_header((*io)->r)->ranks;
    dt_result r = take(*io, "shards.bytes", DT_CKPT_U64, 1, &n, &rec);
    if (r == DT_OK)
        r = take(*io, "shards.checksum", DT_CKPT_U32, 1, &n, &rec);
    if (r != DT_OK) {
        dt_ckpt_io_end(*io, r, NULL);
        *io = NULL;
    }
    return r;
}
