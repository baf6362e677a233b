/* read.c - reading a checkpoint file: all of it into memory, all of it
 * checked before the caller sees a byte.
 *
 * The order of the checks makes each error say the most useful thing:
 *   1. the header: magic, its CRC, version, kind, rank, flags;
 *   2. the trailer, found at the end: a file cut short (or never
 *      committed) has none there, which names the problem before any
 *      record is read;
 *   3. each record: its layout within the records' span, then its CRC,
 *      which names the record whose bytes changed;
 *   4. the count and the file's checksum of the trailer.
 * A caller copies out of the reader's memory only what passed, so a
 * failed check never reaches its buffers. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct dt_ckpt_reader {
    char *path;
    unsigned char *buf;    /* the file, tag OTHER */
    size_t size;
    dt_ckpt_header h;
    dt_ckpt_record *recs;
    char *names;           /* each record's name, NUL-terminated, one after another */
};

void dt_ckpt_close(dt_ckpt_reader *r)
{
    if (!r)
        return;
    dt_mem_free(r->buf);
    free(r->recs), free(r->names), free(r->path);
    free(r);
}

const char *dt_ckpt_reader_path(const dt_ckpt_reader *r) { return r ? r->path : NULL; }
const dt_ckpt_header *dt_ckpt_reader_header(const dt_ckpt_reader *r) { return r ? &r->h : NULL; }

const dt_ckpt_record *dt_ckpt_record_at(const dt_ckpt_reader *r, int i)
{
    return r && i >= 0 && i < r->h.records ? &r->recs[i] : NULL;
}

const dt_ckpt_record *dt_ckpt_find(const dt_ckpt_reader *r, const char *name)
{
    for (int i = 0; r && name && i < r->h.records; i++)
        if (!strcmp(r->recs[i].name, name))
            return &r->recs[i];
    return NULL;
}

/* ---------------------------------------------------------------- the checks */

static dt_result corrupt(const dt_ckpt_reader *r, const char *fmt, const char *what,
                         unsigned long long a, unsigned long long b)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, what, a, b);
    return dt_fail(DT_ERR_INVALID_ARG, "%s: %s", r->path, msg);
}

static dt_result check_header(dt_ckpt_reader *r)
{
    const unsigned char *h = r->buf;
    if (r->size < CKPT_HEADER || memcmp(h, CKPT_MAGIC, 8) != 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: not a checkpoint file (%s)", r->path,
                       r->size < 8 ? "shorter than its magic" :
                       !memcmp(h, "DTCKPT", 6) ? "its line ends were rewritten" :
                       "its first bytes are not \"DTCKPT\\r\\n\"");
    if (ckpt_get32(h + 28) != dt_crc32c(0, h, 28))
        return corrupt(r, "the %s's checksum is %08llx, its bytes give %08llx: corrupt",
                       "header", ckpt_get32(h + 28), dt_crc32c(0, h, 28));
    uint32_t version = ckpt_get32(h + 8), kind = ckpt_get32(h + 12), rank = ckpt_get32(h + 16);
    uint32_t ranks = ckpt_get32(h + 20), flags = ckpt_get32(h + 24);
    if (version != CKPT_VERSION)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: format version %u; this libdt reads version %d",
                       r->path, version, CKPT_VERSION);
    if ((kind != DT_CKPT_SHARD && kind != DT_CKPT_MANIFEST) || flags != 0 || ranks < 1 ||
        ranks > INT32_MAX ||
        (kind == DT_CKPT_SHARD ? rank >= ranks : rank != CKPT_NO_RANK))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: header of kind %u, rank %u of %u, flags %u: "
                       "not a valid version-1 header", r->path, kind, rank, ranks, flags);
    r->h.kind = (dt_ckpt_kind)kind;
    r->h.rank = kind == DT_CKPT_SHARD ? (int)rank : -1;
    r->h.ranks = (int)ranks;
    return DT_OK;
}

static dt_result check_trailer(dt_ckpt_reader *r, uint64_t *records)
{
    const unsigned char *t = r->buf + r->size - CKPT_TRAILER;
    if (r->size < CKPT_HEADER + CKPT_TRAILER || memcmp(t, CKPT_END_MAGIC, 8) != 0)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: truncated: its %zu bytes do not end with a "
                       "trailer (\"DTCKEND\\n\"): cut short, extended, or never committed", r->path,
                       r->size);
    if (ckpt_get64(t + 16) != r->size)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: truncated or extended: the trailer says %llu "
                       "bytes, the file has %zu", r->path,
                       (unsigned long long)ckpt_get64(t + 16), r->size);
    *records = ckpt_get64(t + 8);
    /* every record takes at least 32 bytes: the fixed part, a padded name, its CRC */
    if (*records > (r->size - CKPT_HEADER - CKPT_TRAILER) / 32)
        return corrupt(r, "the %s says %llu records; %llu bytes cannot hold them: corrupt",
                       "trailer", *records, r->size);
    return DT_OK;
}

/* Record i at *off (before end, where the trailer starts): its layout and
 * CRC; *off moves past it and *crc gets its CRC. */
static dt_result check_record(dt_ckpt_reader *r, int i, size_t *off, size_t end, size_t *names,
                              uint32_t *crc)
{
    const unsigned char *p = r->buf + *off;
    dt_ckpt_record *rec = &r->recs[i];
    size_t at = *off, left = end - at;
    if (left < CKPT_RECORD)
        return corrupt(r, "%s %llu (at byte %llu): the records end inside it: corrupt", "record",
                       (unsigned long long)i, at);
    uint32_t len = ckpt_get32(p);
    int ndim = ckpt_get16(p + 6);
    rec->type = (dt_ckpt_type)ckpt_get16(p + 4);
    rec->ndim = ndim;
    size_t fixed = CKPT_RECORD + 8 * (size_t)(ndim <= DT_CKPT_MAX_DIMS ? ndim : 0);
    if (len < 1 || len > DT_CKPT_MAX_NAME || ndim > DT_CKPT_MAX_DIMS || left < fixed + ckpt_pad8(len))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d (at byte %zu): a name of %u bytes, %d "
                       "dimensions, in the %zu bytes left: corrupt", r->path, i, at, len, ndim,
                       left);
    for (int d = 0; d < ndim; d++)
        rec->shape[d] = ckpt_get64(p + CKPT_RECORD + 8 * (size_t)d);
    memcpy(r->names + *names, p + fixed, len);
    r->names[*names + len] = '\0';
    rec->name = (const char *)(uintptr_t)*names; /* an offset until every name is in */
    const char *name = r->names + *names;
    *names += len + 1;
    uint64_t bytes = ckpt_get64(p + 8);
    if (!ckpt_name_ok(name, len) ||
        !ckpt_shape_bytes(rec->type, ndim, rec->shape, &rec->count, &rec->bytes) ||
        rec->bytes != bytes)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d (\"%.*s\"): type %d, %d dimensions, "
                       "%llu bytes do not agree: corrupt", r->path, i, (int)len, name,
                       (int)rec->type, ndim, (unsigned long long)bytes);
    size_t data = fixed + ckpt_pad8(len), whole = data + ckpt_pad8(bytes) + 8;
    if (bytes > left || whole > left)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d (\"%s\"): %llu bytes of data, %zu "
                       "bytes left before the trailer: corrupt", r->path, i, name,
                       (unsigned long long)bytes, left - data);
    *crc = dt_crc32c(0, p, whole - 8);
    if (ckpt_get32(p + whole - 8) != *crc)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: record %d (\"%s\"): checksum %08x stored, "
                       "%08x computed: its bytes changed", r->path, i, name,
                       ckpt_get32(p + whole - 8), *crc);
    rec->data = p + data;
    *off += whole;
    return DT_OK;
}

/* Room for record i and its name (the tables grow as records are read: a
 * count in a corrupt trailer never sizes an allocation). */
static dt_result grow(dt_ckpt_reader *r, uint64_t i, size_t names, size_t *cap, size_t *names_cap)
{
    if (i == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        dt_ckpt_record *recs = realloc(r->recs, c * sizeof *recs);
        if (!recs)
            return dt_fail(DT_ERR_NOMEM, "%s: a table of %zu records", r->path, c);
        memset(recs + *cap, 0, (c - *cap) * sizeof *recs);
        r->recs = recs, *cap = c;
    }
    if (names + DT_CKPT_MAX_NAME + 1 > *names_cap) {
        size_t c = 2 * *names_cap + DT_CKPT_MAX_NAME + 1;
        char *n = realloc(r->names, c);
        if (!n)
            return dt_fail(DT_ERR_NOMEM, "%s: record names", r->path);
        r->names = n, *names_cap = c;
    }
    return DT_OK;
}

static dt_result check_records(dt_ckpt_reader *r, uint64_t records)
{
    size_t off = CKPT_HEADER, end = r->size - CKPT_TRAILER, names = 0, cap = 0, names_cap = 0;
    uint32_t chain = dt_crc32c(0, r->buf, CKPT_HEADER);
    for (uint64_t i = 0; i < records; i++) {
        uint32_t crc = 0;
        unsigned char le[4];
        DT_CHECK(grow(r, i, names, &cap, &names_cap));
        DT_CHECK(check_record(r, (int)i, &off, end, &names, &crc));
        ckpt_put32(le, crc);
        chain = dt_crc32c(chain, le, 4);
    }
    for (uint64_t i = 0; i < records; i++)
        r->recs[i].name = r->names + (uintptr_t)r->recs[i].name;
    if (off != end)
        return corrupt(r, "%s: %llu records end at byte %llu, before the trailer: corrupt",
                       "records", records, off);
    const unsigned char *t = r->buf + end;
    if (ckpt_get32(t + 24) != dt_crc32c(chain, t, 24))
        return corrupt(r, "the %s's checksum is %08llx, the file gives %08llx: corrupt",
                       "trailer", ckpt_get32(t + 24), dt_crc32c(chain, t, 24));
    for (uint64_t i = 0; i < records; i++) /* names are few: each against the later ones */
        for (uint64_t j = i + 1; j < records; j++)
            if (!strcmp(r->recs[i].name, r->recs[j].name))
                return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" twice (records %llu and "
                               "%llu): corrupt", r->path, r->recs[i].name,
                               (unsigned long long)i, (unsigned long long)j);
    r->h.records = (int)records;
    r->h.file.bytes = r->size;
    r->h.file.checksum = ckpt_get32(t + 24);
    return DT_OK;
}

/* ---------------------------------------------------------------- open */

static dt_result read_file(dt_ckpt_reader *r)
{
    int fd = open(r->path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        dt_result res = dt_fail(DT_ERR_IO, "%s: %s", r->path,
                                fd >= 0 && !S_ISREG(st.st_mode) ? "not a regular file"
                                                                : strerror(errno));
        if (fd >= 0)
            close(fd);
        return res;
    }
    r->size = (size_t)st.st_size;
    if (r->size < CKPT_HEADER + CKPT_TRAILER) {
        close(fd);
        return dt_fail(DT_ERR_INVALID_ARG, "%s: truncated: %zu bytes, less than a header and "
                       "a trailer (%d)", r->path, r->size, CKPT_HEADER + CKPT_TRAILER);
    }
    if (!(r->buf = dt_mem_alloc(DT_MEM_OTHER, r->size))) {
        close(fd);
        return dt_fail(DT_ERR_NOMEM, "%s: %zu bytes", r->path, r->size);
    }
    size_t got = 0;
    while (got < r->size) {
        ssize_t n = read(fd, r->buf + got, r->size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* shorter than fstat said: it shrank while we read */
            dt_result res = dt_fail(n < 0 ? DT_ERR_IO : DT_ERR_INVALID_ARG, "%s: read: %s",
                                    r->path, n < 0 ? strerror(errno)
                                                   : "the file shrank while it was read");
            close(fd);
            return res;
        }
        got += (size_t)n;
    }
    close(fd);
    return DT_OK;
}

dt_result dt_ckpt_open(dt_ckpt_reader **out, const char *path)
{
    if (!out || !path || !*path)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_open: %s", out ? "no path" : "NULL out");
    *out = NULL;
    dt_ckpt_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) {
        free(r);
        return dt_fail(DT_ERR_NOMEM, "%s: the reader", path);
    }
    uint64_t records = 0;
    dt_result res = read_file(r);
    if (res == DT_OK)
        res = check_header(r);
    if (res == DT_OK)
        res = check_trailer(r, &records);
    if (res == DT_OK)
        res = check_records(r, records);
    if (res != DT_OK) {
        dt_ckpt_close(r);
        return res;
    }
    *out = r;
    return DT_OK;
}

/* ---------------------------------------------------------------- questions */

static const char *kind_name(int kind)
{
    return kind == DT_CKPT_SHARD ? "shard" : kind == DT_CKPT_MANIFEST ? "manifest" : "?";
}

dt_result dt_ckpt_expect_header(const dt_ckpt_reader *r, dt_ckpt_kind kind, int rank, int ranks)
{
    if (!r)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_expect_header: NULL reader");
    const dt_ckpt_header *h = &r->h;
    if (h->kind != kind)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: a %s, expected a %s", r->path,
                       kind_name(h->kind), kind_name(kind));
    if ((ranks >= 0 && h->ranks != ranks) || (kind == DT_CKPT_SHARD && rank >= 0 && h->rank != rank))
        return dt_fail(DT_ERR_INVALID_ARG, "%s: written by rank %d of %d ranks; this is rank %d "
                       "of %d", r->path, h->rank, h->ranks, rank, ranks);
    return DT_OK;
}

dt_result dt_ckpt_verify(const dt_ckpt_reader *r, const dt_ckpt_file_info *want)
{
    if (!r || !want)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_verify: NULL %s", r ? "want" : "reader");
    if (r->h.file.bytes != want->bytes || r->h.file.checksum != want->checksum)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: checksum %08x, %llu bytes; the manifest lists "
                       "%08x, %llu bytes: a file of another checkpoint", r->path,
                       r->h.file.checksum, (unsigned long long)r->h.file.bytes, want->checksum,
                       (unsigned long long)want->bytes);
    return DT_OK;
}

dt_result ckpt_match(const dt_ckpt_reader *r, const dt_ckpt_record *rec, const char *name,
                     dt_ckpt_type type, int ndim, const size_t *shape)
{
    char want[160], have[160];
    int same = rec && rec->type == type && rec->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = rec->shape[d] == shape[d];
    if (same)
        return DT_OK;
    ckpt_describe(want, sizeof want, type, ndim, shape);
    if (!rec)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: no record \"%s\" (expected %s)", r->path, name,
                       want);
    ckpt_describe(have, sizeof have, rec->type, rec->ndim, rec->shape);
    return dt_fail(DT_ERR_INVALID_ARG, "%s: record \"%s\" is %s; expected %s", r->path, name,
                   have, want);
}

dt_result dt_ckpt_get(const dt_ckpt_reader *r, const char *name, dt_ckpt_type type, int ndim,
                      const size_t *shape, void *out)
{
    if (!r || !name || ndim < 0 || ndim > DT_CKPT_MAX_DIMS || (ndim && !shape))
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_get: %s", !r ? "NULL reader" :
                       !name ? "NULL name" : "a bad shape");
    const dt_ckpt_record *rec = dt_ckpt_find(r, name);
    dt_result res = ckpt_match(r, rec, name, type, ndim, shape);
    if (res != DT_OK) /* its message names the file and the record: no trace before it */
        return res;
    if (rec->bytes && !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_get: %s: NULL out", name);
    if (rec->bytes)
        memcpy(out, rec->data, rec->bytes);
    return DT_OK;
}

dt_result dt_ckpt_manifest_shard(const dt_ckpt_reader *m, int rank, dt_ckpt_file_info *out)
{
    if (!m || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_ckpt_manifest_shard: NULL %s", m ? "out" : "reader");
    DT_CHECK(dt_ckpt_expect_header(m, DT_CKPT_MANIFEST, -1, -1));
    size_t n = (size_t)m->h.ranks;
    if (rank < 0 || (size_t)rank >= n)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: no shard of rank %d (%zu ranks)", m->path, rank, n);
    const dt_ckpt_record *bytes = dt_ckpt_find(m, "shards.bytes");
    const dt_ckpt_record *sums = dt_ckpt_find(m, "shards.checksum");
    DT_CHECK(ckpt_match(m, bytes, "shards.bytes", DT_CKPT_U64, 1, &n));
    DT_CHECK(ckpt_match(m, sums, "shards.checksum", DT_CKPT_U32, 1, &n));
    out->bytes = ckpt_get64((const unsigned char *)bytes->data + 8 * (size_t)rank);
    out->checksum = ckpt_get32((const unsigned char *)sums->data + 4 * (size_t)rank);
    return DT_OK;
}
