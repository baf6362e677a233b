/* format.h - what the writer and the reader of checkpoint files share:
 * the layout's constants (dt/ckpt.h documents the format byte by byte),
 * little-endian fields, and the checks of names and shapes. Not a public
 * header. */
#ifndef DT_CKPT_FORMAT_H
#define DT_CKPT_FORMAT_H

#include "dt/ckpt.h"

#include <string.h>

/* shapes and sizes are u64 in a file and size_t in memory: the same here */
_Static_assert(sizeof(size_t) == 8, "dt/ckpt.h needs a 64-bit size_t");

#define CKPT_MAGIC "DTCKPT\r\n"
#define CKPT_END_MAGIC "DTCKEND\n"
#define CKPT_NO_RANK 0xFFFFFFFFu

enum {
    CKPT_VERSION = 1,
    CKPT_HEADER = 32,  /* bytes */
    CKPT_TRAILER = 32,
    CKPT_RECORD = 16,  /* a record's fixed part, before its shape */
};

static inline void ckpt_put16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void ckpt_put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void ckpt_put64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t ckpt_get16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ckpt_get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ckpt_get64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* n rounded up to a multiple of 8 */
static inline uint64_t ckpt_pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* 1 when name is 1 .. 255 bytes of ASCII 0x21 .. 0x7E. */
int ckpt_name_ok(const char *name, size_t len);

/* *count = the product of shape[0 .. ndim) (1 for ndim 0) and *bytes =
 * count x the type's size; 0 when the type or ndim is bad or the product
 * overflows 2^63 bytes. */
int ckpt_shape_bytes(dt_ckpt_type type, int ndim, const size_t *shape, size_t *count,
                     size_t *bytes);

/* DT_OK when a record called name of type, shape and data may be written
 * into the file at path (a good name, type and shape, data for its
 * elements); else DT_ERR_INVALID_ARG naming both. *bytes := its data's
 * size. Duplicates are the caller's to find. */
dt_result ckpt_check_record(const char *path, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, const void *data, size_t *bytes);

/* An asynchronous save's file being snapshotted (async.c): io.c's
 * visits put records into it instead of a writer, and its end hands it to
 * the saver's thread (queue) or drops it. */
typedef struct ckpt_snap ckpt_snap;
dt_result ckpt_snap_new(ckpt_snap **f, dt_ckpt_saver *s, const char *path, dt_ckpt_kind kind,
                        int rank, int ranks, int table);
dt_result ckpt_snap_put(ckpt_snap *f, const char *name, dt_ckpt_type type, int ndim,
                        const size_t *shape, const void *data);
dt_result ckpt_snap_queue(ckpt_snap *f); /* takes f, queued or not */
void ckpt_snap_drop(ckpt_snap *f);       /* NULL is ignored */

/* "f32 [3, 4]" (a scalar: "f32 scalar") into out. */
void ckpt_describe(char *out, size_t cap, dt_ckpt_type type, int ndim, const size_t *shape);

/* DT_OK when rec (the reader's record called name; NULL: it has none) is
 * of type and shape; else DT_ERR_INVALID_ARG naming the file, the record,
 * what it is and what was expected. */
dt_result ckpt_match(const dt_ckpt_reader *r, const dt_ckpt_record *rec, const char *name,
                     dt_ckpt_type type, int ndim, const size_t *shape);

#endif /* DT_CKPT_FORMAT_H */
