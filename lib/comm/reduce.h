/* reduce.h - the elementwise reduction kernels of the collectives
 * (reduce.c). Not a public header. */
#ifndef DT_COMM_REDUCE_H
#define DT_COMM_REDUCE_H

#include "dt/comm.h"

/* dst[i] = a[i] op b[i] for i < n (AVG sums); dst may alias a or b. */
void dt_reduce3(void *dst, const void *a, const void *b, size_t n, dt_dtype dt, dt_redop op);
/* dst[i] /= nranks (the last step of AVG). */
void dt_reduce_avg(void *buf, size_t n, dt_dtype dt, int nranks);

/* The same, vectorized where it pays (reduce_fast.c): the same bits. */
void dt_reduce3_fast(void *dst, const void *a, const void *b, size_t n, dt_dtype dt,
                     dt_redop op);
void dt_reduce_avg_fast(void *buf, size_t n, dt_dtype dt, int nranks);

#endif /* DT_COMM_REDUCE_H */
