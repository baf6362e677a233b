/* dump.c - --dump FILE: one step of the first batch, written for
 * bench/compute_verify.py, which replays it in PyTorch:
 *
 *   "DTDUMP1\0", then int64: num_layers, widths[num_layers + 1], B;
 *   float32 params[num_params]; float32 x[B * in]; int32 y[B];
 *   float32 loss; float32 grads[num_params]        (little-endian)
 *
 * The gradients come from the backward on the path dttrain would run
 * (feature-major unless --reference), so the replay checks what is timed. */
#include "dttrain.h"

#include <stdlib.h>
#include <string.h>

static dt_result write_dump(const char *path, const dt_model *m, size_t B, const float *p0,
                            const float *x, const int32_t *y, float loss)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return dt_fail(DT_ERR_IO, "--dump: cannot write %s", path);
    int64_t nl = m->num_layers, b64 = (int64_t)B, w = (int64_t)m->in_width;
    fwrite("DTDUMP1", 1, 8, f);
    fwrite(&nl, 8, 1, f);
    fwrite(&w, 8, 1, f);
    for (int l = 0; l < m->num_layers; l++) {
        w = (int64_t)m->layers[l].out_width;
        fwrite(&w, 8, 1, f);
    }
    fwrite(&b64, 8, 1, f);
    fwrite(p0, sizeof(float), m->num_params, f);
    fwrite(x, sizeof(float), B * m->in_width, f);
    fwrite(y, sizeof(int32_t), B, f);
    fwrite(&loss, sizeof(float), 1, f);
    fwrite(m->grads, sizeof(float), m->num_params, f);
    if (ferror(f) | fclose(f))
        return dt_fail(DT_ERR_IO, "--dump: writing %s failed", path);
    return DT_OK;
}

dt_result dttrain_dump(const options *o, dt_model *m, const dt_dataset *d)
{
    size_t B = (size_t)o->batch, in = m->in_width;
    size_t *idx = malloc(B * sizeof *idx);
    float *x = malloc(B * in * sizeof(float)), *p0 = malloc(m->num_params * sizeof(float));
    int32_t *y = malloc(B * sizeof(int32_t));
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config((float)o->lr, 0, 0);
    tc.path = o->reference ? DT_NN_REFERENCE : DT_NN_FAST;
    dt_result r = idx && x && p0 && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "--dump: buffers");
    for (size_t i = 0; r == DT_OK && i < B; i++)
        idx[i] = i;
    if (r == DT_OK) {
        memcpy(p0, m->params, m->num_params * sizeof(float));
        r = dt_data_gather(d, idx, B, x, NULL, y);
    }
    /* one step of the loop whose update leaves the parameters and the
     * gradients as the backward made them */
    if (r == DT_OK && (r = dt_trainer_init(&t, m, NULL, &tc)) == DT_OK) {
        dt_train_set_hook(&t.update, (dt_hook){"none", NULL, NULL, NULL, NULL});
        dt_batch b = {x, NULL, y, B, 1, 1};
        r = dt_train_step(&t, &b);
        if (r == DT_OK)
            r = write_dump(o->dump, m, B, p0, x, y, t.loss);
        dt_trainer_free(&t);
    }
    free(idx), free(x), free(p0), free(y);
    return r;
}
