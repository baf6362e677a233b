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
    /* Postcondition: out holds v's payload, lab_sign_bytes(n) bytes: the
     * scale that makes s * sign(v) closest to v (section 2), then one bit
     * per value, laid out as compress.h says. */
    (void)v, (void)n, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_sign_decode(const uint8_t *in, size_t n, float *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: out[i] is +s or -s, the scale and the sign bit i of
     * the payload in (section 2). */
    (void)in, (void)n, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 1: top-k */

/* BEGIN STUDENT CODE */
/* Your helpers for lab_topk_select, if you want any. */
/* END STUDENT CODE */

dt_result lab_topk_select(const float *v, size_t n, size_t k, lab_pair *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: out[0..k) are the k pairs (i, v[i]) of largest |v[i]|,
     * the lower index first among equal magnitudes, listed by increasing
     * index (section 3). Sorting all n values works; the chapter says what
     * is cheaper. */
    (void)v, (void)n, (void)k, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 1: int8 */

dt_result lab_int8_encode(const float *v, size_t n, float scale, int levels, int8_t *q)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: q[i] = rint(v[i] / scale) clamped to [-levels,
     * levels]; all 0 when scale is 0 (section 4). */
    (void)v, (void)n, (void)scale, (void)levels, (void)q;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_int8_decode(const int8_t *q, size_t n, float scale, float *out)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: out[i] = scale * q[i] (section 4). */
    (void)q, (void)n, (void)scale, (void)out;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

/* ================================================================ task 2: error feedback */

dt_result lab_ef_correct(float *v, const float *g, const float *e, size_t n)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: v is what this rank compresses: g plus the residual
     * it kept, or g alone without feedback (section 5). */
    (void)v, (void)g, (void)e, (void)n;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_ef_update(float *e, const float *v, const float *c, size_t n)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: e holds what C dropped from v, so that
     * g + e_old = C(v) + e_new (section 5). */
    (void)e, (void)v, (void)c, (void)n;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
