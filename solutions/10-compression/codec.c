/* codec.c - lab 10, tasks 1 and 2: the three compressors and error
 * feedback (chapter 10, sections 2 to 5). Your code goes between the
 * fences; the functions outside them are given. */
#include "compress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ================================================================ given */

size_t lab_sign_bytes(size_t n)
{
    return sizeof(float) + (n + 7) / 8;
}

size_t lab_topk_count(size_t n, double density)
{
    if (n == 0)
        return 0;
    double k = floor(density * (double)n + 0.5); /* round(d n), halves up */
    return k < 1 ? 1 : k > (double)n ? n : (size_t)k;
}

int lab_int8_levels(int ranks)
{
    return ranks >= 1 && ranks <= 127 ? 127 / ranks : 0;
}

/* ================================================================ task 1: 1-bit */

dt_result lab_sign_encode(const float *v, size_t n, uint8_t *out)
{
    /* BEGIN STUDENT CODE */
    if ((!v && n) || !out)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sign_encode: NULL %s", out ? "v" : "out");
    /* s = (1/n) sum |v_i| minimises || v - s sign(v) ||_2 (section 2) */
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += fabs((double)v[i]);
    float scale = n ? (float)(sum / (double)n) : 0.0f;
    memcpy(out, &scale, sizeof scale);
    uint8_t *bits = out + sizeof scale;
    memset(bits, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++) /* no branch: random signs would mispredict half */
        bits[i / 8] |= (uint8_t)((v[i] >= 0) << (i % 8));
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_sign_decode(const uint8_t *in, size_t n, float *out)
{
    /* BEGIN STUDENT CODE */
    if (!in || (!out && n))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_sign_decode: NULL %s", in ? "out" : "in");
    float scale;
    memcpy(&scale, in, sizeof scale);
    const uint8_t *bits = in + sizeof scale;
    for (size_t i = 0; i < n; i++)
        out[i] = (bits[i / 8] >> (i % 8)) & 1u ? scale : -scale;
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 1: top-k */

/* BEGIN STUDENT CODE */
/* The value of rank `want` (0: the smallest) among a[0..n), by
 * quickselect: a is reordered. Each round splits the range around a pivot
 * value into less, equal and greater, and keeps the part that holds rank
 * `want`: O(n) on average. */
static float nth_smallest(float *a, size_t n, size_t want)
{
    size_t lo = 0, hi = n; /* rank `want` lies in a[lo, hi) */
    for (;;) {
        float x = a[lo + (hi - lo) / 2], t;
        size_t lt = lo, i = lo, gt = hi; /* a[lo,lt) < x, a[lt,i) == x, a[gt,hi) > x */
        while (i < gt) {
            if (a[i] < x)
                t = a[lt], a[lt++] = a[i], a[i++] = t;
            else if (a[i] > x)
                t = a[--gt], a[gt] = a[i], a[i] = t;
            else
                i++;
        }
        if (want < lt)
            hi = lt;
        else if (want >= gt)
            lo = gt;
        else
            return x;
    }
}
/* END STUDENT CODE */

dt_result lab_topk_select(const float *v, size_t n, size_t k, lab_pair *out)
{
    /* BEGIN STUDENT CODE */
    if (!v || !out || k < 1 || k > n || n > (size_t)INT32_MAX)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_topk_select: %s (k %zu of n %zu)",
                       !v || !out ? "NULL buffer" : "k out of 1..n or n above INT32_MAX", k, n);
    float *mag = malloc(n * sizeof *mag);
    if (!mag)
        return dt_fail(DT_ERR_NOMEM, "lab_topk_select: %zu magnitudes", n);
    for (size_t i = 0; i < n; i++) {
        if (isnan(v[i])) {
            free(mag);
            return dt_fail(DT_ERR_INVALID_ARG, "lab_topk_select: v[%zu] is nan", i);
        }
        mag[i] = fabsf(v[i]);
    }
    /* t = the k-th largest |v_i|: everything above it is kept, and as many
     * of those equal to it as still fit, the lowest indices first. */
    float t = nth_smallest(mag, n, n - k);
    size_t above = 0;
    for (size_t i = 0; i < n; i++)
        above += fabsf(v[i]) > t;
    size_t ties = k - above, j = 0;
    for (size_t i = 0; i < n && j < k; i++) {
        float a = fabsf(v[i]);
        if (a > t || (a == t && ties > 0)) {
            if (a == t)
                ties--;
            out[j++] = (lab_pair){(int32_t)i, v[i]};
        }
    }
    free(mag);
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 1: int8 */

dt_result lab_int8_encode(const float *v, size_t n, float scale, int levels, int8_t *q)
{
    /* BEGIN STUDENT CODE */
    if ((!v || !q) && n)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_int8_encode: NULL %s", v ? "q" : "v");
    if (levels < 1 || levels > 127 || !(scale >= 0) || isinf(scale))
        return dt_fail(DT_ERR_INVALID_ARG, "lab_int8_encode: levels %d, scale %g", levels,
                       (double)scale);
    for (size_t i = 0; i < n; i++) {
        float x = scale > 0 ? rintf(v[i] / scale) : 0.0f;
        x = x > (float)levels ? (float)levels : x < (float)-levels ? (float)-levels : x;
        q[i] = (int8_t)x;
    }
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_int8_decode(const int8_t *q, size_t n, float scale, float *out)
{
    /* BEGIN STUDENT CODE */
    if ((!q || !out) && n)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_int8_decode: NULL %s", q ? "out" : "q");
    for (size_t i = 0; i < n; i++)
        out[i] = scale * (float)q[i];
    return DT_OK;
    /* END STUDENT CODE */
}

/* ================================================================ task 2: error feedback */

dt_result lab_ef_correct(float *v, const float *g, const float *e, size_t n)
{
    /* BEGIN STUDENT CODE */
    if ((!v || !g) && n)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ef_correct: NULL %s", v ? "g" : "v");
    if (!e) /* no feedback: compress the gradient itself */
        return v == g ? DT_OK : dt_vec_copy(v, g, n);
    return dt_vec_add(v, g, e, n);
    /* END STUDENT CODE */
}

dt_result lab_ef_update(float *e, const float *v, const float *c, size_t n)
{
    /* BEGIN STUDENT CODE */
    if (!e)
        return DT_OK;
    if ((!v || !c) && n)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_ef_update: NULL %s", v ? "c" : "v");
    /* the residual of the vector that was compressed: v = g + e_old, not g */
    return dt_vec_sub(e, v, c, n);
    /* END STUDENT CODE */
}
