/* test_gpu_gpt.c - the tiny GPT's training step on the GPU (gpu/gpt.c)
 * against the CPU's reference path (dt_model_forward, dt_model_loss,
 * dt_model_backward, plain SGD): the same model, tokens, labels and
 * learning rate, two steps (the second on the updated parameters, with
 * the buffers reused), then the loss of each step, the last step's
 * gradients and every parameter compared. Tolerances: the loss 1e-5
 * absolute plus 1e-5 relative (a mean of logs of probabilities, fp32);
 * the gradients 1e-5 absolute plus 1e-3 relative (fp32 products and
 * reductions in another order, through two blocks, the layer norms'
 * means in float where the CPU's are in double, and the embedding's
 * atomic scatter-add); the parameters 1e-5 plus 1e-4, as the MLP's.
 * Skipped where no GPU can be used. */
#include "gpu_test.h"

#include "dt/nn.h"
#include "dt/optim.h"

#include <math.h>
#include <stdlib.h>

TEST_T(gpu_gpt_step_matches_cpu, 3, 60)
{
    gpu_require();
    dt_gpt_config cfg = {.vocab = 13, .context = 8, .layers = 2, .heads = 2, .channels = 16};
    size_t B = 2, T = 8, r = B * T;
    dt_model cpu;
    EXPECT_OK(dt_gpt_create(&cpu, &cfg, 11));
    dt_gpu_gpt g;
    EXPECT_OK(dt_gpu_gpt_create(&g, &cpu, B, T));
    int32_t tokens[16], labels[16];
    for (size_t i = 0; i < r; i++) { /* tokens repeat: the embedding's scatter-add collides */
        tokens[i] = (int32_t)((i * 5 + 3) % cfg.vocab);
        labels[i] = (int32_t)((i * 7 + 1) % cfg.vocab);
    }
    dt_acts *a;
    EXPECT_OK(dt_acts_create_path(&a, &cpu, 0, cpu.num_layers, B, T, DT_NN_REFERENCE));
    dt_optim_config sgd = dt_sgd_config(0.1f, 0.0f, 0.0f);
    float *got = malloc(cpu.num_params * sizeof(float));
    EXPECT(got, "malloc");
    for (int step = 0; step < 2; step++) {
        float want_loss, got_loss;
        EXPECT_OK(dt_model_zero_grads(&cpu));
        EXPECT_OK(dt_model_forward(&cpu, a, NULL, tokens));
        EXPECT_OK(dt_model_loss(&cpu, a, labels, &want_loss, NULL));
        EXPECT_OK(dt_model_backward(&cpu, a, NULL, NULL, NULL, NULL));
        EXPECT_OK(dt_sgd_update(&sgd, cpu.params, cpu.grads, NULL, cpu.num_params));
        EXPECT_OK(dt_gpu_gpt_step(&g, tokens, labels, 0.1f, &got_loss));
        EXPECT(fabsf(got_loss - want_loss) <= 1e-5f + 1e-5f * fabsf(want_loss),
               "step %d: loss %.7g on the GPU, %.7g on the CPU", step, got_loss, want_loss);
    }
    EXPECT_OK(dt_gpu_gpt_grads(&g, got));
    gpu_expect_close("gradients of step 2", got, cpu.grads, cpu.num_params, 1e-5f, 1e-3f);
    EXPECT_OK(dt_gpu_gpt_params(&g, got));
    gpu_expect_close("parameters after 2 steps", got, cpu.params, cpu.num_params, 1e-5f, 1e-4f);
    /* a label outside the vocabulary fails before any kernel runs */
    labels[5] = (int32_t)cfg.vocab;
    EXPECT_ERR(dt_gpu_gpt_step(&g, tokens, labels, 0.1f, NULL), DT_ERR_INVALID_ARG);
    free(got);
    dt_acts_free(a);
    dt_gpu_gpt_free(&g);
    dt_model_free(&cpu);
}
