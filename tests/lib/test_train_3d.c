/* test_train_3d.c - data, tensor and pipeline parallelism composed
 * (dt_groups_create, dt_parallel_init; chapter 13 builds on them): the
 * groups of a layout hold the ranks the layout says, and the tiny GPT
 * trained on DP x TP x PP = 2 x 2 x 2 = 8 ranks (and smaller layouts, ZeRO-1
 * over the data-parallel group too) follows one rank's loss trajectory
 * and reaches its parameters on the global batch, through dt_train_step
 * and through dt_train's sampler. Each rank checks itself against one
 * rank and prints the largest difference measured. */
#include "grader.h"
#include "test_par_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- groups */

/* Fails unless comm's members, in its rank order, are the world ranks
 * want[0 .. n). */
static dt_result expect_members(dt_comm *comm, const char *which, const int *want, int n,
                                int w)
{
    int32_t me = (int32_t)w, got[64];
    if (dt_comm_size(comm) != n)
        return dt_fail(DT_ERR_MISMATCH, "world rank %d: its %s group has %d ranks, expected %d",
                       w, which, dt_comm_size(comm), n);
    DT_CHECK(dt_allgather(&me, got, 1, DT_I32, comm));
    for (int i = 0; i < n; i++)
        if (got[i] != want[i])
            return dt_fail(DT_ERR_MISMATCH, "world rank %d: rank %d of its %s group is world "
                           "rank %d, expected %d", w, i, which, (int)got[i], want[i]);
    return DT_OK;
}

static dt_result groups_rank(dt_comm *world, void *arg)
{
    const int *layout = arg; /* T, P */
    int T = layout[0], P = layout[1], n = dt_comm_size(world), w = dt_comm_rank(world);
    int D = n / (T * P), t = w % T, p = (w / T) % P, d = w / (T * P), want[64];
    dt_groups g;
    DT_CHECK(dt_groups_create(&g, world, T, P));
    dt_result r = g.T == T && g.P == P && g.D == D && g.tp_rank == t && g.pp_rank == p &&
                          g.dp_rank == d
                      ? DT_OK
                      : dt_fail(DT_ERR_MISMATCH, "world rank %d: sizes %d %d %d, ranks %d %d %d",
                                w, g.T, g.P, g.D, g.tp_rank, g.pp_rank, g.dp_rank);
    for (int i = 0; i < T; i++) /* w = (d P + p) T + t */
        want[i] = (d * P + p) * T + i;
    if (r == DT_OK)
        r = expect_members(g.tp, "tensor-parallel", want, T, w);
    for (int i = 0; i < P; i++)
        want[i] = (d * P + i) * T + t;
    if (r == DT_OK)
        r = expect_members(g.pp, "pipeline", want, P, w);
    for (int i = 0; i < D; i++)
        want[i] = (i * P + p) * T + t;
    if (r == DT_OK)
        r = expect_members(g.dp, "data-parallel", want, D, w);
    dt_groups_free(&g);
    return r;
}

TEST(parallel_groups_follow_the_layout, 2)
{
    dt_test_see("chapter 13, section 1");
    static const int layouts[][3] = {{2, 2, 8}, {2, 1, 8}, {1, 2, 8}, {4, 2, 8}, {1, 1, 4},
                                     {8, 1, 8}, {2, 4, 8}, {2, 3, 6}, {3, 1, 6}};
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++)
        EXPECT_OK(par_launch(layouts[k][2], groups_rank, (void *)layouts[k]));
}

/* ---------------------------------------------------------------- training */

enum { T_SEQ = 8, MAX_STEPS = 4 };

typedef struct {
    int T, P, D;            /* the layout */
    const char *sched;      /* P > 1 */
    int v, m;               /* chunks, micro-batches */
    size_t B;               /* sequences per micro-batch */
    int steps;
    int zero1;              /* P = 1: ZeRO-1 over the data-parallel group */
} run3d;

static dt_trainer_config sgd(void)
{
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    return tc;
}

/* One rank, the whole model, the global batch of D m B sequences per step
 * in one micro-batch: its losses and final parameters. */
static dt_result reference(dt_model *ref, const run3d *r3, const int32_t *tok, const int32_t *y,
                           float *loss)
{
    dt_gpt_config cfg = par_gpt_config(2);
    dt_trainer t;
    dt_trainer_config tc = sgd();
    size_t n = (size_t)(r3->D * r3->m) * r3->B;
    DT_CHECK(par_gpt_create(ref, &cfg));
    DT_CHECK(dt_trainer_init(&t, ref, NULL, &tc));
    dt_result r = DT_OK;
    for (int k = 0; r == DT_OK && k < r3->steps; k++) {
        dt_batch b = {NULL, tok + (size_t)k * n * T_SEQ, y + (size_t)k * n * T_SEQ, n, T_SEQ, 1};
        r = dt_train_step(&t, &b);
        loss[k] = t.loss;
    }
    dt_trainer_free(&t);
    return r;
}

/* This rank's owned layers: the stages of its pipeline rank. */
static void owned(const dt_parallel *x, const run3d *r3, int c, int *first, int *last)
{
    int cut[DT_SCHED_MAX_RANKS * DT_SCHED_MAX_CHUNKS + 1], S = r3->P * r3->v;
    dt_pipe_cut(x->model.num_layers, S, cut);
    int s = c * r3->P + x->groups.pp_rank;
    *first = cut[s], *last = cut[s + 1];
}

static dt_result train3d_rank(dt_comm *world, void *arg)
{
    const run3d *r3 = arg;
    dt_gpt_config cfg = par_gpt_config(2);
    size_t n = (size_t)(r3->D * r3->m) * r3->B, mine = (size_t)r3->m * r3->B;
    size_t all = (size_t)r3->steps * n * T_SEQ;
    int32_t *tok = malloc(all * sizeof *tok), *y = malloc(all * sizeof *y);
    float want[MAX_STEPS], got[MAX_STEPS];
    dt_model whole = {0}, ref = {0};
    dt_parallel x;
    dt_schedule *s = NULL;
    dt_trainer_config tc = sgd();
    memset(&x, 0, sizeof x);
    dt_result r = tok && y ? DT_OK : dt_fail(DT_ERR_NOMEM, "train3d_rank");
    if (r == DT_OK) {
        for (int k = 0; k < r3->steps; k++)
            par_batch(tok + (size_t)k * n * T_SEQ, y + (size_t)k * n * T_SEQ, n * T_SEQ,
                      cfg.vocab, 300 + (uint64_t)k);
        r = reference(&ref, r3, tok, y, want);
    }
    if (r == DT_OK)
        r = par_gpt_create(&whole, &cfg);
    if (r == DT_OK && r3->P > 1)
        r = dt_sched_named(&s, r3->sched, r3->P, r3->v, r3->m);
    if (r == DT_OK)
        r = dt_parallel_init(&x, world, &whole, r3->T, r3->P, s, &tc);
    if (r == DT_OK && r3->zero1)
        r = dt_train_use_zero1(&x.trainer);
    for (int k = 0; r == DT_OK && k < r3->steps; k++) {
        size_t at = ((size_t)k * n + (size_t)x.groups.dp_rank * mine) * T_SEQ;
        dt_batch b = {NULL, tok + at, y + at, r3->B, T_SEQ, r3->m};
        r = dt_train_step(&x.trainer, &b);
        float l = x.trainer.loss;
        if (r == DT_OK) /* the replica's loss; their mean is the global batch's */
            r = dt_allreduce(&l, &got[k], 1, DT_F32, DT_AVG, x.groups.dp);
    }
    double loss_err = 0, param_err = 0;
    for (int k = 0; r == DT_OK && k < r3->steps; k++)
        loss_err = fmax(loss_err, fabs((double)got[k] - want[k]) / fabs((double)want[k]));
    char what[128];
    snprintf(what, sizeof what, "DP x TP x PP = %d x %d x %d (%s, v=%d, m=%d%s), after %d steps:",
             r3->D, r3->T, r3->P, r3->P > 1 ? r3->sched : "no pipeline", r3->v, r3->m,
             r3->zero1 ? ", ZeRO-1" : "", r3->steps);
    if (r == DT_OK && !(loss_err <= PAR_TOL))
        r = dt_fail(DT_ERR_MISMATCH, "%s the loss trajectory is %.3g off one rank's (relative)",
                    what, loss_err);
    for (int c = 0; r == DT_OK && c < r3->v; c++) {
        int first, last;
        owned(&x, r3, c, &first, &last);
        r = par_compare_layers(&x.model, &ref, x.model.params, ref.params, first, last, PAR_TOL,
                               what);
        for (int v = 0; r == DT_OK && v < x.model.num_views; v++) { /* the measured error */
            const dt_param_view *pv = &x.model.views[v];
            float *sl = pv->layer >= first && pv->layer < last ? malloc(pv->count * sizeof *sl)
                                                               : NULL;
            if (!sl)
                continue;
            par_slice(&ref, v, ref.params, r3->T, x.groups.tp_rank, sl);
            param_err = fmax(param_err, par_rel_diff(x.model.params + pv->offset, sl, pv->count,
                                                     NULL));
            free(sl);
        }
    }
    float errs[2] = {(float)loss_err, (float)param_err}, worst[2];
    if (r == DT_OK)
        r = dt_allreduce(errs, worst, 2, DT_F32, DT_MAX, world);
    if (r == DT_OK && dt_comm_rank(world) == 0)
        printf("measured: %s loss %.2e, parameters %.2e (largest relative differences from one "
               "rank)\n", what, (double)worst[0], (double)worst[1]);
    dt_parallel_free(&x);
    dt_sched_free(s);
    dt_model_free(&whole), dt_model_free(&ref);
    free(tok), free(y);
    return r;
}

static void run(const run3d *r3)
{
    EXPECT_OK(par_launch(r3->D * r3->T * r3->P, train3d_rank, (void *)r3));
}

TEST_T(parallel_3d_2x2x2_equals_one_rank, 4, 60)
{
    dt_test_see("chapter 13");
    static const run3d runs[] = {
        {2, 2, 2, "1f1b", 1, 2, 1, 3, 0},
        {2, 2, 2, "interleaved", 2, 2, 1, 3, 0},
        {2, 2, 2, "gpipe", 1, 3, 1, 2, 0},
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
        run(&runs[k]);
}

TEST_T(parallel_smaller_layouts_equal_one_rank, 3, 60)
{
    dt_test_see("chapter 13");
    static const run3d runs[] = {
        {2, 2, 1, "1f1b", 1, 3, 1, 3, 0},   /* TP x PP */
        {2, 1, 2, NULL, 1, 2, 1, 3, 0},     /* TP x DP */
        {2, 1, 2, NULL, 1, 1, 2, 3, 1},     /* TP x DP with ZeRO-1 over DP */
        {1, 2, 2, "1f1b", 1, 2, 1, 3, 0},   /* PP x DP */
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++)
        run(&runs[k]);
}

/* ---------------------------------------------------------------- dt_train */

typedef struct {
    int T, P, D;
    float *params;       /* one rank's final parameters (whole layout) */
} via_train;

static dt_result sequences(dt_dataset *d) { return dt_data_sequences(d, 64, T_SEQ, 32, 9, 0); }

static dt_train_config run_config(size_t batch, int micro)
{
    dt_train_config c = dt_train_defaults();
    c.batch = batch, c.micro_steps = micro, c.steps = 4, c.seed = 3, c.report_every = 0;
    return c;
}

/* dt_train on the layout: the sampler gives each replica its shard of
 * every epoch, the ranks of a replica the same batch. */
static dt_result via_train_rank(dt_comm *world, void *arg)
{
    const via_train *v = arg;
    dt_gpt_config cfg = par_gpt_config(2);
    dt_dataset d = {0};
    dt_model whole = {0}, ref = {0};
    dt_parallel x;
    dt_trainer rt;
    dt_schedule *s = NULL;
    dt_trainer_config tc = sgd();
    dt_train_result res, rres;
    int have_rt = 0;
    memset(&x, 0, sizeof x);
    dt_result r = sequences(&d);
    if (r == DT_OK)
        r = par_gpt_create(&whole, &cfg);
    if (r == DT_OK)
        r = par_gpt_create(&ref, &cfg);
    if (r == DT_OK && v->P > 1)
        r = dt_sched_1f1b(&s, v->P, 2);
    if (r == DT_OK)
        r = dt_parallel_init(&x, world, &whole, v->T, v->P, s, &tc);
    dt_train_config c = run_config(4, 2), rc = run_config(4 * (size_t)v->D, 1);
    if (r == DT_OK)
        r = dt_train(&x.trainer, &d, &c, &res);
    if (r == DT_OK && (r = dt_trainer_init(&rt, &ref, NULL, &tc)) == DT_OK)
        have_rt = 1;
    if (r == DT_OK)
        r = dt_train(&rt, &d, &rc, &rres);
    int cut[DT_SCHED_MAX_RANKS + 1];
    dt_pipe_cut(x.model.num_layers, v->P, cut);
    if (r == DT_OK)
        r = par_compare_layers(&x.model, &ref, x.model.params, ref.params,
                               cut[x.groups.pp_rank], cut[x.groups.pp_rank + 1], PAR_TOL,
                               "dt_train on the layout, after 4 steps:");
    if (have_rt)
        dt_trainer_free(&rt);
    dt_parallel_free(&x);
    dt_sched_free(s);
    dt_model_free(&whole), dt_model_free(&ref);
    dt_dataset_free(&d);
    return r;
}

TEST_T(parallel_dt_train_shards_the_data_over_replicas_only, 2, 60)
{
    dt_test_see("chapter 13");
    via_train v = {2, 2, 2, NULL};
    EXPECT_OK(par_launch(8, via_train_rank, &v));
    via_train tp_only = {2, 1, 2, NULL};
    EXPECT_OK(par_launch(4, via_train_rank, &tp_only));
}

/* ---------------------------------------------------------------- refusals */

static dt_result expect_refused(dt_result got, dt_result want, const char *says)
{
    if (got != want || !strstr(dt_last_error(), says))
        return dt_fail(DT_ERR_MISMATCH, "%s \"%s\", expected %s saying \"%s\"",
                       dt_strerror(got), dt_last_error(), dt_strerror(want), says);
    return DT_OK;
}

static dt_result refuse_rank(dt_comm *world, void *arg)
{
    (void)arg;
    dt_gpt_config cfg = par_gpt_config(2), c6 = {32, 8, 2, 6, 48};
    dt_model whole, six;
    dt_parallel x;
    dt_groups g;
    dt_schedule *s3 = NULL, *zb = NULL;
    DT_CHECK(dt_gpt_create(&whole, &cfg, 1));
    DT_CHECK(dt_gpt_create(&six, &c6, 1));
    DT_CHECK(dt_sched_1f1b(&s3, 3, 2));
    DT_CHECK(dt_sched_zbh1(&zb, 2, 2));
    dt_result r = expect_refused(dt_groups_create(&g, world, 3, 1), DT_ERR_INVALID_ARG,
                                 "8 ranks do not hold replicas of 3 tensor-parallel x 1 pipeline");
    if (r == DT_OK)
        r = expect_refused(dt_groups_create(&g, world, 2, 0), DT_ERR_INVALID_ARG, "x 0 pipeline");
    if (r == DT_OK)
        r = expect_refused(dt_parallel_init(&x, world, &whole, 2, 2, NULL, NULL),
                           DT_ERR_INVALID_ARG, "2 pipeline ranks and no schedule");
    if (r == DT_OK)
        r = expect_refused(dt_parallel_init(&x, world, &whole, 2, 2, s3, NULL),
                           DT_ERR_INVALID_ARG, "a schedule for 3 ranks on a pipeline of 2");
    if (r == DT_OK)
        r = expect_refused(dt_parallel_init(&x, world, &six, 4, 2, NULL, NULL),
                           DT_ERR_INVALID_ARG, "2 pipeline ranks and no schedule");
    if (r == DT_OK)
        r = expect_refused(dt_parallel_init(&x, world, &six, 4, 1, NULL, NULL),
                           DT_ERR_INVALID_ARG, "6 heads do not split over 4");
    if (r == DT_OK)
        r = expect_refused(dt_parallel_init(&x, world, &whole, 2, 2, zb, NULL),
                           DT_ERR_UNSUPPORTED, "the split backward runs MLP stages only");
    dt_sched_free(s3), dt_sched_free(zb);
    dt_model_free(&whole), dt_model_free(&six);
    return r;
}

TEST(parallel_refuses_impossible_layouts, 2)
{
    dt_test_see("chapter 13");
    EXPECT_OK(par_launch(8, refuse_rank, NULL));
}
