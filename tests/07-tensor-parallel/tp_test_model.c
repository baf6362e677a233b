/* tp_test_model.c - the rank functions of the block and whole-model tests:
 * the given composition of your functions against the library's GPT on
 * one rank (normal numbers: tolerance TPT_TOL), with the collectives each
 * part must make. */
#include "tp_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Everything one rank holds for a test: the whole model (for the
 * reference and as the source of the shard), the shard, activations. */
typedef struct {
    dt_gpt_config cfg;
    dt_model whole;
    lab_tp tp;
    lab_tp_model m;
    float *want;            /* m.num_params: the expected shard of something */
} rank_state;

static dt_result state_open(rank_state *s, dt_comm *world, size_t layers, int sp)
{
    memset(s, 0, sizeof *s);
    s->cfg = tpt_config(layers);
    DT_CHECK(tpt_gpt_create(&s->whole, &s->cfg));
    DT_CHECK(lab_tp_init(&s->tp, world, &s->cfg, TPT_B, TPT_T, sp));
    DT_CHECK(lab_tp_model_create(&s->m, &s->tp, &s->whole));
    if (!(s->want = malloc(s->m.num_params * sizeof(float))))
        return dt_fail(DT_ERR_NOMEM, "state_open");
    return dt_comm_stats_reset(world);
}

static void state_close(rank_state *s)
{
    free(s->want);
    lab_tp_model_free(&s->m);
    lab_tp_free(&s->tp);
    dt_model_free(&s->whole);
}

/* The shard's gradients against the reference's, tensor by tensor; with
 * sp, the replicated ones are summed over the ranks first (task 6). */
static dt_result check_grads(rank_state *s, const float *whole_grads, const char *what)
{
    if (s->tp.sp)
        DT_CHECK(lab_sp_allreduce_replicated_grads(&s->tp, &s->m));
    DT_CHECK(tpt_shard(&s->m, &s->whole, whole_grads, s->tp.t, s->tp.rank, s->want));
    return tpt_compare_shard(&s->m, &s->whole, s->m.grads, s->want, s->tp.t, TPT_TOL, what);
}

/* ------------------------------------------------------------ one block */

static dt_result block_check(rank_state *s, lab_tp_block_acts *a, float *bufs)
{
    lab_tp *tp = &s->tp;
    size_t N = tp->N, Nl = tp->Nl, C = s->cfg.channels, r0 = tp->sp ? (size_t)tp->rank * Nl : 0;
    int t = tp->t;
    float *x = bufs, *dy = x + N * C, *dx_ref = dy + N * C, *dx = dx_ref + N * C;
    float *w0 = dx + N * C, *w1 = w0 + N * C;
    tpt_fill_normal(x, N * C, 31, 1.0f);
    tpt_fill_normal(dy, N * C, 32, 1.0f);
    /* the reference: layer 1 (block1) of the whole model as a stage */
    dt_acts *ra = NULL;
    DT_CHECK(dt_acts_create(&ra, &s->whole, 1, 2, TPT_B, TPT_T));
    dt_result res = dt_model_forward(&s->whole, ra, x, NULL);
    if (res == DT_OK)
        res = dt_model_backward(&s->whole, ra, dy, dx_ref, NULL, NULL);
    lab_tp_block_w p = lab_tp_block(&s->m, s->m.params, 0), g = lab_tp_block(&s->m, s->m.grads, 0);
    if (res == DT_OK)
        res = lab_tp_block_forward(tp, a, x + r0 * C, &p);
    if (res == DT_OK)
        res = tpt_compare("the block's output", a->out, dt_acts_output(ra) + r0 * C, Nl * C);
    tpt_calls fwd = {2, 0, 0, 2 * tpt_ring_allreduce_bytes(N * C, t)};
    tpt_calls sp_fwd = {0, 2, 2, 4 * tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, "one block's forward", tp->sp ? sp_fwd : fwd);
    if (res == DT_OK)
        res = lab_tp_block_backward(tp, dx, &g, dy + r0 * C, x + r0 * C, a, &p, w0, w1);
    if (res == DT_OK)
        res = tpt_compare("the block's input gradient", dx, dx_ref + r0 * C, Nl * C);
    tpt_calls bwd = {2, 0, 0, 2 * tpt_ring_allreduce_bytes(N * C, t)};
    tpt_calls sp_bwd = {0, 2, 4, 6 * tpt_ring_half_bytes(N * C, t)};
    if (res == DT_OK)
        res = tpt_expect_calls(tp->comm, "one block's backward", tp->sp ? sp_bwd : bwd);
    if (res == DT_OK)
        res = check_grads(s, s->whole.grads, "the gradient");
    dt_acts_free(ra);
    return res;
}

dt_result tpt_block_rank(dt_comm *world, void *arg)
{
    const int *sp = arg;
    rank_state s = {0};
    lab_tp_block_acts a = {0};
    size_t NC = TPT_B * TPT_T * 32;
    float *bufs = malloc(6 * NC * sizeof(float));
    dt_result res = bufs ? state_open(&s, world, 1, *sp) : dt_fail(DT_ERR_NOMEM, "block");
    if (res == DT_OK)
        res = lab_tp_block_acts_create(&a, &s.tp);
    if (res == DT_OK)
        res = block_check(&s, &a, bufs);
    lab_tp_block_acts_free(&a);
    state_close(&s);
    free(bufs);
    return res;
}

/* ------------------------------------------------------------ the whole model */

dt_result tpt_gpt_rank(dt_comm *world, void *arg)
{
    const int *how = arg; /* {layers, sp} */
    rank_state s = {0};
    lab_tp_acts a = {0};
    tpt_ref ref = {0};
    int32_t tokens[TPT_B * TPT_T], labels[TPT_B * TPT_T];
    dt_result res = state_open(&s, world, (size_t)how[0], how[1]);
    size_t N = TPT_B * TPT_T, V = s.cfg.vocab, Vl = V / (size_t)s.tp.t;
    tpt_batch(tokens, labels, N, V, TPT_DATA_SEED);
    if (res == DT_OK)
        res = tpt_ref_run(&ref, &s.cfg, tokens, labels);
    if (res == DT_OK)
        res = lab_tp_acts_create(&a, &s.tp, s.m.layers);
    float loss = 0;
    if (res == DT_OK)
        res = lab_tp_forward(&s.tp, &s.m, &a, tokens, labels, &loss);
    if (res == DT_OK && !(fabsf(loss - ref.loss) <= TPT_TOL * ref.loss))
        res = dt_fail(DT_ERR_MISMATCH, "loss %.9g, one rank with the whole model gives %.9g",
                      (double)loss, (double)ref.loss);
    float *want = s.want; /* this rank's columns of the whole logits */
    const float *logits = res == DT_OK ? dt_acts_output(ref.acts) : NULL;
    for (size_t i = 0; logits && i < N; i++)
        memcpy(want + i * Vl, logits + i * V + (size_t)s.tp.rank * Vl, Vl * sizeof(float));
    if (res == DT_OK)
        res = tpt_compare("this rank's logits", a.logits, want, N * Vl);
    if (res == DT_OK)
        res = lab_tp_backward(&s.tp, &s.m, &a, labels);
    if (res == DT_OK)
        res = check_grads(&s, ref.model.grads, "the gradient");
    lab_tp_acts_free(&a);
    tpt_ref_free(&ref);
    state_close(&s);
    return res;
}

/* ------------------------------------------------------------ memory */

/* Floats of the whole GPT's replicated and split tensors, from its sizes:
 * replicated wpe (T C), lnf (2C), per block ln1, ln2 (4C) and the two
 * row-parallel biases (2C); split wte and lm_head (2 V C), per block qkv
 * (3C C + 3C), proj (C C), fc (4C C + 4C), mproj (4C C). */
static void whole_counts(const dt_gpt_config *c, size_t *rep, size_t *split)
{
    size_t C = c->channels, L = c->layers;
    *rep = c->context * C + 2 * C + L * 6 * C;
    *split = 2 * c->vocab * C + L * (12 * C * C + 7 * C);
}

dt_result tpt_memory_rank(dt_comm *world, void *arg)
{
    const int *sp = arg;
    rank_state s = {0};
    dt_mem_stats before, after;
    lab_tp_block_acts a = {0};
    size_t NC = TPT_B * TPT_T * 32, rep, split;
    float *bufs = malloc(6 * NC * sizeof(float));
    dt_mem_stats_get(&before);
    dt_result res = bufs ? state_open(&s, world, 2, *sp) : dt_fail(DT_ERR_NOMEM, "memory");
    dt_mem_stats_get(&after);
    size_t t = s.tp.t > 0 ? (size_t)s.tp.t : 1;
    size_t param = after.current[DT_MEM_PARAM] - before.current[DT_MEM_PARAM];
    param -= s.whole.num_params * sizeof(float); /* state_open also made the whole model */
    whole_counts(&s.cfg, &rep, &split);
    if (res == DT_OK && param != (rep + split / t) * sizeof(float))
        res = dt_fail(DT_ERR_MISMATCH, "the shard holds %zu bytes of parameters; expected %zu: "
                      "%zu replicated floats and 1/%zu of %zu split ones", param, (rep + split / t) * sizeof(float), rep, t, split);
    /* one layer's activations against Korthikanti et al.'s formula, in
     * float32 without dropout (section 8) */
    double want = dt_sim_act_bytes_layer(TPT_T, TPT_B, 32, 4, (int)t, *sp, 4, 0);
    size_t got = res == DT_OK ? tpt_block_act_bytes(&s.tp) : 0;
    if (res == DT_OK && !(fabs((double)got - want) <= 0.05 * want))
        res = dt_fail(DT_ERR_MISMATCH, "one block keeps %zu bytes of activations, the formula "
                      "gives %.0f (more than 5%% apart)", got, want);
    if (res == DT_OK)
        res = lab_tp_block_acts_create(&a, &s.tp);
    if (res == DT_OK) /* and the layer computes what it should with them */
        res = block_check(&s, &a, bufs);
    lab_tp_block_acts_free(&a);
    state_close(&s);
    free(bufs);
    return res;
}

/* ------------------------------------------------------------ predict, then measure */

dt_result tpt_step_bytes_rank(dt_comm *world, void *arg)
{
    const int *how = arg; /* {layers, sp} */
    rank_state s = {0};
    lab_tp_acts a = {0};
    lab_tp_train tr = {0};
    dt_optim_config oc = dt_sgd_config(0.1f, 0.9f, 0);
    int32_t tokens[TPT_B * TPT_T], labels[TPT_B * TPT_T];
    uint64_t got = 0;
    dt_stats st;
    tpt_batch(tokens, labels, TPT_B * TPT_T, 32, TPT_DATA_SEED);
    dt_result res = state_open(&s, world, (size_t)how[0], how[1]);
    if (res == DT_OK)
        res = lab_tp_acts_create(&a, &s.tp, s.m.layers);
    if (res == DT_OK)
        res = lab_tp_train_init(&tr, &s.tp, &s.m, &a, &oc, 0); /* no clipping */
    if (res == DT_OK)
        res = lab_tp_predict_step_bytes(&s.cfg, TPT_B, TPT_T, s.tp.t, how[1], &got);
    if (res == DT_OK)
        res = dt_comm_stats_reset(world);
    dt_batch b = {NULL, tokens, labels, TPT_B, TPT_T, 1};
    if (res == DT_OK)
        res = dt_train_step(&tr.trainer, &b);
    if (res == DT_OK)
        res = dt_comm_stats(world, &st);
    if (res == DT_OK && st.bytes_sent != got)
        res = dt_fail(DT_ERR_MISMATCH, "%s, gpt:%zu,%zu,%zu,%zu,%zu, batch %d x %d, t = %d: "
                      "lab_tp_predict_step_bytes says %llu bytes per rank, one training step "
                      "of your code sent %llu from this rank", how[1] ? "TP + SP" : "TP",
                      s.cfg.vocab, s.cfg.context, s.cfg.layers, s.cfg.heads, s.cfg.channels,
                      TPT_B, TPT_T, s.tp.t, (unsigned long long)got,
                      (unsigned long long)st.bytes_sent);
    lab_tp_train_free(&tr);
    lab_tp_acts_free(&a);
    state_close(&s);
    return res;
}
