/* ops.c - shapes, owned tensors, elementwise ops, reductions, and
 * conversion of whole arrays between f32, f16 and bf16. */
#include "dt/tensor.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- shapes */

static dt_shape shape_of(int ndim, const size_t *dims)
{
    dt_shape s = {ndim, {0, 0, 0, 0}};
    for (int i = 0; i < ndim; i++)
        s.dims[i] = dims[i];
    return s;
}

dt_shape dt_shape1(size_t a) { return shape_of(1, (size_t[]){a}); }
dt_shape dt_shape2(size_t a, size_t b) { return shape_of(2, (size_t[]){a, b}); }
dt_shape dt_shape3(size_t a, size_t b, size_t c) { return shape_of(3, (size_t[]){a, b, c}); }
dt_shape dt_shape4(size_t a, size_t b, size_t c, size_t d)
{
    return shape_of(4, (size_t[]){a, b, c, d});
}

size_t dt_shape_numel(const dt_shape *s)
{
    if (!s || s->ndim < 1 || s->ndim > DT_MAX_DIMS)
        return 0;
    size_t n = 1;
    for (int i = 0; i < s->ndim; i++)
        n *= s->dims[i];
    return n;
}

char *dt_shape_str(const dt_shape *s, char *buf, size_t len)
{
    if (!buf || len == 0)
        return buf;
    size_t used = (size_t)snprintf(buf, len, "(");
    for (int i = 0; s && i < s->ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ", %zu" : "%zu", s->dims[i]);
    if (used < len)
        snprintf(buf + used, len - used, ")");
    return buf;
}

dt_result dt_tensor_alloc(dt_tensor *t, dt_shape shape, dt_mem_tag tag)
{
    if (!t)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tensor_alloc: NULL tensor");
    memset(t, 0, sizeof *t);
    size_t n = dt_shape_numel(&shape);
    if (n == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_tensor_alloc: empty or invalid shape (ndim %d)",
                       shape.ndim);
    float *p = dt_mem_alloc(tag, n * sizeof(float));
    if (!p)
        return dt_fail(DT_ERR_NOMEM, "dt_tensor_alloc: %zu floats: %s", n, dt_last_error());
    t->data = p;
    t->shape = shape;
    t->tag = tag;
    return DT_OK;
}

void dt_tensor_free(dt_tensor *t)
{
    if (!t)
        return;
    dt_mem_free(t->data);
    memset(t, 0, sizeof *t);
}

size_t dt_tensor_numel(const dt_tensor *t) { return t ? dt_shape_numel(&t->shape) : 0; }

/* ---------------------------------------------------------------- elementwise */

/* NULL is only an error when there are elements to touch. */
#define NEED(p, fn)                                                                \
    do {                                                                           \
        if (count && !(p))                                                         \
            return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL buffer '%s' with count %zu", \
                           fn, #p, count);                                         \
    } while (0)

dt_result dt_vec_fill(float *x, float value, size_t count)
{
    NEED(x, "dt_vec_fill");
    for (size_t i = 0; i < count; i++)
        x[i] = value;
    return DT_OK;
}

dt_result dt_vec_copy(float *dst, const float *src, size_t count)
{
    NEED(dst, "dt_vec_copy");
    NEED(src, "dt_vec_copy");
    if (count && dst != src)
        memmove(dst, src, count * sizeof(float));
    return DT_OK;
}

dt_result dt_vec_scale(float *x, float alpha, size_t count)
{
    NEED(x, "dt_vec_scale");
    for (size_t i = 0; i < count; i++)
        x[i] *= alpha;
    return DT_OK;
}

dt_result dt_vec_axpy(float *y, float alpha, const float *x, size_t count)
{
    NEED(y, "dt_vec_axpy");
    NEED(x, "dt_vec_axpy");
    for (size_t i = 0; i < count; i++)
        y[i] += alpha * x[i];
    return DT_OK;
}

dt_result dt_vec_add(float *out, const float *a, const float *b, size_t count)
{
    NEED(out, "dt_vec_add");
    NEED(a, "dt_vec_add");
    NEED(b, "dt_vec_add");
    for (size_t i = 0; i < count; i++)
        out[i] = a[i] + b[i];
    return DT_OK;
}

dt_result dt_vec_sub(float *out, const float *a, const float *b, size_t count)
{
    NEED(out, "dt_vec_sub");
    NEED(a, "dt_vec_sub");
    NEED(b, "dt_vec_sub");
    for (size_t i = 0; i < count; i++)
        out[i] = a[i] - b[i];
    return DT_OK;
}

dt_result dt_vec_mul(float *out, const float *a, const float *b, size_t count)
{
    NEED(out, "dt_vec_mul");
    NEED(a, "dt_vec_mul");
    NEED(b, "dt_vec_mul");
    for (size_t i = 0; i < count; i++)
        out[i] = a[i] * b[i];
    return DT_OK;
}

/* ---------------------------------------------------------------- reductions */

#define NEED_OUT(p, fn)                                                       \
    do {                                                                      \
        if (!(p))                                                             \
            return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL result pointer", fn); \
    } while (0)

dt_result dt_vec_sum(const float *x, size_t count, double *out)
{
    NEED(x, "dt_vec_sum");
    NEED_OUT(out, "dt_vec_sum");
    double s = 0;
    for (size_t i = 0; i < count; i++)
        s += x[i];
    *out = s;
    return DT_OK;
}

dt_result dt_vec_dot(const float *a, const float *b, size_t count, double *out)
{
    NEED(a, "dt_vec_dot");
    NEED(b, "dt_vec_dot");
    NEED_OUT(out, "dt_vec_dot");
    double s = 0;
    for (size_t i = 0; i < count; i++)
        s += (double)a[i] * b[i];
    *out = s;
    return DT_OK;
}

dt_result dt_vec_sumsq(const float *x, size_t count, double *out)
{
    return dt_vec_dot(x, x, count, out);
}

dt_result dt_vec_max(const float *x, size_t count, float *out)
{
    size_t i;
    DT_CHECK(dt_vec_argmax(x, count, &i));
    NEED_OUT(out, "dt_vec_max");
    *out = x[i];
    return DT_OK;
}

dt_result dt_vec_argmax(const float *x, size_t count, size_t *out)
{
    if (!x || count == 0)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_vec_argmax: %s", x ? "count 0" : "NULL buffer");
    NEED_OUT(out, "dt_vec_argmax");
    size_t best = 0;
    for (size_t i = 1; i < count; i++)
        if (x[i] > x[best])
            best = i;
    *out = best;
    return DT_OK;
}

dt_result dt_vec_max_abs_diff(const float *a, const float *b, size_t count, float *out)
{
    NEED(a, "dt_vec_max_abs_diff");
    NEED(b, "dt_vec_max_abs_diff");
    NEED_OUT(out, "dt_vec_max_abs_diff");
    float m = 0;
    for (size_t i = 0; i < count; i++) {
        float d = fabsf(a[i] - b[i]);
        if (d > m || isnan(d))
            m = d;
    }
    *out = m;
    return DT_OK;
}

/* ---------------------------------------------------------------- conversion */

dt_result dt_f32_to_f16_array(uint16_t *dst, const float *src, size_t count)
{
    NEED(dst, "dt_f32_to_f16_array");
    NEED(src, "dt_f32_to_f16_array");
    for (size_t i = 0; i < count; i++)
        dst[i] = dt_f32_to_f16(src[i]);
    return DT_OK;
}

dt_result dt_f16_to_f32_array(float *dst, const uint16_t *src, size_t count)
{
    NEED(dst, "dt_f16_to_f32_array");
    NEED(src, "dt_f16_to_f32_array");
    for (size_t i = 0; i < count; i++)
        dst[i] = dt_f16_to_f32(src[i]);
    return DT_OK;
}

dt_result dt_f32_to_bf16_array(uint16_t *dst, const float *src, size_t count)
{
    NEED(dst, "dt_f32_to_bf16_array");
    NEED(src, "dt_f32_to_bf16_array");
    for (size_t i = 0; i < count; i++)
        dst[i] = dt_f32_to_bf16(src[i]);
    return DT_OK;
}

dt_result dt_bf16_to_f32_array(float *dst, const uint16_t *src, size_t count)
{
    NEED(dst, "dt_bf16_to_f32_array");
    NEED(src, "dt_bf16_to_f32_array");
    for (size_t i = 0; i < count; i++)
        dst[i] = dt_bf16_to_f32(src[i]);
    return DT_OK;
}

static int is_float_type(dt_dtype t) { return t == DT_F32 || t == DT_F16 || t == DT_BF16; }

/* One element of a float-like dtype, read as f32. */
static float load_f32(const void *src, dt_dtype t, size_t i)
{
    const uint16_t *h = src;
    if (t == DT_F16)
        return dt_f16_to_f32(h[i]);
    if (t == DT_BF16)
        return dt_bf16_to_f32(h[i]);
    return ((const float *)src)[i];
}

dt_result dt_convert(void *dst, dt_dtype dst_type, const void *src, dt_dtype src_type,
                     size_t count)
{
    NEED(dst, "dt_convert");
    NEED(src, "dt_convert");
    if (!is_float_type(dst_type) || !is_float_type(src_type))
        return dt_fail(DT_ERR_UNSUPPORTED, "dt_convert: %s -> %s (only f32, f16, bf16)",
                       dt_dtype_name(src_type), dt_dtype_name(dst_type));
    if (dst_type == src_type) {
        if (count)
            memmove(dst, src, count * dt_dtype_size(dst_type));
        return DT_OK;
    }
    /* f16 <-> bf16 goes through f32, which holds both exactly */
    for (size_t i = 0; i < count; i++) {
        float v = load_f32(src, src_type, i);
        if (dst_type == DT_F32)
            ((float *)dst)[i] = v;
        else if (dst_type == DT_F16)
            ((uint16_t *)dst)[i] = dt_f32_to_f16(v);
        else
            ((uint16_t *)dst)[i] = dt_f32_to_bf16(v);
    }
    return DT_OK;
}
