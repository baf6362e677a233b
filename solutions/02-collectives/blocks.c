/* blocks.c - lab 02: the helpers every algorithm of the lab uses (given:
 * nothing to write here). How a vector is cut into blocks, the local
 * reduction of one buffer into another, and the argument check. */
#include "collectives.h"

#include <stdint.h>

void lab_block(size_t count, int nranks, int b, size_t *offset, size_t *len)
{
    size_t k = (size_t)nranks, base = count / k, extra = count % k, ub = (size_t)b;
    /* The first `extra` blocks hold base + 1 elements, the others base. */
    *len = base + (ub < extra ? 1 : 0);
    *offset = ub * base + (ub < extra ? ub : extra);
}

/* One element: a = a op b, for each kind of number. */
#define COMBINE(a, b, op)                                                    \
    switch (op) {                                                            \
    case DT_SUM: a = a + b; break;                                           \
    case DT_PROD: a = a * b; break;                                          \
    case DT_MAX: if (b > a) a = b; break;                                    \
    case DT_MIN: if (b < a) a = b; break;                                    \
    default: break;                                                          \
    }

static void reduce_f32(float *x, const float *y, size_t n, dt_redop op)
{
    for (size_t i = 0; i < n; i++)
        COMBINE(x[i], y[i], op);
}

/* Signed integers: sum and product in unsigned arithmetic, so that overflow
 * wraps around instead of being undefined behaviour. */
static void reduce_i32(int32_t *x, const int32_t *y, size_t n, dt_redop op)
{
    for (size_t i = 0; i < n; i++) {
        if (op == DT_SUM)
            x[i] = (int32_t)((uint32_t)x[i] + (uint32_t)y[i]);
        else if (op == DT_PROD)
            x[i] = (int32_t)((uint32_t)x[i] * (uint32_t)y[i]);
        else
            COMBINE(x[i], y[i], op);
    }
}

static void reduce_i8(int8_t *x, const int8_t *y, size_t n, dt_redop op)
{
    for (size_t i = 0; i < n; i++) {
        if (op == DT_SUM)
            x[i] = (int8_t)(uint8_t)((unsigned)x[i] + (unsigned)y[i]);
        else if (op == DT_PROD)
            x[i] = (int8_t)(uint8_t)((unsigned)x[i] * (unsigned)y[i]);
        else
            COMBINE(x[i], y[i], op);
    }
}

static void reduce_u8(uint8_t *x, const uint8_t *y, size_t n, dt_redop op)
{
    for (size_t i = 0; i < n; i++) {
        if (op == DT_SUM)
            x[i] = (uint8_t)(x[i] + y[i]);
        else if (op == DT_PROD)
            x[i] = (uint8_t)(x[i] * y[i]);
        else
            COMBINE(x[i], y[i], op);
    }
}

/* Half formats: widen to f32, combine, round back once. */
static void reduce_half(uint16_t *x, const uint16_t *y, size_t n, dt_redop op, int bf16)
{
    for (size_t i = 0; i < n; i++) {
        float a = bf16 ? dt_bf16_to_f32(x[i]) : dt_f16_to_f32(x[i]);
        float b = bf16 ? dt_bf16_to_f32(y[i]) : dt_f16_to_f32(y[i]);
        COMBINE(a, b, op);
        x[i] = bf16 ? dt_f32_to_bf16(a) : dt_f32_to_f16(a);
    }
}

void lab_reduce_local(void *inout, const void *in, size_t count, dt_dtype dtype, dt_redop op)
{
    switch (dtype) {
    case DT_F32: reduce_f32(inout, in, count, op); break;
    case DT_I32: reduce_i32(inout, in, count, op); break;
    case DT_I8: reduce_i8(inout, in, count, op); break;
    case DT_U8: reduce_u8(inout, in, count, op); break;
    case DT_F16: reduce_half(inout, in, count, op, 0); break;
    case DT_BF16: reduce_half(inout, in, count, op, 1); break;
    default: break;
    }
}

dt_result lab_check_args(const void *sendbuf, const void *recvbuf, size_t count, dt_dtype dtype,
                         dt_redop op, const dt_comm *comm)
{
    if (!comm || dt_comm_size(comm) < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "comm is NULL or freed");
    if (!dt_dtype_valid(dtype))
        return dt_fail(DT_ERR_INVALID_ARG, "dtype %d is not a dt_dtype", (int)dtype);
    if (op != DT_SUM && op != DT_PROD && op != DT_MAX && op != DT_MIN)
        return dt_fail(DT_ERR_INVALID_ARG, "op %d: this lab reduces with sum, prod, max or min",
                       (int)op);
    if (count > 0 && (!sendbuf || !recvbuf))
        return dt_fail(DT_ERR_INVALID_ARG, "%s is NULL with count %zu",
                       sendbuf ? "recvbuf" : "sendbuf", count);
    return DT_OK;
}
