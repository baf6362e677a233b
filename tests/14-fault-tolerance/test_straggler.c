/* test_straggler.c - lab 14, task 6: a straggler on the modeled clock
 * (chapter 14, section 9). 3 ranks; rank 2 runs at half speed (a sample
 * costs 1 ms / speed of modeled compute). A step of 4 samples each: rank
 * 2's 8 ms against 4 ms, the seed's imbalance (8 - 4) / (16/3) = 0.75.
 * The adaptive batch 12 speed_i / sum speed_j = 4.8, 4.8, 2.4 gives 5, 5,
 * 2: the step takes 5 ms of compute, not 8, and with the gradients
 * weighted b_i / B its update is the full batch's (one rank, the same 12
 * samples) within float rounding. A plain mean weights 2 samples as
 * much as 5. */
#include "ft_test.h"
#include "grader.h"

#include <math.h>
#include <string.h>

enum { R = 3, B = 12, P = 185 };
static const double speed[R] = {1, 1, 0.5}, sample_s = 1e-3;

typedef struct {
    int b[R];
    double compute[R], step[R];  /* modeled seconds of each rank */
    float params[P];             /* rank 0's after the step */
    double w[R];                 /* each rank's weight */
} sjob;

typedef struct {
    dt_comm *comm;
    double w;
} weighted;

/* g := sum over ranks of w_i g_i (the library's allreduce, summing) */
static dt_result weighted_sync(dt_trainer *t, void *self)
{
    weighted *s = self;
    float *g = t->model->grads;
    for (size_t i = 0; i < t->model->num_params; i++)
        g[i] = (float)(s->w * g[i]);
    return dt_allreduce(g, g, t->model->num_params, DT_F32, DT_SUM, s->comm);
}

/* The step's samples 0..B-1, rank i's from sum_{j<i} b_j on; b NULL: all. */
static dt_result batch_of(dt_dataset *d, const int *b, int rank, float *x, int32_t *y, size_t *n)
{
    size_t idx[B], from = 0;
    for (int j = 0; b && j < rank; j++)
        from += (size_t)b[j];
    *n = b ? (size_t)b[rank] : B;
    for (size_t i = 0; i < *n; i++)
        idx[i] = from + i;
    return dt_data_gather(d, idx, *n, x, NULL, y);
}

static dt_result one_step(dt_comm *w, const int *b, sjob *j)
{
    dt_model m;
    dt_trainer t;
    dt_dataset d;
    float x[B * LAB_INPUTS];
    int32_t y[B];
    size_t n;
    int me = w ? dt_comm_rank(w) : 0;
    dt_trainer_config tc = {0};
    tc.optim = dt_sgd_config(1.0f, 0.0f, 0.0f); /* params - gradient */
    DT_CHECK(dt_data_blobs(&d, LAB_DATA_N, LAB_INPUTS, 3, 2.0f, 8, 0));
    DT_CHECK(dt_model_create_spec(&m, LAB_SPEC, 5));
    DT_CHECK(dt_trainer_init(&t, &m, w, &tc));
    weighted s = {w, w ? lab_straggler_weight(b[me], B, R) : 1};
    if (w)
        dt_train_set_hook(&t.sync, (dt_hook){"weighted", weighted_sync, NULL, NULL, &s});
    dt_result r = batch_of(&d, b, me, x, y, &n);
    double t0 = w ? dt_clock(w) : 0;
    if (r == DT_OK && w)
        r = dt_clock_advance(w, (double)n * sample_s / speed[me]);
    double t1 = w ? dt_clock(w) : 0;
    if (r == DT_OK)
        r = dt_train_step(&t, &(dt_batch){x, NULL, y, n, 1, 1});
    if (r == DT_OK) {
        j->compute[me] = t1 - t0, j->step[me] = (w ? dt_clock(w) : 0) - t0, j->w[me] = s.w;
        if (me == 0)
            memcpy(j->params, m.params, sizeof j->params);
    }
    dt_trainer_free(&t);
    dt_model_free(&m);
    dt_dataset_free(&d);
    return r;
}

static dt_result straggler_rank(dt_comm *w, void *arg)
{
    sjob *j = arg;
    return one_step(w, j->b, j);
}

static dt_result launch(sjob *j)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = R, o.backend = DT_BACKEND_THREAD, o.timeout_s = 20;
    return dt_launch(&o, straggler_rank, j);
}

static double max3(const double *v) { return fmax(v[0], fmax(v[1], v[2])); }

TEST_T(ft_straggler_adaptive_batch_shortens_the_step, 3, 60)
{
    dt_test_see("chapter 14, section 9");
    static sjob even = {.b = {4, 4, 4}}, adapted, full;
    EXPECT(launch(&even) == DT_OK, "a step of 4, 4, 4 samples: %s", dt_last_error());
    double imbalance = -1;
    dt_result r = lab_straggler_batches(even.compute, even.b, R, B, 0.1, adapted.b, &imbalance);
    EXPECT(r == DT_OK, "lab_straggler_batches: %s", dt_last_error());
    EXPECT(fabs(imbalance - 0.75) < 1e-9, "imbalance %.6f of the times %g %g %g ms, expected "
           "(max - min) / mean = 0.75", imbalance, 1e3 * even.compute[0],
           1e3 * even.compute[1], 1e3 * even.compute[2]);
    EXPECT(adapted.b[0] == 5 && adapted.b[1] == 5 && adapted.b[2] == 2, "batches %d %d %d, "
           "expected 12 speed_i / sum speed_j = 4.8 4.8 2.4 rounded: 5 5 2", adapted.b[0],
           adapted.b[1], adapted.b[2]);
    if (r != DT_OK || adapted.b[0] + adapted.b[1] + adapted.b[2] != B)
        return;
    EXPECT(launch(&adapted) == DT_OK, "a step of the adapted batches: %s", dt_last_error());
    /* the exchange costs the same bytes in both steps: the compute decides */
    double comm_even = max3(even.step) - max3(even.compute);
    double comm_adapted = max3(adapted.step) - max3(adapted.compute);
    EXPECT(max3(adapted.step) < max3(even.step) && fabs(comm_even - comm_adapted) < 1e-9 &&
           fabs(max3(adapted.compute) - 5e-3) < 1e-12, "modeled step %.6f ms adapted, %.6f "
           "ms even; compute %.6f ms (expected 5)", 1e3 * max3(adapted.step),
           1e3 * max3(even.step), 1e3 * max3(adapted.compute));
    EXPECT(one_step(NULL, NULL, &full) == DT_OK, "the full batch on one rank: %s",
           dt_last_error());
    double worst = 0;
    for (int i = 0; i < P; i++)
        worst = fmax(worst, fabs((double)adapted.params[i] - full.params[i]) /
                                fmax(1, fabs((double)full.params[i])));
    EXPECT(worst < 1e-5, "after one step of lr 1, the parameters differ from the full batch's "
           "by %.3g (relative above 1): the gradient is not the mean over the 12 samples (rank 0's "
           "weight %g)", worst, adapted.w[0]);
}

TEST_T(ft_straggler_batches_contract, 1, 30)
{
    dt_test_see("chapter 14, section 9");
    const double calm[R] = {4e-3, 4.2e-3, 4.1e-3}, slow[R] = {1, 1, 100};
    const int prev[R] = {4, 4, 4};
    int b[R] = {0, 0, 0};
    double imb = -1;
    EXPECT(lab_straggler_batches(calm, prev, R, B, 0.1, b, &imb) == DT_OK && b[0] == 4 &&
           b[1] == 4 && b[2] == 4 && fabs(imb - 0.2e-3 / 4.1e-3) < 1e-9,
           "imbalance %.4f under the threshold 0.1: batches %d %d %d, expected 4 4 4", imb,
           b[0], b[1], b[2]);
    EXPECT(lab_straggler_batches(slow, prev, R, B, 0.1, b, &imb) == DT_OK &&
           b[0] + b[1] + b[2] == B && b[2] >= 1 && b[0] >= 5 && b[1] >= 5,
           "a rank 100 times slower: batches %d %d %d, expected each >= 1, summing to 12, "
           "the others within one of 5.97", b[0], b[1], b[2]);
    const double zero[R] = {1, 0, 1};
    EXPECT(lab_straggler_batches(zero, prev, R, B, 0.1, b, &imb) == DT_ERR_INVALID_ARG,
           "a step time of 0 was not refused");
}
