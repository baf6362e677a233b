/* blas_internal.h - what the tensor layer's BLAS files share (not public). */
#ifndef DT_BLAS_INTERNAL_H
#define DT_BLAS_INTERNAL_H

#include "dt/tensor.h"

/* What the start-up check (blas_startup.c) found, before main. Written once
 * by its constructor while the process has one thread, read-only after:
 * process state, the same for every rank. */
typedef struct {
    dt_blas_chooser chosen_by;
    char blas_choice[24]; /* OpenBLAS's own choice, where known */
    char error[200];      /* an invalid DT_BLAS_KERNELS, DT_QUIET, ...; "" */
} dt_blas_startup_state;

const dt_blas_startup_state *dt_blas_startup(void);

/* Sets OpenBLAS's thread count from DT_BLAS_THREADS, once per process.
 * DT_ERR_INVALID_ARG, naming the variable and its value, when it is not a
 * whole number from 1 to 1024 (the count then stays 1). */
dt_result dt_blas_init_once(void);

/* Creates the file DT_BLAS_MARK names, if set, at the process's first use
 * of the BLAS (blas.c): which tests make test-kernels grades again. */
void dt_blas_note_use(void);

#endif
