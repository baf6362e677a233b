/* gpu_mlp_step.c - the GPU MLP's training step (gpu/mlp.c) timed, beside
 * PyTorch's same step (bench/gpu_mlp_torch.py, same widths, batch and SGD;
 * bench/gpu-check.sh runs both). Each step moves its batch up and its
 * losses down, as a training loop does; the median of the timed steps.
 *
 *   gpu_mlp_step [--widths 784,1024,1024,10] [--batch 256] [--steps 50]
 *
 * Prints "gpu_mlp_step libdt widths=... batch=B median_ms=X". */
#include "dt/core.h"
#include "dt/nn.h"
#include "gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *widths = "784,1024,1024,10";
    long batch = 256, steps = 50;
    dt_result r = DT_OK;
    for (int i = 1; r == DT_OK && i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            r = dt_fail(DT_ERR_INVALID_ARG, "%s: needs a value", argv[i]);
        else if (!strcmp(argv[i], "--widths"))
            widths = v;
        else if (!strcmp(argv[i], "--batch"))
            r = dt_parse_long("--batch", v, 1, 1 << 20, &batch);
        else if (!strcmp(argv[i], "--steps"))
            r = dt_parse_long("--steps", v, 1, 100000, &steps);
        else
            r = dt_fail(DT_ERR_INVALID_ARG, "unknown option '%s'", argv[i]);
    }
    char spec[300];
    snprintf(spec, sizeof spec, "mlp:%s", widths);
    dt_model m;
    if (r == DT_OK)
        r = dt_model_create_spec(&m, spec, 1);
    if (r != DT_OK) {
        fprintf(stderr, "gpu_mlp_step: %s\nusage: gpu_mlp_step [--widths A,B,...] [--batch B] "
                "[--steps K]\n", dt_last_error());
        return 2;
    }
    size_t B = (size_t)batch;
    float *x = malloc(B * m.in_width * sizeof(float));
    int32_t *labels = malloc(B * sizeof(int32_t));
    double *t = malloc((size_t)steps * sizeof(double));
    for (size_t i = 0; i < B * m.in_width; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
    for (size_t i = 0; i < B; i++)
        labels[i] = (int32_t)(i % m.num_classes);
    dt_gpu_mlp g;
    float loss = 0;
    r = dt_gpu_mlp_create(&g, &m, B);
    for (int i = 0; r == DT_OK && i < 5; i++)
        r = dt_gpu_mlp_step(&g, x, labels, 0.01f, &loss);
    for (long i = 0; r == DT_OK && i < steps; i++) {
        double t0 = dt_now();
        r = dt_gpu_mlp_step(&g, x, labels, 0.01f, &loss);
        t[i] = dt_now() - t0;
    }
    if (r != DT_OK) {
        fprintf(stderr, "gpu_mlp_step: %s\n", dt_last_error());
        return 1;
    }
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    printf("gpu_mlp_step libdt widths=%s batch=%zu median_ms=%.4f loss=%.4f\n", widths, B,
           t[steps / 2] * 1e3, loss);
    dt_gpu_mlp_free(&g);
    dt_model_free(&m);
    free(x), free(labels), free(t);
    return 0;
}
