/* optim.c - SGD with momentum and weight decay, AdamW, on a flat range. */
#include "dt/optim.h"

#include <math.h>
#include <string.h>

dt_optim_config dt_sgd_config(float lr, float momentum, float weight_decay)
{
    dt_optim_config c = {DT_OPTIM_SGD, lr, weight_decay, momentum, 0.9f, 0.999f, 1e-8f};
    return c;
}

dt_optim_config dt_adamw_config(float lr)
{
    dt_optim_config c = {DT_OPTIM_ADAMW, lr, 0.01f, 0, 0.9f, 0.999f, 1e-8f};
    return c;
}

static dt_result check_config(const dt_optim_config *c)
{
    if (!c)
        return dt_fail(DT_ERR_INVALID_ARG, "optimizer: NULL config");
    if (c->kind != DT_OPTIM_SGD && c->kind != DT_OPTIM_ADAMW)
        return dt_fail(DT_ERR_INVALID_ARG, "optimizer: unknown kind %d", (int)c->kind);
    if (!(c->lr >= 0) || !(c->weight_decay >= 0))
        return dt_fail(DT_ERR_INVALID_ARG, "optimizer: lr %g and weight decay %g must be >= 0",
                       (double)c->lr, (double)c->weight_decay);
    if (c->kind == DT_OPTIM_SGD && !(c->momentum >= 0 && c->momentum < 1))
        return dt_fail(DT_ERR_INVALID_ARG, "SGD: momentum %g outside [0, 1)", (double)c->momentum);
    if (c->kind == DT_OPTIM_ADAMW &&
        !(c->beta1 >= 0 && c->beta1 < 1 && c->beta2 >= 0 && c->beta2 < 1 && c->eps > 0))
        return dt_fail(DT_ERR_INVALID_ARG, "AdamW: betas (%g, %g) must lie in [0, 1), eps %g > 0",
                       (double)c->beta1, (double)c->beta2, (double)c->eps);
    return DT_OK;
}

static dt_result need(const void *p, const char *what, const char *fn, size_t count)
{
    if (count && !p)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: NULL %s with count %zu", fn, what, count);
    return DT_OK;
}

/* The loops of dt_sgd_update, one per case and with restrict pointers, so
 * that the compiler vectorizes them (they run over every parameter). */
static void sgd_momentum(float *restrict p, const float *restrict grads, float *restrict buf,
                         size_t count, float lr, float wd, float mu)
{
    for (size_t i = 0; i < count; i++) {
        /* PyTorch starts the buffer at the first gradient: with a zero
         * buffer, mu * 0 + g is the same */
        buf[i] = mu * buf[i] + (grads[i] + wd * p[i]);
        p[i] -= lr * buf[i];
    }
}

static void sgd_plain(float *restrict p, const float *restrict grads, size_t count, float lr,
                      float wd)
{
    for (size_t i = 0; i < count; i++)
        p[i] -= lr * (grads[i] + wd * p[i]);
}

dt_result dt_sgd_update(const dt_optim_config *cfg, float *params, const float *grads,
                        float *momentum_buf, size_t count)
{
    DT_CHECK(check_config(cfg));
    DT_CHECK(need(params, "params", "dt_sgd_update", count));
    DT_CHECK(need(grads, "grads", "dt_sgd_update", count));
    float lr = cfg->lr, wd = cfg->weight_decay, mu = cfg->momentum;
    if (mu > 0)
        DT_CHECK(need(momentum_buf, "momentum buffer", "dt_sgd_update", count));
    if (mu > 0)
        sgd_momentum(params, grads, momentum_buf, count, lr, wd, mu);
    else
        sgd_plain(params, grads, count, lr, wd);
    return DT_OK;
}

dt_result dt_adamw_update(const dt_optim_config *cfg, float *params, const float *grads,
                          float *m, float *v, size_t count, long step)
{
    DT_CHECK(check_config(cfg));
    const char *fn = "dt_adamw_update";
    DT_CHECK(need(params, "params", fn, count));
    DT_CHECK(need(grads, "grads", fn, count));
    DT_CHECK(need(m, "first moment", fn, count));
    DT_CHECK(need(v, "second moment", fn, count));
    if (step < 1)
        return dt_fail(DT_ERR_INVALID_ARG, "%s: step %ld (the first is 1)", fn, step);
    float b1 = cfg->beta1, b2 = cfg->beta2, lr = cfg->lr;
    /* bias corrections of the zero-started moments after t steps */
    double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
    float step_size = (float)(lr / bc1), inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    float decay = 1.0f - lr * cfg->weight_decay;
    for (size_t i = 0; i < count; i++) {
        float g = grads[i];
        params[i] *= decay; /* decoupled weight decay, before the Adam step */
        m[i] = b1 * m[i] + (1 - b1) * g;
        v[i] = b2 * v[i] + (1 - b2) * g * g;
        float denom = sqrtf(v[i]) * inv_sqrt_bc2 + cfg->eps;
        params[i] -= step_size * m[i] / denom;
    }
    return DT_OK;
}

size_t dt_optim_state_bytes_per_param(const dt_optim_config *cfg)
{
    if (!cfg)
        return 0;
    if (cfg->kind == DT_OPTIM_ADAMW)
        return 2 * sizeof(float);
    return cfg->momentum > 0 ? sizeof(float) : 0;
}

dt_result dt_optim_init(dt_optimizer *o, const dt_optim_config *cfg, size_t offset,
                        size_t count)
{
    if (!o)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_optim_init: NULL optimizer");
    memset(o, 0, sizeof *o);
    DT_CHECK(check_config(cfg));
    o->cfg = *cfg;
    o->offset = offset;
    o->count = count;
    o->slots = (int)(dt_optim_state_bytes_per_param(cfg) / sizeof(float));
    if (o->slots && count) {
        o->state = dt_mem_alloc(DT_MEM_OPTIM, (size_t)o->slots * count * sizeof(float));
        if (!o->state)
            return dt_fail(DT_ERR_NOMEM, "dt_optim_init: state of %zu parameters", count);
    }
    return DT_OK;
}

void dt_optim_free(dt_optimizer *o)
{
    if (!o)
        return;
    dt_mem_free(o->state);
    memset(o, 0, sizeof *o);
}

dt_result dt_optim_step_shard(dt_optimizer *o, float *params_shard, const float *grads_shard)
{
    if (!o)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_optim_step: NULL optimizer");
    dt_result r = DT_OK;
    if (o->count && o->cfg.kind == DT_OPTIM_SGD)
        r = dt_sgd_update(&o->cfg, params_shard, grads_shard, o->state, o->count);
    else if (o->count) /* state: first moments of the range, then second moments */
        r = dt_adamw_update(&o->cfg, params_shard, grads_shard, o->state, o->state + o->count,
                            o->count, o->step + 1);
    if (r == DT_OK) /* a failed step leaves the count where it was */
        o->step++;
    return r;
}

dt_result dt_optim_step(dt_optimizer *o, float *params, const float *grads)
{
    if (!o || !params || !grads)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_optim_step: NULL %s",
                       !o ? "optimizer" : !params ? "params" : "grads");
    return dt_optim_step_shard(o, params + o->offset, grads + o->offset);
}

/* The state for a checkpoint: the range is a check (a shard must go back
 * to the rank and range it came from), the step count and the moments are
 * the state. */
dt_result dt_optim_state(dt_optimizer *o, dt_ckpt_io *io, const char *name)
{
    if (!o || !io || !name)
        return dt_fail(DT_ERR_INVALID_ARG, "dt_optim_state: NULL %s",
                       !o ? "optimizer" : !io ? "io" : "name");
    uint64_t range[2] = {o->offset, o->count};
    size_t two = 2, shape[2] = {(size_t)o->slots, o->count};
    DT_CHECK(dt_ckpt_io_push(io, name));
    DT_CHECK(dt_ckpt_io_expect(io, "range", DT_CKPT_U64, 1, &two, range));
    DT_CHECK(dt_ckpt_io_long(io, "step", &o->step));
    DT_CHECK(dt_ckpt_io_record(io, "state", DT_CKPT_F32, 2, shape, o->state));
    dt_ckpt_io_pop(io);
    return DT_OK;
}
