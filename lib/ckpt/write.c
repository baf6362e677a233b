/* write.c - writing a checkpoint file, and committing it atomically.
 *
 * Records stream straight to PATH.tmp as they are put (a state larger
 * than memory is never copied whole); each record's CRC is computed on the
 * way, and the file's checksum chains those CRCs (dt/ckpt.h, the format).
 * The commit:
 *
 *   write the trailer -> fsync(file) -> close -> rename(PATH.tmp, PATH) -> fsync(folder)
 *
 * fsync before the rename: otherwise the rename can reach the disk before
 * the data, and a crash leaves PATH naming a file of zeros or holes (ext4's
 * delayed allocation did exactly that). fsync of the folder after: the
 * rename is a change of the folder, and only that makes it durable. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct dt_ckpt_writer {
    int fd;
    char *path, *tmp;
    uint64_t offset;    /* bytes written */
    uint64_t records;
    uint32_t chain;     /* the file's checksum so far: the header, the records' CRCs */
    int failed;
    char **names;       /* of the records put, for duplicates */
    size_t cap;
};

static const unsigned char zeros[8];

/* Writes all n bytes (write may take fewer; EINTR is retried). */
static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        c += w, n -= (size_t)w;
    }
    return 0;
}

/* The folder of path ("." when it has none) into out. */
static void folder_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static dt_result fsync_folder(const char *path)
{
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) != 0) {
        dt_result r = dt_fail(DT_ERR_IO, "%s: fsync of its folder %s: %s", path, dir,
                              strerror(errno));
        if (fd >= 0)
            close(fd);
        return r;
    }
    close(fd);
    return DT_OK;
}

/* fsync, close, rename tmp over path, fsync the folder. Closes fd. */
static dt_result publish(int fd, const char *tmp, const char *path)
{
    const char *what = fsync(fd) != 0 ? "fsync" : NULL;
    int err = errno;
    if (close(fd) != 0 && !what)
        what = "close", err = errno;
    if (!what && rename(tmp, path) != 0)
        what = "rename", err = errno;
    if (what) {
        unlink(tmp);
        return dt_fail(DT_ERR_IO, "%s: %s: %s", path, what, strerror(err));
    }
    return fsync_folder(path);
}

static char *tmp_name(const char *path)
{
    size_t n = strlen(path);
    char *t = malloc(n + 5);
    if (t)
        memcpy(t, path, n), memcpy(t + n, ".tmp", 5);
    return t;
}

dt_result dt_ckpt_write_atomic(const char *path, const void *data, size_t bytes)
{
    if (!path || !*path || (!data && bytes))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_write_atomic: %s",
                       !path || !*path ? "no path" : "NULL data");
    char *tmp = tmp_name(path);
    if (!tmp)
        return dt_fail(DT_ERR_NOMEM, "%s: its temporary name", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || write_all(fd, data, bytes) != 0) {
        dt_result r = dt_fail(DT_ERR_IO, "%s: %s: %s", path, fd < 0 ? "open" : "write",
                              strerror(errno));
        if (fd >= 0)
            close(fd), unlink(tmp);
        free(tmp);
        return r;
    }
    dt_result r = publish(fd, tmp, path);
    free(tmp);
    return r;
}

dt_result dt_ckpt_make_dir(const char *dir)
{
    struct stat st;
    if (!dir || !*dir)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_make_dir: no folder");
    if (mkdir(dir, 0777) != 0 && (errno != EEXIST || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        return dt_fail(DT_ERR_IO, "%s: mkdir: %s", dir,
                       errno == EEXIST ? "exists and is not a folder" : strerror(errno));
    return fsync_folder(dir);
}

/* ---------------------------------------------------------------- the writer */

static void writer_free(dt_ckpt_writer *w)
{
    for (uint64_t i = 0; i < w->records; i++)
        free(w->names[i]);
    free(w->names), free(w->path), free(w->tmp);
    free(w);
}

void dt_ckpt_abort(dt_ckpt_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0)
        close(w->fd), unlink(w->tmp);
    writer_free(w);
}

static dt_result write_failed(dt_ckpt_writer *w, const char *record)
{
    w->failed = 1;
    if (record)
        return dt_fail(DT_ERR_IO, "%s: record \"%s\": write: %s", w->path, record, strerror(errno));
    return dt_fail(DT_ERR_IO, "%s: write: %s", w->path, strerror(errno));
}

dt_result dt_ckpt_create(dt_ckpt_writer **out, const char *path, dt_ckpt_kind kind, int rank,
                         int ranks)
{
    if (!out || !path || !*path)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_create: %s", out ? "no path" : "NULL out");
    *out = NULL;
    if ((kind != DT_CKPT_SHARD && kind != DT_CKPT_MANIFEST) || ranks < 1 ||
        (kind == DT_CKPT_SHARD && (rank < 0 || rank >= ranks)))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a %s of rank %d of %d ranks", path,
                       kind == DT_CKPT_SHARD ? "shard" : kind == DT_CKPT_MANIFEST ? "manifest"
                       : "file of unknown kind", rank, ranks);
    dt_ckpt_writer *w = calloc(1, sizeof *w);
    if (w)
        w->fd = -1, w->path = strdup(path), w->tmp = tmp_name(path);
    if (!w || !w->path || !w->tmp) {
        if (w)
            writer_free(w);
        return dt_fail(DT_ERR_NOMEM, "%s: the writer", path);
    }
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (w->fd < 0) {
        dt_result r = dt_fail(DT_ERR_IO, "%s: open: %s", w->tmp, strerror(errno));
        writer_free(w);
        return r;
    }
    unsigned char h[CKPT_HEADER];
    memcpy(h, CKPT_MAGIC, 8);
    ckpt_put32(h + 8, CKPT_VERSION);
    ckpt_put32(h + 12, (uint32_t)kind);
    ckpt_put32(h + 16, kind == DT_CKPT_SHARD ? (uint32_t)rank : CKPT_NO_RANK);
    ckpt_put32(h + 20, (uint32_t)ranks);
    ckpt_put32(h + 24, 0);
    ckpt_put32(h + 28, dt_crc32c(0, h, 28));
    if (write_all(w->fd, h, sizeof h) != 0) {
        dt_result r = write_failed(w, NULL);
        dt_ckpt_abort(w);
        return r;
    }
    w->offset = sizeof h;
    w->chain = dt_crc32c(0, h, sizeof h);
    *out = w;
    return DT_OK;
}

dt_result ckpt_check_record(const char *path, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, const void *data, size_t *bytes)
{
    size_t len = strlen(name), count;
    if (!ckpt_name_ok(name, len))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%.300s\": a name is 1 to %d characters "
                       "of printable ASCII, no space", path, name, DT_CKPT_MAX_NAME);
    if (!ckpt_shape_bytes(type, ndim, shape, &count, bytes))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\": type %d, %d dimensions (types "
                       "1 .. 10, 0 .. %d dimensions, at most 2^62 bytes)", path, name,
                       (int)type, ndim, DT_CKPT_MAX_DIMS);
    if (!data && count)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\": NULL data for %zu elements",
                       path, name, count);
    return DT_OK;
}

static dt_result check_record(dt_ckpt_writer *w, const char *name, dt_ckpt_type type, int ndim,
                              const size_t *shape, const void *data, size_t *bytes)
{
    dt_result r = ckpt_check_record(w->path, name, type, ndim, shape, data, bytes);
    if (r != DT_OK)
        return r; /* its message as it is: the file and the record */
    for (uint64_t i = 0; i < w->records; i++)
        if (!strcmp(w->names[i], name))
            return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" twice (records %llu and %llu)",
                           w->path, name, (unsigned long long)i, (unsigned long long)w->records);
    return DT_OK;
}

dt_result dt_ckpt_put(dt_ckpt_writer *w, const char *name, dt_ckpt_type type, int ndim,
                      const size_t *shape, const void *data)
{
    if (!w || !name)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_put: NULL %s", w ? "name" : "writer");
    if (w->failed)
        return dt_fail(DT_ERR_STATE, "%s: record \"%s\": an earlier write failed", w->path, name);
    size_t bytes, len = strlen(name);
    DT_CHECK(check_record(w, name, type, ndim, shape, data, &bytes));
    if (w->records == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 16;
        char **names = realloc(w->names, cap * sizeof *names);
        if (!names)
            return dt_fail(DT_ERR_NOMEM, "%s: record \"%s\"", w->path, name);
        w->names = names, w->cap = cap;
    }
    /* the fixed part, the shape, the name and its padding: at most 352 bytes */
    unsigned char head[CKPT_RECORD + 8 * DT_CKPT_MAX_DIMS + 256] = {0};
    size_t n = CKPT_RECORD;
    ckpt_put32(head, (uint32_t)len);
    ckpt_put16(head + 4, (uint16_t)type);
    ckpt_put16(head + 6, (uint16_t)ndim);
    ckpt_put64(head + 8, bytes);
    for (int i = 0; i < ndim; i++, n += 8)
        ckpt_put64(head + n, shape[i]);
    memcpy(head + n, name, len);
    n += ckpt_pad8(len);
    size_t pad = ckpt_pad8(bytes) - bytes;
    unsigned char tail[16] = {0};
    uint32_t crc = dt_crc32c(dt_crc32c(dt_crc32c(0, head, n), data, bytes), zeros, pad);
    ckpt_put32(tail + pad, crc);
    if (write_all(w->fd, head, n) != 0 || (bytes && write_all(w->fd, data, bytes) != 0) ||
        write_all(w->fd, tail, pad + 8) != 0)
        return write_failed(w, name);
    if (!(w->names[w->records] = strdup(name))) {
        w->failed = 1;
        return dt_fail(DT_ERR_NOMEM, "%s: record \"%s\"", w->path, name);
    }
    w->records++;
    w->offset += n + bytes + pad + 8;
    w->chain = dt_crc32c(w->chain, tail + pad, 4);
    return DT_OK;
}

dt_result dt_ckpt_commit(dt_ckpt_writer *w, dt_ckpt_file_info *info)
{
    if (!w)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_commit: NULL writer");
    if (w->failed) {
        dt_result r = dt_fail(DT_ERR_STATE, "%s: not committed: an earlier write failed",
                              w->path);
        dt_ckpt_abort(w);
        return r;
    }
    unsigned char t[CKPT_TRAILER] = {0};
    uint64_t size = w->offset + sizeof t;
    memcpy(t, CKPT_END_MAGIC, 8);
    ckpt_put64(t + 8, w->records);
    ckpt_put64(t + 16, size);
    uint32_t sum = dt_crc32c(w->chain, t, 24);
    ckpt_put32(t + 24, sum);
    if (write_all(w->fd, t, sizeof t) != 0) {
        dt_result r = write_failed(w, NULL);
        dt_ckpt_abort(w);
        return r;
    }
    int fd = w->fd;
    w->fd = -1; /* publish closes it, and removes the temporary file on failure */
    dt_result r = publish(fd, w->tmp, w->path);
    if (r == DT_OK && info)
        info->bytes = size, info->checksum = sum;
    writer_free(w);
    return r;
}
