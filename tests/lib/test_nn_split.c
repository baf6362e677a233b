/* test_nn_split.c - the backward split into B (input gradient) and W
 * (weight gradients), lib/nn/split_backward.c: B then W gives the
 * reference backward's gradients bit for bit (the same calls on the same
 * operands), on a middle stage and on the last one (from the loss), for
 * several micro-batches held at once; B alone touches no gradient; misuse
 * is refused. */
#include "grader.h"
#include "dt/nn.h"

#include <stdlib.h>
#include <string.h>

#define ROWS 5

static void fill(float *x, size_t n, int salt)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((int)((i * 7 + (size_t)salt * 3) % 11) - 5) / 4;
}

typedef struct {
    int layers[8];
    int n;
} hook_log;

static dt_result note_layer(void *arg, int layer, size_t offset, size_t count)
{
    hook_log *h = arg;
    (void)offset, (void)count;
    h->layers[h->n++] = layer;
    return DT_OK;
}

/* Both micro-batches' forwards (and losses, on the last stage). */
static void forward_both(dt_model *m, dt_acts **a, float (*x)[ROWS * 8], const int32_t *y,
                         int with_loss)
{
    for (int k = 0; k < 2; k++) {
        float loss;
        EXPECT_OK(dt_model_forward(m, a[k], x[k], NULL));
        if (with_loss)
            EXPECT_OK(dt_model_loss(m, a[k], y, &loss, NULL));
    }
}

/* Layers [first, last) of deep:6,8,3,4 (5 layers) on two micro-batches,
 * each as the reference backward and as B (both) then W (both). */
static void expect_split_equal(int first, int last)
{
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, "deep:6,8,3,4", 2));
    size_t in = m.layers[first].in_width, out = m.layers[last - 1].out_width;
    int with_loss = last == m.num_layers;
    float x[2][ROWS * 8], dout[2][ROWS * 8], dinp_ref[2][ROWS * 8], dinp[2][ROWS * 8];
    int32_t y[ROWS] = {0, 1, 2, 3, 1};
    float *ref = malloc(m.num_params * sizeof *ref);
    dt_acts *a[2];
    dt_wgrad *w[2];
    for (int k = 0; k < 2; k++) {
        fill(x[k], ROWS * in, k), fill(dout[k], ROWS * out, k + 5);
        EXPECT_OK(dt_acts_create(&a[k], &m, first, last, ROWS, 1));
        EXPECT_OK(dt_wgrad_create(&w[k], a[k]));
    }
    /* the reference: both forwards, then each micro-batch's backward */
    EXPECT_OK(dt_model_zero_grads(&m));
    forward_both(&m, a, x, y, with_loss);
    for (int k = 0; k < 2; k++)
        EXPECT_OK(dt_model_backward(&m, a[k], with_loss ? NULL : dout[k], first ? dinp_ref[k] : NULL,
                                    NULL, NULL));
    memcpy(ref, m.grads, m.num_params * sizeof *ref);
    /* split: both forwards, both B, then both W (as ZB-H1 may order them) */
    EXPECT_OK(dt_model_zero_grads(&m));
    forward_both(&m, a, x, y, with_loss);
    for (int k = 0; k < 2; k++) {
        EXPECT_OK(dt_model_backward_input(&m, a[k], with_loss ? NULL : dout[k],
                                          first ? dinp[k] : NULL, w[k]));
        for (size_t i = 0; i < m.num_params; i++)
            EXPECT(m.grads[i] == 0, "B wrote a parameter gradient (grads[%zu])", i);
        if (first)
            EXPECT(!memcmp(dinp[k], dinp_ref[k], ROWS * in * sizeof(float)),
                   "layers [%d, %d): B's input gradient differs from the backward's", first, last);
    }
    for (int k = 0; k < 2; k++) {
        hook_log h = {{0}, 0};
        EXPECT_OK(dt_model_backward_weight(&m, a[k], w[k], note_layer, &h));
        EXPECT(h.n == last - first && h.layers[0] == last - 1 && h.layers[h.n - 1] == first,
               "W called its hook for %d layers from %d, expected %d from %d", h.n, h.layers[0],
               last - first, last - 1);
    }
    for (size_t i = 0; i < m.num_params; i++)
        EXPECT(m.grads[i] == ref[i], "layers [%d, %d): grads[%zu] = %.9g after B and W, the "
               "backward gives %.9g", first, last, i, (double)m.grads[i], (double)ref[i]);
    for (int k = 0; k < 2; k++)
        dt_wgrad_free(w[k]), dt_acts_free(a[k]);
    free(ref);
    dt_model_free(&m);
}

TEST(nn_split_backward_equals_backward_bit_for_bit, 2)
{
    expect_split_equal(1, 4); /* a middle stage: dout given, dinp out */
    expect_split_equal(2, 5); /* the last stage: from the loss */
    expect_split_equal(0, 5); /* the whole model, no input gradient */
}

TEST(nn_split_backward_refuses_misuse, 1)
{
    dt_model m, g;
    dt_gpt_config c = {16, 4, 1, 2, 8};
    EXPECT_OK(dt_model_create_spec(&m, "deep:6,8,3,4", 2));
    EXPECT_OK(dt_gpt_create(&g, &c, 1));
    dt_acts *a, *ga;
    dt_wgrad *w = NULL;
    float x[ROWS * 6] = {0}, dout[ROWS * 8] = {0};
    EXPECT_OK(dt_acts_create(&a, &m, 0, 3, ROWS, 1));
    EXPECT_OK(dt_acts_create(&ga, &g, 0, 2, 1, 4));
    EXPECT_ERR(dt_wgrad_create(&w, ga), DT_ERR_UNSUPPORTED);
    EXPECT(strstr(dt_last_error(), "not linear"), "message: %s", dt_last_error());
    EXPECT_OK(dt_wgrad_create(&w, a));
    EXPECT_ERR(dt_model_backward_input(&m, a, dout, NULL, w), DT_ERR_STATE); /* no forward */
    EXPECT_OK(dt_model_forward(&m, a, x, NULL));
    EXPECT_ERR(dt_model_backward_weight(&m, a, w, NULL, NULL), DT_ERR_STATE); /* no B */
    EXPECT_OK(dt_model_backward_input(&m, a, dout, NULL, w));
    EXPECT_ERR(dt_model_backward_input(&m, a, dout, NULL, w), DT_ERR_STATE); /* B twice */
    EXPECT(strstr(dt_last_error(), "weight half"), "message: %s", dt_last_error());
    EXPECT_ERR(dt_model_backward_weight(&g, a, w, NULL, NULL), DT_ERR_INVALID_ARG);
    EXPECT_OK(dt_model_backward_weight(&m, a, w, NULL, NULL));
    dt_wgrad_free(w);
    dt_acts_free(a), dt_acts_free(ga);
    dt_model_free(&m), dt_model_free(&g);
}
