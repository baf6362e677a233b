/* powersgd.c - lab 10, task 7 (going further, graded): PowerSGD, a
 * rank-r approximation of each weight matrix by one step of power
 * iteration, exchanged in two small allreduces (chapter 10, section 8).
 * Your code goes between the fences. */
#include "compress.h"

#include <math.h>
#include <string.h>

dt_result lab_orthonormalize(float *p, size_t rows, int r)
{
    /* BEGIN STUDENT CODE */
    if ((!p && rows) || r < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_orthonormalize: %s", p ? "r < 1" : "NULL p");
    size_t R = (size_t)r;
    for (size_t j = 0; j < R; j++) {
        /* modified Gram-Schmidt, each projection from the column as it is
         * now; twice, because a column nearly in the span of the earlier
         * ones keeps, after one pass, only rounding noise, which is not
         * orthogonal to them: the second pass makes it so */
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < j; i++) {
                double dot = 0;
                for (size_t k = 0; k < rows; k++)
                    dot += (double)p[k * R + i] * (double)p[k * R + j];
                for (size_t k = 0; k < rows; k++)
                    p[k * R + j] -= (float)dot * p[k * R + i];
            }
        double norm = 0;
        for (size_t k = 0; k < rows; k++)
            norm += (double)p[k * R + j] * (double)p[k * R + j];
        float inv = norm > 0 ? (float)(1.0 / sqrt(norm)) : 0.0f;
        for (size_t k = 0; k < rows; k++)
            p[k * R + j] *= inv;
    }
    return DT_OK;
    /* END STUDENT CODE */
}

dt_result lab_sync_powersgd(lab_cdp *c)
{
    /* BEGIN STUDENT CODE */
    float *g = c->model->grads;
    size_t r = (size_t)c->cfg.rank;
    DT_CHECK(lab_ef_correct(c->v, g, c->error, c->n));
    /* P = V Q for each matrix; the plain ranges ride along uncompressed */
    for (int i = 0; i < c->num_lowrank; i++) {
        const lab_lowrank *l = &c->lowrank[i];
        DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_NO_TRANS, l->rows, r, l->cols, 1.0f, c->v + l->offset,
                          l->cols, c->lr_q + l->q_offset, r, 0.0f, c->lr_p + l->p_offset, r));
    }
    for (int i = 0; i < c->num_plain; i++)
        memcpy(c->lr_p + c->plain[i].p_offset, c->v + c->plain[i].offset,
               c->plain[i].count * sizeof(float));
    DT_CHECK(dt_allreduce(c->lr_p, c->lr_p, c->lr_p_count, DT_F32, DT_AVG, c->comm));
    /* Q = V^T P with P orthonormal: the second half of the power step */
    for (int i = 0; i < c->num_lowrank; i++) {
        const lab_lowrank *l = &c->lowrank[i];
        DT_CHECK(lab_orthonormalize(c->lr_p + l->p_offset, l->rows, (int)r));
        DT_CHECK(dt_sgemm(DT_TRANS, DT_NO_TRANS, l->cols, r, l->rows, 1.0f, c->v + l->offset,
                          l->cols, c->lr_p + l->p_offset, r, 0.0f, c->lr_q + l->q_offset, r));
    }
    DT_CHECK(dt_allreduce(c->lr_q, c->lr_q, c->lr_q_count, DT_F32, DT_AVG, c->comm));
    /* the approximation P Q^T, the same on every rank */
    for (int i = 0; i < c->num_lowrank; i++) {
        const lab_lowrank *l = &c->lowrank[i];
        DT_CHECK(dt_sgemm(DT_NO_TRANS, DT_TRANS, l->rows, l->cols, r, 1.0f, c->lr_p + l->p_offset,
                          r, c->lr_q + l->q_offset, r, 0.0f, c->sent + l->offset, l->cols));
        memcpy(g + l->offset, c->sent + l->offset, l->rows * l->cols * sizeof(float));
    }
    for (int i = 0; i < c->num_plain; i++) { /* sent as they are: no residual */
        const lab_plain *pl = &c->plain[i];
        memcpy(c->sent + pl->offset, c->v + pl->offset, pl->count * sizeof(float));
        memcpy(g + pl->offset, c->lr_p + pl->p_offset, pl->count * sizeof(float));
    }
    return lab_ef_update(c->error, c->v, c->sent, c->n);
    /* END STUDENT CODE */
}
