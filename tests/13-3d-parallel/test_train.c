/* test_train.c - lab 13, task (b): the tiny GPT trained on DP x TP x PP
 * ranks through the library's TP layers, pipeline runner and your groups
 * and gradient averaging follows one rank's loss trajectory on the global
 * batch (chapter 13, section 2), within the labs' tolerance. */
#include "grader.h"
#include "threed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOL 1e-5 /* relative: the labs' tolerance for float sums in other orders */

static const dt_gpt_config cfg = {32, 8, 2, 4, 32}; /* 4 layers with the ends */
enum { SEQ = 8, STEPS = 3, MB = 2 /* sequences per micro-batch */ };

typedef struct {
    int T, P, D, m;
} run3d;

static dt_trainer_config sgd(void)
{
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(0.1f, 0.9f, 0);
    return tc;
}

/* Tokens of step k: deterministic, not a pattern the model learns at once. */
static void batch(int32_t *tok, int32_t *y, size_t n, int k)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t h = dt_hash64(13, (uint64_t)k, i);
        tok[i] = (int32_t)(h % cfg.vocab), y[i] = (int32_t)((h >> 20) % cfg.vocab);
    }
}

static dt_result train_rank(dt_comm *world, void *arg)
{
    const run3d *r3 = arg;
    size_t n = (size_t)(r3->D * r3->m) * MB, mine = (size_t)r3->m * MB;
    int32_t *tok = malloc(n * SEQ * sizeof *tok), *y = malloc(n * SEQ * sizeof *y);
    dt_model whole = {0}, ref = {0};
    dt_trainer one;
    lab_rank x;
    dt_schedule *s = NULL;
    dt_trainer_config tc = sgd();
    int have_one = 0;
    memset(&x, 0, sizeof x);
    dt_result r = tok && y ? dt_gpt_create(&whole, &cfg, 7) : dt_fail(DT_ERR_NOMEM, "batch");
    if (r == DT_OK)
        r = dt_gpt_create(&ref, &cfg, 7);
    if (r == DT_OK && (r = dt_trainer_init(&one, &ref, NULL, &tc)) == DT_OK)
        have_one = 1;
    if (r == DT_OK && r3->P > 1)
        r = dt_sched_named(&s, "1f1b", r3->P, 1, r3->m);
    if (r == DT_OK)
        r = lab_rank_init(&x, world, &whole, r3->T, r3->P, s, &tc);
    double worst = 0;
    for (int k = 0; r == DT_OK && k < STEPS; k++) {
        batch(tok, y, n * SEQ, k);
        dt_batch all = {NULL, tok, y, n, SEQ, 1}; /* one rank: the global batch */
        r = dt_train_step(&one, &all);
        size_t at = (size_t)x.g.dp_rank * mine * SEQ;
        dt_batch b = {NULL, tok + at, y + at, MB, SEQ, r3->m};
        if (r == DT_OK)
            r = dt_train_step(&x.trainer, &b);
        float l = x.trainer.loss, mean = 0;
        if (r == DT_OK) /* each replica's loss; their mean is the global batch's */
            r = dt_allreduce(&l, &mean, 1, DT_F32, DT_AVG, x.g.dp);
        double err = fabs((double)mean - one.loss) / fabs((double)one.loss);
        worst = fmax(worst, err);
        if (r == DT_OK && !(err <= TOL))
            r = dt_fail(DT_ERR_MISMATCH, "DP %d x TP %d x PP %d, world rank %d (d %d, p %d, t "
                        "%d): step %d's loss %.7g, one rank's %.7g (relative %.2g; %.0g "
                        "allowed): are the gradients averaged over the group that holds the "
                        "same parameters?", r3->D, r3->T, r3->P, dt_comm_rank(world),
                        x.g.dp_rank, x.g.pp_rank, x.g.tp_rank, k, (double)mean, (double)one.loss,
                        err, TOL);
    }
    if (r == DT_OK && dt_comm_rank(world) == 0)
        printf("measured: DP %d x TP %d x PP %d, %d steps: loss within %.2g of one rank's "
               "(relative, rank 0)\n", r3->D, r3->T, r3->P, STEPS, worst);
    lab_rank_free(&x);
    if (have_one)
        dt_trainer_free(&one);
    dt_sched_free(s);
    dt_model_free(&whole), dt_model_free(&ref);
    free(tok), free(y);
    return r;
}

static dt_result launch(const run3d *r3)
{
    dt_launch_opts o;
    DT_CHECK(dt_launch_opts_init(&o));
    o.nranks = r3->T * r3->P * r3->D;
    o.backend = DT_BACKEND_THREAD;
    o.timeout_s = 30;
    return dt_launch(&o, train_rank, (void *)r3);
}

TEST_T(gpt_2x2x2_follows_one_rank, 4, 30)
{
    dt_test_see("chapter 13, section 2");
    run3d r3 = {2, 2, 2, 4};
    EXPECT_OK(launch(&r3));
}

TEST_T(gpt_other_layouts_follow_one_rank, 2, 30)
{
    dt_test_see("chapter 13, section 2");
    static const run3d layouts[] = {{1, 1, 4, 2}, {2, 1, 2, 2}, {1, 2, 4, 4}, {4, 1, 2, 2}};
    for (size_t k = 0; k < sizeof layouts / sizeof *layouts; k++)
        EXPECT_OK(launch(&layouts[k]));
}
