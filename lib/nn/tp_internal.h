/* tp_internal.h - what the tensor-parallel files of lib/nn share (tp_*.c).
 * Not a public header. */
#ifndef DT_NN_TP_INTERNAL_H
#define DT_NN_TP_INTERNAL_H

#include "dt/tp.h"

/* *t and *r: tp's size and this rank's index in it; 1 and 0 without a
 * group (NULL). A freed communicator fails, naming fn: computing as one
 * rank would silently give a slice's answer. */
static inline dt_result nn_tp_group(dt_comm *tp, const char *fn, size_t *t, size_t *r)
{
    *t = 1, *r = 0;
    if (!tp)
        return DT_OK;
    int size = dt_comm_size(tp), rank = dt_comm_rank(tp);
    if (size < 1 || rank < 0)
        return dt_fail(DT_ERR_STATE, "%s: the tensor-parallel communicator is freed", fn);
    *t = (size_t)size, *r = (size_t)rank;
    return DT_OK;
}

/* The tensor-parallel group size of a model: 1 for a whole one. */
static inline size_t nn_tp_size(const dt_model *m)
{
    return m->tp && m->tp_size > 1 ? (size_t)m->tp_size : 1;
}

#endif /* DT_NN_TP_INTERNAL_H */
