/* dt/ckpt.h - checkpoints: named records of bytes with their type and
 * shape, one file per rank plus a manifest, each record checksummed, every
 * file written atomically. Uses only core; the layers above describe their
 * own state with it (optim, data, train: dt_train_state).
 *
 * "Checkpoint" means this in libdt: saved training state. Activation
 * checkpointing (chapter 11) is called recompute here (dt_sim_recompute_*).
 *
 * ================================================================ the format
 * Version 1. Every integer is little-endian; offsets are in bytes. A file
 * is a header, records, a trailer:
 *
 *   header (32 bytes)
 *     0   8  magic: 44 54 43 4B 50 54 0D 0A ("DTCKPT\r\n": a text-mode copy
 *            that rewrites line ends is caught at once)
 *     8   4  u32 version: 1
 *     12  4  u32 kind: 1 a rank's shard, 2 a manifest
 *     16  4  u32 rank: the shard's rank, 0 .. ranks-1; FF FF FF FF in a manifest
 *     20  4  u32 ranks: the world size the checkpoint was written by, >= 1
 *     24  4  u32 flags: 0 (a reader refuses any other value)
 *     28  4  u32 CRC32C of bytes 0 .. 27
 *
 *   a record, at an offset that is a multiple of 8 (the first at 32)
 *     0   4  u32 L: the name's length, 1 .. 255
 *     4   2  u16 the element type (below)
 *     6   2  u16 ndim, 0 .. 8 (0: a scalar, one element)
 *     8   8  u64 D: the data's bytes, the product of the shape times the
 *            element's size
 *     16  8 ndim  u64 shape[0 .. ndim), the outermost first
 *     then       the name, L bytes of ASCII 0x21 .. 0x7E (no space, no NUL),
 *                and 0 bytes up to a multiple of 8
 *     then       the data, D bytes: the elements in row-major order, each
 *                little-endian; and 0 bytes up to a multiple of 8
 *     then   4  u32 CRC32C of every byte of the record before it (from its
 *                offset 0 through the data's padding)
 *            4  u32 0
 *   Names are unique within a file.
 *
 *   trailer (32 bytes), the last 32 bytes of the file
 *     0   8  magic: 44 54 43 4B 45 4E 44 0A ("DTCKEND\n")
 *     8   8  u64 the number of records
 *     16  8  u64 the file's size, the trailer included
 *     24  4  u32 the file's checksum: CRC32C of the header's 32 bytes, then
 *            each record's CRC (4 bytes each, in order), then bytes 0 .. 23
 *            of the trailer
 *     28  4  u32 0
 *
 *   element types (u16 codes; size in bytes)
 *     1 f32 (4)   2 f64 (8)   3 f16 (2)   4 bf16 (2)   5 i8 (1)
 *     6 u8 (1)    7 i32 (4)   8 u32 (4)   9 i64 (8)   10 u64 (8)
 *
 * The checksum is CRC32C (Castagnoli, the iSCSI/ext4 polynomial 0x1EDC6F41,
 * reflected 0x82F63B78, initial value and final xor FFFFFFFF): its value
 * for the 9 bytes "123456789" is E3069283. Each byte of a file goes
 * through it once (the file's checksum only chains the records' CRCs), and
 * it finds every error of up to 32 consecutive bits.
 *
 * A checkpoint folder DIR holds DIR/rank-00000.dtck ... (kind 1, one per
 * rank, rank r in rank-%05d.dtck) and DIR/manifest.dtck (kind 2). The
 * manifest's first two records are
 *     "shards.bytes"     u64 [ranks]  each rank's file size
 *     "shards.checksum"  u32 [ranks]  each rank's file checksum (its trailer's)
 * and its writer's own records follow (the step, a fingerprint of the
 * topology, RNG and sampler state: chapter 14).
 *
 * ================================================================ atomic writes
 * A file is written to PATH.tmp in the same folder; committing it writes
 * the trailer, fsyncs the file, renames it over PATH and fsyncs the
 * folder, so that after a crash PATH is either the old file or the whole
 * new one, never a mix. A crash may leave PATH.tmp behind: the next
 * writer of PATH truncates it. A checkpoint made of several files commits
 * them in order (chapter 14): every shard, then the manifest, then a
 * pointer such as "latest" (dt_ckpt_write_atomic); a reader starts from
 * the last of these, so a checkpoint is seen only once it is whole.
 *
 * ================================================================ errors
 * Every failure is a dt_result with a message that names the file and,
 * where there is one, the record:
 *   DT_ERR_IO           the system refused (open, read, write, fsync,
 *                       rename: its reason), a missing file
 *   DT_ERR_INVALID_ARG  the file is not what it must be (wrong magic or
 *                       version, truncated, a checksum that does not match,
 *                       a malformed record), or not what the caller asked
 *                       for (a missing or unexpected record, another type
 *                       or shape, another kind, rank or world size), or a
 *                       bad argument
 * A read that fails writes nothing into the caller's buffers. */
#ifndef DT_CKPT_H
#define DT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "dt/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    DT_CKPT_F32 = 1,
    DT_CKPT_F64 = 2,
    DT_CKPT_F16 = 3,
    DT_CKPT_BF16 = 4,
    DT_CKPT_I8 = 5,
    DT_CKPT_U8 = 6,
    DT_CKPT_I32 = 7,
    DT_CKPT_U32 = 8,
    DT_CKPT_I64 = 9,
    DT_CKPT_U64 = 10,
} dt_ckpt_type;

size_t dt_ckpt_type_size(dt_ckpt_type t);      /* 0 for a code not in the table */
const char *dt_ckpt_type_name(dt_ckpt_type t); /* "f32", ...; "?" */
dt_ckpt_type dt_ckpt_type_of(dt_dtype t);      /* the same type; 0 for an unknown dtype */

typedef enum { DT_CKPT_SHARD = 1, DT_CKPT_MANIFEST = 2 } dt_ckpt_kind;

enum { DT_CKPT_MAX_DIMS = 8, DT_CKPT_MAX_NAME = 255 };

/* CRC32C of bytes[0 .. n) continuing from crc (0 to start): chained calls
 * over consecutive pieces give the CRC of the whole. */
uint32_t dt_crc32c(uint32_t crc, const void *bytes, size_t n);

/* What a committed file is, as a manifest lists it. */
typedef struct {
    uint64_t bytes;     /* its size */
    uint32_t checksum;  /* its trailer's */
} dt_ckpt_file_info;

/* ---------------------------------------------------------------- paths */

/* out := DIR/rank-%05d.dtck, DIR/manifest.dtck. DT_ERR_INVALID_ARG when it
 * does not fit in cap bytes (with its NUL) or rank is out of 0 .. 99999. */
dt_result dt_ckpt_shard_path(char *out, size_t cap, const char *dir, int rank);
dt_result dt_ckpt_manifest_path(char *out, size_t cap, const char *dir);

/* Makes the folder dir (one level; an existing folder is fine) and fsyncs
 * its parent, so that the folder itself survives a crash. */
dt_result dt_ckpt_make_dir(const char *dir);

/* Writes bytes to path atomically (PATH.tmp, fsync, rename, fsync of the
 * folder): a small file that names the checkpoint to read, "latest". */
dt_result dt_ckpt_write_atomic(const char *path, const void *data, size_t bytes);

/* ---------------------------------------------------------------- writing */

typedef struct dt_ckpt_writer dt_ckpt_writer;

/* Starts PATH.tmp (created or truncated) with the header. rank: 0 ..
 * ranks-1 for a shard; ignored for a manifest. */
dt_result dt_ckpt_create(dt_ckpt_writer **w, const char *path, dt_ckpt_kind kind, int rank,
                         int ranks);

/* Appends a record: count = the product of shape[0 .. ndim) elements of
 * type at data (NULL only when count is 0). A name used before in this
 * file, a name that is empty, too long or not printable ASCII, a bad type
 * or ndim are DT_ERR_INVALID_ARG and write nothing (the writer goes on).
 * After a write that failed (DT_ERR_IO) the writer only aborts. */
dt_result dt_ckpt_put(dt_ckpt_writer *w, const char *name, dt_ckpt_type type, int ndim,
                      const size_t *shape, const void *data);

/* Writes the trailer and commits the file atomically (above); info (may be
 * NULL) gets its size and checksum. On failure PATH is left as it was and
 * PATH.tmp removed. Always frees w. */
dt_result dt_ckpt_commit(dt_ckpt_writer *w, dt_ckpt_file_info *info);

/* Removes PATH.tmp and frees w; PATH is left as it was. NULL is ignored. */
void dt_ckpt_abort(dt_ckpt_writer *w);

/* ---------------------------------------------------------------- reading */

typedef struct dt_ckpt_reader dt_ckpt_reader;

typedef struct {
    const char *name;
    dt_ckpt_type type;
    int ndim;
    size_t shape[DT_CKPT_MAX_DIMS];
    size_t count;        /* elements: the product of the shape (1 for a scalar) */
    size_t bytes;        /* count x the type's size */
    const void *data;    /* the reader's copy, valid until dt_ckpt_close */
} dt_ckpt_record;

typedef struct {
    dt_ckpt_kind kind;
    int rank;            /* -1 in a manifest */
    int ranks;
    int records;
    dt_ckpt_file_info file;
} dt_ckpt_header;

/* Reads the whole file at path into memory (tag OTHER) and checks all of
 * it before returning: magic, version, flags, the header's CRC, every
 * record's layout and CRC, unique names, and the trailer (count, size,
 * checksum). */
dt_result dt_ckpt_open(dt_ckpt_reader **r, const char *path);
void dt_ckpt_close(dt_ckpt_reader *r); /* NULL is ignored */

const char *dt_ckpt_reader_path(const dt_ckpt_reader *r);
const dt_ckpt_header *dt_ckpt_reader_header(const dt_ckpt_reader *r);
/* Record i (0 .. records-1) in file order; NULL out of range. */
const dt_ckpt_record *dt_ckpt_record_at(const dt_ckpt_reader *r, int i);
/* The record named name; NULL when the file has none. */
const dt_ckpt_record *dt_ckpt_find(const dt_ckpt_reader *r, const char *name);

/* DT_OK when the file is of kind, rank and ranks (-1: any rank or world
 * size); else DT_ERR_INVALID_ARG naming the file, what it is and what was
 * expected. */
dt_result dt_ckpt_expect_header(const dt_ckpt_reader *r, dt_ckpt_kind kind, int rank,
                                int ranks);

/* DT_OK when the file's size and checksum are want's (a manifest's entry
 * for it); else DT_ERR_INVALID_ARG: "PATH: checksum X, size N; the
 * manifest lists Y, M: a file of another checkpoint". */
dt_result dt_ckpt_verify(const dt_ckpt_reader *r, const dt_ckpt_file_info *want);

/* Copies the record name into out when the file has it with this type and
 * shape; otherwise DT_ERR_INVALID_ARG naming the file and the record, what
 * the file holds and what was asked for, and out is untouched. */
dt_result dt_ckpt_get(const dt_ckpt_reader *r, const char *name, dt_ckpt_type type, int ndim,
                      const size_t *shape, void *out);

/* Shard `rank`'s entry of a manifest ("shards.bytes", "shards.checksum"). */
dt_result dt_ckpt_manifest_shard(const dt_ckpt_reader *manifest, int rank,
                                 dt_ckpt_file_info *out);

/* ---------------------------------------------------------------- a state, both ways
 * A state is saved and loaded by ONE function that visits each of its
 * records through a dt_ckpt_io, so that what is written and what is read
 * cannot disagree:
 *
 *     static dt_result state(my *s, dt_ckpt_io *io)
 *     {
 *         DT_CHECK(dt_ckpt_io_long(io, "step", &s->step));
 *         return dt_ckpt_io_f32(io, "params", s->params, s->n);
 *     }
 *     save:  dt_ckpt_io_save(&io, path, DT_CKPT_SHARD, rank, ranks);
 *            dt_ckpt_io_end(io, state(s, io), &info);
 *     load:  dt_ckpt_io_load(&io, path, DT_CKPT_SHARD, rank, ranks);
 *            dt_ckpt_io_end(io, state(s, io), NULL);
 *
 * Saving, each visit appends a record (dt_ckpt_put). Loading, the file was
 * read and checked whole when it was opened; each visit checks that the
 * file has the record with the same type and shape and remembers where its
 * bytes go; dt_ckpt_io_end then checks that every record of the file was
 * visited, and only when all is well copies them all. So a load that fails
 * anywhere leaves every buffer as it was. The buffers given to visits must
 * stay where they are until dt_ckpt_io_end.
 *
 * The first failure sticks: later visits return it at once and do
 * nothing, and dt_ckpt_io_end returns it (saving: the file is aborted,
 * PATH left as it was). */
typedef struct dt_ckpt_io dt_ckpt_io;

/* Saving into path (a new file of this kind, rank and ranks). */
dt_result dt_ckpt_io_save(dt_ckpt_io **io, const char *path, dt_ckpt_kind kind, int rank,
                          int ranks);
/* Loading from path, which must be of this kind, rank and ranks (-1: any). */
dt_result dt_ckpt_io_load(dt_ckpt_io **io, const char *path, dt_ckpt_kind kind, int rank,
                          int ranks);

/* A manifest of DIR for `ranks` shards whose files are shards[0 .. ranks):
 * dt_ckpt_io_save of DIR/manifest.dtck with "shards.bytes" and
 * "shards.checksum" written first. */
dt_result dt_ckpt_io_save_manifest(dt_ckpt_io **io, const char *dir, int ranks,
                                   const dt_ckpt_file_info *shards);
/* dt_ckpt_io_load of DIR/manifest.dtck (ranks: -1 any); its shard table is
 * read with dt_ckpt_manifest_shard(dt_ckpt_io_reader(io), ...) and counts
 * as visited. */
dt_result dt_ckpt_io_load_manifest(dt_ckpt_io **io, const char *dir, int ranks);

int dt_ckpt_io_loading(const dt_ckpt_io *io);
/* The file being loaded (NULL when saving): its header, its records. */
const dt_ckpt_reader *dt_ckpt_io_reader(const dt_ckpt_io *io);

/* Names are prefixed by the parts pushed, each followed by '.':
 * push "update", push "shard", visit "step" -> record "update.shard.step".
 * pop removes the last part pushed. A prefix that makes a name longer than
 * DT_CKPT_MAX_NAME fails at the visit. */
dt_result dt_ckpt_io_push(dt_ckpt_io *io, const char *part);
void dt_ckpt_io_pop(dt_ckpt_io *io);

/* Visits the record name: count = the product of shape[0 .. ndim)
 * elements of type at data. */
dt_result dt_ckpt_io_record(dt_ckpt_io *io, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, void *data);
/* The usual ones: count floats (shape [count]); a long (i64 scalar); a
 * u64 scalar; an RNG stream (u64 [3]: seed, stream, counter). */
dt_result dt_ckpt_io_f32(dt_ckpt_io *io, const char *name, float *data, size_t count);
dt_result dt_ckpt_io_long(dt_ckpt_io *io, const char *name, long *v);
dt_result dt_ckpt_io_u64(dt_ckpt_io *io, const char *name, uint64_t *v);
dt_result dt_ckpt_io_rng(dt_ckpt_io *io, const char *name, dt_rng *rng);

/* A record that must be the same on load as it was on save (a
 * configuration, a layout, a hook's name): saving writes value; loading
 * compares at once and fails, naming the record, when the file's differs.
 * Nothing is copied. */
dt_result dt_ckpt_io_expect(dt_ckpt_io *io, const char *name, dt_ckpt_type type, int ndim,
                            const size_t *shape, const void *value);
dt_result dt_ckpt_io_expect_str(dt_ckpt_io *io, const char *name, const char *value);

/* Ends the visit. status is the state function's result: DT_OK commits
 * (saving: the file, atomically, info (may be NULL) its size and checksum;
 * loading: every record visited, then all copied); anything else, or an
 * earlier failure, aborts and is returned. Always frees io. */
dt_result dt_ckpt_io_end(dt_ckpt_io *io, dt_result status, dt_ckpt_file_info *info);

/* ---------------------------------------------------------------- saving asynchronously
 * A save in two halves (chapter 14, section 7): a snapshot of the state
 * into memory the saver owns, taken before the call returns, so that
 * training may change its buffers at once; then a persist of the snapshot
 * on the saver's background thread, through the writer above
 * (dt_ckpt_create, dt_ckpt_put, dt_ckpt_commit: the same bytes, CRCs,
 * fsyncs and renames as a synchronous save).
 *
 *     dt_ckpt_saver_begin(s, 60);                  waits for the save before
 *     dt_ckpt_io_save_async(&io, s, shard, DT_CKPT_SHARD, 0, 1);
 *     dt_ckpt_io_end(io, state(x, io), NULL);      snapshot taken: returns
 *     dt_ckpt_io_save_manifest_async(&io, s, dir, 1);
 *     dt_ckpt_io_end(io, globals(x, io), NULL);
 *     dt_ckpt_saver_write_atomic(s, latest, name, strlen(name));
 *     ... training steps ...
 *     dt_ckpt_saver_wait(s, 60);                   the persist's result
 *
 * A save is the files queued between dt_ckpt_saver_begin and the
 * dt_ckpt_saver_wait that sees them done. The thread persists them one at
 * a time in the order their io ended, each committed before the next is
 * begun, so the commit protocol holds as queued: shards, then the
 * manifest, then "latest". The first failure ends the save: the files
 * after it are not written (so "latest" never names a checkpoint whose
 * manifest is not durable), and the wait returns it, naming the file.
 *
 * One save flies at a time. Once dt_ckpt_saver_wait (or the next begin)
 * has been called on a save, it takes no more files; a begin waits for
 * the save before it, and while that one still runs no new save begins.
 *
 * The snapshot's memory is dt_mem_alloc'd (DT_MEM_OTHER) on the thread
 * that visits, charged to its rank, and kept after the save for the next
 * one (a state of the same layout copies into memory already mapped); a
 * record of another size gets a new block. dt_ckpt_saver_destroy frees it.
 * A saver belongs to one thread (a rank): its calls are not for several
 * threads at once. */
typedef struct dt_ckpt_saver dt_ckpt_saver;

/* A saver and its background thread, idle. */
dt_result dt_ckpt_saver_create(dt_ckpt_saver **s);

/* Begins a save. A save still in flight is waited for first, up to
 * timeout_s seconds, as dt_ckpt_saver_wait: its failure (or
 * DT_ERR_TIMEOUT) is returned and no save is begun (call again). */
dt_result dt_ckpt_saver_begin(dt_ckpt_saver *s, double timeout_s);

/* Saving into path asynchronously: as dt_ckpt_io_save, but each visit
 * checks its record (a bad name, type or shape, a name used twice are
 * refused at the visit, as dt_ckpt_put does) and copies its bytes into the
 * snapshot; dt_ckpt_io_end then queues the file (DT_OK) and returns
 * without writing; info stays untouched (dt_ckpt_saver_info gives it after
 * the wait). DT_ERR_STATE when no save is begun or the save takes no more
 * files. */
dt_result dt_ckpt_io_save_async(dt_ckpt_io **io, dt_ckpt_saver *s, const char *path,
                                dt_ckpt_kind kind, int rank, int ranks);

/* The manifest of DIR, asynchronously: its shard table ("shards.bytes",
 * "shards.checksum") is that of the shards 0 .. ranks-1 of `ranks` ranks
 * queued in this save before it, filled in by the thread once they are
 * committed; the visits' records follow. The same file as
 * dt_ckpt_io_save_manifest given those shards' dt_ckpt_file_info.
 * DT_ERR_INVALID_ARG when the save has not queued each of those shards
 * exactly once. */
dt_result dt_ckpt_io_save_manifest_async(dt_ckpt_io **io, dt_ckpt_saver *s, const char *dir,
                                         int ranks);

/* Queues dt_ckpt_write_atomic(path, data, bytes) (the bytes copied now):
 * done after every file queued before it was committed, and not at all
 * when one of them failed. */
dt_result dt_ckpt_saver_write_atomic(dt_ckpt_saver *s, const char *path, const void *data,
                                     size_t bytes);

/* Waits until every file of the save is persisted, at most timeout_s
 * seconds (>= 0; 0 polls): DT_OK when all were committed; the first
 * failure, its message naming the file (DT_ERR_IO for what the system
 * refused); DT_ERR_TIMEOUT when files are still being written: the save
 * goes on, takes no more files, and can be waited for again. After a
 * result other than DT_ERR_TIMEOUT the save is over. DT_ERR_STATE when
 * no save was begun. */
dt_result dt_ckpt_saver_wait(dt_ckpt_saver *s, double timeout_s);

/* The size and checksum of file i (0 .. files-1, in the order queued) of
 * the last save that ended in DT_OK. */
dt_result dt_ckpt_saver_info(const dt_ckpt_saver *s, int i, dt_ckpt_file_info *out);

/* Waits for a save in flight (at most timeout_s), stops the thread and
 * frees everything; returns that save's result. On DT_ERR_TIMEOUT nothing
 * is freed and s stays valid (call again). NULL is ignored. */
dt_result dt_ckpt_saver_destroy(dt_ckpt_saver *s, double timeout_s);

#ifdef __cplusplus
}
#endif

#endif /* DT_CKPT_H */
