/* gpu_test.c - the GPU tests' probe and comparisons (gpu_test.h). */
#include "gpu_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

int gpu_count(char *why, size_t len)
{
    int fd[2];
    if (pipe(fd) != 0)
        dt_test_fail(__FILE__, __LINE__, "pipe failed");
    pid_t pid = fork();
    if (pid == 0) { /* the child touches CUDA; the test's process never does here */
        close(fd[0]);
        char msg[300];
        int n = 0;
        if (dt_gpu_probe() == DT_OK && cudaGetDeviceCount(&n) == cudaSuccess)
            snprintf(msg, sizeof msg, "%d", n);
        else
            snprintf(msg, sizeof msg, "0 %s", dt_last_error());
        ssize_t w = write(fd[1], msg, strlen(msg) + 1);
        _exit(w > 0 ? 0 : 1);
    }
    close(fd[1]);
    char buf[300] = "";
    ssize_t got = pid > 0 ? read(fd[0], buf, sizeof buf - 1) : -1;
    close(fd[0]);
    if (pid > 0)
        waitpid(pid, NULL, 0);
    int n = got > 0 ? atoi(buf) : 0;
    snprintf(why, len, "%s", got > 0 && strchr(buf, ' ') ? strchr(buf, ' ') + 1
                                                         : n > 0 ? "" : "no GPU: the probe did not answer");
    return n;
}

int gpu_require(void)
{
    char why[300];
    int n = gpu_count(why, sizeof why);
    if (n < 1)
        dt_test_skip("%s", why);
    return n;
}

void gpu_expect_close(const char *what, const float *got, const float *want, size_t n, float atol,
                      float rtol)
{
    for (size_t i = 0; i < n; i++) {
        float tol = atol + rtol * fabsf(want[i]);
        if (!(fabsf(got[i] - want[i]) <= tol))
            dt_test_fail(__FILE__, __LINE__, "%s[%zu] = %.9g on the GPU, %.9g on the CPU "
                         "(tolerance %g + %g |cpu|)", what, i, got[i], want[i], atol, rtol);
    }
}

void *gpu_upload(const void *host, size_t bytes)
{
    void *d = NULL;
    if (dt_gpu_alloc(&d, bytes) != DT_OK || dt_gpu_to_device(d, host, bytes) != DT_OK)
        dt_test_fail(__FILE__, __LINE__, "upload of %zu bytes: %s", bytes, dt_last_error());
    return d;
}

void gpu_download(void *host, const void *dev, size_t bytes)
{
    if (dt_gpu_to_host(host, dev, bytes) != DT_OK)
        dt_test_fail(__FILE__, __LINE__, "download of %zu bytes: %s", bytes, dt_last_error());
}
