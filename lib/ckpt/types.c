/* types.c - the element types of checkpoint records, and the checks of a
 * record's name and shape that the writer and the reader share. */
#include "format.h"

#include <stdio.h>

static const struct {
    const char *name;
    size_t size;
} types[] = {
    [DT_CKPT_F32] = {"f32", 4}, [DT_CKPT_F64] = {"f64", 8}, [DT_CKPT_F16] = {"f16", 2},
    [DT_CKPT_BF16] = {"bf16", 2}, [DT_CKPT_I8] = {"i8", 1}, [DT_CKPT_U8] = {"u8", 1},
    [DT_CKPT_I32] = {"i32", 4}, [DT_CKPT_U32] = {"u32", 4}, [DT_CKPT_I64] = {"i64", 8},
    [DT_CKPT_U64] = {"u64", 8},
};

static int type_ok(dt_ckpt_type t)
{
    return (int)t > 0 && (size_t)t < sizeof types / sizeof *types;
}

size_t dt_ckpt_type_size(dt_ckpt_type t) { return type_ok(t) ? types[t].size : 0; }

const char *dt_ckpt_type_name(dt_ckpt_type t) { return type_ok(t) ? types[t].name : "?"; }

dt_ckpt_type dt_ckpt_type_of(dt_dtype t)
{
    switch (t) {
    case DT_F32: return DT_CKPT_F32;
    case DT_F16: return DT_CKPT_F16;
    case DT_BF16: return DT_CKPT_BF16;
    case DT_I32: return DT_CKPT_I32;
    case DT_I8: return DT_CKPT_I8;
    case DT_U8: return DT_CKPT_U8;
    default: return (dt_ckpt_type)0;
    }
}

int ckpt_name_ok(const char *name, size_t len)
{
    if (len < 1 || len > DT_CKPT_MAX_NAME)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (name[i] < 0x21 || name[i] > 0x7E)
            return 0;
    return 1;
}

int ckpt_shape_bytes(dt_ckpt_type type, int ndim, const size_t *shape, size_t *count,
                     size_t *bytes)
{
    size_t size = dt_ckpt_type_size(type), n = 1;
    if (!size || ndim < 0 || ndim > DT_CKPT_MAX_DIMS || (ndim && !shape))
        return 0;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] && n > ((size_t)1 << 62) / shape[i])
            return 0;
        n *= shape[i];
    }
    if (n > ((size_t)1 << 62) / size)
        return 0;
    *count = n, *bytes = n * size;
    return 1;
}

void ckpt_describe(char *out, size_t cap, dt_ckpt_type type, int ndim, const size_t *shape)
{
    int len = snprintf(out, cap, "%s %s", dt_ckpt_type_name(type), ndim ? "[" : "scalar");
    for (int i = 0; i < ndim && len > 0 && (size_t)len < cap; i++)
        len += snprintf(out + len, cap - (size_t)len, "%s%zu", i ? ", " : "", shape[i]);
    if (ndim && len > 0 && (size_t)len < cap)
        snprintf(out + len, cap - (size_t)len, "]");
}
