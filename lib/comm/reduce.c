/* reduce.c - the elementwise reduction kernels of the collectives, plainly
 * written: the reference (reduce_fast.c has the vectorized ones).
 *
 * dst = a op b for each dtype and op. f16 and bf16 are widened to f32,
 * combined, and rounded back (one rounding per step, as NCCL does).
 * Integers wrap around on overflow: the arithmetic is done on unsigned
 * types, where wrapping is defined, and converted back. AVG is a SUM here;
 * dt_reduce_avg divides by the rank count at the end. */
#include "reduce.h"

#include <string.h>

/* One loop per (type, op); the op is a macro on two values of type T. */
#define SUM_(x, y) ((x) + (y))
#define PROD_(x, y) ((x) * (y))
#define MAX_(x, y) ((x) > (y) ? (x) : (y))
#define MIN_(x, y) ((x) < (y) ? (x) : (y))

#define LOOP(T, F)                                                           \
    do {                                                                     \
        T *d_ = dst;                                                         \
        const T *a_ = a, *b_ = b;                                            \
        for (size_t i = 0; i < n; i++)                                       \
            d_[i] = F(a_[i], b_[i]);                                         \
    } while (0)

/* Integers: sum and product on the unsigned type U, converted back. */
#define ILOOP(T, U, F)                                                       \
    do {                                                                     \
        T *d_ = dst;                                                         \
        const T *a_ = a, *b_ = b;                                            \
        for (size_t i = 0; i < n; i++)                                       \
            d_[i] = (T)F((U)a_[i], (U)b_[i]);                                \
    } while (0)

#define ALL_OPS(T, U, LOOPSUM)                                               \
    switch (op) {                                                            \
    case DT_SUM:                                                             \
    case DT_AVG: LOOPSUM(T, U, SUM_); break;                                 \
    case DT_PROD: LOOPSUM(T, U, PROD_); break;                               \
    case DT_MAX: LOOP(T, MAX_); break;                                       \
    case DT_MIN: LOOP(T, MIN_); break;                                       \
    default: break;                                                          \
    }

#define FLOOP(T, U, F) LOOP(T, F)

/* bf16 inline (the same rounding as core's dt_f32_to_bf16: nearest even,
 * a nan stays a nan): it is a shift, and a call per element would cost
 * more than the arithmetic. f16 goes through core. */
static inline float bf16_get(uint16_t v)
{
    uint32_t u = (uint32_t)v << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t bf16_put(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float half_get(uint16_t v, int bf) { return bf ? bf16_get(v) : dt_f16_to_f32(v); }
static uint16_t half_put(float f, int bf) { return bf ? bf16_put(f) : dt_f32_to_f16(f); }

static float f32_op(float x, float y, dt_redop op)
{
    switch (op) {
    case DT_PROD: return x * y;
    case DT_MAX: return x > y ? x : y;
    case DT_MIN: return x < y ? x : y;
    default: return x + y;
    }
}

static void half_reduce3(uint16_t *dst, const uint16_t *a, const uint16_t *b, size_t n, int bf,
                         dt_redop op)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = half_put(f32_op(half_get(a[i], bf), half_get(b[i], bf), op), bf);
}

void dt_reduce3(void *dst, const void *a, const void *b, size_t n, dt_dtype dt, dt_redop op)
{
    switch (dt) {
    case DT_F32: ALL_OPS(float, float, FLOOP); break;
    case DT_I32: ALL_OPS(int32_t, uint32_t, ILOOP); break;
    case DT_I8: ALL_OPS(int8_t, uint8_t, ILOOP); break;
    case DT_U8: ALL_OPS(uint8_t, uint32_t, ILOOP); break;
    case DT_F16: half_reduce3(dst, a, b, n, 0, op); break;
    case DT_BF16: half_reduce3(dst, a, b, n, 1, op); break;
    default: break;
    }
}

void dt_reduce_avg(void *buf, size_t n, dt_dtype dt, int nranks)
{
    if (nranks <= 1)
        return;
    switch (dt) {
    case DT_F32: {
        float *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] /= (float)nranks;
        break;
    }
    case DT_F16:
    case DT_BF16: {
        uint16_t *p = buf;
        int bf = dt == DT_BF16;
        for (size_t i = 0; i < n; i++)
            p[i] = half_put(half_get(p[i], bf) / (float)nranks, bf);
        break;
    }
    case DT_I32: {
        int32_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] /= nranks;
        break;
    }
    case DT_I8: {
        int8_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = (int8_t)(p[i] / nranks);
        break;
    }
    case DT_U8: {
        uint8_t *p = buf;
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(p[i] / nranks);
        break;
    }
    default: break;
    }
}
