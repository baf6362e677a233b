/* scaler.c - lab 11, task 1: dynamic loss scaling (chapter 11, sections 3
 * and 4): the scaler's rule, and the update step it guards. */
#include "memory.h"

#include <math.h>
#include <string.h>

lab_scaler_config lab_gradscaler_config(void)
{
    lab_scaler_config c = {65536.0f, 2.0f, 0.5f, 2000, 1, 0.0f, 1};
    return c;
}

lab_scaler_config lab_megatron_config(void)
{
    lab_scaler_config c = {4294967296.0f, 2.0f, 0.5f, 1000, 2, 1.0f, 1};
    return c;
}

lab_scaler_config lab_constant_config(float scale)
{
    lab_scaler_config c = {scale, 2.0f, 0.5f, 1, 1, 0.0f, 0};
    return c;
}

dt_result lab_scaler_init(lab_scaler *s, const lab_scaler_config *cfg)
{
    if (!s || !cfg)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_scaler_init: NULL %s", s ? "config" : "scaler");
    const char *bad = NULL;
    double v = 0;
    if (!(cfg->init_scale > 0 && isfinite(cfg->init_scale)))
        bad = "init_scale (need > 0, finite)", v = cfg->init_scale;
    else if (!(cfg->growth_factor > 1 && isfinite(cfg->growth_factor)))
        bad = "growth_factor (need > 1)", v = cfg->growth_factor;
    else if (!(cfg->backoff_factor > 0 && cfg->backoff_factor < 1))
        bad = "backoff_factor (need in (0, 1))", v = cfg->backoff_factor;
    else if (cfg->growth_interval < 1)
        bad = "growth_interval (need >= 1)", v = (double)cfg->growth_interval;
    else if (cfg->hysteresis < 1)
        bad = "hysteresis (need >= 1)", v = cfg->hysteresis;
    else if (!(cfg->min_scale >= 0 && cfg->min_scale <= cfg->init_scale))
        bad = "min_scale (need 0 <= min_scale <= init_scale)", v = cfg->min_scale;
    else if (cfg->dynamic != 0 && cfg->dynamic != 1)
        bad = "dynamic (need 0 or 1)", v = cfg->dynamic;
    if (bad)
        return dt_fail(DT_ERR_INVALID_ARG, "lab_scaler_init: %s = %g", bad, v);
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->scale = cfg->init_scale;
    s->hysteresis_left = cfg->hysteresis;
    return DT_OK;
}

dt_result lab_scaler_update(lab_scaler *s, int found_inf)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: steps and skipped count this step; with cfg.dynamic,
     * S, growth_tracker and hysteresis_left follow section 4's rule
     * (GradScaler's when hysteresis is 1, Megatron's otherwise), S never
     * growing to inf nor backing off below min_scale; without, S stays. */
    (void)s, (void)found_inf;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}

dt_result lab_mp_step(lab_mp *mp, lab_scaler *s, int *skipped)
{
    /* BEGIN STUDENT CODE */
    /* Postcondition: skipped (master weights and momentum untouched) when
     * g16 holds an inf or a nan, else one dt_sgd_update of the master
     * weights with g16 / S in fp32, never through an fp32 buffer of all
     * the gradients (the chunk wg); then lab_scaler_update. Sections 3
     * and 4. */
    (void)mp, (void)s, (void)skipped;
    return DT_ERR_NOT_IMPLEMENTED;
    /* END STUDENT CODE */
}
