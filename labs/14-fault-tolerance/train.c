/* train.c - lab 14's run, given: a DDP or ZeRO-1 trainer fed by the
 * distributed sampler and an augmentation stream, its steps with their
 * failure points, the training loop that saves, and the paths. */
#include "ft.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Error feedback (chapter 10, section 7): v = g + e; the gradient sent is
 * c = (sum_i |v_i| / n) sign(v); e := v - c stays with the rank. */
static void compress_ef(float *g, float *e, size_t n)
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale += fabsf(g[i] + e[i]);
    scale /= (double)n;
    for (size_t i = 0; i < n; i++) {
        float v = g[i] + e[i], c = v >= 0 ? (float)scale : -(float)scale;
        e[i] = v - c, g[i] = c;
    }
}

/* The trainer's sync hook: the after-backward failure point, the
 * compression (LAB_DDP_EF), then the library's exchange. Its own state is
 * the residual (LAB_DDP_EF) or none (the library's hook keeps its state
 * where it did: ZeRO-1's with its update). */
static dt_result guarded_sync(dt_trainer *t, void *self)
{
    lab_guard *g = self;
    DT_CHECK(dt_failure_point(g->run->comm, g->run->fail, t->step, DT_PHASE_AFTER_BACKWARD));
    if (g->run->residual)
        compress_ef(t->model->grads, g->run->residual, t->model->num_params);
    return g->inner.run ? g->inner.run(t, g->inner.self) : DT_OK;
}

static dt_result visit_residual(dt_trainer *t, void *self, dt_ckpt_io *io)
{
    lab_guard *g = self;
    return dt_ckpt_io_f32(io, "residual", g->run->residual, t->model->num_params);
}

dt_result lab_run_init(lab_run *r, dt_comm *comm, lab_strategy s, uint64_t model_seed,
                       const dt_failure *fail)
{
    memset(r, 0, sizeof *r);
    r->comm = comm, r->strategy = s, r->fail = fail;
    r->rank = dt_comm_rank(comm), r->ranks = dt_comm_size(comm);
    if (r->ranks < 1 || LAB_GLOBAL_BATCH % r->ranks || LAB_DATA_N % r->ranks)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_run_init: %d ranks do not divide the global "
                       "batch %d and the data set's %d samples", r->ranks, LAB_GLOBAL_BATCH,
                       LAB_DATA_N);
    dt_trainer_config tc = {0};
    if (s != LAB_DDP && s != LAB_ZERO1 && s != LAB_DDP_EF)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_run_init: strategy %d is none of ft.h's", (int)s);
    tc.optim = s == LAB_ZERO1 ? dt_adamw_config(0.01f) : dt_sgd_config(0.05f, 0.9f, 0.01f);
    dt_rng_init(&r->augment, 11, 0); /* one stream for all ranks */
    DT_CHECK(dt_data_blobs(&r->data, LAB_DATA_N, LAB_INPUTS, 3, 2.0f, 8, 0));
    DT_CHECK(dt_sampler_init(&r->sampler, LAB_DATA_N, r->ranks, r->rank, 1, 1, 9));
    DT_CHECK(dt_model_create_spec(&r->model, LAB_SPEC, model_seed));
    DT_CHECK(dt_trainer_init(&r->trainer, &r->model, comm, &tc));
    if (s == LAB_ZERO1)
        DT_CHECK(dt_train_use_zero1(&r->trainer));
    if (s == LAB_DDP_EF && !(r->residual = calloc(r->model.num_params, sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "lab_run_init: the residual");
    r->guard = (lab_guard){r->trainer.sync, r};
    /* the library's hook is kept in the guard, not released */
    r->trainer.sync = (dt_hook){s == LAB_DDP_EF ? "ef_sign" : r->guard.inner.name, guarded_sync,
                                NULL, NULL, &r->guard};
    return dt_train_set_state(&r->trainer, &r->trainer.sync,
                              &(dt_hook_state){s == LAB_DDP_EF ? visit_residual : NULL, NULL});
}

void lab_run_free(lab_run *r)
{
    dt_trainer_free(&r->trainer);
    dt_model_free(&r->model);
    dt_dataset_free(&r->data);
    free(r->residual);
}

dt_result lab_run_step(lab_run *r)
{
    enum { G = LAB_GLOBAL_BATCH, IN = LAB_INPUTS };
    size_t B = (size_t)(G / r->ranks), idx[G];
    float x[G * IN], noise[G * IN];
    int32_t y[G];
    DT_CHECK(dt_failure_point(r->comm, r->fail, r->trainer.step, DT_PHASE_MID_ALLREDUCE));
    DT_CHECK(dt_sampler_next(&r->sampler, &r->pos, B, idx));
    DT_CHECK(dt_data_gather(&r->data, idx, B, x, NULL, y));
    for (size_t i = 0; i < G * IN; i++)
        noise[i] = 0.25f * dt_rng_normal(&r->augment);
    /* this rank's k-th sample is the step's global sample k x ranks + rank */
    for (size_t k = 0; k < B; k++)
        for (size_t c = 0; c < IN; c++)
            x[k * IN + c] += noise[(k * (size_t)r->ranks + (size_t)r->rank) * IN + c];
    dt_batch b = {x, NULL, y, B, 1, 1};
    return dt_train_step(&r->trainer, &b);
}

/* Ends the trace's region of a step or a save (dt_trace_begin) when it
 * failed too: a kill's instant lies inside the region it hit. */
static dt_result end_region(lab_run *r, dt_result res)
{
    dt_result e = dt_trace_end(r->comm);
    return res != DT_OK ? res : e;
}

dt_result lab_train(lab_run *r, const char *root, long until, long every)
{
    char name[32];
    while (r->trainer.step < until) {
        snprintf(name, sizeof name, "step %ld", r->trainer.step + 1);
        DT_CHECK(dt_trace_begin(r->comm, name));
        DT_CHECK(end_region(r, lab_run_step(r)));
        if (every > 0 && r->trainer.step % every == 0) {
            snprintf(name, sizeof name, "save step %ld", r->trainer.step);
            DT_CHECK(dt_trace_begin(r->comm, name));
            DT_CHECK(end_region(r, lab_save(r, root)));
        }
    }
    return DT_OK;
}

/* FNV-1a over what a checkpoint's records are laid out by. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

uint64_t lab_fingerprint(const lab_run *r)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    int s = (int)r->strategy;
    h = fnv(h, &s, sizeof s);
    h = fnv(h, LAB_SPEC, sizeof LAB_SPEC);
    for (int l = 0; l < r->model.num_layers; l++) {
        uint64_t w[3] = {r->model.layers[l].in_width, r->model.layers[l].out_width,
                         r->model.layers[l].param_count};
        h = fnv(h, w, sizeof w);
    }
    int slots = (int)(dt_optim_state_bytes_per_param(&r->trainer.cfg.optim) / sizeof(float));
    return fnv(h, &slots, sizeof slots);
}

dt_result lab_ckpt_dir(char *out, size_t cap, const char *root, long step)
{
    int n = snprintf(out, cap, "%s/step-%08ld", root, step);
    if (n < 0 || (size_t)n >= cap)
        return dt_fail(DT_ERR_INVALID_ARG, "%s/step-%08ld: longer than %zu bytes", root, step,
                       cap);
    return DT_OK;
}

dt_result lab_latest_path(char *out, size_t cap, const char *root)
{
    int n = snprintf(out, cap, "%s/latest", root);
    if (n < 0 || (size_t)n >= cap)
        return dt_fail(DT_ERR_INVALID_ARG, "%s/latest: longer than %zu bytes", root, cap);
    return DT_OK;
}

dt_result lab_read_latest(char *out, size_t cap, const char *root)
{
    char path[LAB_PATH], name[64] = "";
    DT_CHECK(lab_latest_path(path, sizeof path, root));
    FILE *f = fopen(path, "rb");
    if (!f)
        return dt_fail(DT_ERR_IO, "%s: cannot open it: no checkpoint was committed", path);
    size_t n = fread(name, 1, sizeof name - 1, f);
    fclose(f);
    name[n] = '\0';
    long step;
    char tail;
    if (sscanf(name, "step-%8ld%c", &step, &tail) != 1 || strlen(name) != 13)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: names no checkpoint ('%.20s')", path, name);
    return lab_ckpt_dir(out, cap, root, step);
}

dt_result lab_remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return dt_fail(DT_ERR_IO, "%s: cannot open the folder", dir);
    struct dirent *e;
    char path[LAB_PATH + 300];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (unlink(path) != 0) {
            closedir(d);
            return dt_fail(DT_ERR_IO, "%s: cannot remove it", path);
        }
    }
    closedir(d);
    return rmdir(dir) == 0 ? DT_OK : dt_fail(DT_ERR_IO, "%s: cannot remove the folder", dir);
}
