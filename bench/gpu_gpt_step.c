/* gpu_gpt_step.c - the tiny GPT's training step on the GPU (gpu/gpt.c)
 * timed, beside PyTorch's same step (bench/gpu_gpt_torch.py: the same
 * vocabulary, context, layers, heads and channels, batch and plain SGD;
 * bench/gpu-check.sh runs both and compares their parameter counts). Each
 * step moves its tokens and labels up and its losses down, as a training
 * loop does; the median of the timed steps, after 5 of warm-up.
 *
 *   gpu_gpt_step [--config 512,128,4,4,256] [--batch 8] [--steps 30]
 *
 * --config is VOCAB,CONTEXT,LAYERS,HEADS,CHANNELS (dt_model_create_spec's
 * "gpt:" spec); every sequence is CONTEXT tokens long. Prints
 * "gpu_gpt_step libdt config=... batch=B params=N median_ms=X loss=Y". */
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
    const char *config = "512,128,4,4,256";
    long batch = 8, steps = 30;
    dt_result r = DT_OK;
    for (int i = 1; r == DT_OK && i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            r = dt_fail(DT_ERR_INVALID_ARG, "%s: needs a value", argv[i]);
        else if (!strcmp(argv[i], "--config"))
            config = v;
        else if (!strcmp(argv[i], "--batch"))
            r = dt_parse_long("--batch", v, 1, 1 << 16, &batch);
        else if (!strcmp(argv[i], "--steps"))
            r = dt_parse_long("--steps", v, 1, 100000, &steps);
        else
            r = dt_fail(DT_ERR_INVALID_ARG, "unknown option '%s'", argv[i]);
    }
    char spec[300];
    snprintf(spec, sizeof spec, "gpt:%s", config);
    dt_model m;
    if (r == DT_OK)
        r = dt_model_create_spec(&m, spec, 1);
    if (r != DT_OK) {
        fprintf(stderr, "gpu_gpt_step: %s\nusage: gpu_gpt_step [--config V,T,L,NH,C] "
                "[--batch B] [--steps K]\n", dt_last_error());
        return 2;
    }
    /* each sequence the whole context; the labels are the next tokens of
     * one fixed stream, the same stream bench/gpu_gpt_torch.py makes */
    size_t B = (size_t)batch, T = m.max_seq, V = m.num_classes, n = B * T;
    int32_t *tokens = malloc(n * sizeof(int32_t)), *labels = malloc(n * sizeof(int32_t));
    double *t = malloc((size_t)steps * sizeof(double));
    if (!tokens || !labels || !t) {
        fprintf(stderr, "gpu_gpt_step: out of memory for %zu tokens\n", n);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        tokens[i] = (int32_t)((i * 2654435761u) % V);
        labels[i] = (int32_t)(((i + 1) * 2654435761u) % V);
    }
    dt_gpu_gpt g;
    float loss = 0;
    r = dt_gpu_gpt_create(&g, &m, B, T);
    for (int i = 0; r == DT_OK && i < 5; i++)
        r = dt_gpu_gpt_step(&g, tokens, labels, 0.01f, &loss);
    for (long i = 0; r == DT_OK && i < steps; i++) {
        double t0 = dt_now();
        r = dt_gpu_gpt_step(&g, tokens, labels, 0.01f, &loss);
        t[i] = dt_now() - t0;
    }
    if (r != DT_OK) {
        fprintf(stderr, "gpu_gpt_step: %s\n", dt_last_error());
        return 1;
    }
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    printf("gpu_gpt_step libdt config=%s batch=%zu params=%zu median_ms=%.4f loss=%.4f\n", config,
           B, m.num_params, t[steps / 2] * 1e3, loss);
    dt_gpu_gpt_free(&g);
    dt_model_free(&m);
    free(tokens), free(labels), free(t);
    return 0;
}
