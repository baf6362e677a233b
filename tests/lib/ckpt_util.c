/* ckpt_util.c - the checkpoint tests' temporary folders, raw file access
 * and reference CRC. */
#include "ckpt_util.h"
#include "grader.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ck_tmpdir(char *dir, size_t cap)
{
    int n = snprintf(dir, cap, "%s/dtlab-ckpt-XXXXXX", dt_test_tmpdir());
    EXPECT(n > 0 && (size_t)n < cap, "temporary folder name too long");
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp %s: %s", dir, strerror(errno));
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void ck_rmdir(const char *dir)
{
    nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

unsigned char *ck_slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
    EXPECT(buf && len >= 0 && fread(buf, 1, (size_t)len, f) == (size_t)len, "%s: read", path);
    fclose(f);
    *n = (size_t)len;
    return buf;
}

void ck_spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    EXPECT(f != NULL, "%s: %s", path, strerror(errno));
    EXPECT(fwrite(data, 1, n, f) == n && fclose(f) == 0, "%s: write", path);
}

int ck_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

uint32_t ck_crc32c_bits(const void *data, size_t n)
{
    const unsigned char *p = data;
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    return ~crc;
}
