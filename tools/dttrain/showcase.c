/* showcase.c - `make run`: the digits MLP on one rank with the global
 * batch, then on K ranks with batch B each (the same training, chapter 03
 * section 3), and a table side by side.
 *
 * The K-rank run's compute is charged to the modeled clock at the
 * per-sample cost measured on one rank, so that its modeled time is what K
 * such cores on the named network would take, whatever this machine's core
 * count. */
#include "parallel.h"

#include <string.h>
#include <unistd.h>

/* Samples per second over the training steps alone: the samples of the
 * run over its wall time less its reports (the test set's evaluation
 * after each epoch), which is what the epoch lines give, taken together.
 * (A median step's rate would leave out the batches' gathering and every
 * slow step, and come out above all of them.) */
static double train_rate(const dt_train_result *r, long global_batch)
{
    double s = r->seconds - r->report_s;
    return s > 0 ? (double)(r->steps * global_batch) / s : 0;
}

static void summary(const options *o, int K, const char *net, const char *be, size_t params,
                    const dp_result *r1, const dp_result *rk)
{
    const dt_train_result *a = &r1->run, *b = &rk->run;
    long B = o->batch, ncores = sysconf(_SC_NPROCESSORS_ONLN);
    double t1_modeled = a->step_ms_median / 1e3 * (double)a->steps;
    double ra = train_rate(a, K * B), rb = train_rate(b, K * B);
    char row[48];
    printf("\nsummary (%ld epochs of the %s training set, global batch %ld)\n",
           o->epochs, o->data, K * B);
    printf("  %-26s %9s %11s %11s %18s %13s %13s\n", "", "accuracy", "wall time", "of it", "modeled on",
           "samples/s", "memory/rank");
    printf("  %-26s %9s %11s %11s %18s %13s %13s\n", "", "", "", "evaluating", net, "(training)",
           "(peak)");
    snprintf(row, sizeof row, "1 rank, batch %ld", K * B);
    printf("  %-26s %9.4f %9.2f s %9.2f s %16.3f s %13.0f %10.2f MB\n", row, (double)a->accuracy,
           a->seconds, a->report_s, t1_modeled, ra, r1->mem_peak / 1e6);
    snprintf(row, sizeof row, "%d ranks (%s), batch %ld", K, be, B);
    printf("  %-26s %9.4f %9.2f s %9.2f s %16.3f s %13.0f %10.2f MB\n", row, (double)b->accuracy,
           b->seconds, b->report_s, b->modeled_s, rb, rk->mem_peak / 1e6);
    printf("  %-26s %9s %10.2fx %11s %17.2fx %12.2fx\n", "speedup", "", a->seconds / b->seconds, "",
           t1_modeled / b->modeled_s, ra > 0 ? rb / ra : 0);
    printf("  each rank sent %.1f KB per step: one ring allreduce of the gradient (%zu "
           "floats),\n  2(K-1)/K x %zu bytes\n", b->bytes_per_step / 1e3, params, 4 * params);
    printf("  wall time: the %d ranks share this machine's %ld core%s; it includes the test "
           "set's\n  evaluation after each epoch (\"of it evaluating\": rank 0's alone, the same "
           "work in both\n  runs), which samples/s leaves out: the samples trained over the rest "
           "of the wall time,\n  the epoch lines taken together (so the two ratios differ by the "
           "evaluation's share);\n  modeled time: each rank's compute at the per-sample cost of "
           "1 rank's median step, on a\n  core of its own, plus its messages on %s\n",
           K, ncores, ncores == 1 ? "" : "s", net);
}

int dttrain_showcase(options *o)
{
    int K = (int)o->ranks;
    const char *net = o->net ? o->net : "ib100", *be = o->backend ? o->backend : "thread";
    double alpha, beta;
    dt_model m;
    if (o->epochs == 0)
        o->epochs = 10;
    dt_result r = dt_net_preset(net, &alpha, &beta);
    if (r == DT_OK)
        r = dt_model_create_spec(&m, o->model, o->seed);
    if (r != DT_OK)
        return dttrain_fail(r);
    dp_result *res = dp_alloc();
    if (!res) {
        dt_model_free(&m);
        return dttrain_fail(dt_fail(DT_ERR_NOMEM, "--showcase: result block"));
    }
    long B = o->batch;
    size_t params = m.num_params;
    printf("dttrain: the %s (%s, %zu parameters) with data parallelism\n"
           "  %d ranks (%s backend) x batch %ld = global batch %ld, %s lr %g momentum %g, "
           "%ld epochs\n  modeled network: %s (alpha %g us, %g GB/s)\n\n", o->data, o->model,
           params, K, be, B, K * B, o->optim, o->lr, o->momentum, o->epochs, net, alpha * 1e6,
           beta / 1e9);
    dt_model_free(&m);

    /* 1 rank with the global batch: the reference and the per-sample cost */
    options one = *o;
    one.batch = K * B, one.backend = "thread", one.net = "none";
    dp_job j1 = {&one, 1, o->epochs, 0, "1 rank ", res};
    r = dp_run(&one, &j1);
    dp_result r1 = *res;
    /* K ranks with batch B, on the named network */
    options many = *o;
    many.net = net;
    char tag[32];
    snprintf(tag, sizeof tag, "%d ranks", K);
    double c = r1.run.step_ms_median / 1e3 / (double)(K * B);
    dp_job jk = {&many, K, o->epochs, c, tag, res};
    if (r == DT_OK) {
        printf("\n");
        r = dp_run(&many, &jk);
    }
    if (r == DT_OK)
        summary(o, K, net, be, params, &r1, res);
    dp_release(res);
    return r == DT_OK ? 0 : dttrain_fail(r);
}
