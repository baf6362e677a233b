/* dtype.c - element types and the half-precision conversions.
 *
 * f16: 1 sign, 5 exponent, 10 mantissa bits. bf16: the top 16 bits of an
 * f32 (8 exponent bits, 7 mantissa bits). Both round to nearest, ties to
 * even, as the hardware does. */
#include "dt/core.h"

#include <string.h>

static const size_t dtype_sizes[DT_NUM_DTYPES] = {4, 2, 2, 4, 1, 1};
static const char *const dtype_names[DT_NUM_DTYPES] = {
    "f32", "f16", "bf16", "i32", "i8", "u8"};

int dt_dtype_valid(dt_dtype t) { return (int)t >= 0 && t < DT_NUM_DTYPES; }

size_t dt_dtype_size(dt_dtype t) { return dt_dtype_valid(t) ? dtype_sizes[t] : 0; }

const char *dt_dtype_name(dt_dtype t) { return dt_dtype_valid(t) ? dtype_names[t] : "?"; }

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t dt_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)      /* nan: keep it a (quiet) nan */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
    return (uint16_t)(u >> 16);
}

float dt_bf16_to_f32(uint16_t b) { return bits_f32((uint32_t)b << 16); }

uint16_t dt_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)                       /* nan */
        return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u)                      /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {                     /* below 2^-14: subnormal or 0 */
        if (a < 0x33000000u)                   /* below half the smallest: 0 */
            return sign;
        uint32_t mant = (a & 0x7fffffu) | 0x800000u;
        int shift = 126 - (int)(a >> 23);      /* 14 + (127 - e) - 1 ... */
        /* value = mant * 2^(e-150); in units of 2^-24 that is mant >> (126-e) */
        uint32_t q = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u)))
            q++;
        return (uint16_t)(sign | q);
    }
    /* normal: rebias the exponent from 127 to 15, round the mantissa to 10 bits */
    uint32_t r = a - 0x38000000u;              /* (127 - 15) << 23 */
    r += 0xfffu + ((r >> 13) & 1u);
    return (uint16_t)(sign | (r >> 13));
}

float dt_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f)                              /* inf or nan */
        return bits_f32(sign | 0x7f800000u | (m << 13));
    if (e == 0) {
        if (m == 0)
            return bits_f32(sign);
        /* subnormal: m * 2^-24 */
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}
