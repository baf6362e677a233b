/* reduce_fast.c - the reductions of reduce.c, vectorized where the compiler
 * leaves the plain loop scalar: f32 sums (and averages) and the division of
 * an average. The same operations on every element in the same order, so
 * the same bits as the reference (tests/lib check it). Used when the job's
 * fast paths are on (DT_FAST, dt_launch_opts.fast). */
#include "reduce.h"

#include <string.h>

/* The hot case (f32 sum) in explicit 4-wide vectors: the compiler at -O2
 * does not vectorize the generic loop, whose operands may alias. Loads and
 * stores go through memcpy (unaligned-safe); dst may equal a or b. */
typedef float dt_v4f __attribute__((vector_size(16)));

static void f32_add(float *dst, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        dt_v4f x0, x1, y0, y1;
        memcpy(&x0, a + i, 16);
        memcpy(&x1, a + i + 4, 16);
        memcpy(&y0, b + i, 16);
        memcpy(&y1, b + i + 4, 16);
        x0 += y0;
        x1 += y1;
        memcpy(dst + i, &x0, 16);
        memcpy(dst + i + 4, &x1, 16);
    }
    for (; i < n; i++)
        dst[i] = a[i] + b[i];
}

void dt_reduce3_fast(void *dst, const void *a, const void *b, size_t n, dt_dtype dt,
                     dt_redop op)
{
    if (dt == DT_F32 && (op == DT_SUM || op == DT_AVG))
        f32_add(dst, a, b, n);
    else
        dt_reduce3(dst, a, b, n, dt, op);
}

/* p[i] /= d for f32, 8 at a time: the compiler at -O2 leaves the plain
 * loop scalar, and scalar divisions cost more than the reduction before
 * them. Dividing by a power of two is multiplying by its exact inverse:
 * the same bits, faster still. */
static void f32_div(float *p, size_t n, int d)
{
    int pow2 = (d & (d - 1)) == 0;
    float inv = 1.0f / (float)d;
    dt_v4f dv = {(float)d, (float)d, (float)d, (float)d}, iv = {inv, inv, inv, inv};
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        dt_v4f x0, x1;
        memcpy(&x0, p + i, 16);
        memcpy(&x1, p + i + 4, 16);
        if (pow2) {
            x0 *= iv;
            x1 *= iv;
        } else {
            x0 /= dv;
            x1 /= dv;
        }
        memcpy(p + i, &x0, 16);
        memcpy(p + i + 4, &x1, 16);
    }
    for (; i < n; i++)
        p[i] /= (float)d;
}

void dt_reduce_avg_fast(void *buf, size_t n, dt_dtype dt, int nranks)
{
    if (dt == DT_F32 && nranks > 1)
        f32_div(buf, n, nranks);
    else
        dt_reduce_avg(buf, n, dt, nranks);
}
