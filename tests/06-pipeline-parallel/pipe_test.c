/* pipe_test.c - the reference, the schedule checks and the checking rank
 * function of the lab 06 tests (see pipe_test.h). The reference is plain
 * single-rank training of the whole model on the global batch: it shares no
 * code with the lab. */
#include "grader.h"
#include "pipe_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pipe_kind_name(pipe_sched_kind k)
{
    static const char *const names[] = {"GPipe", "1F1B", "interleaved", "ZB-H1", "by hand"};
    return names[k];
}

dt_result pipe_make_schedule(const pipe_run *run, dt_schedule **out)
{
    static const char *const lib_name[] = {"gpipe", "1f1b", "interleaved", "zbh1"};
    if (run->library && run->kind != PIPE_TEXT)
        return dt_sched_named(out, lib_name[run->kind], run->p, run->v, run->m);
    switch (run->kind) {
    case PIPE_GPIPE: return lab_sched_gpipe(out, run->p, run->m);
    case PIPE_1F1B: return lab_sched_1f1b(out, run->p, run->m);
    case PIPE_INTERLEAVED: return lab_sched_interleaved(out, run->p, run->v, run->m);
    case PIPE_ZBH1: return lab_sched_zbh1(out, run->p, run->m);
    case PIPE_TEXT: return dt_sched_parse(out, run->text, "test");
    }
    return dt_fail(DT_ERR_INVALID_ARG, "no schedule kind %d", (int)run->kind);
}

void pipe_batch(size_t first, size_t n, size_t in, size_t classes, int t, float *x, int32_t *y)
{
    for (size_t r = 0; r < n; r++) {
        size_t g = first + r;
        for (size_t i = 0; i < in; i++)
            x[r * in + i] = (float)((int)((g * in + i) * 7 % 17 + (size_t)t % 5) - 8) / 8.0f;
        y[r] = (int32_t)((g * 5 + (size_t)t) % classes);
    }
}

/* ------------------------------------------------------------ the reference */

/* One rank, the whole model, run->steps steps of SGD with momentum on the
 * global batch of d m B rows: the last step's loss and gradients. */
static dt_result reference(dt_model *ref, const pipe_run *run, float *loss)
{
    dt_optim_config cfg = dt_sgd_config(0.05f, 0.9f, 0);
    size_t G = (size_t)run->d * (size_t)run->m * run->B;
    dt_acts *a = NULL;
    DT_CHECK(dt_model_create_spec(ref, run->spec, PIPE_MODEL_SEED));
    float *x = malloc(G * ref->in_width * sizeof *x), *mom = NULL;
    int32_t *y = malloc(G * sizeof *y);
    dt_result r = x && y && (mom = calloc(ref->num_params, sizeof *mom))
                      ? dt_acts_create(&a, ref, 0, ref->num_layers, G, 1)
                      : dt_fail(DT_ERR_NOMEM, "reference");
    for (int t = 0; r == DT_OK && t < run->steps; t++) {
        pipe_batch(0, G, ref->in_width, ref->num_classes, t, x, y);
        r = dt_model_zero_grads(ref);
        if (r == DT_OK)
            r = dt_model_forward(ref, a, x, NULL);
        if (r == DT_OK)
            r = dt_model_loss(ref, a, y, loss, NULL);
        if (r == DT_OK)
            r = dt_model_backward(ref, a, NULL, NULL, NULL, NULL);
        if (r == DT_OK)
            r = dt_sgd_update(&cfg, ref->params, ref->grads, mom, ref->num_params);
    }
    dt_acts_free(a);
    free(x), free(y), free(mom);
    return r;
}

static double rel_diff(const float *a, const float *b, size_t off, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = off;
    for (size_t i = off; i < off + n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax))
            dmax = d, *worst = i;
        bmax = fmax(bmax, fabs((double)b[i]));
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

/* ------------------------------------------------------------ one rank's run */

typedef struct {
    const pipe_run *run;
    dt_comm *world;
    dt_model m, ref;
    lab_pipe lp;
    dt_sched_report rep;
    float loss;
    size_t act_peak;                          /* bytes: the first step's peak in flight */
    size_t act_unit[LAB_PIPE_MAX_STAGES];     /* bytes: one pair's, of each chunk */
    size_t want_peak;                         /* bytes: the peak of the schedule's walk */
    int want_pairs;                           /* pairs in flight at that peak */
    size_t untagged;                          /* bytes outside dt_mem_alloc, at the peak */
    dt_sched_timing *timing;                  /* with want_ratio: the first step's compute,
                                                 this rank's row (the runner writes it) */
} pipe_rank;

/* One pair's activation bytes on each of this rank's stages (chunks). */
static dt_result pair_bytes(pipe_rank *pr)
{
    lab_pipe *lp = &pr->lp;
    dt_result r = DT_OK;
    for (int c = 0; r == DT_OK && c < lp->v; c++) {
        int s = lab_pipe_stage(lp, c);
        dt_mem_stats a, b;
        dt_acts *acts = NULL;
        dt_wgrad *w = NULL;
        dt_mem_stats_get(&a);
        r = dt_acts_create(&acts, &pr->m, lp->first[s], lp->first[s + 1], lp->B, 1);
        if (r == DT_OK && pr->rep.split_backward)
            r = dt_wgrad_create(&w, acts);
        dt_mem_stats_get(&b);
        pr->act_unit[c] = b.current[DT_MEM_ACT] - a.current[DT_MEM_ACT];
        dt_wgrad_free(w);
        dt_acts_free(acts);
    }
    return r;
}

/* What this rank's steps keep in flight, walked in the schedule's order: a
 * pair's activations from its F to its last backward step (B, or W when
 * the backward is split), the bytes of its chunk's stage (sections 2, 4
 * to 6). The largest sum along the walk is the peak the runner must show. */
static void schedule_peak(pipe_rank *pr, const dt_schedule *s)
{
    int r = pr->lp.rank, held = 0;
    size_t bytes = 0;
    pr->want_peak = 0, pr->want_pairs = 0;
    for (int i = 0; i < s->nsteps[r]; i++) {
        const dt_step *st = &s->steps[r][i];
        size_t unit = pr->act_unit[st->stage / s->ranks];
        if (st->kind == DT_STEP_F)
            bytes += unit, held++;
        else if (st->kind == DT_STEP_W || !pr->rep.split_backward)
            bytes -= unit, held--;
        if (bytes > pr->want_peak)
            pr->want_peak = bytes, pr->want_pairs = held;
    }
}

/* Trains run->steps steps; the first step's ACT peak above what was held. */
static dt_result train(pipe_rank *pr)
{
    const pipe_run *run = pr->run;
    lab_pipe *lp = &pr->lp;
    dt_optim_config cfg = dt_sgd_config(0.05f, 0.9f, 0);
    lab_pipe_cost cost = {1e-3, 1e-3, 1e-3, NULL};
    dt_schedule *s = NULL;
    int replica = dt_comm_rank(pr->world) / run->p;
    size_t rows = (size_t)run->m * run->B;
    float *x = malloc(rows * pr->m.in_width * sizeof *x);
    int32_t *y = malloc(rows * sizeof *y);
    dt_result r = x && y ? lab_pipe_init(lp, pr->world, &pr->m, run->p, run->v, run->B, &cfg,
                                         run->want_ratio > 0 ? &cost : NULL)
                         : dt_fail(DT_ERR_NOMEM, "train");
    if (r == DT_OK)
        r = pipe_make_schedule(run, &s);
    if (r == DT_OK)
        r = dt_sched_validate(s, &pr->rep);
    if (r == DT_OK)
        r = lab_pipe_set_schedule(lp, s);
    if (r == DT_OK && run->check_memory)
        r = pair_bytes(pr);
    if (r == DT_OK && run->check_memory)
        schedule_peak(pr, s);
    if (r == DT_OK && run->want_ratio > 0)
        r = dt_sched_timing_create(s, &pr->timing);
    for (int t = 0; r == DT_OK && t < run->steps; t++) {
        dt_mem_stats before, after;
        pipe_batch((size_t)replica * rows, rows, pr->m.in_width, pr->m.num_classes, t, x, y);
        dt_mem_stats_get(&before);
        dt_mem_reset_peak();
        lp->timing = t == 0 ? pr->timing : NULL; /* where the bubble's time went */
        r = lab_pipe_step(lp, x, y, &pr->loss);
        lp->timing = NULL;
        dt_mem_stats_get(&after);
        if (t == 0) {
            pr->act_peak = after.peak[DT_MEM_ACT] - before.current[DT_MEM_ACT];
            pr->untagged = after.peak[DT_MEM_UNTAGGED] - before.current[DT_MEM_UNTAGGED];
        }
    }
    dt_sched_free(s);
    free(x), free(y);
    return r;
}

/* This rank's layers against the reference: gradients or parameters. */
static dt_result compare(pipe_rank *pr)
{
    const pipe_run *run = pr->run;
    const lab_pipe *lp = &pr->lp;
    for (int c = 0; c < lp->v; c++) {
        int s = lab_pipe_stage(lp, c);
        size_t off, n, worst;
        DT_CHECK(dt_model_layer_range(&pr->m, lp->first[s], lp->first[s + 1], &off, &n));
        const float *got = run->steps == 1 ? pr->m.grads : pr->m.params;
        const float *want = run->steps == 1 ? pr->ref.grads : pr->ref.params;
        double e = rel_diff(got, want, off, n, &worst);
        if (!(e <= run->tol))
            return dt_fail(DT_ERR_MISMATCH, "%s, p=%d v=%d d=%d m=%d, %d step(s): stage %d's "
                           "%s[%zu] = %.9g, one rank on the whole batch gives %.9g (relative "
                           "error %.3g > %.0e)", pipe_kind_name(run->kind), run->p, run->v,
                           run->d, run->m, run->steps, s, run->steps == 1 ? "grads" : "params",
                           worst, (double)got[worst], (double)want[worst], e, run->tol);
    }
    return DT_OK;
}

/* The d replicas of this rank's stages hold the same parameters, bit for
 * bit: each against the first replica, and every replica told the verdict
 * (so that the first replica names the stage too). */
static dt_result replicas_agree(pipe_rank *pr)
{
    lab_pipe *lp = &pr->lp;
    for (int c = 0; lp->dp && c < lp->v; c++) {
        int s = lab_pipe_stage(lp, c);
        size_t off, n;
        DT_CHECK(dt_model_layer_range(&pr->m, lp->first[s], lp->first[s + 1], &off, &n));
        float *root = malloc(n * sizeof *root), mine, all = 0;
        dt_result r = root ? dt_broadcast(pr->m.params + off, root, n, DT_F32, 0, lp->dp)
                           : dt_fail(DT_ERR_NOMEM, "replicas_agree");
        mine = r == DT_OK && !memcmp(root, pr->m.params + off, n * sizeof *root);
        free(root);
        DT_CHECK(r);
        DT_CHECK(dt_allreduce(&mine, &all, 1, DT_F32, DT_MIN, lp->dp));
        if (all != 1)
            return dt_fail(DT_ERR_MISMATCH, "%s, p=%d v=%d d=%d: after %d steps the %d replicas "
                           "of stage %d (chunk %d of pipeline rank %d) differ: its gradients "
                           "were not averaged over lp->dp, each replica trained on its own "
                           "share (section 8)", pipe_kind_name(pr->run->kind), lp->p, lp->v,
                           lp->d, pr->run->steps, lp->d, s, c, lp->rank);
    }
    return DT_OK;
}

/* This rank's longest wait in the first step: the gap before one of its
 * steps (from the step's start, or the end of the one before), in ms;
 * *at gets the step. From the runner's record of its compute. */
static double longest_wait(const pipe_rank *pr, int *at)
{
    const dt_sched_timing *t = pr->timing;
    int r = pr->lp.rank, n = pr->lp.sched ? pr->lp.sched->nsteps[r] : 0;
    double wait = -1, prev = 0;
    *at = 0;
    for (int i = 0; t && i < n; i++) {
        if (t->start[r][i] - prev > wait)
            wait = t->start[r][i] - prev, *at = i;
        prev = t->end[r][i];
    }
    return wait * 1e3;
}

/* The measured bubble: idle over busy time of the pipeline's ranks, from
 * the modeled clock (one step from 0, a free network). A failure names the
 * rank that idled most, and the step before which it waited longest. */
static dt_result check_bubble(pipe_rank *pr)
{
    const pipe_run *run = pr->run;
    const lab_pipe *lp = &pr->lp;
    /* busy: m micro-batches x v chunks x (t_f + t_b + t_w) of 1 ms */
    float mine = (float)(dt_clock(pr->world) * 1e3), makespan;
    DT_CHECK(dt_allreduce(&mine, &makespan, 1, DT_F32, DT_MAX, pr->world));
    double busy = 3.0 * lp->v * run->m, ratio = (makespan - busy) / busy;
    double tol = run->ratio_tol > 0 ? run->ratio_tol : 0.02;
    if (fabs(ratio - run->want_ratio) <= tol * run->want_ratio)
        return DT_OK;
    /* Every rank idles makespan - busy; the one whose record has the
     * longest wait is named, with that wait: {wait, step, rank}. */
    int at, world_rank = dt_comm_rank(pr->world);
    float w[3] = {(float)longest_wait(pr, &at), (float)at, (float)lp->rank}, worst[3];
    float key = w[0] * 4096 - (float)world_rank, best;
    DT_CHECK(dt_allreduce(&key, &best, 1, DT_F32, DT_MAX, pr->world));
    float from = key == best ? (float)world_rank : 1e9f, root;
    DT_CHECK(dt_allreduce(&from, &root, 1, DT_F32, DT_MIN, pr->world));
    DT_CHECK(dt_broadcast(w, worst, 3, DT_F32, (int)root, pr->world));
    const dt_step *st = &lp->sched->steps[(int)worst[2]][(int)worst[1]];
    return dt_fail(DT_ERR_MISMATCH, "%s%s, p=%d v=%d m=%d, T_F = T_B = T_W: the step took %.3f "
                   "ms for %.0f ms of work per rank: idle/busy %.4f, %s %.4f; rank %d waited "
                   "longest, %.3f ms before its step %d (%s of stage %d, micro-batch %d)",
                   run->library ? "the library's " : "", pipe_kind_name(run->kind), run->p,
                   run->v, run->m, (double)makespan, busy, ratio,
                   run->want_is ? run->want_is : "the formula", run->want_ratio, (int)worst[2],
                   (double)worst[0], (int)worst[1], dt_step_kind_name(st->kind), st->stage,
                   st->micro);
}

static dt_result check_memory(pipe_rank *pr)
{
    const pipe_run *run = pr->run;
    int r = pr->lp.rank;
    if (pr->act_peak != pr->want_peak) {
        const char *why = pr->act_peak > pr->want_peak
                              ? "a pair's activations outlive its last backward step"
                              : "a pair's activations are gone before its last backward step";
        if (run->v == 1)
            return dt_fail(DT_ERR_MISMATCH, "%s, p=%d m=%d: rank %d held %zu bytes of activations at "
                           "its peak, %.2f micro-batches' worth; the schedule keeps %d in flight "
                           "(%zu bytes each): %s (section 4)", pipe_kind_name(run->kind), run->p,
                           run->m, r, pr->act_peak, (double)pr->act_peak / (double)pr->act_unit[0],
                           pr->want_pairs, pr->act_unit[0], why);
        return dt_fail(DT_ERR_MISMATCH, "%s, p=%d v=%d d=%d m=%d: rank %d held %zu bytes of "
                       "activations at its peak; its steps keep at most %zu in flight (%d (chunk, "
                       "micro-batch) pairs, each from its F to its last backward step): %s "
                       "(section 5)", pipe_kind_name(run->kind), run->p, run->v, run->d, run->m, r,
                       pr->act_peak, pr->want_peak, pr->want_pairs, why);
    }
    /* activations kept outside dt_mem_alloc count too */
    char what[96];
    snprintf(what, sizeof what, "%s, p=%d m=%d, rank %d, activations", pipe_kind_name(run->kind),
             run->p, run->m, r);
    return dt_test_whole_peak((double)pr->act_peak, (double)pr->untagged, (double)pr->want_peak,
                              0.05, what);
}

dt_result pipe_check_rank(dt_comm *world, void *arg)
{
    pipe_rank pr;
    memset(&pr, 0, sizeof pr);
    pr.run = arg, pr.world = world;
    float ref_loss = 0;
    dt_result r = dt_model_create_spec(&pr.m, pr.run->spec, PIPE_MODEL_SEED);
    if (r == DT_OK)
        r = train(&pr);
    if (r == DT_OK && pr.run->want_ratio > 0)
        r = check_bubble(&pr);
    if (r == DT_OK) /* collective over lp->dp: before the checks one rank fails alone */
        r = replicas_agree(&pr);
    if (r == DT_OK && pr.run->check_memory)
        r = check_memory(&pr);
    if (r == DT_OK)
        r = reference(&pr.ref, pr.run, &ref_loss);
    if (r == DT_OK)
        r = compare(&pr);
    if (r == DT_OK && pr.run->d == 1 && pr.run->steps == 1 &&
        lab_pipe_stage(&pr.lp, pr.lp.v - 1) == pr.lp.S - 1 &&
        !(fabs(pr.loss - ref_loss) <= pr.run->tol * fabs(ref_loss)))
        r = dt_fail(DT_ERR_MISMATCH, "the step's loss is %.9g on the last stage, one rank gives "
                    "%.9g (the mean over the micro-batches: section 1)", (double)pr.loss,
                    (double)ref_loss);
    lab_pipe_free(&pr.lp);
    dt_sched_timing_free(pr.timing);
    dt_model_free(&pr.m);
    dt_model_free(&pr.ref);
    return r;
}

dt_result pipe_launch(const pipe_run *run)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = run->p * run->d;
    o.backend = run->backend;
    o.net = "none";
    o.timeout_s = 5;
    return dt_launch(&o, pipe_check_rank, (void *)run);
}

/* ------------------------------------------------------------ schedules */

void pipe_expect_schedule(dt_schedule *s, const char *what, double t_f, double t_b, double t_w,
                          double want_ratio, pipe_peak_fn want_peak, const char *peak_rule)
{
    dt_sched_report rep;
    dt_sched_timing *t = NULL;
    dt_sched_costs c = {.t_f = t_f, .t_b = t_b, .t_w = t_w};
    EXPECT(s != NULL, "%s: no schedule", what);
    dt_result r = dt_sched_validate(s, &rep);
    EXPECT(r == DT_OK, "%s: the validator refuses it: %s", what, dt_last_error());
    int p = s->ranks, v = s->chunks, m = s->micro, per = rep.split_backward ? 3 : 2;
    for (int k = 0; k < p; k++)
        EXPECT(s->nsteps[k] == per * s->chunks * m, "%s: rank %d has %d steps, expected %d", what,
               k, s->nsteps[k], per * s->chunks * m);
    EXPECT_OK(dt_sched_simulate(s, &c, &t));
    if (!(fabs(t->bubble_ratio - want_ratio) <= 1e-9 * fmax(1, want_ratio))) {
        /* name the rank that idles most, and the step it waits longest for */
        int worst = 0, at = 0;
        for (int k = 1; k < p; k++)
            if (t->idle[k] > t->idle[worst])
                worst = k;
        double wait = -1, prev = 0;
        for (int i = 0; i < s->nsteps[worst]; i++) {
            if (t->start[worst][i] - prev > wait)
                wait = t->start[worst][i] - prev, at = i;
            prev = t->end[worst][i];
        }
        const dt_step *st = &s->steps[worst][at];
        EXPECT(0, "%s: idle/busy %.6f with equal stages (T_F = %g, T_B = %g, T_W = %g), the "
               "formula gives %.6f: rank %d idles %g of a step of %g, %g with the formula's "
               "bubble; its longest wait, %g, is before its step %d (%s of stage %d, "
               "micro-batch %d)", what, t->bubble_ratio, t_f, t_b, t_w, want_ratio, worst,
               t->idle[worst], t->makespan, want_ratio * t->busy[worst], wait, at,
               dt_step_kind_name(st->kind), st->stage, st->micro);
    }
    for (int k = 0; want_peak && k < p; k++)
        EXPECT(rep.peak_acts[k] == want_peak(p, v, m, k), "%s: rank %d holds %d %s' "
               "activations at its peak, expected %s = %d", what, k, rep.peak_acts[k],
               v > 1 ? "chunks" : "micro-batches", peak_rule, want_peak(p, v, m, k));
    dt_sched_timing_free(t);
    dt_sched_free(s);
}
