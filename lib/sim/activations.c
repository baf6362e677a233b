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
 *   split by TP (t ranks)   Q, K, V; the projection's input; the GeLU's  sbh 12e / t
 *                           input; the second MLP linear's input (4h)
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

double dt_sim_act_bytes_layer(double s, double b, double h, double a, int t, int sp, double e,
                              int dropout)
{
    if (!(s > 0 && b > 0 && h > 0 && a > 0 && isfinite(s * b * h * a))) {
        dt_fail(DT_ERR_INVALID_ARG, "dt_sim_act_bytes_layer: s=%g b=%g h=%g a=%g (need > 0)", s,
                b, h, a);
        return NAN;
    }
    if (t < 1 || !(e > 0) || (sp != 0 && sp != 1) || (dropout != 0 && dropout != 1)) {
        dt_fail(DT_ERR_INVALID_ARG,
                "dt_sim_act_bytes_layer: t=%d e=%g sp=%d dropout=%d (need t >= 1, e > 0, "
                "sp and dropout 0 or 1)", t, e, sp, dropout);
        return NAN;
    }
    double d = dropout, sbh = s * b * h;
    double replicated = sbh * (4 * e + 2 * d) / (sp ? t : 1);
    double split = sbh * 12 * e / t;
    double scores = a * s * s * b * (e + d * (1 + e)) / t;
    return replicated + split + scores;
}
