/* activations.c - the activation memory of one transformer layer, from
 * Korthikanti et al., "Reducing Activation Recomputation in Large
 * Transformer Models" (2022), section 4.
 *
 * A layer keeps, for its backward, the inputs of the operations whose
 * gradient needs them. Counted in elements of the (s, b, h) activations
 * and the (a, s, s) attention scores of one micro-batch, with e bytes per
 * activation element and, when the layer has dropout, 1 byte per mask
 * element:
 *
 *   region                  what is kept                                 bytes
 *   layernorms, residuals   LN1 and LN2 inputs, QKV and MLP inputs       sbh (4e + 2d)
 *   (replicated under TP)   (the LN outputs), two dropout masks
 *   split by TP (t ranks)   Q, K, V; the projection's input; the GeLU's  e sb (4h + 2f) / t
 *                           input; the second MLP linear's input (f      (12 e sbh / t
 *                           wide each; the paper's f = 4h)               for f = 4h)
 *   attention scores        softmax output; its dropout mask and output  a s^2 b (e + d(1 + e)) / t
 *
 * (d = 1 with dropout, 0 without.) Sequence parallelism splits the first
 * row over the t ranks too. With the paper's convention (e = 2, dropout):
 *   TP:       sbh (10 + 24/t + 5as/(ht))
 *   TP + SP:  (sbh/t) (34 + 5as/h)
 * The layernorms' per-row mean and 1/std (4sb elements) are left out, as
 * the paper leaves them out. */
#include "dt/sim.h"

#include <math.h>

static int act_args_ok(const char *fn, double s, double b, double h, double a, double f, int t,
                       int sp, double e, int dropout)
{
    if (!(s > 0 && b > 0 && h > 0 && a > 0 && f > 0 && isfinite(s * b * h * a * f))) {
        dt_fail(DT_ERR_INVALID_ARG, "%s: s=%g b=%g h=%g a=%g f=%g (need > 0)", fn, s, b, h, a, f);
        return 0;
    }
    if (t < 1 || !(e > 0) || (sp != 0 && sp != 1) || (dropout != 0 && dropout != 1)) {
        dt_fail(DT_ERR_INVALID_ARG,
                "%s: t=%d e=%g sp=%d dropout=%d (need t >= 1, e > 0, sp and dropout 0 or 1)",
                fn, t, e, sp, dropout);
        return 0;
    }
    return 1;
}

double dt_sim_act_bytes_scores(double s, double b, double a, int t, double e, int dropout)
{
    if (!act_args_ok("dt_sim_act_bytes_scores", s, b, 1, a, 1, t, 0, e, dropout))
        return NAN;
    /* the softmax's output (e); its dropout mask (1) and output (e) */
    return a * s * s * b * (e + dropout * (1 + e)) / t;
}

double dt_sim_act_bytes_layer_ffn(double s, double b, double h, double a, double f, int t, int sp,
                                  double e, int dropout)
{
    if (!act_args_ok("dt_sim_act_bytes_layer", s, b, h, a, f, t, sp, e, dropout))
        return NAN;
    double d = dropout, sb = s * b;
    double replicated = sb * h * (4 * e + 2 * d) / (sp ? t : 1);
    /* Q, K, V and the projection's input (4h); the GeLU's input and the
     * second linear's input (f each): 12 e sbh / t when f = 4h */
    double split = e * sb * (4 * h + 2 * f) / t;
    return replicated + split + dt_sim_act_bytes_scores(s, b, a, t, e, dropout);
}

double dt_sim_act_bytes_layer(double s, double b, double h, double a, int t, int sp, double e,
                              int dropout)
{
    return dt_sim_act_bytes_layer_ffn(s, b, h, a, 4 * h, t, sp, e, dropout);
}
