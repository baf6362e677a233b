/* test_train_pipeline.c - libdt's pipeline runner (dt_train_use_pipeline,
 * chapter 06) against one rank: every schedule of dt/sched.h (GPipe, 1F1B,
 * interleaved 1F1B, ZB-H1 with its W steps), on an MLP and on the tiny GPT,
 * alone and replicated by data parallelism, gives one rank's gradients,
 * losses and parameters on the global batch; each rank holds the
 * activations the schedule says it holds, no more; the modeled clock
 * times the steps as dt_sched_simulate does; what the runner cannot run
 * is refused, naming why. */
#include "grader.h"
#include "test_par_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *spec;      /* the model: "deep:..." or "gpt" (par_gpt_config(2)) */
    const char *sched;     /* dt_sched_named's name */
    int p, v, d, m;        /* pipeline ranks, chunks, replicas, micro-batches */
    size_t B;              /* samples per micro-batch */
    int steps;             /* 1: gradients compared; more: parameters */
    int check_memory;      /* d = 1: peak ACT bytes = the schedule's peak pairs x one pair */
} pp_run;

enum { T_GPT = 8 };

static dt_result make_model(dt_model *m, const char *spec)
{
    if (!strcmp(spec, "gpt")) {
        dt_gpt_config c = par_gpt_config(2);
        return par_gpt_create(m, &c);
    }
    return dt_model_create_spec(m, spec, 5);
}

/* The global batch of step k: rows (or sequences) [0, n). */
static void global_batch(const dt_model *m, size_t n, int k, float *x, int32_t *tok,
                         int32_t *y)
{
    if (m->kind == DT_MODEL_GPT) {
        par_batch(tok, y, n * T_GPT, m->num_classes, 100 + (uint64_t)k);
        return;
    }
    par_fill_normal(x, n * m->in_width, 200 + (uint64_t)k, 1);
    for (size_t i = 0; i < n; i++)
        y[i] = (int32_t)(dt_hash64(7, (uint64_t)k, i) % m->num_classes);
}

typedef struct {
    const pp_run *run;
    dt_comm *world, *pipe, *dp;
    dt_model m, ref;
    dt_trainer t, rt;
    int have_t, have_rt;
    float *x;
    int32_t *tok, *y;
    float loss[8], ref_loss[8];
    size_t act_peak, act_unit;
    dt_sched_report rep;
} pp_rank;

/* One rank with the whole model on the whole global batch, one micro-batch. */
static dt_result reference(pp_rank *pr)
{
    const pp_run *run = pr->run;
    size_t n = (size_t)(run->d * run->m) * run->B, T = pr->ref.kind == DT_MODEL_GPT ? T_GPT : 1;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    DT_CHECK(dt_trainer_init(&pr->rt, &pr->ref, NULL, &tc));
    pr->have_rt = 1;
    for (int k = 0; k < run->steps; k++) {
        global_batch(&pr->ref, n, k, pr->x, pr->tok, pr->y);
        dt_batch b = {pr->x, pr->tok, pr->y, n, T, 1};
        DT_CHECK(dt_train_step(&pr->rt, &b));
        pr->ref_loss[k] = pr->rt.loss;
    }
    return DT_OK;
}

/* The pipeline: this replica's share of each global batch, in m micro-batches. */
static dt_result pipelined(pp_rank *pr)
{
    const pp_run *run = pr->run;
    int rep = dt_comm_rank(pr->dp);
    size_t n = (size_t)(run->d * run->m) * run->B, mine = (size_t)run->m * run->B;
    size_t T = pr->m.kind == DT_MODEL_GPT ? T_GPT : 1, w = pr->m.in_width;
    dt_schedule *s = NULL;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    DT_CHECK(dt_sched_named(&s, run->sched, run->p, run->v, run->m));
    dt_result r = dt_sched_validate(s, &pr->rep);
    if (r == DT_OK && (r = dt_trainer_init(&pr->t, &pr->m, pr->dp, &tc)) == DT_OK)
        pr->have_t = 1;
    dt_pipe_config pc = {pr->pipe, s, NULL, NULL};
    if (r == DT_OK)
        r = dt_train_use_pipeline(&pr->t, &pc);
    dt_sched_free(s); /* copied */
    for (int k = 0; r == DT_OK && k < run->steps; k++) {
        global_batch(&pr->m, n, k, pr->x, pr->tok, pr->y);
        size_t at = (size_t)rep * mine;
        dt_batch b = {pr->x ? pr->x + at * w : NULL, pr->tok ? pr->tok + at * T : NULL,
                      pr->y + at * T, run->B, T, run->m};
        dt_mem_stats before, after;
        dt_mem_stats_get(&before);
        dt_mem_reset_peak();
        r = dt_train_step(&pr->t, &b);
        dt_mem_stats_get(&after);
        if (k == 0)
            pr->act_peak = after.peak[DT_MEM_ACT] - before.current[DT_MEM_ACT];
        float l = pr->t.loss; /* the replica's; the mean over replicas is the batch's */
        if (r == DT_OK)
            r = dt_allreduce(&l, &pr->loss[k], 1, DT_F32, DT_AVG, pr->dp);
    }
    return r;
}

/* The activations of one (stage, micro-batch) pair of this rank's first
 * chunk: acts, and with a split backward what B keeps for W. */
static dt_result pair_bytes(pp_rank *pr, size_t *bytes)
{
    int first[DT_SCHED_MAX_RANKS + 1], s = dt_comm_rank(pr->pipe);
    dt_pipe_cut(pr->m.num_layers, pr->run->p * pr->run->v, first);
    dt_mem_stats a, b;
    dt_acts *acts = NULL;
    dt_wgrad *wg = NULL;
    dt_mem_stats_get(&a);
    size_t T = pr->m.kind == DT_MODEL_GPT ? T_GPT : 1;
    DT_CHECK(dt_acts_create(&acts, &pr->m, first[s], first[s + 1], pr->run->B, T));
    dt_result r = pr->rep.split_backward ? dt_wgrad_create(&wg, acts) : DT_OK;
    dt_mem_stats_get(&b);
    *bytes = b.current[DT_MEM_ACT] - a.current[DT_MEM_ACT];
    dt_wgrad_free(wg);
    dt_acts_free(acts);
    return r;
}

static dt_result compare(pp_rank *pr)
{
    const pp_run *run = pr->run;
    char what[160];
    snprintf(what, sizeof what, "%s on %s, p=%d v=%d d=%d m=%d, %d step(s)", run->sched,
             run->spec, run->p, run->v, run->d, run->m, run->steps);
    for (int k = 0; k < run->steps; k++)
        if (!(fabsf(pr->loss[k] - pr->ref_loss[k]) <= PAR_TOL * fabsf(pr->ref_loss[k])))
            return dt_fail(DT_ERR_MISMATCH, "%s: step %d's loss %.9g, one rank on the global "
                           "batch %.9g", what, k, (double)pr->loss[k], (double)pr->ref_loss[k]);
    int first[DT_SCHED_MAX_RANKS * DT_SCHED_MAX_CHUNKS + 1], p = run->p;
    dt_pipe_cut(pr->m.num_layers, p * run->v, first);
    for (int c = 0; c < run->v; c++) {
        int s = c * p + dt_comm_rank(pr->pipe);
        size_t off, n, worst;
        DT_CHECK(dt_model_layer_range(&pr->m, first[s], first[s + 1], &off, &n));
        const float *got = run->steps == 1 ? pr->m.grads : pr->m.params;
        const float *want = run->steps == 1 ? pr->ref.grads : pr->ref.params;
        double e = par_rel_diff(got + off, want + off, n, &worst);
        if (!(e <= PAR_TOL))
            return dt_fail(DT_ERR_MISMATCH, "%s: stage %d's %s[%zu] = %.9g, one rank %.9g "
                           "(relative error %.3g > %.0e)", what, s, run->steps == 1 ? "grads" :
                           "params", off + worst, (double)got[off + worst],
                           (double)want[off + worst], e, PAR_TOL);
    }
    if (run->check_memory) {
        int r = dt_comm_rank(pr->pipe);
        size_t want = (size_t)pr->rep.peak_acts[r] * pr->act_unit;
        if (pr->act_peak != want)
            return dt_fail(DT_ERR_MISMATCH, "%s: rank %d held %zu bytes of activations at its "
                           "peak, %.2f pairs' worth; the schedule keeps %d in flight (%zu bytes "
                           "each): activations freed after their backward", what, r,
                           pr->act_peak, (double)pr->act_peak / (double)pr->act_unit,
                           pr->rep.peak_acts[r], pr->act_unit);
    }
    return DT_OK;
}

static dt_result pp_check_rank(dt_comm *world, void *arg)
{
    pp_rank *pr = calloc(1, sizeof *pr);
    if (!pr)
        return dt_fail(DT_ERR_NOMEM, "pp_check_rank");
    const pp_run *run = arg;
    int w = dt_comm_rank(world);
    pr->run = run, pr->world = world;
    size_t n = (size_t)(run->d * run->m) * run->B * T_GPT;
    dt_result r = dt_comm_split(world, w / run->p, w % run->p, &pr->pipe);
    if (r == DT_OK)
        r = dt_comm_split(world, w % run->p, w / run->p, &pr->dp);
    if (r == DT_OK)
        r = make_model(&pr->m, run->spec);
    if (r == DT_OK)
        r = make_model(&pr->ref, run->spec);
    if (r == DT_OK && !(pr->y = malloc(n * sizeof *pr->y)))
        r = dt_fail(DT_ERR_NOMEM, "pp_check_rank");
    if (r == DT_OK && pr->m.kind == DT_MODEL_GPT && !(pr->tok = malloc(n * sizeof *pr->tok)))
        r = dt_fail(DT_ERR_NOMEM, "pp_check_rank");
    if (r == DT_OK && pr->m.kind != DT_MODEL_GPT &&
        !(pr->x = malloc(n * pr->m.in_width * sizeof *pr->x)))
        r = dt_fail(DT_ERR_NOMEM, "pp_check_rank");
    if (r == DT_OK)
        r = pipelined(pr);
    if (r == DT_OK && run->check_memory)
        r = pair_bytes(pr, &pr->act_unit);
    if (r == DT_OK)
        r = reference(pr);
    if (r == DT_OK)
        r = compare(pr);
    if (pr->have_t)
        dt_trainer_free(&pr->t);
    if (pr->have_rt)
        dt_trainer_free(&pr->rt);
    dt_model_free(&pr->m), dt_model_free(&pr->ref);
    dt_comm_free(pr->pipe), dt_comm_free(pr->dp);
    free(pr->x), free(pr->tok), free(pr->y), free(pr);
    return r;
}

static void run_all(const pp_run *runs, int n)
{
    for (int i = 0; i < n; i++)
        EXPECT_OK(par_launch(runs[i].p * runs[i].d, pp_check_rank, (void *)&runs[i]));
}

#define MLP "deep:6,10,5,3" /* 7 layers */

TEST_T(pipeline_gpipe_and_1f1b_equal_one_rank, 3, 30)
{
    dt_test_see("chapter 06, sections 2 to 4");
    static const pp_run runs[] = {
        {MLP, "gpipe", 2, 1, 1, 3, 2, 1, 1}, {MLP, "gpipe", 3, 1, 1, 4, 2, 3, 1},
        {MLP, "1f1b", 2, 1, 1, 3, 2, 1, 1},  {MLP, "1f1b", 3, 1, 1, 5, 2, 3, 1},
        {MLP, "1f1b", 4, 1, 1, 2, 3, 1, 1},  {MLP, "gpipe", 1, 1, 1, 2, 3, 2, 1},
    };
    run_all(runs, (int)(sizeof runs / sizeof *runs));
}

TEST_T(pipeline_interleaved_and_zbh1_equal_one_rank, 3, 30)
{
    dt_test_see("chapter 06, sections 5 and 6");
    static const pp_run runs[] = {
        {MLP, "interleaved", 2, 2, 1, 4, 2, 1, 0}, {MLP, "interleaved", 3, 2, 1, 3, 2, 3, 0},
        {MLP, "zbh1", 2, 1, 1, 3, 2, 1, 1},        {MLP, "zbh1", 3, 1, 1, 4, 2, 3, 1},
        {MLP, "zbh1", 3, 1, 1, 2, 2, 1, 1},
    };
    run_all(runs, (int)(sizeof runs / sizeof *runs));
}

TEST_T(pipeline_with_data_parallelism_equals_one_rank, 3, 40)
{
    dt_test_see("chapter 06, section 8");
    static const pp_run runs[] = {
        {MLP, "1f1b", 2, 1, 2, 3, 2, 3, 0},        {MLP, "gpipe", 2, 1, 3, 2, 2, 1, 0},
        {MLP, "interleaved", 2, 2, 2, 4, 2, 3, 0}, {MLP, "zbh1", 3, 1, 2, 3, 2, 3, 0},
    };
    run_all(runs, (int)(sizeof runs / sizeof *runs));
}

TEST_T(pipeline_of_the_gpt_equals_one_rank, 3, 40)
{
    dt_test_see("chapter 06, sections 3 to 5");
    static const pp_run runs[] = {
        {"gpt", "gpipe", 2, 1, 1, 2, 2, 1, 1},       {"gpt", "1f1b", 2, 1, 1, 3, 1, 3, 0},
        {"gpt", "interleaved", 2, 2, 1, 2, 1, 3, 0}, {"gpt", "1f1b", 4, 1, 1, 4, 1, 1, 0},
        {"gpt", "1f1b", 2, 1, 2, 2, 1, 3, 0},
    };
    run_all(runs, (int)(sizeof runs / sizeof *runs));
}

/* ---------------------------------------------------------------- the clock */

typedef struct {
    const dt_schedule *s;
    dt_sched_timing *timing; /* each rank writes its row (thread ranks share it) */
} clock_run;

/* Every stage costs 1 ms of F, B and W (B + W when the backward is whole),
 * spread over its layers; the network is free. */
static dt_result clock_rank(dt_comm *world, void *arg)
{
    clock_run *cr = arg;
    const dt_schedule *s = cr->s;
    dt_model m;
    dt_trainer t;
    int first[DT_SCHED_MAX_RANKS * DT_SCHED_MAX_CHUNKS + 1];
    double f[16], b[16], w[16];
    DT_CHECK(dt_model_create_spec(&m, "deep:6,10,4,3", 5)); /* 6 layers */
    dt_pipe_cut(m.num_layers, s->stages, first);
    for (int st = 0; st < s->stages; st++)
        for (int l = first[st]; l < first[st + 1]; l++)
            f[l] = b[l] = w[l] = 1e-3 / (first[st + 1] - first[st]);
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0, 0);
    tc.clock = DT_CLOCK_MODELED, tc.forward_layer_s = f, tc.backward_s = b, tc.weight_s = w;
    dt_result r = dt_trainer_init(&t, &m, NULL, &tc);
    dt_pipe_config pc = {world, s, NULL, cr->timing};
    if (r == DT_OK)
        r = dt_train_use_pipeline(&t, &pc);
    float x[4 * 2 * 6];
    int32_t y[4 * 2];
    par_fill_normal(x, 4 * 2 * 6, 5, 1);
    for (int i = 0; i < 8; i++)
        y[i] = i % 3;
    dt_batch batch = {x, NULL, y, 2, 1, s->micro};
    if (r == DT_OK)
        r = dt_train_step(&t, &batch);
    dt_trainer_free(&t);
    dt_model_free(&m);
    return r;
}

/* The runner's modeled start and end of every step equal the simulator's
 * replay of the schedule with the same costs: it ran the schedule, in its
 * order, each step waiting for exactly the data it needs. */
TEST_T(pipeline_steps_run_when_the_simulated_schedule_says, 2, 30, .own_backend = 1)
{
    dt_test_see("chapter 06, sections 3 to 6");
    const char *names[4] = {"gpipe", "1f1b", "interleaved", "zbh1"};
    for (int k = 0; k < 4; k++) {
        int p = k == 2 ? 2 : 3, v = k == 2 ? 3 : 1, m = 4;
        dt_schedule *s;
        dt_sched_timing *got, *want;
        EXPECT_OK(dt_sched_named(&s, names[k], p, v, m));
        dt_sched_costs costs = {.t_f = 1e-3, .t_b = k == 3 ? 1e-3 : 2e-3, .t_w = 1e-3};
        EXPECT_OK(dt_sched_simulate(s, &costs, &want));
        EXPECT_OK(dt_sched_timing_create(s, &got));
        clock_run cr = {s, got};
        EXPECT_OK(par_launch(p, clock_rank, &cr));
        EXPECT_OK(dt_sched_timing_finish(got, s));
        for (int r = 0; r < p; r++)
            for (int i = 0; i < s->nsteps[r]; i++)
                EXPECT(fabs(got->start[r][i] - want->start[r][i]) < 1e-9 &&
                       fabs(got->end[r][i] - want->end[r][i]) < 1e-9,
                       "%s p=%d v=%d m=%d: rank %d's step %d ran [%.6f, %.6f] ms, the schedule "
                       "says [%.6f, %.6f]", names[k], p, v, m, r, i, 1e3 * got->start[r][i],
                       1e3 * got->end[r][i], 1e3 * want->start[r][i], 1e3 * want->end[r][i]);
        EXPECT(fabs(got->bubble_ratio - want->bubble_ratio) < 1e-9, "%s: bubble %.6f, the "
               "schedule's %.6f", names[k], got->bubble_ratio, want->bubble_ratio);
        dt_sched_timing_free(got), dt_sched_timing_free(want);
        dt_sched_free(s);
    }
}

/* ---------------------------------------------------------------- refusals */

static dt_result refused(dt_trainer *t, dt_result got, dt_result want, const char *says)
{
    if (got != want || !strstr(dt_last_error(), says))
        return dt_fail(DT_ERR_MISMATCH, "%s \"%s\", expected %s saying \"%s\"",
                       dt_strerror(got), dt_last_error(), dt_strerror(want), says);
    if (strcmp(t->forward.name, "model") || strcmp(t->sync.name, "local") || t->schedule)
        return dt_fail(DT_ERR_MISMATCH, "a refused pipeline changed the trainer (forward %s, "
                       "sync %s)", t->forward.name, t->sync.name);
    return DT_OK;
}

static dt_result refuse_rank(dt_comm *world, void *arg)
{
    (void)arg;
    dt_model mlp, two, gpt;
    dt_trainer t, tg, t2;
    dt_schedule *s3, *bad, *s4, *zb;
    dt_comm *alone;
    dt_gpt_config gc = par_gpt_config(2);
    DT_CHECK(dt_model_create_spec(&mlp, "deep:6,10,4,3", 5));
    DT_CHECK(dt_model_create_spec(&two, "mlp:4,8,4", 5));
    DT_CHECK(dt_gpt_create(&gpt, &gc, 5));
    DT_CHECK(dt_trainer_init(&t, &mlp, NULL, NULL));
    DT_CHECK(dt_trainer_init(&tg, &gpt, NULL, NULL));
    DT_CHECK(dt_trainer_init(&t2, &two, NULL, NULL));
    DT_CHECK(dt_sched_1f1b(&s3, 3, 2));
    DT_CHECK(dt_sched_interleaved(&s4, 2, 2, 2));
    DT_CHECK(dt_sched_zbh1(&zb, 2, 2));
    DT_CHECK(dt_sched_parse(&bad, "schedule ranks=2 chunks=1 micro=1\n0 0 0 B\n0 0 0 F\n"
                            "1 1 0 F\n1 1 0 B\n", "bad"));
    DT_CHECK(dt_comm_split(world, dt_comm_rank(world), 0, &alone));
    dt_pipe_config c = {world, s3, NULL, NULL};
    dt_result r = refused(&t, dt_train_use_pipeline(&t, &c), DT_ERR_INVALID_ARG,
                          "a schedule for 3 ranks on a pipeline of 2");
    c.schedule = bad;
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, &c), DT_ERR_INVALID_ARG, "rank 0 step 0");
    c.schedule = s4;
    if (r == DT_OK)
        r = refused(&t2, dt_train_use_pipeline(&t2, &c), DT_ERR_INVALID_ARG,
                    "4 stages (2 ranks x 2 chunks) of a 2-layer model");
    static const int empty[3] = {0, 0, 6}, short_cut[3] = {0, 3, 5};
    c.schedule = zb, c.first = empty;
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, &c), DT_ERR_INVALID_ARG,
                    "stage 0 is layers [0, 0): empty");
    c.first = short_cut;
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, &c), DT_ERR_INVALID_ARG,
                    "covers layers [0, 5) of 6");
    c.first = NULL;
    if (r == DT_OK)
        r = refused(&tg, dt_train_use_pipeline(&tg, &c), DT_ERR_UNSUPPORTED,
                    "is not linear: the split backward runs MLP stages only");
    dt_schedule *one = NULL;
    if (r == DT_OK)
        r = dt_sched_interleaved(&one, 1, 2, 2);
    dt_pipe_config c1 = {alone, one, NULL, NULL};
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, &c1), DT_ERR_INVALID_ARG,
                    "2 chunks on one rank");
    dt_pipe_config cz = {world, zb, NULL, NULL};
    t.cfg.clock = DT_CLOCK_MODELED;
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, &cz), DT_ERR_INVALID_ARG,
                    "a modeled clock needs each layer's forward (forward_layer_s)");
    t.cfg.clock = DT_CLOCK_NONE;
    if (r == DT_OK)
        r = refused(&t, dt_train_use_pipeline(&t, NULL), DT_ERR_INVALID_ARG, "NULL config");
    /* a step of another number of micro-batches than the schedule's */
    if (r == DT_OK)
        r = dt_train_use_pipeline(&t, &cz);
    float x[3 * 6] = {0};
    int32_t y[3] = {0};
    dt_batch b = {x, NULL, y, 1, 1, 3};
    if (r == DT_OK && (dt_train_step(&t, &b) != DT_ERR_INVALID_ARG ||
                       !strstr(dt_last_error(), "for 3 micro-batches")))
        r = dt_fail(DT_ERR_MISMATCH, "a step of 3 micro-batches on a schedule of 2: \"%s\"",
                    dt_last_error());
    dt_sched_free(s3), dt_sched_free(bad), dt_sched_free(s4), dt_sched_free(zb);
    dt_sched_free(one);
    dt_comm_free(alone);
    dt_trainer_free(&t), dt_trainer_free(&tg), dt_trainer_free(&t2);
    dt_model_free(&mlp), dt_model_free(&two), dt_model_free(&gpt);
    return r;
}

TEST(pipeline_refuses_what_it_cannot_run, 2)
{
    dt_test_see("chapter 06, section 3");
    EXPECT_OK(par_launch(2, refuse_rank, NULL));
}
