/* test_gpu_mlp.c - the MLP's training step on the GPU (gpu/mlp.c) against
 * the CPU's (dt_model_forward, dt_model_loss, dt_model_backward, plain
 * SGD): the same model, batch and learning rate, three steps, then the
 * loss and every parameter compared. Tolerance: 1e-5 absolute plus 1e-4
 * relative (fp32 products summed in another order by cuBLAS, three steps
 * deep). Skipped where no GPU can be used. */
#include "gpu_test.h"

#include "dt/nn.h"
#include "dt/optim.h"

#include <math.h>
#include <stdlib.h>

TEST_T(gpu_mlp_step_matches_cpu, 3, 60)
{
    gpu_require();
    size_t widths[] = {64, 96, 48, 10}, B = 32;
    dt_model cpu;
    EXPECT_OK(dt_mlp_create(&cpu, widths, 4, 7));
    dt_gpu_mlp g;
    EXPECT_OK(dt_gpu_mlp_create(&g, &cpu, B));
    float *x = malloc(B * widths[0] * sizeof(float));
    int32_t *labels = malloc(B * sizeof(int32_t));
    uint64_t s = 12345;
    for (size_t i = 0; i < B * widths[0]; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = (float)((s >> 40) & 0xffff) / 65536.0f - 0.5f;
    }
    for (size_t i = 0; i < B; i++)
        labels[i] = (int32_t)((i * 7) % widths[3]);
    dt_acts *a;
    EXPECT_OK(dt_acts_create(&a, &cpu, 0, cpu.num_layers, B, 1));
    dt_optim_config sgd = dt_sgd_config(0.1f, 0.0f, 0.0f);
    for (int step = 0; step < 3; step++) {
        float want_loss, got_loss;
        EXPECT_OK(dt_model_zero_grads(&cpu));
        EXPECT_OK(dt_model_forward(&cpu, a, x, NULL));
        EXPECT_OK(dt_model_loss(&cpu, a, labels, &want_loss, NULL));
        EXPECT_OK(dt_model_backward(&cpu, a, NULL, NULL, NULL, NULL));
        EXPECT_OK(dt_sgd_update(&sgd, cpu.params, cpu.grads, NULL, cpu.num_params));
        EXPECT_OK(dt_gpu_mlp_step(&g, x, labels, 0.1f, &got_loss));
        EXPECT(fabsf(got_loss - want_loss) <= 1e-5f + 1e-4f * fabsf(want_loss),
               "step %d: loss %.7g on the GPU, %.7g on the CPU", step, got_loss, want_loss);
    }
    float *got = malloc(cpu.num_params * sizeof(float));
    EXPECT_OK(dt_gpu_mlp_params(&g, got));
    gpu_expect_close("parameters after 3 steps", got, cpu.params, cpu.num_params, 1e-5f, 1e-4f);
    free(got), free(x), free(labels);
    dt_acts_free(a);
    dt_gpu_mlp_free(&g);
    dt_model_free(&cpu);
}
