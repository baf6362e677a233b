/* loss.c - what every GPU training step does around the loss (gpu.h):
 * its labels checked on the host before a kernel reads them, and the mean
 * of the per-row losses brought down and summed in double, as
 * dt_softmax_xent_forward takes it on the CPU. */
#include "gpu.h"

dt_result dt_gpu_check_labels(const char *who, const int32_t *labels, size_t n, size_t classes)
{
    for (size_t i = 0; i < n; i++) /* a bad label fails here, not in a kernel */
        if (labels[i] < 0 || (size_t)labels[i] >= classes)
            return dt_fail(DT_ERR_INVALID_ARG, "%s: label %d of row %zu out of [0, %zu)", who,
                           labels[i], i, classes);
    return DT_OK;
}

dt_result dt_gpu_mean_loss(float *loss, float *host, const float *losses, size_t n)
{
    dt_result r = dt_gpu_to_host(host, losses, n * sizeof(float));
    if (r != DT_OK)
        return r;
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += host[i];
    *loss = (float)(s / (double)n);
    return DT_OK;
}
