/* crc32c.c - CRC32C (Castagnoli), the checksum of checkpoint files.
 *
 * The reflected polynomial P = 0x82F63B78 (0x1EDC6F41 bit-reversed), the
 * register starting at and finally xored with FFFFFFFF: iSCSI's, ext4's
 * and Btrfs's CRC, which SSE4.2 and ARMv8 also compute in hardware. Its
 * value for "123456789" is E3069283 (tests/lib/test_ckpt.c).
 *
 * Slicing by 8: a byte at a time, crc = T0[(crc ^ b) & FF] ^ (crc >> 8),
 * where T0[i] is the CRC of the one byte i. Eight bytes at once: xor the
 * register into the next 8 bytes, and look each of them up in a table
 * that has already pushed it through the bytes after it,
 *     Tk[i] = (T(k-1)[i] >> 8) ^ T0[T(k-1)[i] & FF],
 * so that byte j of the 8 is looked up in T(7-j). Eight lookups and
 * xors per 8 bytes instead of 8 dependent steps. */
#include "dt/ckpt.h"

#include <pthread.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dt/ckpt.h's files are little-endian and written from memory as it is"
#endif

#define CRC32C_POLY 0x82F63B78u

/* Written once, under pthread_once, and only read after. */
static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_tables(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int b = 0; b < 8; b++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[0][i] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int i = 0; i < 256; i++)
            table[k][i] = (table[k - 1][i] >> 8) ^ table[0][table[k - 1][i] & 0xFF];
}

uint32_t dt_crc32c(uint32_t crc, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    pthread_once(&table_once, make_tables);
    crc = ~crc;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8); /* little-endian: byte j is bits 8j .. 8j+7 */
        w ^= crc;
        crc = table[7][w & 0xFF] ^ table[6][(w >> 8) & 0xFF] ^ table[5][(w >> 16) & 0xFF] ^
              table[4][(w >> 24) & 0xFF] ^ table[3][(w >> 32) & 0xFF] ^
              table[2][(w >> 40) & 0xFF] ^ table[1][(w >> 48) & 0xFF] ^ table[0][w >> 56];
    }
    for (; n; p++, n--)
        crc = table[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
    return ~crc;
}
