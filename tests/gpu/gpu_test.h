/* gpu_test.h - what the GPU tests share: the probe that skips a test where
 * no GPU can be used ("skipped: no GPU", counted as skipped, never as
 * passed), and the tolerance of a float compared with the CPU library's. */
#ifndef DT_GPU_TEST_H
#define DT_GPU_TEST_H

#include "grader.h"

#include "gpu.h"

/* Skips the test unless a GPU can be used; returns the number visible.
 * The probe runs in a child process: CUDA may not be touched before the
 * nccl backend forks its ranks (a forked child cannot use the CUDA
 * context of its parent). */
int gpu_require(void);
/* The probe alone: the GPUs visible (0: none, why says why). */
int gpu_count(char *why, size_t len);

/* |got - want| <= atol + rtol |want| for each of n floats; else the test
 * fails naming what, the index and both values. */
void gpu_expect_close(const char *what, const float *got, const float *want, size_t n, float atol,
                      float rtol);

/* Device copies of host data, and the way back; a failure fails the test. */
void *gpu_upload(const void *host, size_t bytes);
void gpu_download(void *host, const void *dev, size_t bytes);

#endif /* DT_GPU_TEST_H */
