/* test_train_dp.c - the training loop on several ranks (thread backend):
 * data parallelism trains like one rank with the global batch; ZeRO-1
 * gives DDP's parameters bit for bit with every algorithm, holds 1/K of
 * the optimizer state and, with the ring, sends what the allreduce sends;
 * the run's reports are collective. */
#include "grader.h"
#include "dt/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define SPEC "mlp:12,16,8,4" /* 380 parameters: 380 = 4 x 95 = 5 x 76, and 3 x 126 + 2 */
#define MAX_RANKS 5

typedef struct {
    const char *spec;        /* NULL: SPEC */
    dt_algo algo;
    int zero1;
    dt_optim_config optim;
    size_t batch;            /* per rank */
    long steps;
    /* out, per rank */
    float *params[MAX_RANKS];
    size_t optim_bytes[MAX_RANKS];
    double bytes_per_step[MAX_RANKS];
    float final_loss[MAX_RANKS];
    int reports[MAX_RANKS];
} dp_job;

static dt_result data(dt_dataset *d) { return dt_data_blobs(d, 240, 12, 4, 2, 11, 0); }

static void count_report(void *arg, const dt_train_progress *p)
{
    (void)p;
    (*(int *)arg)++;
}

/* Every rank: the same initial model (seed 5), DDP or ZeRO-1, dt_train. */
static dt_result dp_rank(dt_comm *w, void *arg)
{
    dp_job *j = arg;
    int r = dt_comm_rank(w);
    dt_dataset d;
    dt_model m;
    dt_trainer t;
    dt_trainer_config tc = {0};
    tc.optim = j->optim;
    DT_CHECK(data(&d));
    DT_CHECK(dt_model_create_spec(&m, j->spec ? j->spec : SPEC, 5));
    dt_result res = dt_trainer_init(&t, &m, w, &tc);
    if (res == DT_OK && j->zero1)
        res = dt_train_use_zero1(&t);
    dt_train_config c = dt_train_defaults();
    c.batch = j->batch, c.steps = j->steps, c.report_every = 2;
    c.progress = count_report, c.progress_arg = &j->reports[r];
    dt_train_result out;
    if (res == DT_OK)
        res = dt_train(&t, &d, &c, &out);
    dt_mem_stats ms;
    dt_mem_stats_get(&ms);
    j->optim_bytes[r] = ms.current[DT_MEM_OPTIM];
    if (res == DT_OK && (j->params[r] = malloc(m.num_params * sizeof(float))))
        memcpy(j->params[r], m.params, m.num_params * sizeof(float));
    j->bytes_per_step[r] = out.bytes_per_step;
    j->final_loss[r] = out.final_loss;
    dt_trainer_free(&t);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return res;
}

static void launch(int K, dp_job *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    o.backend = DT_BACKEND_THREAD;
    o.algo = j->algo;
    o.timeout_s = 10;
    EXPECT_OK(dt_launch(&o, dp_rank, j));
}

static void free_job(dp_job *j)
{
    for (int r = 0; r < MAX_RANKS; r++)
        free(j->params[r]);
}

static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, mx = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - b[i])), mx = fmax(mx, fabs((double)b[i]));
    return d / (mx > 0 ? mx : 1);
}

/* K ranks with batch B each train like one rank with batch K B (the
 * sampler's shards of a step are the one-rank batch of that step): the
 * same mean gradient summed in another order, 1e-5 after 4 steps; every
 * rank holds the same bits. */
TEST_T(train_ddp_equals_one_rank_with_the_global_batch, 2, 20, .own_backend = 1)
{
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, SPEC, 5));
    size_t n = m.num_params;
    dt_model_free(&m);
    for (int K = 2; K <= 4; K++) {
        dp_job one = {NULL, DT_ALGO_RING, 0, dt_sgd_config(0.1f, 0.9f, 0), 6 * (size_t)K, 4,
                      {0}, {0}, {0}, {0}, {0}};
        dp_job many = one;
        many.batch = 6;
        launch(1, &one);
        launch(K, &many);
        double e = rel_diff(many.params[0], one.params[0], n);
        EXPECT(e < 1e-5, "%d ranks x batch 6 vs 1 rank x batch %d: relative difference %.3g", K,
               6 * K, e);
        for (int r = 1; r < K; r++)
            EXPECT(!memcmp(many.params[r], many.params[0], n * sizeof(float)),
                   "K=%d: rank %d's parameters differ from rank 0's", K, r);
        EXPECT(many.reports[0] == 2 && many.reports[1] == 0, "K=%d: rank 0 reported %d times "
               "(steps 2 and 4), rank 1 %d (never)", K, many.reports[0], many.reports[1]);
        free_job(&one), free_job(&many);
    }
}

/* ZeRO-1 (the allreduce's first half, the step on the shard, its second
 * half) against DDP (one allreduce): the same parameters bit for bit, with
 * SGD and AdamW, on 2 to 5 ranks, with every algorithm (recursive doubling
 * on 5 ranks adds in another tree than a binomial reduce-scatter would),
 * with and without blocks of unequal length (380 on 3 ranks: 127, 127,
 * 126); each rank's optimizer state is its block's, about 1/K of DDP's;
 * with the ring, the same bytes as the allreduce, 2 (K-1)/K x 4P per rank
 * per step when K divides P. The bits must not depend on the gradients'
 * values: a cut of ZeRO's own passed with some BLAS kernels only. */
TEST_T(train_zero1_equals_ddp_with_a_shard_of_the_state, 3, 60, .own_backend = 1)
{
    size_t P = 380;
    dt_optim_config cfgs[2] = {dt_sgd_config(0.1f, 0.9f, 0), dt_adamw_config(0.01f)};
    const dt_algo algos[] = {DT_ALGO_RING, DT_ALGO_TREE, DT_ALGO_DIRECT, DT_ALGO_BINOMIAL};
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++)
        for (int k = 0; k < 2; k++)
            for (int K = 2; K <= MAX_RANKS; K++) {
                dp_job ddp = {NULL, algos[a], 0, cfgs[k], 5, 3, {0}, {0}, {0}, {0}, {0}};
                dp_job z = ddp;
                z.zero1 = 1;
                launch(K, &ddp);
                launch(K, &z);
                const char *opt = k ? "AdamW" : "SGD", *al = dt_algo_name(algos[a]);
                for (int r = 0; r < K; r++)
                    EXPECT(z.params[r] && ddp.params[0] &&
                           !memcmp(z.params[r], ddp.params[0], P * sizeof(float)),
                           "%s, %s, K=%d: ZeRO-1's parameters on rank %d differ from DDP's", al,
                           opt, K, r);
                size_t slots = k ? 2 : 1;
                for (int r = 0; r < K; r++) {
                    size_t off, len;
                    dt_block(P, K, r, &off, &len);
                    EXPECT(z.optim_bytes[r] == 4 * slots * len, "%s, K=%d, rank %d: %zu bytes "
                           "of optimizer state, expected %zu (its block of %zu)", opt, K, r,
                           z.optim_bytes[r], 4 * slots * len, len);
                    EXPECT(ddp.optim_bytes[r] == 4 * slots * P, "DDP, rank %d: %zu bytes of "
                           "state", r, ddp.optim_bytes[r]);
                }
                if (algos[a] == DT_ALGO_RING) {
                    double want = 2.0 * (K - 1) / K * 4.0 * (double)P;
                    EXPECT(z.bytes_per_step[0] == ddp.bytes_per_step[0] &&
                           (P % (size_t)K || z.bytes_per_step[0] == want),
                           "K=%d: ZeRO-1 sends %.0f bytes a step, DDP %.0f, the ring formula "
                           "%.0f", K, z.bytes_per_step[0], ddp.bytes_per_step[0], want);
                }
                EXPECT(z.final_loss[0] == ddp.final_loss[0], "the same losses");
                free_job(&ddp), free_job(&z);
            }
}

/* The same with the algorithm chosen by size: 68,021 parameters (266 KiB)
 * take the one-pass shortcut, which adds in rank order, on 3 ranks (blocks
 * of 22,674, 22,674, 22,673). */
TEST_T(train_zero1_equals_ddp_with_the_shortcut, 2, 60, .own_backend = 1)
{
    const char *spec = "mlp:12,4001,4";
    dt_model m;
    EXPECT_OK(dt_model_create_spec(&m, spec, 5));
    size_t P = m.num_params;
    dt_model_free(&m);
    EXPECT(P * 4 >= 262144 && P % 3, "%zu parameters: not what the test needs", P);
    dp_job ddp = {spec, DT_ALGO_AUTO, 0, dt_adamw_config(0.01f), 5, 3, {0}, {0}, {0}, {0}, {0}};
    dp_job z = ddp;
    z.zero1 = 1;
    launch(3, &ddp);
    launch(3, &z);
    for (int r = 0; r < 3; r++)
        EXPECT(z.params[r] && ddp.params[0] &&
               !memcmp(z.params[r], ddp.params[0], P * sizeof(float)),
               "AUTO, K=3: ZeRO-1's parameters on rank %d differ from DDP's", r);
    free_job(&ddp), free_job(&z);
}

static dt_result budget_rank(dt_comm *w, void *arg)
{
    (void)arg;
    dt_dataset d;
    dt_model m;
    dt_trainer t;
    DT_CHECK(data(&d));
    DT_CHECK(dt_model_create_spec(&m, SPEC, 5));
    DT_CHECK(dt_trainer_init(&t, &m, w, NULL));
    dt_train_config c = dt_train_defaults();
    c.time_budget_s = 1;
    dt_train_result out;
    dt_result r = dt_train(&t, &d, &c, &out);
    int refused = r == DT_ERR_INVALID_ARG && strstr(dt_last_error(), "several ranks");
    dt_result f = dt_train_use_fused_sgd(&t); /* plain SGD, but 2 ranks */
    refused = refused && f == DT_ERR_UNSUPPORTED && strstr(dt_last_error(), "one rank only");
    dt_trainer_free(&t);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return refused ? DT_OK : dt_fail(DT_ERR_MISMATCH, "a time budget on 2 ranks: %s, fused "
                                     "SGD on 2 ranks: %s", dt_strerror(r), dt_strerror(f));
}

/* Ranks that stopped on their own clocks would leave the others waiting in
 * a collective: a time budget is for one rank; fused SGD too. */
TEST(train_refuses_what_several_ranks_cannot_do, 1, .own_backend = 1)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = 2;
    o.backend = DT_BACKEND_THREAD;
    o.timeout_s = 5;
    EXPECT_OK(dt_launch(&o, budget_rank, NULL));
}
