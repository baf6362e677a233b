// kernels_internal.h - what the .cu files of gpu/ share, not part of gpu.h.
#ifndef DT_GPU_KERNELS_INTERNAL_H
#define DT_GPU_KERNELS_INTERNAL_H

#include "dt/core.h"

// After a kernel launch: the launch's error, else the kernel's (it waits
// for the calling thread's stream, gpu.h), as a dt_result naming what.
dt_result dt_gpu_launched(const char *what);

#endif // DT_GPU_KERNELS_INTERNAL_H
