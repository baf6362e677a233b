/* ddp_test.c - the reference trainer and the checking rank function of the
 * lab 03 tests (see ddp_test.h). The reference is plain single-rank SGD on
 * the global batch: it shares no code with the lab. */
#include "ddp_test.h"
#include "grader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

dt_result ddp_test_data(dt_dataset *d)
{
    return dt_data_blobs(d, DDP_DATA_N, 12, 4, 3.0f, DDP_DATA_SEED, 0);
}

dt_optim_config ddp_test_optim(void)
{
    return dt_sgd_config(0.1f, 0.9f, 0.0f);
}

/* Samples [t*G, (t+1)*G) of the one-rank order of epoch 0. */
static dt_result global_batch(size_t G, int t, size_t *idx)
{
    dt_sampler s;
    DT_CHECK(dt_sampler_init(&s, DDP_DATA_N, 1, 0, 1, 1, DDP_DATA_SEED));
    size_t *all = malloc(s.num_samples * sizeof *all);
    if (!all)
        return dt_fail(DT_ERR_NOMEM, "global_batch");
    dt_result r = dt_sampler_indices(&s, 0, all);
    if (r == DT_OK && (size_t)(t + 1) * G > s.num_samples)
        r = dt_fail(DT_ERR_INVALID_ARG, "global_batch: step %d of %zu", t, G);
    if (r == DT_OK)
        memcpy(idx, all + (size_t)t * G, G * sizeof *idx);
    free(all);
    return r;
}

dt_result ddp_reference(dt_model *m, const char *spec, size_t G, int steps, float *grad0)
{
    dt_dataset data = {0};
    dt_acts *a = NULL;
    dt_optim_config cfg = ddp_test_optim();
    DT_CHECK(ddp_test_data(&data));
    dt_result r = dt_model_create_spec(m, spec, DDP_MODEL_SEED);
    float *x = malloc(G * data.features * sizeof *x), *mom = NULL;
    int32_t *y = malloc(G * sizeof *y);
    size_t *idx = malloc(G * sizeof *idx);
    if (r == DT_OK && (!x || !y || !idx))
        r = dt_fail(DT_ERR_NOMEM, "ddp_reference");
    if (r == DT_OK && !(mom = calloc(m->num_params, sizeof *mom)))
        r = dt_fail(DT_ERR_NOMEM, "ddp_reference");
    if (r == DT_OK)
        r = dt_acts_create(&a, m, 0, m->num_layers, G, 1);
    for (int t = 0; r == DT_OK && t < steps; t++) {
        float loss;
        r = global_batch(G, t, idx);
        if (r == DT_OK)
            r = dt_data_gather(&data, idx, G, x, NULL, y);
        if (r == DT_OK)
            r = dt_model_zero_grads(m);
        if (r == DT_OK)
            r = dt_model_forward(m, a, x, NULL);
        if (r == DT_OK)
            r = dt_model_loss(m, a, y, &loss, NULL);
        if (r == DT_OK)
            r = dt_model_backward(m, a, NULL, NULL, NULL, NULL);
        if (r == DT_OK && t == 0 && grad0)
            memcpy(grad0, m->grads, m->num_params * sizeof *grad0);
        if (r == DT_OK) /* the loss is a mean over G rows: the gradient of the global batch */
            r = dt_sgd_update(&cfg, m->params, m->grads, mom, m->num_params);
    }
    dt_acts_free(a);
    free(x), free(y), free(idx), free(mom);
    dt_dataset_free(&data);
    return r;
}

/* max_i |a_i - b_i| / max_i |b_i| */
static double rel_diff(const float *a, const float *b, size_t n, size_t *worst)
{
    double dmax = 0, bmax = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= dmax)) /* NaN counts as worst */
            dmax = d, *worst = i;
        if (fabs(b[i]) > bmax)
            bmax = fabs(b[i]);
    }
    return isnan(dmax) ? INFINITY : dmax / (bmax > 0 ? bmax : 1);
}

/* Trains with the lab; *allreduces_expected gets what the run should call,
 * grad0 (the model's num_params floats) the gradient after the first
 * step's sync. */
static dt_result train(dt_comm *world, const ddp_run *run, dt_model *m, long *expected,
                       float **grad0)
{
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    size_t rows = run->micro_B * (size_t)run->micro_steps;
    dt_optim_config cfg = ddp_test_optim();
    dt_dataset data = {0};
    lab_ddp d;
    DT_CHECK(ddp_test_data(&data));
    float *x = malloc(rows * data.features * sizeof *x);
    int32_t *y = malloc(rows * sizeof *y);
    size_t *idx = malloc(rows * sizeof *idx);
    /* A different seed on each rank: only the broadcast makes them equal. */
    dt_result r = dt_model_create_spec(m, run->spec, DDP_MODEL_SEED + (uint64_t)rank);
    if (r == DT_OK && (!x || !y || !idx))
        r = dt_fail(DT_ERR_NOMEM, "train");
    if (r == DT_OK)
        r = lab_ddp_init(&d, world, m, run->mode, run->bucket_bytes, &cfg, NULL);
    if (r != DT_OK)
        goto out;
    *expected = (long)run->steps * (run->mode == LAB_DDP_FLAT ? 1 : d.num_buckets);
    for (int t = 0; r == DT_OK && t < run->steps; t++) {
        float loss;
        r = lab_ddp_local_batch(DDP_DATA_N, DDP_DATA_SEED, rank, K, 0, (size_t)t, rows, idx);
        if (r == DT_OK)
            r = dt_data_gather(&data, idx, rows, x, NULL, y);
        if (r == DT_OK)
            r = lab_ddp_step(&d, x, y, run->micro_B, run->micro_steps, &loss);
        if (r == DT_OK && t == 0 && !(*grad0 = malloc(m->num_params * sizeof **grad0)))
            r = dt_fail(DT_ERR_NOMEM, "train");
        if (r == DT_OK && t == 0) /* the loop zeroes them only at the next step's start */
            memcpy(*grad0, m->grads, m->num_params * sizeof **grad0);
    }
    lab_ddp_free(&d);
out:
    free(x), free(y), free(idx);
    dt_dataset_free(&data);
    return r;
}

/* The first step's synchronised gradient against the global batch's
 * mean; when it is a multiple of it, the message names which. */
static dt_result check_mean(const ddp_run *run, int K, const float *got, const float *want,
                            size_t n)
{
    size_t worst;
    double e = rel_diff(got, want, n, &worst), gw = 0, ww = 0;
    if (e <= run->tol)
        return DT_OK;
    for (size_t i = 0; i < n; i++)
        gw += (double)got[i] * want[i], ww += (double)want[i] * want[i];
    double c = ww > 0 ? gw / ww : 0; /* got ~ c want */
    int m = run->micro_steps;
    const char *why = "";
    if (K > 1 && fabs(c - K * m) <= 1e-3 * K * m && m > 1)
        why = ": K x micro_steps times the mean, neither the ranks' sum nor the micro-batches' "
              "sum divided";
    else if (K > 1 && K == m && fabs(c - K) <= 1e-3 * K)
        why = ": K = micro_steps times the mean, the ranks' sum or the micro-batches' sum not "
              "divided";
    else if (K > 1 && fabs(c - K) <= 1e-3 * K)
        why = ": K times the mean, the ranks' gradients summed, not averaged";
    else if (m > 1 && fabs(c - m) <= 1e-3 * m)
        why = ": micro_steps times the mean, the sum of the micro-batches' means not divided "
              "by their number";
    return dt_fail(DT_ERR_MISMATCH, "%d ranks x batch %zu x %d micro-steps: after the first "
                   "step's sync grads[%zu] = %.9g, the mean gradient of the global batch of %zu "
                   "is %.9g (relative error %.3g > %.0e; the gradient is %.4g times the mean%s)",
                   K, run->micro_B, m, worst, (double)got[worst],
                   (size_t)K * run->micro_B * (size_t)m, (double)want[worst], e, run->tol, c,
                   why);
}

dt_result ddp_check_rank(dt_comm *world, void *arg)
{
    const ddp_job *job = arg;
    const ddp_run *run = &job->run;
    int rank = dt_comm_rank(world), K = dt_comm_size(world);
    dt_model m = {0}, ref = {0};
    dt_stats st;
    long expected = 0;
    float *root = NULL, *grad0 = NULL, *want0 = NULL;
    dt_result r = dt_test_on_backend(rank, job->backend);
    if (r == DT_OK)
        r = train(world, run, &m, &expected, &grad0);
    if (r == DT_OK)
        r = dt_comm_stats(world, &st);
    if (r == DT_OK && st.calls[DT_COLL_BROADCAST] != 1)
        r = dt_fail(DT_ERR_MISMATCH, "%llu broadcasts, expected 1 (of the initial parameters)",
                    (unsigned long long)st.calls[DT_COLL_BROADCAST]);
    if (r == DT_OK && (long)st.calls[DT_COLL_ALLREDUCE] != expected)
        r = dt_fail(DT_ERR_MISMATCH, "%llu allreduces in %d steps, expected %ld",
                    (unsigned long long)st.calls[DT_COLL_ALLREDUCE], run->steps, expected);
    if (r == DT_OK && rank == 0) {
        size_t G = (size_t)K * run->micro_B * (size_t)run->micro_steps, worst;
        if (!(want0 = malloc(m.num_params * sizeof *want0)))
            r = dt_fail(DT_ERR_NOMEM, "ddp_check_rank");
        if (r == DT_OK)
            r = ddp_reference(&ref, run->spec, G, run->steps, want0);
        if (r == DT_OK)
            r = check_mean(run, K, grad0, want0, m.num_params);
        double e = r == DT_OK ? rel_diff(m.params, ref.params, m.num_params, &worst) : 0;
        if (r == DT_OK && !(e <= run->tol))
            r = dt_fail(DT_ERR_MISMATCH, "%d ranks x batch %zu x %d micro-steps: after %d steps "
                        "params[%zu] = %.9g, one rank with batch %zu gives %.9g (relative "
                        "error %.3g > %.0e)", K, run->micro_B, run->micro_steps, run->steps,
                        worst, (double)m.params[worst], G, (double)ref.params[worst], e,
                        run->tol);
    }
    /* Every rank must hold rank 0's parameters, bit for bit. */
    if (r == DT_OK && !(root = malloc(m.num_params * sizeof *root)))
        r = dt_fail(DT_ERR_NOMEM, "ddp_check_rank");
    if (r == DT_OK)
        r = dt_broadcast(m.params, root, m.num_params, DT_F32, 0, world);
    for (size_t i = 0; r == DT_OK && i < m.num_params; i++)
        if (memcmp(&root[i], &m.params[i], sizeof *root) != 0)
            r = dt_fail(DT_ERR_MISMATCH, "%d ranks, after %d steps: rank %d's params[%zu] = "
                        "%.9g, rank 0's %.9g: the replicas drifted apart (every rank must apply "
                        "the same averaged gradient, section 2)", K, run->steps, rank, i,
                        (double)m.params[i], (double)root[i]);
    free(root), free(grad0), free(want0);
    dt_model_free(&m);
    dt_model_free(&ref);
    return r;
}

static dt_result launch(int K, const dt_backend *b, const ddp_run *run)
{
    dt_launch_opts o;
    dt_launch_opts_init(&o);
    o.nranks = K;
    if (b)
        o.backend = *b;
    o.net = "none";
    o.timeout_s = 8;
    ddp_job job = {*run, b ? *b : dt_test_backend()};
    return dt_launch(&o, ddp_check_rank, &job);
}

dt_result ddp_launch(int K, const ddp_run *run) { return launch(K, NULL, run); }

dt_result ddp_launch_on(int K, dt_backend b, const ddp_run *run) { return launch(K, &b, run); }

