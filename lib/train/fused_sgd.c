/* fused_sgd.c - plain SGD folded into the backward: a fast path of the
 * update.
 *
 * The reference writes each weight's gradient into model->grads, then the
 * optimizer reads it back:
 *     dW = dy^T x;            W -= lr dW
 * For plain SGD (no momentum, no weight decay) the two fold into the one
 * product that the weight gradient needs anyway, with the GEMM's scale set
 * to -lr and its output the weight itself:
 *     W += (-lr) dy^T x
 * so no gradient is ever stored or read again (for the MLP 784-1024-1024-10
 * at batch 64: 7.5 MB written and read twice less per step; BENCHMARKS.md,
 * "Compute"). A linear layer computes its input gradient before it writes
 * its weights (dt_model_backward_into), so the layer below still sees the
 * gradient of the weights as they were in the forward, as in the reference.
 *
 * It applies where the update is that and nothing else: one rank (no
 * gradient to average before the step), one micro-batch a step (the step
 * must follow the whole batch's gradient), linear layers only (the others
 * read their parameters after writing gradients). The results equal the
 * reference's up to float rounding (tests/lib/test_train.c). */
#include "train_internal.h"

dt_result dt_train_fused_sgd_applies(const dt_trainer *t)
{
    if (!t || !t->model)
        return dt_fail(DT_ERR_INVALID_ARG, "fused SGD: no trainer");
    const dt_optim_config *c = &t->cfg.optim;
    if (c->kind != DT_OPTIM_SGD || c->momentum != 0 || c->weight_decay != 0 || !(c->lr > 0))
        return dt_fail(DT_ERR_UNSUPPORTED, "fused SGD: plain SGD only (this optimizer: %s, "
                       "momentum %g, weight decay %g, lr %g)",
                       c->kind == DT_OPTIM_SGD ? "SGD" : "AdamW", (double)c->momentum,
                       (double)c->weight_decay, (double)c->lr);
    if (t->ranks > 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "fused SGD: one rank only (%d ranks must average "
                       "their gradients before the step)", t->ranks);
    for (int i = 0; i < t->model->num_layers; i++) {
        dt_layer_kind k = t->model->layers[i].kind;
        if (k != DT_LAYER_LINEAR && k != DT_LAYER_LINEAR_RELU)
            return dt_fail(DT_ERR_UNSUPPORTED, "fused SGD: linear layers only (layer %s is not)",
                           t->model->layers[i].name);
    }
    return DT_OK;
}

/* The backward of micro-batch t->micro, written into the parameters. */
static dt_result fused_backward(dt_trainer *t, void *self)
{
    (void)self;
    dt_model *m = t->model;
    dt_acts *a = dt_train_acts_of(t);
    if (t->batch->micro_steps != 1)
        return dt_fail(DT_ERR_UNSUPPORTED, "fused SGD: one micro-batch a step (this batch has "
                       "%d)", t->batch->micro_steps);
    if (!a)
        return dt_fail(DT_ERR_STATE, "fused SGD: backward of micro-batch %d before its forward",
                       t->micro);
    DT_CHECK(dt_train_compute_begin(t));
    dt_result r = dt_model_backward_into(m, a, NULL, NULL, NULL, NULL, m->params,
                                         -t->cfg.optim.lr);
    dt_train_acts_give(t);
    dt_result end = dt_train_compute_end(t, 0);
    return r != DT_OK ? r : end;
}

dt_result dt_train_use_fused_sgd(dt_trainer *t)
{
    DT_CHECK(dt_train_fused_sgd_applies(t));
    dt_train_set_hook(&t->backward, (dt_hook){"fused_sgd", fused_backward, NULL, NULL, NULL});
    dt_train_set_hook(&t->sync, (dt_hook){"none", NULL, NULL, NULL, NULL});
    dt_train_set_hook(&t->update, train_update_none("fused_sgd"));
    t->zero_grads = 0; /* no gradient is stored */
    return DT_OK;
}
